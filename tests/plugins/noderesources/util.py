"""Helpers shared by the noderesources tests: pods and nodes shaped like upstream's test
helpers (newResourcePod, makeNode, st.MakeNode().Capacity), built through the real parsers.

The tables of these tests are kube-scheduler v1.30's (fit_test.go, balanced_allocation_test.go,
...): pods and handles are v1.30's. What 1.36 changed is tested in tests/test_kube_versions.py
and in the 1.36 tables beside them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from builders import make_node, make_pod

from kubesched._runtime.handle import FrameworkHandle
from kubesched.features import FEATURES_1_30
from kubesched.framework import NodeInfo
from kubesched.objects import Node, Pod

Req = Mapping[str, Any]


def requests(cpu_milli: int | None = None, memory: int | None = None, eph: int | None = None,
             scalars: Mapping[str, int] | None = None) -> dict[str, str]:
    """A container request list (cpu in millicores, the rest in base units)."""
    r: dict[str, str] = {}
    if cpu_milli is not None:
        r["cpu"] = f"{cpu_milli}m"
    if memory is not None:
        r["memory"] = str(memory)
    if eph is not None:
        r["ephemeral-storage"] = str(eph)
    for k, v in (scalars or {}).items():
        r[k] = str(v)
    return r


def pod(*containers: Req, init: Sequence[Req] = (), sidecars: Sequence[int] = (), overhead: Req | None = None,
        node: str = "", name: str = "p") -> Pod:
    """A pod with one container per request list (a container without requests if none is
    given); ``init`` are init containers, the indices in ``sidecars`` make them restartable."""
    b = make_pod().name(name)
    if node:
        b = b.node(node)
    for c in containers:
        b = b.container(requests=dict(c))
    if not containers:
        b = b.container()
    for i, c in enumerate(init):
        b = b.init_container(requests=dict(c) if c else None, sidecar=i in sidecars)
    if overhead is not None:
        b.m["spec"]["overhead"] = dict(overhead)
    return b.obj(FEATURES_1_30)


def empty_pod(node: str = "", name: str = "p") -> Pod:
    """Upstream's container-less ``st.MakePod().Obj()``: requests nothing, not even the
    non-zero defaults. A valid pod needs a container, so it requests an explicit 0."""
    return pod({"cpu": "0", "memory": "0"}, node=node, name=name)


def node(name: str, res: Mapping[str, Any]) -> Node:
    """A node whose capacity and allocatable are ``res`` (st.MakeNode().Capacity(...))."""
    return make_node().name(name).capacity_map({k: str(v) for k, v in res.items()}).obj()


def make_node_milli(name: str, milli_cpu: int, memory: int, extended: Mapping[str, int] | None = None) -> Node:
    """Upstream's makeNode(node, milliCPU, memory, extendedResource)."""
    res: dict[str, Any] = {"cpu": f"{milli_cpu}m", "memory": str(memory)}
    for k, v in (extended or {}).items():
        res[k] = str(v)
    return node(name, res)


def cluster(nodes: Sequence[Node], pods: Sequence[Pod] = ()) -> FrameworkHandle:
    return FrameworkHandle.for_nodes(list(nodes), list(pods), features=FEATURES_1_30)


def infos(handle: FrameworkHandle, names: Sequence[str]) -> list[NodeInfo]:
    out = []
    for n in names:
        ni = handle.snapshot.get(n)
        assert ni is not None
        out.append(ni)
    return out


def rows_of(nodes: Sequence[NodeInfo]) -> npt.NDArray[np.int64]:
    return np.array([ni.index for ni in nodes], np.int64)
