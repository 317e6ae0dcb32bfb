"""The workload API (scheduling.k8s.io/v1alpha2 PodGroup and Workload) and a pod's
spec.schedulingGroup, as the 1.36 API server admits them: served only with GenericWorkload,
validated as on create (one line naming file, document and field), the PodGroupWorkloadExists
admission plugin."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from kubesched.errors import ManifestError
from kubesched.features import FEATURES_1_30, FEATURES_1_36, Features, features_for
from kubesched.objects import ClusterObjects, load_manifests
from kubesched.objects.podgroups import GangSchedulingPolicy, PodGroupSchedulingPolicy, PodGroupTemplateReference

GANG = features_for("1.36", ["GenericWorkload=true,GangScheduling=true"])
WORKLOAD_ONLY = features_for("1.36", ["GenericWorkload=true"])


def load(tmp_path: Path, *docs: str, features: Features = GANG) -> ClusterObjects:
    f = tmp_path / "m.yaml"
    f.write_text("---\n".join(textwrap.dedent(d) for d in docs))
    return load_manifests([f], features=features)


def pod_group(spec: str, name: str = "g") -> str:
    return f"apiVersion: scheduling.k8s.io/v1alpha2\nkind: PodGroup\nmetadata: {{name: {name}}}\nspec: {spec}\n"


def workload(spec: str, name: str = "w") -> str:
    return f"apiVersion: scheduling.k8s.io/v1alpha2\nkind: Workload\nmetadata: {{name: {name}}}\nspec: {spec}\n"


def pod(spec_extra: str = "") -> str:
    return f"apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec: {{containers: [{{name: c}}]{spec_extra}}}\n"


GANG3 = "{schedulingPolicy: {gang: {minCount: 3}}}"
TEMPLATES = "{podGroupTemplates: [{name: workers, schedulingPolicy: {gang: {minCount: 3}}}]}"


def test_a_pod_group_and_its_workload_are_read_with_generic_workload(tmp_path: Path) -> None:
    objs = load(tmp_path, workload(TEMPLATES),
                pod_group("{podGroupTemplateRef: {workload: {workloadName: w, podGroupTemplateName: workers}}, "
                          "schedulingPolicy: {gang: {minCount: 3}}}"),
                pod_group("{schedulingPolicy: {basic: {}}}", name="b"), features=WORKLOAD_ONLY)
    g, b = objs.pod_groups
    assert (g.key, g.scheduling_policy, g.template_ref) == (
        "default/g", PodGroupSchedulingPolicy(gang=GangSchedulingPolicy(3)), PodGroupTemplateReference("w", "workers"))
    assert b.scheduling_policy == PodGroupSchedulingPolicy(basic=True) and b.template_ref is None
    [w] = objs.scheduling_workloads
    assert [(t.name, t.scheduling_policy.gang) for t in w.pod_group_templates] == [("workers", GangSchedulingPolicy(3))]


@pytest.mark.parametrize(("features", "kept"), [
    pytest.param(GANG, "g", id="GenericWorkload keeps a pod's scheduling group"),
    pytest.param(FEATURES_1_36, None, id="without GenericWorkload the API server drops the field"),
])
def test_a_pods_scheduling_group(tmp_path: Path, features: Features, kept: str | None) -> None:
    [p] = load(tmp_path, pod(", schedulingGroup: {podGroupName: g}"), features=features).pods
    assert p.scheduling_group == kept


INVALID = [
    pytest.param(pod_group("{}"), "spec.schedulingPolicy", 'Invalid value: "": must specify one of: basic, gang',
                 id="a PodGroup needs a scheduling policy"),
    pytest.param(pod_group("{schedulingPolicy: {basic: {}, gang: {minCount: 1}}}"), "spec.schedulingPolicy",
                 'Invalid value: "{basic, gang}": must specify exactly one of: basic, gang',
                 id="a scheduling policy is basic or gang, not both"),
    pytest.param(pod_group("{schedulingPolicy: {gang: {}}}"), "spec.schedulingPolicy.gang.minCount",
                 "Required value", id="a gang needs minCount"),
    pytest.param(pod_group("{schedulingPolicy: {gang: {minCount: -1}}}"), "spec.schedulingPolicy.gang.minCount",
                 "Invalid value: -1: must be greater than or equal to 1", id="minCount is positive"),
    pytest.param(pod_group(GANG3, name="Big"), "metadata.name",
                 'Invalid value: "Big": a lowercase RFC 1123 subdomain must consist of',
                 id="a PodGroup name is a DNS subdomain"),
    pytest.param(pod_group("{podGroupTemplateRef: {}, schedulingPolicy: {gang: {minCount: 1}}}"),
                 "spec.podGroupTemplateRef", 'Invalid value: "": must specify one of: workload',
                 id="a template reference names a workload"),
    pytest.param(pod_group("{podGroupTemplateRef: {workload: {podGroupTemplateName: t}}, "
                           "schedulingPolicy: {gang: {minCount: 1}}}"),
                 "spec.podGroupTemplateRef.workload.workloadName", "Required value", id="the workload name is required"),
    pytest.param(pod_group("{podGroupTemplateRef: {workload: {workloadName: w, podGroupTemplateName: a.b}}, "
                           "schedulingPolicy: {gang: {minCount: 1}}}"),
                 "spec.podGroupTemplateRef.workload.podGroupTemplateName",
                 'Invalid value: "a.b": must not contain dots', id="a template name is a DNS label"),
    pytest.param(workload("{}"), "spec.podGroupTemplates", "Required value", id="a Workload needs templates"),
    pytest.param(workload("{podGroupTemplates: [" + ", ".join(
        f"{{name: t{i}, schedulingPolicy: {{basic: {{}}}}}}" for i in range(9)) + "]}"),
        "spec.podGroupTemplates", "Too many: 9: must have at most 8 items", id="a Workload has at most 8 templates"),
    pytest.param(workload("{podGroupTemplates: [{name: t, schedulingPolicy: {basic: {}}}, "
                          "{name: t, schedulingPolicy: {basic: {}}}]}"),
                 "spec.podGroupTemplates[1].name", 'Duplicate value: "t"', id="template names are unique"),
    pytest.param(workload("{podGroupTemplates: [{name: t, schedulingPolicy: {gang: {minCount: 0}}}]}"),
                 "spec.podGroupTemplates[0].schedulingPolicy.gang.minCount", "Required value",
                 id="a template's gang needs minCount"),
    pytest.param(pod(", schedulingGroup: {podGroupName: Big}"), "spec.schedulingGroup.podGroupName",
                 'Invalid value: "Big": a lowercase RFC 1123 subdomain', id="a pod's group name is a DNS subdomain"),
    pytest.param(pod(", schedulingGroup: {}"), "spec.schedulingGroup.podGroupName",
                 "Invalid value: null: must specify one of: `podGroupName`", id="a pod's scheduling group names one"),
]


@pytest.mark.parametrize(("doc", "field", "message"), INVALID)
def test_invalid_objects_are_refused_naming_the_field(tmp_path: Path, doc: str, field: str, message: str) -> None:
    with pytest.raises(ManifestError) as e:
        load(tmp_path, pod_group(GANG3, name="first"), doc)
    assert e.value.document == 1 and e.value.field == field
    assert e.value.message.startswith(message)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize(("docs", "field", "message"), [
    pytest.param([pod_group("{podGroupTemplateRef: {workload: {workloadName: w, podGroupTemplateName: t}}, "
                            "schedulingPolicy: {gang: {minCount: 1}}}")],
                 "spec.podGroupTemplateRef.workload.workloadName",
                 'podgroups.scheduling.k8s.io "g" is forbidden: PodGroup rejected: Workload "w" not found',
                 id="a PodGroup naming a missing Workload is forbidden"),
    pytest.param([workload(TEMPLATES), pod_group("{podGroupTemplateRef: {workload: {workloadName: w, "
                                                 "podGroupTemplateName: t}}, schedulingPolicy: {gang: {minCount: 1}}}")],
                 "spec.podGroupTemplateRef.workload.podGroupTemplateName",
                 'podgroups.scheduling.k8s.io "g" is forbidden: PodGroup rejected: PodGroupTemplate "t" not found in '
                 'Workload "w"', id="a PodGroup naming a missing template is forbidden"),
])
def test_pod_group_workload_exists_admission(tmp_path: Path, docs: list[str], field: str, message: str) -> None:
    with pytest.raises(ManifestError) as e:
        load(tmp_path, *docs)
    assert (e.value.field, e.value.message) == (field, message)


@pytest.mark.parametrize(("features", "hint"), [
    pytest.param(FEATURES_1_36, "served only with the GenericWorkload feature gate", id="1.36 without the gate"),
    pytest.param(FEATURES_1_30, "does not exist in Kubernetes 1.30", id="1.30, before the workload API"),
])
def test_the_workload_api_is_refused_without_its_gate(tmp_path: Path, features: Features, hint: str) -> None:
    with pytest.raises(ManifestError) as e:
        load(tmp_path, pod_group(GANG3), features=features)
    assert e.value.field == "kind" and "unsupported kind 'PodGroup'" in e.value.message and hint in e.value.message
