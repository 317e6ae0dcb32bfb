"""Resize status (InPlacePodVerticalScaling, GA in 1.35): a bound pod counts
max(spec, status.containerStatuses[].resources.requests, .allocatedResources) of each
container's requests (component-helpers PodRequests with UseStatusResources,
determineEffectiveRequests); while the resize is Infeasible only max(actuated, allocated). In
v1.30 (the gate off by default) the spec alone counts."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.features import FEATURES_1_30, FEATURES_1_36, Features
from kubesched.objects.parse import parse_pod


def pod(spec_cpu: str, *, actuated: str | None = None, allocated: str | None = None, infeasible: bool = False,
        sidecar_actuated: str | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": "Running"}
    cs: dict[str, Any] = {"name": "c"}
    if actuated is not None:
        cs["resources"] = {"requests": {"cpu": actuated}}
    if allocated is not None:
        cs["allocatedResources"] = {"cpu": allocated}
    status["containerStatuses"] = [cs]
    if sidecar_actuated is not None:
        status["initContainerStatuses"] = [{"name": "side", "resources": {"requests": {"cpu": sidecar_actuated}}}]
    if infeasible:
        status["conditions"] = [{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}]
    spec: dict[str, Any] = {"nodeName": "n1", "containers": [{"name": "c", "image": "i",
                                                               "resources": {"requests": {"cpu": spec_cpu}}}]}
    if sidecar_actuated is not None:
        spec["initContainers"] = [{"name": "side", "image": "i", "restartPolicy": "Always",
                                   "resources": {"requests": {"cpu": "100m"}}}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
            "spec": spec, "status": status}


CASES = [
    ("a resize down in progress counts the larger actuated requests", pod("500m", actuated="1"), FEATURES_1_36, 1000),
    ("an allocated resize up counts before it is actuated", pod("500m", actuated="500m", allocated="2"),
     FEATURES_1_36, 2000),
    ("spec above status: the spec counts", pod("2", actuated="1", allocated="1"), FEATURES_1_36, 2000),
    ("an infeasible resize counts what is actuated and allocated, not the spec",
     pod("4", actuated="1", allocated="1", infeasible=True), FEATURES_1_36, 1000),
    ("without status resources the allocated resources alone do not count (cs.Resources nil)",
     pod("500m", allocated="2"), FEATURES_1_36, 500),
    ("a restartable init container's status counts too", pod("500m", sidecar_actuated="1"), FEATURES_1_36, 1500),
    ("v1.30 counts the spec", pod("500m", actuated="1", allocated="2"), FEATURES_1_30, 500),
]


@pytest.mark.parametrize(("raw", "features", "cpu"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_bound_pod_counts_its_effective_requests(raw: dict[str, Any], features: Features, cpu: int) -> None:
    assert parse_pod(raw, features=features).requests["cpu"] == cpu
