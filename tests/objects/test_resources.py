"""Pod resource requests (facts §3): PodRequests (containers, init containers, sidecars,
overhead), the limits-only defaulting, the node-side non-zero cpu/memory of calculateResource
(with its v1.30 sidecar quirk) and the pod-side requests of NodeResourcesFit scoring.

Cases follow upstream pkg/api/v1/resource/helpers_test.go (TestPodResourceRequests) and
pkg/scheduler/framework/types_test.go (calculateResource / TestCalculatePodResources)."""

from __future__ import annotations

from typing import Any

import pytest
from builders import make_pod

from kubesched.errors import FieldError
from kubesched.features import FEATURES_1_30
from kubesched.objects import Pod
from kubesched.objects.parse import parse_pod
from kubesched.objects.resources import (
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    is_extended_resource_name,
    is_scalar_resource_name,
)

MI = 2**20
GI = 2**30
DCPU, DMEM = DEFAULT_MILLI_CPU_REQUEST, DEFAULT_MEMORY_REQUEST


def c(
    requests: dict[str, Any] | None = None, limits: dict[str, Any] | None = None, *, sidecar: bool = False
) -> dict[str, Any]:
    """One container spec: requests, limits, and restartPolicy Always for a sidecar."""
    out: dict[str, Any] = {}
    if requests is not None:
        out["requests"] = requests
    if limits is not None:
        out["limits"] = limits
    if sidecar:
        out["sidecar"] = True
    return out


def pod(
    containers: list[dict[str, Any]], init: list[dict[str, Any]] | None = None, overhead: dict[str, Any] | None = None
) -> Pod:
    b = make_pod().name("p")
    for spec in containers:
        b = b.container(requests=spec.get("requests"), limits=spec.get("limits"))
    for spec in init or []:
        b = b.init_container(requests=spec.get("requests"), sidecar=spec.get("sidecar", False))
    if overhead is not None:
        b = b.overhead(**overhead)
    m = b.manifest()
    for i, spec in enumerate(init or []):  # the builder has no init-container limits
        if "limits" in spec:
            m["spec"]["initContainers"][i].setdefault("resources", {})["limits"] = spec["limits"]
    if containers and all(not s for s in containers):
        m["spec"]["containers"] = [{"name": f"c{i}"} for i in range(len(containers))]
    # The rows are v1.30's calculateResource (the sidecar quirk); 1.36's accounting is in
    # test_resources_136 below.
    return parse_pod(m, features=FEATURES_1_30)


