"""DynamicResources and the structured allocator, end to end through the simulator (v1.36):
device order, counts, allocationMode All, firstAvailable, constraints, allocated devices,
shared claims, template claims, bad input."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kubesched.cli import main
from kubesched.errors import ManifestError
from kubesched.features import FEATURES_1_30, FEATURES_1_36
from kubesched.objects import load_manifests
from kubesched.simulation import Simulator, step_to_json


def node(name: str) -> str:
    return f"""apiVersion: v1
kind: Node
metadata: {{name: {name}, labels: {{kubernetes.io/hostname: {name}}}}}
status: {{capacity: {{cpu: "8", memory: 32Gi, pods: "110"}}}}"""


def gpus(node_name: str, *models: str, generation: int = 1, count: int = 1, pool: str | None = None,
         name: str | None = None) -> str:
    devices = "\n".join(f"""  - name: gpu-{i}
    attributes: {{model: {{string: {m}}}, index: {{int: {i}}}}}
    capacity: {{memory: {{value: {"80Gi" if m == "a100" else "24Gi"}}}}}""" for i, m in enumerate(models))
    return f"""apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: {name or node_name + "-gpus"}}}
spec:
  driver: gpu.example.com
  nodeName: {node_name}
  pool: {{name: {pool or node_name}, generation: {generation}, resourceSliceCount: {count}}}
  devices:
{devices}"""


CLASS = """apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu}
spec:
  selectors: [{cel: {expression: device.driver == "gpu.example.com"}}]"""


def claim(name: str, requests: str, *, status: str = "", constraints: str = "") -> str:
    return f"""apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {{name: {name}}}
spec:
  devices:
    requests:
{textwrap.indent(textwrap.dedent(requests).strip(), "    ")}
{textwrap.indent(textwrap.dedent(constraints).strip(), "    ") if constraints else ""}
{status}"""


def pod(name: str, *claims: str, node_name: str = "") -> str:
    refs = "\n".join(f"  - {{name: c{i}, resourceClaimName: {c}}}" for i, c in enumerate(claims))
    return f"""apiVersion: v1
kind: Pod
metadata: {{name: {name}, uid: uid-{name}}}
spec:
  {"nodeName: " + node_name if node_name else ""}
  containers: [{{name: c, image: i}}]
  resourceClaims:
{refs}"""


def run(tmp_path: Path, *docs: str, deterministic: bool = True) -> list[dict[str, Any]]:
    f = tmp_path / "s.yaml"
    f.write_text("\n---\n".join(docs))
    objs = load_manifests([f], controllers="none" if deterministic else "auto", features=FEATURES_1_36)
    return [step_to_json(s) for s in Simulator(objs, deterministic=True, features=FEATURES_1_36).run().steps]


def devices(step: dict[str, Any]) -> list[str]:
    return [d for a in step.get("allocations", []) for d in a["devices"]]


ONE = "- name: gpu\n  exactly: {deviceClassName: gpu}"


@pytest.mark.parametrize(("requests", "constraints", "want"), [
    pytest.param(ONE, "", ["gpu.example.com/n1/gpu-0 (gpu)"], id="one device is the first of the slice"),
    pytest.param("- name: gpu\n  exactly: {deviceClassName: gpu, count: 2}", "",
                 ["gpu.example.com/n1/gpu-0 (gpu)", "gpu.example.com/n1/gpu-1 (gpu)"], id="a count takes devices in order"),
    pytest.param("- name: gpu\n  exactly: {deviceClassName: gpu, allocationMode: All}", "",
                 [f"gpu.example.com/n1/gpu-{i} (gpu)" for i in range(3)], id="allocation mode All takes every device"),
    pytest.param("""- name: gpu
  exactly:
    deviceClassName: gpu
    selectors: [{cel: {expression: 'device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0'}}]""",
                 "", ["gpu.example.com/n1/gpu-2 (gpu)"], id="a request's selector narrows the class"),
    pytest.param("""- name: gpu
  firstAvailable:
  - {name: h100, deviceClassName: gpu, selectors: [{cel: {expression: 'device.attributes["gpu.example.com"].model == "h100"'}}]}
  - {name: any, deviceClassName: gpu, count: 2}""", "",
                 ["gpu.example.com/n1/gpu-0 (gpu/any)", "gpu.example.com/n1/gpu-1 (gpu/any)"],
                 id="firstAvailable falls back to the next subrequest"),
    pytest.param("""- name: a
  exactly: {deviceClassName: gpu}
