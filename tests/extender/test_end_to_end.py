"""`kubesched simulate` with extenders configured in the KubeSchedulerConfiguration, end to end:
the CLI (in-process, click's CliRunner) builds the HTTP extenders from `extenders:`, and an
extender written with the SDK serves them on 127.0.0.1 from a background thread. Every verb
(filter, prioritize, bind, preempt), nodeCacheCapable both ways, ignoredByScheduler, and
extender failures (ignorable or not) give the expected placements, trace and messages, in
the conformance procedure (--deterministic) and on the queue's virtual clock."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from builders import make_node, make_pod
from click.testing import CliRunner

from kubesched.cli import main
from kubesched.extender.server import (
    ExtenderApp,
    ExtenderError,
    FilterResult,
    NodeVictims,
    ServerThread,
    Unresolvable,
    load_app,
)
from kubesched.framework import Binding
from kubesched.objects import Node, Pod

ROOT = Path(__file__).resolve().parents[2]
GPU_EXAMPLE = ROOT / "examples" / "extenders" / "gpu_extender.py"
GPU = "example.com/gpu"
MODEL = "example.com/gpu-model"

MODES = [["--deterministic"], []]
MODE_IDS = ["conformance procedure", "virtual-clock queue"]


# ----------------------------------------------------------------------------- helpers
def gpu_node(name: str, gpus: int, cpu: str = "8", **labels: str) -> dict[str, Any]:
    b = make_node().name(name).capacity_map({"cpu": cpu, "memory": "16Gi", "pods": 110, **({GPU: gpus} if gpus else {})})
    for k, v in labels.items():
        b = b.label(k, v)
    return b.manifest()


def gpu_pod(name: str, gpus: int, model: str = "") -> dict[str, Any]:
    m = make_pod().name(name).container(requests={"cpu": "100m", GPU: gpus}, limits={GPU: gpus}).manifest()
    if model:
        m["metadata"]["annotations"] = {MODEL: model}
    return m


def priority_class(value: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": f"p{value}"},
            "value": value}


def prio(value: int, pod: dict[str, Any]) -> dict[str, Any]:
    pod["spec"]["priorityClassName"] = f"p{value}"
    return pod


PRIORITY_CLASSES = [priority_class(v) for v in (1, 5, 100)]


def simulate(tmp_path: Path, manifests: list[dict[str, Any]], extenders: list[dict[str, Any]], *args: str,
             expect_exit: int = 0, profiles: list[dict[str, Any]] | None = None,
             ) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run `kubesched simulate` over the manifests with these `extenders:`; returns the JSON
    output and the trace."""
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump_all(manifests))
    config = tmp_path / "config.yaml"
    cfg: dict[str, Any] = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                           "extenders": extenders}
    if profiles is not None:
        cfg["profiles"] = profiles
    config.write_text(yaml.safe_dump(cfg))
    trace = tmp_path / "trace.json"
    result = CliRunner().invoke(main, ["simulate", str(cluster), "--config", str(config), "-o", "json",
                                       "--trace", str(trace), *args])
    assert result.exit_code == expect_exit, result.output
    out: dict[str, Any] = json.loads(result.output)
    tr: dict[str, Any] = json.loads(trace.read_text())
    return out, tr


def last_step(trace: dict[str, Any], pod: str) -> dict[str, Any]:
    steps: list[dict[str, Any]] = [s for s in trace["steps"] if s["pod"] == pod]
    assert steps, f"no attempt for {pod}"
    return steps[-1]


def all_pods(manifests: list[dict[str, Any]]) -> set[str]:
    return {f"{m['metadata'].get('namespace', 'default')}/{m['metadata']['name']}" for m in manifests
            if m["kind"] == "Pod"}


@pytest.fixture
def gpu_app() -> ExtenderApp:
    """A fresh instance of examples/extenders/gpu_extender.py's app."""
    app = load_app(f"{GPU_EXAMPLE}:app")
    assert isinstance(app, ExtenderApp)
    return app


@pytest.fixture
def serve() -> Iterator[Any]:
    """serve(app) -> base URL; every server stops at the end of the test."""
    servers: list[ServerThread] = []

    def start(app: ExtenderApp) -> str:
        srv = ServerThread(app).start()
        servers.append(srv)
        return srv.url

    yield start
    for srv in servers:
        srv.stop()