# (id, containers, init containers, overhead, requests, non-zero cpu, non-zero memory, score requests)
CASES: list[Any] = [
    # ---- upstream TestPodResourceRequests (cpu-only requests)
    (
        "a larger init container wins over the containers",
        [c({"cpu": "1"})],
        [c({"cpu": "4"})],
        None,
        {"cpu": 4000},
        4000,
        DMEM,
        {"cpu": 4000, "memory": DMEM},
    ),
    (
        "larger containers win over the init container",
        [c({"cpu": "2"}), c({"cpu": "3"})],
        [c({"cpu": "2"})],
        None,
        {"cpu": 5000},
        5000,
        2 * DMEM,
        {"cpu": 5000, "memory": 2 * DMEM},
    ),
    (
        "pod overhead is added to the requests",
        [c({"cpu": "2"}), c({"cpu": "3"})],
        [c({"cpu": "2"}, {"cpu": "2"})],
        {"cpu": "1", "memory": "1Gi"},
        {"cpu": 6000, "memory": GI},
        6000,
        2 * DMEM + GI,
        {"cpu": 6000, "memory": 2 * DMEM + GI},
    ),
    (
        "a restartable init container adds to the containers",
        [c({"cpu": "1"})],
        [c({"cpu": "1"}, sidecar=True)],
        None,
        {"cpu": 2000},
        1000,
        DMEM,
        {"cpu": 2000, "memory": 2 * DMEM},
    ),
    (
        "multiple restartable init containers sum up and beat an earlier init container",
        [c({"cpu": "1"})],
        [c({"cpu": "5"}), c({"cpu": "1"}, sidecar=True), c({"cpu": "2"}, sidecar=True), c({"cpu": "3"}, sidecar=True)],
        None,
        {"cpu": 7000},
        6000,
        DMEM,
        {"cpu": 7000, "memory": 4 * DMEM},
    ),
    (
        "an init container runs beside the sidecars started before it, not after it",
        [c({"cpu": "1"})],
        [
            c({"cpu": "5"}),
            c({"cpu": "1"}, sidecar=True),
            c({"cpu": "2"}, sidecar=True),
            c({"cpu": "5"}),
            c({"cpu": "3"}, sidecar=True),
        ],
        None,
        {"cpu": 8000},
        8000,
        DMEM,
        {"cpu": 8000, "memory": 4 * DMEM},
    ),
    (
        "a sidecar, a big init container and a container",
        [c({"cpu": "100"})],
        [c({"cpu": "10"}, sidecar=True), c({"cpu": "200"})],
        None,
        {"cpu": 210000},
        210000,
        DMEM,
        {"cpu": 210000, "memory": 2 * DMEM},
    ),
    # ---- calculateResource cases (cpu and memory)
    (
        "a requestless container requests nothing but counts 100m and 200Mi for scoring",
        [c()],
        None,
        None,
        {},
        DCPU,
        DMEM,
        {"cpu": DCPU, "memory": DMEM},
    ),
    (
        "one container with requests",
        [c({"cpu": "500m", "memory": "500Mi"})],
        None,
        None,
        {"cpu": 500, "memory": 500 * MI},
        500,
        500 * MI,
        {"cpu": 500, "memory": 500 * MI},
    ),
    (
        "two containers with requests add up",
        [c({"cpu": "500m", "memory": "500Mi"}), c({"cpu": "700m", "memory": "800Mi"})],
        None,
        None,
        {"cpu": 1200, "memory": 1300 * MI},
        1200,
        1300 * MI,
        {"cpu": 1200, "memory": 1300 * MI},
    ),
    (
        "a larger ordinary init container wins",
        [c({"cpu": "500m", "memory": "500Mi"})],
        [c({"cpu": "700m", "memory": "800Mi"})],
        None,
        {"cpu": 700, "memory": 800 * MI},
        700,
        800 * MI,
        {"cpu": 700, "memory": 800 * MI},
    ),
    (
        "a sidecar counts in the requests but only through the init maximum in the non-zero sums (v1.30 quirk)",
        [c({"cpu": "500m", "memory": "500Mi"})],
        [c({"cpu": "700m", "memory": "800Mi"}, sidecar=True)],
        None,
        {"cpu": 1200, "memory": 1300 * MI},
        700,
        800 * MI,
        {"cpu": 1200, "memory": 1300 * MI},
    ),
    (
        "two sidecars make the init maximum their sum in the non-zero sums",
        [c({"memory": "1Gi"})],
        [c({"memory": "1Gi"}, sidecar=True), c({"memory": "1Gi"}, sidecar=True)],
        None,
        {"memory": 3 * GI},
        DCPU,
        2 * GI,
        {"cpu": 3 * DCPU, "memory": 3 * GI},
    ),
    (
        "a requestless sidecar is defaulted once per container for scoring",
        [c()],
        [c(sidecar=True)],
        None,
        {},
        DCPU,
        DMEM,
        {"cpu": 2 * DCPU, "memory": 2 * DMEM},
    ),
    (
        "an explicit zero request stays zero in every sum",
        [c({"cpu": "0", "memory": "0"})],
        None,
        None,
        {"cpu": 0, "memory": 0},
        0,
        0,
        {"cpu": 0, "memory": 0},
    ),
    (
        "only a missing key is defaulted for the non-zero sums",
        [c({"cpu": "500m"})],
        None,
        None,
        {"cpu": 500},
        500,
        DMEM,
        {"cpu": 500, "memory": DMEM},
    ),
    (
        "memory-only overhead adds to the non-zero memory only",
        [c()],
        None,
        {"memory": "10Mi"},
        {"memory": 10 * MI},
        DCPU,
        DMEM + 10 * MI,
        {"cpu": DCPU, "memory": DMEM + 10 * MI},
    ),
    (
        "cpu-only overhead adds to the non-zero cpu only",
        [c({"cpu": "500m"})],
        None,
        {"cpu": "250m"},
        {"cpu": 750},
        750,
        DMEM,
        {"cpu": 750, "memory": DMEM},
    ),
    (
        "an empty overhead adds nothing",
        [c({"cpu": "1"})],
        None,
        {},
        {"cpu": 1000},
        1000,
        DMEM,
        {"cpu": 1000, "memory": DMEM},
    ),
    (
        "requests are rounded up once on the exact sum, non-zero sums per container",
        [c({"cpu": "0.0001", "memory": "0.5"}), c({"cpu": "0.0001", "memory": "0.5"})],
        None,
        None,
        {"cpu": 1, "memory": 1},
        2,
        2,
        {"cpu": 1, "memory": 1},
    ),
    (
        "extended resources, hugepages and ephemeral storage follow the same rules",
        [c({"example.com/gpu": 2, "hugepages-2Mi": "4Mi", "ephemeral-storage": "1Gi"})],
        [c({"example.com/gpu": 3})],
        None,
        {"example.com/gpu": 3, "hugepages-2Mi": 4 * MI, "ephemeral-storage": GI},
        DCPU,
        DMEM,
        {"example.com/gpu": 3, "hugepages-2Mi": 4 * MI, "ephemeral-storage": GI, "cpu": DCPU, "memory": DMEM},
    ),
    # ---- limits-only defaulting (SetDefaults_Pod)
    (
        "a container with only limits requests its limits",
        [c(None, {"cpu": "2", "memory": "1Gi"})],
        None,
        None,
        {"cpu": 2000, "memory": GI},
        2000,
        GI,
        {"cpu": 2000, "memory": GI},
    ),
    (
        "a limit only fills the requests that are missing",
        [c({"memory": "512Mi"}, {"cpu": "1", "memory": "1Gi"})],
        None,
        None,
        {"cpu": 1000, "memory": 512 * MI},
        1000,
        512 * MI,
        {"cpu": 1000, "memory": 512 * MI},
    ),
    (
        "an init container with only limits requests its limits",
        [c({"cpu": "1"})],
        [c(None, {"cpu": "3"})],
        None,
        {"cpu": 3000},
        3000,
        DMEM,
        {"cpu": 3000, "memory": DMEM},
    ),
    (
        "a sidecar with only limits requests its limits",
        [c({"cpu": "1"})],
        [c(None, {"cpu": "1"}, sidecar=True)],
        None,
        {"cpu": 2000},
        1000,
        DMEM,
        {"cpu": 2000, "memory": 2 * DMEM},
    ),
    (
        "memory 1.5 is rounded up to 2 bytes and cpu 0.0001 to 1m",
        [c({"cpu": "0.0001", "memory": "1.5"})],
        None,
        None,
        {"cpu": 1, "memory": 2},
        1,
        2,
        {"cpu": 1, "memory": 2},
    ),
]