- name: b
  exactly: {deviceClassName: gpu}""", "constraints: [{requests: [a, b], matchAttribute: gpu.example.com/model}]",
                 ["gpu.example.com/n1/gpu-0 (a)", "gpu.example.com/n1/gpu-1 (b)"],
                 id="matchAttribute keeps devices of one model"),
    pytest.param("""- name: a
  exactly: {deviceClassName: gpu}
- name: b
  exactly: {deviceClassName: gpu}""", "constraints: [{requests: [a, b], distinctAttribute: gpu.example.com/model}]",
                 ["gpu.example.com/n1/gpu-0 (a)", "gpu.example.com/n1/gpu-2 (b)"],
                 id="distinctAttribute backtracks to a device of another model"),
])
def test_the_allocator_picks_upstream_s_devices(tmp_path: Path, requests: str, constraints: str,
                                                 want: list[str]) -> None:
    steps = run(tmp_path, node("n1"), gpus("n1", "l4", "l4", "a100"), CLASS, claim("c", requests, constraints=constraints),
                pod("p", "c"))
    assert steps[-1]["node"] == "n1"
    assert devices(steps[-1]) == want


def test_allocated_devices_are_not_given_twice_and_a_full_node_is_unresolvable(tmp_path: Path) -> None:
    steps = run(tmp_path, node("n1"), node("n2"), gpus("n1", "l4"), CLASS, claim("c1", ONE), claim("c2", ONE),
                pod("p1", "c1"), pod("p2", "c2"))
    assert [s["node"] for s in steps] == ["n1", None]
    assert steps[1]["failures"]["n1"] == {"plugin": "DynamicResources", "reasons": ["cannot allocate all claims"]}
    assert steps[1]["message"] == ("0/2 nodes are available: 2 cannot allocate all claims. still not schedulable, "
                                   "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.")


def test_a_claim_allocated_elsewhere_is_not_available_on_other_nodes(tmp_path: Path) -> None:
    allocated = """status:
  allocation:
    devices: {results: [{request: gpu, driver: gpu.example.com, pool: n2, device: gpu-0}]}
    nodeSelector: {nodeSelectorTerms: [{matchFields: [{key: metadata.name, operator: In, values: [n2]}]}]}
  reservedFor: [{resource: pods, name: other, uid: uid-other}]"""
    steps = run(tmp_path, node("n1"), node("n2"), gpus("n1", "l4"), gpus("n2", "l4"), CLASS,
                claim("shared", ONE, status=allocated), pod("p", "shared"))
    assert steps[-1]["node"] == "n2"  # the shared claim's devices are on n2
    assert steps[-1]["failures"]["n1"]["reasons"] == ["resourceclaim not available on the node"]


def test_a_pod_without_claims_is_not_touched_and_scores_zero(tmp_path: Path) -> None:
    plain = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: i}]}"
    steps = run(tmp_path, node("n1"), node("n2"), plain)
    assert {s["DynamicResources"] for s in steps[-1]["scores"].values()} == {0}


def test_an_earlier_alternative_scores_higher(tmp_path: Path) -> None:
    requests = """- name: gpu
  firstAvailable:
  - {name: big, deviceClassName: gpu, selectors: [{cel: {expression: 'device.attributes["gpu.example.com"].model == "a100"'}}]}
  - {name: small, deviceClassName: gpu}"""
    steps = run(tmp_path, node("n1"), node("n2"), gpus("n1", "l4"), gpus("n2", "a100"), CLASS, claim("c", requests),
                pod("p", "c"))
    scores = {n: s["DynamicResources"] for n, s in steps[-1]["scores"].items()}
    # Raw 8 - 0 on n2, 8 - 1 on n1; normalized to 100 and weighted 2.
    assert scores == {"n1": 2 * (7 * 100 // 8), "n2": 200}
    assert steps[-1]["node"] == "n2"


def test_an_incomplete_pool_is_not_used(tmp_path: Path) -> None:
    steps = run(tmp_path, node("n1"), gpus("n1", "l4", count=2), CLASS, claim("c", ONE), pod("p", "c"))
    assert steps[-1]["node"] is None


def test_a_pod_with_a_missing_claim_waits(tmp_path: Path) -> None:
    f = tmp_path / "s.yaml"
    f.write_text("\n---\n".join([node("n1"), CLASS, pod("p", "nope")]))
    objs = load_manifests([f], controllers="none", features=FEATURES_1_36)
    res = Simulator(objs, deterministic=True, features=FEATURES_1_36).run()
    assert res.skipped["default/p"] == 'resourceclaim.resource.k8s.io "nope" not found'


def test_the_resourceclaim_controller_makes_template_claims_in_the_default_mode(tmp_path: Path) -> None:
    template = """apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: t}
