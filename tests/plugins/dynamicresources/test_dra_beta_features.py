"""DynamicResources and the structured allocator with 1.36's beta DRA features, end to end
through the simulator: partitionable devices (shared counters), consumable capacity, device
taints, binding conditions, extended resources backed by DRA (with NodeResourcesFit), and the
API server's validation of the new fields. Each expected device is worked out by hand from
upstream's first-fit order (pools by driver/name, slices by name, devices in slice order)."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

import pytest

from kubesched.errors import ManifestError
from kubesched.features import FEATURES_1_36, Features, features_for
from kubesched.objects import load_manifests
from kubesched.objects.devices import ResourceClaim
from kubesched.simulation import Simulator, step_to_json

DRIVER = "gpu.example.com"
CLASS = f"""apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {{name: gpu}}
spec:
  selectors: [{{cel: {{expression: device.driver == "{DRIVER}"}}}}]"""


def node(name: str, extra: str = "") -> str:
    return f"""apiVersion: v1
kind: Node
metadata: {{name: {name}, labels: {{kubernetes.io/hostname: {name}}}}}
status: {{capacity: {{cpu: "8", memory: 32Gi, pods: "110"{extra}}}}}"""


def slice_(name: str, devices: str, *, pool: str = "n1", count: int = 1, node_name: str = "n1",
           counters: str = "") -> str:
    body = f"  sharedCounters:\n{textwrap.indent(textwrap.dedent(counters).strip(), '  ')}" if counters else \
        f"  devices:\n{textwrap.indent(textwrap.dedent(devices).strip(), '  ')}"
    return f"""apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: {name}}}
spec:
  driver: {DRIVER}
  nodeName: {node_name}
  pool: {{name: {pool}, generation: 1, resourceSliceCount: {count}}}
{body}"""


def claim(name: str, request: str, status: str = "") -> str:
    return f"""apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {{name: {name}}}
spec:
  devices:
    requests:
    - name: r
      exactly:
{textwrap.indent(textwrap.dedent(request).strip(), "        ")}
{status}"""


def pod(name: str, *claims: str) -> str:
    refs = "\n".join(f"  - {{name: c{i}, resourceClaimName: {c}}}" for i, c in enumerate(claims))
    return f"""apiVersion: v1
kind: Pod
metadata: {{name: {name}, uid: uid-{name}}}
spec:
  containers: [{{name: c, image: i}}]
  resourceClaims:
{refs}"""


def simulate(tmp_path: Path, *docs: str, features: Features = FEATURES_1_36,
             informer_lists: bool = True) -> tuple[list[dict[str, Any]], Simulator]:
    """The deterministic procedure, with the DeviceClasses reaching the ExtendedResourceCache
    as a running scheduler's informer list would bring them (``informer_lists``)."""
    f = tmp_path / "s.yaml"
    f.write_text("\n---\n".join(docs))
    objs = load_manifests([f], controllers="none", features=features)
    sim = Simulator(objs, deterministic=True, features=features, informer_lists=informer_lists)
    return [step_to_json(s) for s in sim.run().steps], sim


def devices(step: dict[str, Any]) -> list[str]:
    return [d for a in step.get("allocations", []) for d in a["devices"]]


def stored(sim: Simulator, name: str) -> ResourceClaim:
    c = sim.objects.resource_claim("default", name)
    assert c is not None
    return c


# ---------------------------------------------------------------- partitionable devices
# One GPU's 40Gi of memory shared by a whole-GPU device and two halves (a second slice of the
# pool holds the counter set).
COUNTERS = slice_("n1-counters", "", counters="- name: gpu-0\n  counters: {memory: {value: 40Gi}}", count=2)
PARTITIONS = slice_("n1-parts", """
    - {name: whole, consumesCounters: [{counterSet: gpu-0, counters: {memory: {value: 40Gi}}}]}
    - {name: half-0, consumesCounters: [{counterSet: gpu-0, counters: {memory: {value: 20Gi}}}]}
    - {name: half-1, consumesCounters: [{counterSet: gpu-0, counters: {memory: {value: 20Gi}}}]}""", count=2)
HELD_WHOLE = """status:
  allocation:
    devices: {results: [{request: r, driver: gpu.example.com, pool: n1, device: whole}]}
  reservedFor: [{resource: pods, name: other, uid: uid-other}]"""
HELD_HALF = HELD_WHOLE.replace("device: whole", "device: half-1")