@pytest.mark.parametrize(
    "containers, init, overhead, requests, nz_cpu, nz_mem, score", [x[1:] for x in CASES], ids=[x[0] for x in CASES]
)
def test_pod_resources(
    containers: list[dict[str, Any]],
    init: list[dict[str, Any]] | None,
    overhead: dict[str, Any] | None,
    requests: dict[str, int],
    nz_cpu: int,
    nz_mem: int,
    score: dict[str, int],
) -> None:
    p = pod(containers, init, overhead)
    assert dict(p.requests) == requests
    assert (p.non_zero_cpu, p.non_zero_memory) == (nz_cpu, nz_mem)
    assert dict(p.score_requests) == score


def test_overhead_and_limits_are_kept_on_the_pod() -> None:
    p = pod([c({"cpu": "1"}, {"cpu": "2"})], None, {"cpu": "100m"})
    assert p.overhead is not None and set(p.overhead) == {"cpu"}
    assert set(p.containers[0].limits) == {"cpu"}
    assert pod([c({"cpu": "1"})]).overhead is None


def _manifest(container: dict[str, Any], *, init: bool = False) -> dict[str, Any]:
    m = make_pod().name("p").manifest()
    if init:
        m["spec"]["initContainers"] = [container]
    else:
        m["spec"]["containers"] = [container]
    return m


