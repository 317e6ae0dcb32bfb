"""NodeResourcesFit with DRAExtendedResource (1.36): an extended resource a DeviceClass maps is
left to DynamicResources on a node without allocatable for it (shouldDelegateResourceToDRA),
and checked as usual where the node's device plugin advertises it — the same verdict and
status on the per-node Filter, filter_batch and filter_batch_status."""

from __future__ import annotations

import numpy as np
import pytest

from kubesched._runtime.handle import FrameworkHandle
from kubesched.cluster.memory import MemoryObjects
from kubesched.features import FEATURES_1_36, Features, features_for
from kubesched.framework import Code, CycleState
from kubesched.objects.devices import parse_device_class
from kubesched.plugins.noderesources import Fit

from .util import node, pod

GPU = "example.com/gpu"


def gpu_class(extended_resource_name: str | None) -> MemoryObjects:
    spec = {"extendedResourceName": extended_resource_name} if extended_resource_name else {}
    cls = parse_device_class({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                              "metadata": {"name": "gpu"}, "spec": spec})
    return MemoryObjects(device_classes=[cls])


NODES = [node("absent", {"cpu": "4", "memory": "8Gi", "pods": "10"}),
         node("zero", {"cpu": "4", "memory": "8Gi", "pods": "10", GPU: "0"}),
         node("one-free", {"cpu": "4", "memory": "8Gi", "pods": "10", GPU: "2"}),
         node("plenty", {"cpu": "4", "memory": "8Gi", "pods": "10", GPU: "4"})]
USED = [pod({GPU: "1"}, node="one-free", name="holder")]


@pytest.mark.parametrize(("features", "mapped", "want"), [
    pytest.param(FEATURES_1_36, GPU,
                 {"absent": None, "zero": None, "one-free": (Code.UNSCHEDULABLE, ("Insufficient example.com/gpu",)),
                  "plenty": None},
                 id="a mapped resource is left to DRA only where the node has none"),
    pytest.param(FEATURES_1_36, "deviceclass.resource.kubernetes.io/gpu",
                 {"absent": (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("Insufficient example.com/gpu",)),
                  "zero": (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("Insufficient example.com/gpu",)),
                  "one-free": (Code.UNSCHEDULABLE, ("Insufficient example.com/gpu",)), "plenty": None},
                 id="a resource no class maps is checked everywhere"),
    pytest.param(features_for("1.36", ["DRAExtendedResource=false"]), GPU,
                 {"absent": (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("Insufficient example.com/gpu",)),
                  "zero": (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("Insufficient example.com/gpu",)),
                  "one-free": (Code.UNSCHEDULABLE, ("Insufficient example.com/gpu",)), "plenty": None},
                 id="with the gate off nothing is left to DRA"),
])
def test_fit_leaves_mapped_resources_to_dra_on_nodes_without_them(
        features: Features, mapped: str, want: dict[str, tuple[Code, tuple[str, ...]] | None]) -> None:
    # The class maps `mapped`; the pod asks for example.com/gpu (the implicit name of class
    # "gpu" is deviceclass.resource.kubernetes.io/gpu, which it does not ask for).
    objects = gpu_class(mapped if mapped == GPU else None)
    h = FrameworkHandle.for_nodes(NODES, USED, objects=objects, features=features)
    incoming = pod({"cpu": "1", GPU: "2"}, name="incoming")
    f = Fit(None, h)
    state = CycleState()
    f.pre_filter(state, incoming)
    nis = list(h.snapshot.list())
    rows = np.array([ni.index for ni in nis], np.int64)
    ok = f.filter_batch(state, incoming, h.snapshot.table, rows).tolist()
    codes, statuses = f.filter_batch_status(state, incoming, h.snapshot.table, rows)
    got: dict[str, tuple[Code, tuple[str, ...]] | None] = {}
    for ni, batch_ok, code in zip(nis, ok, codes.tolist(), strict=True):
        s = f.filter(state, incoming, ni)
        got[ni.name] = None if s is None else (s.code, s.reasons)
        batch = statuses[code]
        assert (batch is None) == (s is None) == batch_ok, ni.name
        assert batch is None or s is None or (batch.code, batch.reasons) == (s.code, s.reasons), ni.name
    assert got == want
    # Preemption's resource arithmetic cannot express "skipped where the node has none".
    assert (f.preemption_resource_fit(state, incoming) is None) == (want["absent"] is None)