@pytest.mark.parametrize(("request_", "held", "want"), [
    pytest.param("{deviceClassName: gpu, count: 2}", "",
                 ["gpu.example.com/n1/half-0 (r)", "gpu.example.com/n1/half-1 (r)"],
                 id="two devices backtrack past the whole GPU to the two halves that share its memory"),
    pytest.param("{deviceClassName: gpu}", HELD_WHOLE, None,
                 id="an allocated whole GPU leaves no memory for either half"),
    pytest.param("{deviceClassName: gpu}", HELD_HALF, ["gpu.example.com/n1/half-0 (r)"],
                 id="an allocated half leaves the other half but not the whole GPU"),
])
def test_devices_consume_the_shared_counters_of_their_pool(tmp_path: Path, request_: str, held: str,
                                                           want: list[str] | None) -> None:
    docs = [node("n1"), COUNTERS, PARTITIONS, CLASS, claim("c", request_), pod("p", "c")]
    if held:
        docs.append(claim("held", "{deviceClassName: gpu}", held))
    steps, _ = simulate(tmp_path, *docs)
    if want is None:
        assert steps[-1]["node"] is None
        assert steps[-1]["failures"]["n1"]["reasons"] == ["cannot allocate all claims"]
    else:
        assert devices(steps[-1]) == want


def test_a_consumption_of_an_unknown_counter_set_makes_the_pool_invalid(tmp_path: Path) -> None:
    bad = slice_("n1-parts", """
        - {name: whole, consumesCounters: [{counterSet: gpu-0, counters: {memory: {value: 40Gi}}}]}
        - {name: half-0, consumesCounters: [{counterSet: gpu-9, counters: {memory: {value: 20Gi}}}]}""", count=2)
    steps, _ = simulate(tmp_path, node("n1"), COUNTERS, bad, CLASS, claim("c", "{deviceClassName: gpu}"), pod("p", "c"))
    assert steps[-1]["failures"]["n1"]["reasons"] == ["invalid resource pools were encountered"]


# ---------------------------------------------------------------- consumable capacity
SHARED = slice_("n1-nics", """
    - name: nic-0
      allowMultipleAllocations: true
      capacity:
        bandwidth:
          value: 10G
          requestPolicy: {default: 1G, validRange: {min: 1G, step: 1G}}""")


def capacity_claim(name: str, bandwidth: str | None) -> str:
    request = "{deviceClassName: gpu}" if bandwidth is None else \
        f"{{deviceClassName: gpu, capacity: {{requests: {{bandwidth: {bandwidth}}}}}}}"
    return claim(name, request)


@pytest.mark.parametrize(("first", "second", "want_nodes", "want_consumed"), [
    pytest.param("4G", "6G", ["n1", "n1"], [4 * 10**9, 6 * 10**9], id="two shares fill the capacity exactly"),
    pytest.param("4G", "7G", ["n1", None], [4 * 10**9], id="a share beyond the capacity left does not fit"),
    pytest.param("1500M", "8G", ["n1", "n1"], [2 * 10**9, 8 * 10**9],
                 id="a request is rounded up to the policy's next step"),
    pytest.param(None, "9G", ["n1", "n1"], [1 * 10**9, 9 * 10**9], id="no request consumes the policy's default"),
])
def test_a_device_allowing_multiple_allocations_is_shared_until_its_capacity_is_used(
        tmp_path: Path, first: str | None, second: str, want_nodes: list[str | None], want_consumed: list[int]) -> None:
    steps, sim = simulate(tmp_path, node("n1"), SHARED, CLASS, capacity_claim("c1", first), capacity_claim("c2", second),
                          pod("p1", "c1"), pod("p2", "c2"))
    assert [s["node"] for s in steps] == want_nodes
    consumed = []
    for name in ("c1", "c2"):
        alloc = stored(sim, name).allocation
        if alloc is not None:
            (r,) = alloc.devices
            assert r.device == "nic-0" and re.fullmatch(r"[0-9a-f-]{36}", r.share_id)
            assert r.consumed_capacity is not None
            consumed.append(int(r.consumed_capacity["bandwidth"]))
    assert consumed == want_consumed
    assert re.fullmatch(r"gpu\.example\.com/n1/nic-0/[0-9a-f-]{36} \(r\)", devices(steps[0])[0])


def test_a_dedicated_device_must_hold_the_requested_capacity(tmp_path: Path) -> None:
    small = slice_("n1-gpus", """
        - {name: gpu-0, capacity: {memory: {value: 24Gi}}}
        - {name: gpu-1, capacity: {memory: {value: 80Gi}}}""")
    request = "{deviceClassName: gpu, capacity: {requests: {memory: 40Gi}}}"
    steps, _ = simulate(tmp_path, node("n1"), small, CLASS, claim("c", request), pod("p", "c"))
    assert devices(steps[-1]) == ["gpu.example.com/n1/gpu-1 (r)"]