@pytest.mark.parametrize(
    "container, init, path, message",
    [
        pytest.param(
            {"name": "c", "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}},
            False,
            "spec.containers[0].resources.requests.cpu",
            "Invalid value: must be less than or equal to cpu limit",
            id="a request above its limit is rejected",
        ),
        pytest.param(
            {"name": "c", "resources": {"requests": {"memory": "-1"}}},
            False,
            "spec.containers[0].resources.requests.memory",
            "must be greater than or equal to 0",
            id="a negative request is rejected",
        ),
        pytest.param(
            {"name": "c", "resources": {"limits": {"cpu": "-1"}}},
            False,
            "spec.containers[0].resources.limits.cpu",
            "must be greater than or equal to 0",
            id="a negative limit is rejected",
        ),
        pytest.param(
            {"name": "c", "resources": {"requests": {"cpu": "1x"}}},
            False,
            "spec.containers[0].resources.requests.cpu",
            'Invalid value: "1x": quantities must match the regular expression '
            "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
            id="an invalid quantity names its field",
        ),
        pytest.param(
            {"name": "c", "resources": {"requests": ["cpu"]}},
            False,
            "spec.containers[0].resources.requests",
            "must be an object, got list",
            id="requests must be a map",
        ),
        pytest.param(
            {"name": "c", "restartPolicy": "Always"},
            False,
            "spec.containers[0].restartPolicy",
            "Forbidden: may not be set for non-init containers",
            id="a regular container may not have a restartPolicy",
        ),
        pytest.param(
            {"name": "i", "restartPolicy": "OnFailure"},
            True,
            "spec.initContainers[0].restartPolicy",
            "Unsupported value: 'OnFailure': supported values: \"Always\"",
            id="an init container's restartPolicy can only be Always",
        ),
        pytest.param(
            {"name": "i", "resources": {"requests": {"cpu": "3"}, "limits": {"cpu": "2"}}},
            True,
            "spec.initContainers[0].resources.requests.cpu",
            "Invalid value: must be less than or equal to cpu limit",
            id="an init container's request above its limit is rejected",
        ),
    ],
)
def test_invalid_resources(container: dict[str, Any], init: bool, path: str, message: str) -> None:
    with pytest.raises(FieldError) as exc:
        parse_pod(_manifest(container, init=init))
    assert (exc.value.path, exc.value.message) == (path, message)


def test_negative_overhead_is_rejected() -> None:
    m = make_pod().name("p").manifest()
    m["spec"]["overhead"] = {"cpu": "-100m"}
    with pytest.raises(FieldError) as exc:
        parse_pod(m)
    assert exc.value.path == "spec.overhead.cpu"


@pytest.mark.parametrize(
    "name, extended, scalar",
    [
        pytest.param("example.com/gpu", True, True, id="a domain-prefixed name is an extended resource"),
        pytest.param("nvidia.com/gpu", True, True, id="nvidia.com/gpu is an extended resource"),
        pytest.param("cpu", False, False, id="cpu is native"),
        pytest.param("memory", False, False, id="memory is native"),
        pytest.param("pods", False, False, id="pods is native and not scalar"),
        pytest.param("ephemeral-storage", False, False, id="ephemeral storage is native and not scalar"),
        pytest.param("hugepages-2Mi", False, True, id="hugepages are scalar"),
        pytest.param("attachable-volumes-aws-ebs", False, True, id="attachable volumes are scalar"),
        pytest.param("kubernetes.io/batteries", False, True, id="a kubernetes.io name is prefixed native and scalar"),
        pytest.param("requests.example.com/gpu", False, False, id="a requests. name is not extended"),
        pytest.param("foo", False, False, id="an unqualified custom name is ignored"),
        pytest.param("Example.com/gpu", False, False, id="an upper-case prefix is not a DNS subdomain"),
        pytest.param("example.com/-gpu", False, False, id="a name part must start alphanumeric"),
        pytest.param("example.com/a/b", False, False, id="two slashes are not a qualified name"),
        pytest.param("example.com/" + "a" * 63, True, True, id="a 63-character name part is allowed"),
        pytest.param("example.com/" + "a" * 64, False, False, id="a 64-character name part is too long"),
    ],
)
def test_resource_name_classes(name: str, extended: bool, scalar: bool) -> None:
    assert is_extended_resource_name(name) is extended
    assert is_scalar_resource_name(name) is scalar