def closed_port_url() -> str:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"http://127.0.0.1:{port}/scheduler"


def nodes_of(manifests: list[dict[str, Any]]) -> list[Node]:
    from kubesched.objects.parse import parse_node

    return [parse_node(m) for m in manifests if m["kind"] == "Node"]


# ===================================================================== filter + prioritize
GPU_CLUSTER = [
    gpu_node("cpu-1", 0),
    gpu_node("gpu-a", 4, **{MODEL: "a100"}),
    gpu_node("gpu-b", 2, cpu="4", **{MODEL: "t4"}),
    gpu_node("gpu-m", 8, **{MODEL: "a100", "example.com/gpu-maintenance": "true"}),
    gpu_pod("train", 2, model="a100"),
    gpu_pod("infer", 2),
    make_pod().name("web").req(cpu="1").manifest(),
]


@pytest.mark.parametrize("cache_capable", [False, True], ids=["nodes sent in full", "nodeCacheCapable: names only"])
@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
def test_gpu_extender_filters_and_scores_the_placements(mode: list[str], cache_capable: bool, gpu_app: ExtenderApp,
                                                        serve: Any, tmp_path: Path) -> None:
    if cache_capable:
        gpu_app.node_cache.update(nodes_of(GPU_CLUSTER))  # what the extender's informer would hold
    url = serve(gpu_app) + "/scheduler"
    ext = gpu_app.extender_config(url, weight=2, node_cache_capable=cache_capable, managed_resources=[GPU])
    out, trace = simulate(tmp_path, GPU_CLUSTER, [ext], *mode)

    # train wants an a100: gpu-b has the wrong model, gpu-m is under maintenance (unresolvable);
    # infer fills gpu-b best (score 10 vs gpu-a's 8, x weight 2 x 10), though the plugins alone
    # would pick gpu-m, the emptiest node (gpu-b has half the cpu).
    assert out["placements"]["default/train"] == "gpu-a"
    assert out["placements"]["default/infer"] == "gpu-b"
    assert out["placements"]["default/web"] is not None
    assert set(out["placements"]) == all_pods(GPU_CLUSTER)

    train = last_step(trace, "default/train")
    assert train["feasible"] == ["gpu-a"]  # the extender ran after the plugins, on their feasible nodes
    assert train["failures"]["gpu-m"] == {"plugin": "", "reasons": ["GPUs under maintenance"]}
    assert train["failures"]["gpu-b"] == {"plugin": "", "reasons": ["node's GPU model is not a100"]}
    assert train["failures"]["cpu-1"]["plugin"] == "NodeResourcesFit"

    infer = last_step(trace, "default/infer")
    key = f"Extender:{url}"
    assert infer["scores"]["gpu-b"][key] == 200 and infer["scores"]["gpu-a"][key] == 160
    for node, scores in infer["scores"].items():
        assert infer["total"][node] == sum(scores.values())

    # web requests no GPU: the extender (managedResources) is not interested, adds no column.
    web = last_step(trace, "default/web")
    assert all(not k.startswith("Extender:") for s in web["scores"].values() for k in s)


def test_without_the_extender_the_plugins_alone_decide(tmp_path: Path) -> None:
    out, _ = simulate(tmp_path, GPU_CLUSTER, [], "--deterministic")
    assert out["placements"]["default/infer"] == "gpu-m"