# ---------------------------------------------------------------- device taints
@pytest.mark.parametrize(("effect", "tolerations", "want"), [
    pytest.param("NoSchedule", "", "gpu-1", id="an untolerated NoSchedule taint skips the device"),
    pytest.param("NoExecute", "", "gpu-1", id="an untolerated NoExecute taint skips the device"),
    pytest.param("None", "", "gpu-0", id="a taint with effect None does not"),
    pytest.param("NoSchedule", "tolerations: [{key: broken, operator: Exists}]", "gpu-0",
                 id="a toleration of the key lets the request take the tainted device"),
    pytest.param("NoSchedule", "tolerations: [{key: broken, value: other}]", "gpu-1",
                 id="a toleration of another value does not"),
    pytest.param("NoSchedule", "tolerations: [{key: broken, operator: Exists, effect: NoExecute}]", "gpu-1",
                 id="a toleration of another effect does not"),
])
def test_tainted_devices_are_skipped_unless_tolerated(tmp_path: Path, effect: str, tolerations: str,
                                                      want: str) -> None:
    tainted = slice_("n1-gpus", f"""
        - {{name: gpu-0, taints: [{{key: broken, value: "yes", effect: {effect}}}]}}
        - {{name: gpu-1}}""")
    request = f"deviceClassName: gpu\n{tolerations}"
    steps, _ = simulate(tmp_path, node("n1"), tainted, CLASS, claim("c", request), pod("p", "c"))
    assert devices(steps[-1]) == [f"gpu.example.com/n1/{want} (r)"]


def test_without_the_gate_taints_are_ignored(tmp_path: Path) -> None:
    tainted = slice_("n1-gpus", """
        - {name: gpu-0, taints: [{key: broken, effect: NoSchedule}]}
        - {name: gpu-1}""")
    steps, _ = simulate(tmp_path, node("n1"), tainted, CLASS, claim("c", "{deviceClassName: gpu}"), pod("p", "c"),
                        features=features_for("1.36", ["DRADeviceTaints=false"]))
    assert devices(steps[-1]) == ["gpu.example.com/n1/gpu-0 (r)"]


# ---------------------------------------------------------------- binding conditions
BINDING = "bindingConditions: [example.com/attached], bindingFailureConditions: [example.com/failed]"


def test_pools_with_binding_conditions_come_last_and_prebind_waits_for_them(tmp_path: Path) -> None:
    # Pool "a" sorts first but its device needs binding conditions: pool "b" is tried first.
    pool_a = slice_("a", f"- {{name: dev, {BINDING}}}", pool="a")
    pool_b = slice_("b", "- name: dev", pool="b")
    steps, _ = simulate(tmp_path, node("n1"), pool_a, pool_b, CLASS, claim("c", "{deviceClassName: gpu}"),
                        pod("p", "c"))
    assert devices(steps[-1]) == ["gpu.example.com/b/dev (r)"]


def test_a_device_whose_binding_conditions_never_come_true_fails_prebind(tmp_path: Path) -> None:
    only = slice_("a", f"- {{name: dev, {BINDING}}}", pool="a")
    steps, sim = simulate(tmp_path, node("n1"), only, CLASS, claim("c", "{deviceClassName: gpu}"), pod("p", "c"))
    assert steps[-1]["node"] is None
    assert "device binding timeout: claim=c" in steps[-1]["message"]
    alloc = stored(sim, "c").allocation
    assert alloc is not None and alloc.devices[0].binding_conditions == ("example.com/attached",)


def test_a_claim_whose_device_reports_a_binding_failure_is_unavailable(tmp_path: Path) -> None:
    only = slice_("a", f"- {{name: dev, {BINDING}}}", pool="a")
    failed = """status:
  allocation:
    devices:
      results:
      - {request: r, driver: gpu.example.com, pool: a, device: dev, bindingConditions: [example.com/attached],
         bindingFailureConditions: [example.com/failed]}
  devices:
  - driver: gpu.example.com
    pool: a
    device: dev
    conditions: [{type: example.com/failed, status: "True", reason: Broken, message: no link}]"""
    steps, sim = simulate(tmp_path, node("n1"), only, CLASS, claim("c", "{deviceClassName: gpu}", failed),
                          pod("p", "c"))
    assert steps[-1]["failures"]["n1"]["reasons"] == ["resourceclaim not available on the node"]
    assert "deallocation of ResourceClaim completed" in steps[-1]["message"]
    assert stored(sim, "c").allocation is None