spec: {spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu}}]}}}"""
    p = """apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers: [{name: c, image: i}]
  resourceClaims: [{name: gpu, resourceClaimTemplateName: t}]"""
    f = tmp_path / "s.yaml"
    f.write_text("\n---\n".join([node("n1"), gpus("n1", "l4"), CLASS, template, p]))
    objs = load_manifests([f], features=FEATURES_1_36)
    (made,) = objs.resource_claims
    assert made.name.startswith("p-gpu-") and len(made.name) == len("p-gpu-") + 5
    assert made.meta.controller_ref() is not None and made.meta.annotations == {
        "resource.kubernetes.io/pod-claim-name": "gpu"}
    res = Simulator(objs, deterministic=True, features=FEATURES_1_36).run()
    assert res.final["default/p"] == "n1"
    # --deterministic reads the input as written: no claim, the pod waits for it.
    assert load_manifests([f], controllers="none", features=FEATURES_1_36).resource_claims == []


@pytest.mark.parametrize(("doc", "field", "message"), [
    pytest.param(CLASS.replace('device.driver == "gpu.example.com"', "device.driver =="), "spec.selectors[0].cel.expression",
                 "compilation failed", id="a selector that does not parse"),
    pytest.param(CLASS.replace('device.driver == "gpu.example.com"', "device.nodriver"), "spec.selectors[0].cel.expression",
                 "compilation failed", id="a selector naming an unknown field"),
    pytest.param(claim("c", "- name: gpu\n  exactly: {deviceClassName: gpu, count: 0}"),
                 "spec.devices.requests[0].exactly.count", "must be greater than zero", id="a zero count"),
    pytest.param(claim("c", "- name: gpu"), "spec.devices.requests[0]", "exactly one of", id="a request without a kind"),
])
def test_bad_dra_input_names_file_document_and_field(tmp_path: Path, doc: str, field: str, message: str) -> None:
    f = tmp_path / "s.yaml"
    f.write_text("\n---\n".join([node("n1"), doc]))
    with pytest.raises(ManifestError) as e:
        load_manifests([f], features=FEATURES_1_36)
    assert field in str(e.value) and message in str(e.value) and "document 1" in str(e.value)
    r = CliRunner().invoke(main, ["simulate", str(f)])
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1 and field in r.output


def test_v1_30_has_no_resource_k8s_io_v1(tmp_path: Path) -> None:
    f = tmp_path / "s.yaml"
    f.write_text("\n---\n".join([node("n1"), CLASS]))
    with pytest.raises(ManifestError, match="served from Kubernetes 1.34"):
        load_manifests([f], features=FEATURES_1_30)
