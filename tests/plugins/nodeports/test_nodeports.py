"""NodePorts (upstream node_ports_test.go TestNodePorts / TestPreFilterDisabled / TestFits):
plain init containers' ports are never considered; sidecars' (restartable init containers')
are from 1.36 on (GetHostPorts), not in v1.30."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest
from builders import make_node, make_pod, obj

from kubesched._runtime.handle import FrameworkHandle
from kubesched.features import FEATURES_1_30
from kubesched.framework import GVK, ActionType, Code, CycleState, NodeInfo, PreFilterPlugin, StateData
from kubesched.objects import Pod
from kubesched.objects.parse import parse_pod
from kubesched.plugins import nodeports
from kubesched.plugins.nodeports import NAME
from kubesched.plugins.nodeports.plugin import fits, get_container_ports

ERR = "node(s) didn't have free ports for the requested pod ports"


def port_pod(*specs: str, name: str = "p", node: str = "") -> Pod:
    """Upstream newPod: each spec is "PROTO/hostIP/hostPort"."""
    b = make_pod().name(name)
    if node:
        b = b.node(node)
    ports: list[dict[str, Any]] = []
    for spec in specs:
        proto, ip, port = spec.split("/")
        p: dict[str, Any] = {"containerPort": int(port), "hostPort": int(port), "protocol": proto}
        if ip:
            p["hostIP"] = ip
        ports.append(p)
    return b.container(ports=ports).obj()


def init_port_pod(sidecar: bool) -> Pod:
    m = make_pod().name("p").manifest()
    ic: dict[str, Any] = {"name": "init", "image": "",
                          "ports": [{"containerPort": 8001, "hostPort": 8001, "protocol": "TCP"}]}
    if sidecar:
        ic["restartPolicy"] = "Always"
    m["spec"]["initContainers"] = [ic]
    pod: Pod = obj(m)
    return pod


def test_in_v1_30_a_sidecar_s_host_port_is_not_considered() -> None:
    m = make_pod().name("p").manifest()
    m["spec"]["initContainers"] = [{"name": "init", "image": "", "restartPolicy": "Always",
                                    "ports": [{"containerPort": 8001, "hostPort": 8001, "protocol": "TCP"}]}]
    assert get_container_ports(parse_pod(m, features=FEATURES_1_30)) == ()
    assert get_container_ports(parse_pod(m)) == (("", "TCP", 8001),)


def node_info_with(*existing: Pod) -> tuple[FrameworkHandle, NodeInfo]:
    handle = FrameworkHandle.for_nodes([make_node().name("m1").capacity(cpu="4", memory="4Gi", pods=110).obj()],
                                       [p for p in existing])
    ni = handle.snapshot.get("m1")
    assert ni is not None
    return handle, ni


@pytest.mark.parametrize(
    ("pod", "existing", "want_skip", "want_fit"),
    [
        (make_pod().name("p").obj(), [], True, None),
        (port_pod("UDP/127.0.0.1/8080"), [port_pod("UDP/127.0.0.1/9090", node="m1", name="e")], False, True),
        (port_pod("UDP/127.0.0.1/8080"), [port_pod("UDP/127.0.0.1/8080", node="m1", name="e")], False, False),
        (port_pod("TCP/127.0.0.1/8080"), [port_pod("TCP/127.0.0.1/8080", node="m1", name="e")], False, False),
        (port_pod("TCP/127.0.0.1/8080"), [port_pod("TCP/127.0.0.2/8080", node="m1", name="e")], False, True),
        (port_pod("UDP/127.0.0.1/8080"), [port_pod("TCP/127.0.0.1/8080", node="m1", name="e")], False, True),
        (port_pod("UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"),
         [port_pod("UDP/127.0.0.1/8080", node="m1", name="e")], False, False),
        (port_pod("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"),
         [port_pod("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081", node="m1", name="e")], False, False),
        (port_pod("TCP/0.0.0.0/8001"), [port_pod("TCP/127.0.0.1/8001", node="m1", name="e")], False, False),
        (port_pod("TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"),
         [port_pod("TCP/127.0.0.1/8001", node="m1", name="e")], False, False),
        (port_pod("TCP/127.0.0.1/8001"), [port_pod("TCP/0.0.0.0/8001", node="m1", name="e")], False, False),
        (port_pod("UDP/127.0.0.1/8001"), [port_pod("TCP/0.0.0.0/8001", node="m1", name="e")], False, True),
        (port_pod("UDP/127.0.0.1/8001"),
         [port_pod("TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001", node="m1", name="e")], False, False),
        (init_port_pod(sidecar=False), [port_pod("TCP/0.0.0.0/8001", node="m1", name="e")], True, None),
        (init_port_pod(sidecar=True), [port_pod("TCP/0.0.0.0/8001", node="m1", name="e")], False, False),
        (port_pod("TCP//8001"), [port_pod("TCP/127.0.0.1/8001", node="m1", name="e")], False, False),
        (port_pod("TCP/127.0.0.1/8001"), [port_pod("TCP//8001", node="m1", name="e")], False, False),
        (port_pod("TCP/127.0.0.1/8001"), [port_pod("TCP/127.0.0.1/8001", node="other", name="e")], False, True),
    ],
    ids=[
        "pod without host ports skips the filter",
        "other port on the node fits",
        "same UDP port conflicts",
        "same TCP port conflicts",
        "same port on a different host IP fits",
        "same port with a different protocol fits",
        "second UDP port conflicts",
        "first TCP port conflicts",
        "wanting 0.0.0.0 conflicts with a specific IP",
        "a 0.0.0.0 port among several conflicts",
        "wanting a specific IP conflicts with 0.0.0.0 in use",
        "0.0.0.0 in use with another protocol fits",
        "UDP on 0.0.0.0 in use conflicts",
        "a non-sidecar init container's host port is not considered",
        "a sidecar init container's host port conflicts (1.36)",
        "an empty host IP means 0.0.0.0 for the wanted port",
        "an empty host IP means 0.0.0.0 for the used port",
        "a pod on another node does not use this node's ports",
    ],
)
def test_pre_filter_and_filter(pod: Pod, existing: list[Pod], want_skip: bool, want_fit: bool | None) -> None:
    handle, ni = node_info_with(*existing)
    pl = nodeports.new(None, handle)
    state = CycleState()
    result, status = pl.pre_filter(state, pod)
    assert result is None
    if want_skip:
        assert status is not None and status.code == Code.SKIP
        return
    assert status is None
    got = pl.filter(state, pod, ni)
    if want_fit:
        assert got is None
    else:
        assert got is not None
        assert got.code == Code.UNSCHEDULABLE
        assert got.reasons == (ERR,)
    # Clones of the cycle state (preemption) see the same ports.
    assert pl.filter(state.clone(), pod, ni) == got


def test_filter_without_pre_filter_is_an_error() -> None:
    handle, ni = node_info_with()
    pl = nodeports.new(None, handle)
    got = pl.filter(CycleState(), make_pod().obj(), ni)
    assert got is not None
    assert got.code == Code.ERROR
    assert got.message == 'reading "PreFilterNodePorts" from cycleState: not found'
    assert pl.filter_batch(CycleState(), make_pod().obj(), handle.snapshot.table,
                           np.array([ni.index], np.int64)).tolist() == [False]


def test_pre_filter_state_is_clonable_state_data() -> None:
    handle, _ = node_info_with()
    pl = nodeports.new(None, handle)
    state = CycleState()
    pl.pre_filter(state, port_pod("TCP/1.2.3.4/80"))
    [value] = state._data.values()
    assert isinstance(value, StateData)
    assert value.clone() == value


@pytest.mark.parametrize(
    ("pod", "existing", "expect"),
    [
        (port_pod("TCP/127.0.0.1/80"), ["TCP/127.0.0.1/9090"], True),
        (port_pod("TCP/127.0.0.1/80", "TCP/127.0.1.1/80", "TCP/127.0.1.1/90", "TCP/127.0.1.1/100"),
         ["TCP/127.0.0.1/9090", "TCP/127.0.0.1/9191", "TCP/127.0.1.1/8080"], True),
        (port_pod("TCP/127.0.0.1/80"), ["UDP/127.0.0.1/80"], True),
        (port_pod("TCP/127.0.0.1/80"), ["TCP/127.0.0.1/80"], False),
        (port_pod("TCP/127.0.0.1/80", "TCP/127.0.1.1/80", "TCP/127.0.1.1/90", "TCP/127.0.1.1/100"),
         ["TCP/127.0.0.1/9090", "TCP/127.0.1.1/90", "TCP/127.0.1.1/8080"], False),
    ],
    ids=[
        "non-conflicting ports fit",
        "multiple non-conflicting ports fit",
        "same ports on different protocols fit",
        "conflicting ports do not fit",
        "multiple ports with some conflicting do not fit",
    ],
)
def test_fits(pod: Pod, existing: list[str], expect: bool) -> None:
    _, ni = node_info_with(port_pod(*existing, node="m1", name="e"))
    assert fits(pod, ni) is expect


def test_removed_pod_frees_its_port() -> None:
    existing = port_pod("TCP/0.0.0.0/8080", node="m1", name="e")
    handle, ni = node_info_with(existing)
    pl = nodeports.new(None, handle)
    pod = port_pod("TCP/10.0.0.1/8080")
    state = CycleState()
    pl.pre_filter(state, pod)
    rows = np.array([ni.index], np.int64)
    assert pl.filter(state, pod, ni) is not None
    assert pl.filter_batch(state, pod, handle.snapshot.table, rows).tolist() == [False]
    handle.cache.remove_pod(existing)
    assert pl.filter(state, pod, ni) is None
    assert pl.filter_batch(state, pod, handle.snapshot.table, rows).tolist() == [True]


IPS = ["", "0.0.0.0", "127.0.0.1", "10.0.0.1"]
PROTOS = ["TCP", "UDP", "SCTP"]
PORTS = [80, 443, 8080]


def _spec(rng: random.Random) -> str:
    return f"{rng.choice(PROTOS)}/{rng.choice(IPS)}/{rng.choice(PORTS)}"


@pytest.mark.parametrize("seed", range(30), ids=lambda s: f"random cluster {s} gives the same batch and per-node result")
def test_filter_batch_equals_filter(seed: int) -> None:
    rng = random.Random(seed)
    n_nodes = rng.randint(1, 10)
    nodes = [make_node().name(f"node-{i}").capacity(cpu="8", memory="8Gi", pods=110).obj() for i in range(n_nodes)]
    existing: list[Pod] = []
    for j in range(rng.randint(0, 3 * n_nodes)):
        # Distinct ports within one pod, as the API requires.
        specs = list({_spec(rng) for _ in range(rng.randint(0, 3))})
        existing.append(port_pod(*specs, name=f"e{j}", node=f"node-{rng.randrange(n_nodes)}"))
    handle = FrameworkHandle.for_nodes(nodes, existing)
    pl = nodeports.new(None, handle)
    infos = list(handle.snapshot.list())
    rows = np.array([ni.index for ni in infos], np.int64)
    for k in range(5):
        pod = port_pod(*{_spec(rng) for _ in range(rng.randint(0, 3))}, name=f"p{k}")
        state = CycleState()
        _, status = pl.pre_filter(state, pod)
        if status is not None:
            assert status.code == Code.SKIP
            continue
        per_node = [pl.filter(state, pod, ni) is None for ni in infos]
        assert pl.filter_batch(state, pod, handle.snapshot.table, rows).tolist() == per_node
        sub = rows[::2]
        assert pl.filter_batch(state, pod, handle.snapshot.table, sub).tolist() == per_node[::2]


def test_plugin_shape() -> None:
    pl = nodeports.new(None, FrameworkHandle.for_nodes([], features=FEATURES_1_30))
    assert pl.name == NAME == "NodePorts"
    assert isinstance(pl, PreFilterPlugin)
    assert pl.pre_filter_extensions() is None
    events = {(e.event.resource, e.event.action_type) for e in pl.events_to_register()}
    assert events == {(GVK.POD, ActionType.DELETE), (GVK.NODE, ActionType.ADD | ActionType.UPDATE)}