# ---------------------------------------------------------------- extended resources backed by DRA
GPUS = slice_("n1-gpus", "- {name: gpu-0}\n- {name: gpu-1}\n- {name: gpu-2}")
MAPPED_CLASS = CLASS + "\n  extendedResourceName: example.com/gpu"


def extended_pod(resource: str, count: int, *, init: int = 0) -> str:
    init_part = f"\n  initContainers: [{{name: i, image: i, resources: {{requests: {{{resource}: \"{init}\"}}, " \
                f"limits: {{{resource}: \"{init}\"}}}}}}]" if init else ""
    return f"""apiVersion: v1
kind: Pod
metadata: {{name: p, uid: uid-p}}
spec:{init_part}
  containers: [{{name: c, image: i, resources: {{requests: {{cpu: 100m, {resource}: "{count}"}},
                 limits: {{{resource}: "{count}"}}}}}}]"""


@pytest.mark.parametrize(("cls", "pod_doc", "want_requests", "want_devices"), [
    pytest.param(MAPPED_CLASS, extended_pod("example.com/gpu", 2), [("container-0-request-1", 2)],
                 ["gpu.example.com/n1/gpu-0", "gpu.example.com/n1/gpu-1"],
                 id="a class's extendedResourceName turns the request into devices"),
    pytest.param(CLASS, extended_pod("deviceclass.resource.kubernetes.io/gpu", 1), [("container-0-request-1", 1)],
                 ["gpu.example.com/n1/gpu-0"], id="every class has its implicit extended resource name"),
    pytest.param(MAPPED_CLASS, extended_pod("example.com/gpu", 1, init=3),
                 [("container-0-request-0", 2), ("container-1-request-1", 1)],
                 ["gpu.example.com/n1/gpu-0", "gpu.example.com/n1/gpu-1", "gpu.example.com/n1/gpu-2"],
                 id="an init container reuses the regular container's devices and asks for the rest"),
])
def test_extended_resources_without_allocatable_are_allocated_by_dra(
        tmp_path: Path, cls: str, pod_doc: str, want_requests: list[tuple[str, int]], want_devices: list[str]) -> None:
    steps, sim = simulate(tmp_path, node("n1"), GPUS, cls, pod_doc)
    assert steps[-1]["node"] == "n1"
    (made,) = sim.objects.resource_claims()
    assert re.fullmatch(r"p-extended-resources-[a-z0-9]{5}", made.name)
    assert made.meta.annotations == {"resource.kubernetes.io/extended-resource-claim": "true"}
    owner = made.meta.controller_ref()
    assert owner is not None and (owner.kind, owner.name, owner.uid) == ("Pod", "p", "uid-p")
    assert [(r.name, r.exactly.count if r.exactly else 0) for r in made.spec.requests] == want_requests
    assert made.allocation is not None and [r.uid for r in made.reserved_for] == ["uid-p"]
    assert sorted(f"{d.driver}/{d.pool}/{d.device}" for d in made.allocation.devices) == want_devices


def test_a_node_whose_device_plugin_has_the_resource_uses_it_and_makes_no_claim(tmp_path: Path) -> None:
    steps, sim = simulate(tmp_path, node("n1", ', example.com/gpu: "4"'), GPUS, MAPPED_CLASS,
                          extended_pod("example.com/gpu", 2))
    assert steps[-1]["node"] == "n1" and "allocations" not in steps[-1]
    assert sim.objects.resource_claims() == []


def test_too_few_devices_fail_in_dynamic_resources_not_in_fit(tmp_path: Path) -> None:
    steps, _ = simulate(tmp_path, node("n1"), GPUS, MAPPED_CLASS, extended_pod("example.com/gpu", 4))
    assert steps[-1]["failures"]["n1"] == {"plugin": "DynamicResources", "reasons": ["cannot allocate all claims"]}


@pytest.mark.parametrize("features", [
    pytest.param(features_for("1.36", ["DRAExtendedResource=false"]), id="with the gate off"),
])
def test_without_the_gate_an_unmapped_extended_resource_is_insufficient(tmp_path: Path, features: Features) -> None:
    steps, sim = simulate(tmp_path, node("n1"), GPUS, MAPPED_CLASS, extended_pod("example.com/gpu", 2),
                          features=features)
    assert steps[-1]["message"] == ("0/1 nodes are available: 1 Insufficient example.com/gpu. no new claims to "
                                    "deallocate, preemption: 0/1 nodes are available: 1 Preemption is not helpful "
                                    "for scheduling.")
    assert sim.objects.resource_claims() == []