def test_explain_shows_the_extender_column_and_its_rejections(gpu_app: ExtenderApp, serve: Any,
                                                              tmp_path: Path) -> None:
    url = serve(gpu_app) + "/scheduler"
    ext = gpu_app.extender_config(url, weight=2, managed_resources=[GPU])
    simulate(tmp_path, GPU_CLUSTER, [ext], "--deterministic")  # writes the files
    result = CliRunner().invoke(main, ["simulate", str(tmp_path / "cluster.yaml"), "--config",
                                       str(tmp_path / "config.yaml"), "--deterministic", "--explain", "default/infer"],
                                env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    header = next(line for line in result.output.splitlines() if "NodeResourcesFit" in line and "total" in line)
    assert f"Extender:{url}" in header
    gpu_m = next(line for line in result.output.splitlines() if line.strip("│ ").startswith("gpu-m"))
    assert "Extender: GPUs under maintenance" in gpu_m


NO_SCORE_PLUGINS = [{"schedulerName": "default-scheduler", "plugins": {"score": {"disabled": [{"name": "*"}]}}}]
THREE_NODES = [gpu_node("n1", 0), gpu_node("n2", 0), gpu_node("n3", 0), make_pod().name("p").req(cpu="1").manifest()]


def test_without_score_plugins_a_prioritizing_extender_still_sees_every_feasible_node(serve: Any,
                                                                                     tmp_path: Path) -> None:
    # Without Score plugins or extenders the first feasible node would do; a prioritizing
    # extender makes the scheduler find them all, score them (extender only) and pick its best.
    app = ExtenderApp(prefix="/scheduler")

    @app.score_node
    def prefer_n3(pod: Pod, node: Node) -> int:
        return 10 if node.meta.name == "n3" else 1

    url = serve(app) + "/scheduler"
    out, trace = simulate(tmp_path, THREE_NODES, [app.extender_config(url, weight=3)], "--deterministic",
                          profiles=NO_SCORE_PLUGINS)
    step = last_step(trace, "default/p")
    assert out["placements"]["default/p"] == "n3"
    assert step["feasible"] == ["n1", "n2", "n3"]
    assert step["scores"] == {n: {f"Extender:{url}": 300 if n == "n3" else 30} for n in ("n1", "n2", "n3")}
    assert step["total"] == {"n1": 30, "n2": 30, "n3": 300}


def test_without_score_plugins_a_filter_extender_still_sees_every_feasible_node(serve: Any, tmp_path: Path) -> None:
    app = ExtenderApp(prefix="/scheduler")

    @app.filter_node
    def only_n3(pod: Pod, node: Node) -> str | None:
        return None if node.meta.name == "n3" else "not n3"

    out, trace = simulate(tmp_path, THREE_NODES, [app.extender_config(serve(app) + "/scheduler")], "--deterministic",
                          profiles=NO_SCORE_PLUGINS)
    assert out["placements"]["default/p"] == "n3"
    step = last_step(trace, "default/p")
    assert step["failures"] == {n: {"plugin": "", "reasons": ["not n3"]} for n in ("n1", "n2")}


def test_a_nominated_node_the_extender_rejects_is_filtered_again_with_the_others(serve: Any, tmp_path: Path) -> None:
    app = rack_app(unresolvable=False)
    pod = make_pod().name("p").req(cpu="1").nominated("n1").manifest()
    out, trace = simulate(tmp_path, [gpu_node("n1", 0), gpu_node("n2", 0), pod],
                          [app.extender_config(serve(app) + "/scheduler")], "--deterministic")
    assert out["placements"]["default/p"] == "n2"
    # The nominated node's extender status stays in the shared status map and the second
    # pass over all nodes appends the same reason again (kube-scheduler's AppendReason).
    assert last_step(trace, "default/p")["failures"] == {"n1": {"plugin": "", "reasons": ["rack busy", "rack busy"]}}


@pytest.mark.parametrize("ignored", [False, True],
                         ids=["NodeResourcesFit counts the extended resource",
                              "ignoredByScheduler: only the extender judges it"])
def test_ignored_by_scheduler_resources_are_left_to_the_extender(ignored: bool, gpu_app: ExtenderApp, serve: Any,
                                                                 tmp_path: Path) -> None:
    holder = gpu_pod("holder", 1)
    holder["spec"]["nodeName"] = "gpu-1"
    manifests = [gpu_node("gpu-1", 1), holder, gpu_pod("extra", 1)]
    ext = gpu_app.extender_config(serve(gpu_app) + "/scheduler", managed_resources=[GPU])
    ext["managedResources"][0]["ignoredByScheduler"] = ignored
    out, trace = simulate(tmp_path, manifests, [ext], "--deterministic")
    if ignored:
        assert out["placements"]["default/extra"] == "gpu-1"
    else:
        assert out["placements"]["default/extra"] is None
        assert last_step(trace, "default/extra")["failures"]["gpu-1"] == {
            "plugin": "NodeResourcesFit", "reasons": [f"Insufficient {GPU}"]}


# ===================================================================================== bind
def binder_app(bindings: list[Binding], refuse: str = "") -> ExtenderApp:
    app = ExtenderApp(prefix="/scheduler")

    @app.bind
    def bind(binding: Binding) -> None:
        if binding.name == refuse:
            raise ExtenderError(f"rack controller refused {binding.name}")
        bindings.append(binding)

    return app


@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
def test_the_binder_extender_binds_instead_of_default_binder(mode: list[str], serve: Any, tmp_path: Path) -> None:
    bindings: list[Binding] = []
    app = binder_app(bindings)
    manifests = [gpu_node("n1", 0), gpu_node("n2", 0), make_pod().name("a").req(cpu="1").manifest(),
                 make_pod().name("b").req(cpu="1").manifest()]
    out, _ = simulate(tmp_path, manifests, [app.extender_config(serve(app) + "/scheduler")], *mode)
    assert out["placements"]["default/a"] and out["placements"]["default/b"]
    assert sorted((b.namespace, b.name, b.uid, b.node) for b in bindings) == [
        ("default", "a", "uid-default-a", out["placements"]["default/a"]),
        ("default", "b", "uid-default-b", out["placements"]["default/b"])]


def test_a_binder_error_fails_the_binding_cycle(serve: Any, tmp_path: Path) -> None:
    bindings: list[Binding] = []
    app = binder_app(bindings, refuse="b")
    manifests = [gpu_node("n1", 0), make_pod().name("a").req(cpu="1").manifest(),
                 make_pod().name("b").req(cpu="1").manifest()]
    out, trace = simulate(tmp_path, manifests, [app.extender_config(serve(app) + "/scheduler")], "--deterministic")
    assert out["placements"] == {"default/a": "n1", "default/b": None}
    assert out["unschedulable"]["default/b"] == "rack controller refused b"
    assert last_step(trace, "default/b")["outcome"] == "Unschedulable"
    assert [b.name for b in bindings] == ["a"]


# ================================================================================== preempt
def preemption_cluster() -> list[dict[str, Any]]:
    """n1 and n2 full; DefaultPreemption alone would evict low (priority 1) on n1 rather
    than mid (priority 5) on n2."""
    return [
        *PRIORITY_CLASSES, gpu_node("n1", 0), gpu_node("n2", 0),
        prio(1, make_pod().name("low").node("n1").req(cpu="8").start_time("2024-01-01T00:00:00Z").manifest()),
        prio(5, make_pod().name("mid").node("n2").req(cpu="8").start_time("2024-01-01T00:00:00Z").manifest()),
        prio(100, make_pod().name("urgent").req(cpu="4").manifest()),
    ]


def test_default_preemption_alone_evicts_the_lowest_priority_pod(tmp_path: Path) -> None:
    out, _ = simulate(tmp_path, preemption_cluster(), [], "--deterministic")
    assert out["placements"]["default/urgent"] == "n1"
    assert out["preempted"] == ["default/low"]


@pytest.mark.parametrize("cache_capable", [False, True], ids=["victims sent in full", "nodeCacheCapable: UIDs only"])
@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
def test_the_preempt_extender_chooses_among_the_candidates(mode: list[str], cache_capable: bool, serve: Any,
                                                           tmp_path: Path) -> None:
    seen: list[dict[str, NodeVictims]] = []
    app = ExtenderApp(prefix="/scheduler")

    @app.preempt
    def keep_n2(pod: Pod, victims: dict[str, NodeVictims]) -> dict[str, NodeVictims]:
        seen.append(dict(victims))
        return {n: v for n, v in victims.items() if n == "n2"}

    manifests = preemption_cluster()
    ext = app.extender_config(serve(app) + "/scheduler", node_cache_capable=cache_capable)
    out, trace = simulate(tmp_path, manifests, [ext], *mode)
    assert out["placements"]["default/urgent"] == "n2"
    assert out["preempted"] == ["default/mid"]
    assert out["placements"]["default/low"] == "n1"
    assert set(out["placements"]) | set(out["preempted"]) == all_pods(manifests)
    first = trace["steps"][0]
    assert (first["pod"], first["nominatedNode"], first["victims"]) == ("default/urgent", "n2", ["default/mid"])
    assert seen and set(seen[0]) == {"n1", "n2"}
    assert seen[0]["n1"].uids == ("uid-default-low",)
    assert bool(seen[0]["n1"].pods) is not cache_capable  # full pods only without nodeCacheCapable


def test_a_preempt_extender_error_fails_preemption_without_evicting(serve: Any, tmp_path: Path) -> None:
    app = ExtenderApp(prefix="/scheduler")

    @app.preempt
    def refuse(pod: Pod, victims: dict[str, NodeVictims]) -> dict[str, NodeVictims]:
        raise RuntimeError("no eviction today")

    out, trace = simulate(tmp_path, preemption_cluster(), [app.extender_config(serve(app) + "/scheduler")],
                          "--deterministic")
    assert out["placements"]["default/urgent"] is None
    assert out["preempted"] == []
    step = last_step(trace, "default/urgent")
    assert step["victims"] == [] and step["nominatedNode"] is None
    assert "preemption: " in step["message"] and "500" in step["message"]


def rack_app(unresolvable: bool) -> ExtenderApp:
    """Rejects n1 (a node where the pod fits per the plugins), as unresolvable or not."""
    app = ExtenderApp(prefix="/scheduler")

    @app.filter_node
    def drained(pod: Pod, node: Node) -> Unresolvable | str | None:
        if node.meta.name != "n1":
            return None
        return Unresolvable("rack drained") if unresolvable else "rack busy"

    return app


def rack_cluster(*, with_n2: bool) -> list[dict[str, Any]]:
    """n1 has room for urgent next to a low-priority pod; n2 (optional) is full."""
    out = [*PRIORITY_CLASSES, gpu_node("n1", 0),
           prio(1, make_pod().name("small").node("n1").req(cpu="1").manifest()),
           prio(100, make_pod().name("urgent").req(cpu="4").manifest())]
    if with_n2:
        out[4:4] = [gpu_node("n2", 0), prio(5, make_pod().name("mid").node("n2").req(cpu="8").manifest())]
    return out


@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
def test_preemption_happens_where_the_extender_allows(mode: list[str], serve: Any, tmp_path: Path) -> None:
    app = rack_app(unresolvable=True)
    manifests = rack_cluster(with_n2=True)
    out, trace = simulate(tmp_path, manifests, [app.extender_config(serve(app) + "/scheduler")], *mode)
    first = trace["steps"][0]
    assert first["failures"]["n1"] == {"plugin": "", "reasons": ["rack drained"]}
    assert first["failures"]["n2"] == {"plugin": "NodeResourcesFit", "reasons": ["Insufficient cpu"]}
    assert (first["victims"], first["nominatedNode"]) == (["default/mid"], "n2")
    assert out["placements"]["default/urgent"] == "n2"
    assert out["placements"]["default/small"] == "n1"
    assert out["preempted"] == ["default/mid"]


@pytest.mark.parametrize("unresolvable", [True, False],
                         ids=["FailedAndUnresolvable: preemption is not tried there",
                              "FailedNodes: the dry run tries the node and finds no victim"])
def test_nodes_the_filter_extender_finds_unresolvable_are_excluded_from_preemption(
        unresolvable: bool, serve: Any, tmp_path: Path) -> None:
    app = rack_app(unresolvable)
    out, trace = simulate(tmp_path, rack_cluster(with_n2=False), [app.extender_config(serve(app) + "/scheduler")],
                          "--deterministic")
    step = last_step(trace, "default/urgent")
    assert out["placements"] == {"default/small": "n1", "default/urgent": None}
    assert out["preempted"] == [] and step["victims"] == []
    if unresolvable:
        assert step["failures"]["n1"] == {"plugin": "", "reasons": ["rack drained"]}
        assert step["message"] == ("0/1 nodes are available: 1 rack drained. no new claims to deallocate, preemption: 0/1 nodes are available: "
                                   "1 Preemption is not helpful for scheduling.")
    else:
        assert step["failures"]["n1"] == {"plugin": "", "reasons": ["rack busy"]}
        assert step["message"] == ('0/1 nodes are available: 1 rack busy. preemption: expected at least one victim '
                                   'pod on node "n1"')


# =================================================================================== faults
@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
def test_an_ignorable_extender_that_is_down_is_skipped(mode: list[str], tmp_path: Path) -> None:
    ext = {"urlPrefix": closed_port_url(), "filterVerb": "filter", "prioritizeVerb": "prioritize", "weight": 1,
           "ignorable": True}
    with_ext, _ = simulate(tmp_path, GPU_CLUSTER, [ext], *mode, "--seed", "3")
    without, _ = simulate(tmp_path, GPU_CLUSTER, [], *mode, "--seed", "3")
    assert with_ext["placements"] == without["placements"]
    assert with_ext["unschedulable"] == without["unschedulable"]


@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
def test_a_non_ignorable_extender_that_is_down_makes_pods_unschedulable_with_its_error(mode: list[str],
                                                                                       tmp_path: Path) -> None:
    url = closed_port_url()
    port = url.split(":")[2].split("/")[0]
    ext = {"urlPrefix": url, "filterVerb": "filter"}
    manifests = [gpu_node("n1", 0), make_pod().name("a").req(cpu="1").manifest(),
                 make_pod().name("b").req(cpu="1").manifest()]
    out, trace = simulate(tmp_path, manifests, [ext], *mode)
    assert out["placements"] == {"default/a": None, "default/b": None}  # no pod lost, none bound
    want = f'Post "{url}/filter": dial tcp 127.0.0.1:{port}: connect: connection refused'
    assert out["unschedulable"] == {"default/a": want, "default/b": want}
    assert all(s["outcome"] == "Unschedulable" for s in trace["steps"])


def test_a_non_ignorable_extender_error_reply_is_the_pods_error(serve: Any, tmp_path: Path) -> None:
    app = ExtenderApp(prefix="/scheduler")

    @app.filter
    def broken(pod: Pod, nodes: list[Node]) -> None:
        raise ExtenderError("inventory service unavailable")

    manifests = [gpu_node("n1", 0), make_pod().name("a").req(cpu="1").manifest()]
    ignorable = app.extender_config(serve(app) + "/scheduler", ignorable=True)
    out, _ = simulate(tmp_path, manifests, [ignorable], "--deterministic")
    assert out["placements"] == {"default/a": "n1"}
    strict = app.extender_config(serve(app) + "/scheduler")
    out, _ = simulate(tmp_path, manifests, [strict], "--deterministic")
    assert out["placements"] == {"default/a": None}
    assert out["unschedulable"] == {"default/a": "inventory service unavailable"}


# ======================================================================= requeueing
def test_a_pod_an_extender_rejected_is_retried_on_any_cluster_event(serve: Any, tmp_path: Path) -> None:
    """Extenders have no queueing hints: a pod they rejected is recorded with the pseudo-plugin
    "Extender", registered for every cluster event. Here the extender turns waiter away once;
    a preemption victim leaving 10 s later (AssignedPodDelete) brings it back, instead of the
    5-minute leftover flush."""
    app = ExtenderApp(prefix="/scheduler")
    calls: list[str] = []

    @app.filter
    def once_not(pod: Pod, nodes: list[Node]) -> FilterResult | None:
        calls.append(pod.name)
        if pod.name == "waiter" and calls.count("waiter") == 1:
            return FilterResult(failed={n.meta.name: "not yet" for n in nodes})
        return None

    # waiter fits n1 and n2 per the plugins (only the extender rejects it); urgent fits
    # nowhere until low, on n2, is preempted (grace period 0: gone at once).
    low = prio(1, make_pod().name("low").node("n2").req(cpu="8").manifest())
    low["spec"]["terminationGracePeriodSeconds"] = 0
    manifests = [*PRIORITY_CLASSES, gpu_node("n1", 0, cpu="2"), gpu_node("n2", 0, cpu="12"), low,
                 make_pod().name("waiter").req(cpu="1").creation("2024-01-01T00:00:00Z").manifest(),
                 prio(100, make_pod().name("urgent").req(cpu="5").creation("2024-01-01T00:00:10Z").manifest())]
    out, trace = simulate(tmp_path, manifests, [app.extender_config(serve(app) + "/scheduler")])
    assert out["placements"]["default/urgent"] == "n2" and out["placements"]["default/waiter"] is not None
    assert out["preempted"] == ["default/low"]
    first = trace["steps"][0]
    assert (first["pod"], first["outcome"], first["failures"]) == (
        "default/waiter", "Unschedulable", {n: {"plugin": "", "reasons": ["not yet"]} for n in ("n1", "n2")})
    scheduled = {e["pod"]: e["time"] for e in out["timeline"] if e["reason"] == "Scheduled"}
    assert 10.0 <= scheduled["default/waiter"] < 60.0