def test_the_conformance_procedure_replays_no_device_class_events_so_no_class_serves_an_extended_resource(
        tmp_path: Path) -> None:
    # As the v1.36.2 reference traces show (corpus 4, 0025): the ExtendedResourceCache is fed
    # only by DeviceClass events, which the procedure does not replay.
    steps, sim = simulate(tmp_path, node("n1"), GPUS, MAPPED_CLASS, extended_pod("example.com/gpu", 2),
                          informer_lists=False)
    assert steps[-1]["message"].startswith("0/1 nodes are available: 1 Insufficient example.com/gpu.")
    assert sim.objects.extended_resource_classes() == {}


def test_of_two_classes_naming_one_resource_the_newest_wins(tmp_path: Path) -> None:
    older = MAPPED_CLASS.replace("name: gpu}", "name: old, creationTimestamp: '2024-01-01T00:00:00Z'}").replace(
        f'device.driver == "{DRIVER}"', "'false'")
    newer = MAPPED_CLASS.replace("name: gpu}", "name: gpu, creationTimestamp: '2024-06-01T00:00:00Z'}")
    steps, sim = simulate(tmp_path, node("n1"), GPUS, older, newer, extended_pod("example.com/gpu", 1))
    assert steps[-1]["node"] == "n1"
    (made,) = sim.objects.resource_claims()
    assert made.spec.requests[0].exactly is not None and made.spec.requests[0].exactly.device_class_name == "gpu"


# ---------------------------------------------------------------- validation
@pytest.mark.parametrize(("doc", "field", "message"), [
    pytest.param(slice_("s", "- {name: d, taints: [{key: k, effect: Sometimes}]}"), "spec.devices[0].taints[0].effect",
                 "Unsupported value", id="a taint's effect is one of three"),
    pytest.param(slice_("s", "- {name: d, taints: [{key: k}]}"), "spec.devices[0].taints[0].effect",
                 "Required value", id="a taint needs an effect"),
    pytest.param(slice_("s", "- {name: d, consumesCounters: [{counterSet: Bad_Name, counters: {m: {value: 1}}}]}"),
                 "spec.devices[0].consumesCounters[0].counterSet", "RFC 1123 label",
                 id="a counter set is named by a DNS label"),
    pytest.param(slice_("s", "- {name: d, capacity: {bw: {value: 10, requestPolicy: {default: 1}}}}"),
                 "spec.devices[0].capacity[bw].requestPolicy", "allowMultipleAllocations must be true",
                 id="a request policy needs multiple allocations"),
    pytest.param(slice_("s", "- {name: d, allowMultipleAllocations: true, capacity: {bw: {value: 10, requestPolicy: "
                             "{default: 3, validRange: {min: 2, step: 2}}}}}"),
                 "spec.devices[0].capacity[bw].requestPolicy.validRange.step", "not a multiple of a given step",
                 id="the default of a range is a step from its minimum"),
    pytest.param(slice_("s", "- {name: d, bindingConditions: [a.io/x]}"), "spec.devices[0].bindingFailureConditions",
                 "required to use bindingConditions", id="binding conditions come with failure conditions"),
    pytest.param(slice_("s", "", counters="- {name: c, counters: {m: {value: 1}}}").replace(
        "  sharedCounters:", "  devices: [{name: d}]\n  sharedCounters:"), "spec",
        "only one of `sharedCounters` or `devices`", id="a slice holds counters or devices"),
    pytest.param(claim("c", "{deviceClassName: gpu, tolerations: [{key: k, operator: Exists, value: v}]}"),
                 "spec.devices.requests[0].exactly.tolerations[0].value", "must be empty for operator `Exists`",
                 id="an Exists toleration has no value"),
    pytest.param(CLASS + "\n  extendedResourceName: gpu", "spec.extendedResourceName",
                 "must be a valid extended resource name", id="an extended resource name has a domain"),
])
def test_bad_beta_fields_name_file_document_and_field(tmp_path: Path, doc: str, field: str, message: str) -> None:
    f = tmp_path / "s.yaml"
    f.write_text("\n---\n".join([node("n1"), doc]))
    with pytest.raises(ManifestError) as e:
        load_manifests([f], features=FEATURES_1_36)
    text = str(e.value)
    assert field in text and message in text and "document 1" in text and str(f) in text
