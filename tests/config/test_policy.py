"""The legacy scheduler Policy translated to a KubeSchedulerConfiguration as kube-scheduler v1.21/v1.22
did (legacy_registry.go, factory.go createFromPolicy, ValidatePolicy; facts section 9).

Expected plugin lists come from upstream's TestCompatibility_v1_Scheduler / TestCreateFromConfig, with
one deliberate difference: NoDiskConflict also enables VolumeRestrictions at PreFilter (v1.30's plugin
needs it; see kubesched.config.policy)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kubesched._runtime.handle import FrameworkHandle
from kubesched._runtime.profile import build_framework
from kubesched.config import (
    DEFAULT_SCHEDULER_NAME,
    Extender,
    ExtenderManagedResource,
    ExtenderTLSConfig,
    KubeSchedulerConfiguration,
    PluginRef,
    PluginSet,
    dump_config,
    parse_config,
)
from kubesched.config.args import (
    InterPodAffinityArgs,
    NodeLabelArgs,
    PodTopologySpreadArgs,
    RequestedToCapacityRatioArgs,
    ResourceSpec,
    ServiceAffinityArgs,
    UtilizationShapePoint,
)
from kubesched.config.policy import (
    DEFAULT_PREDICATES,
    MAX_WEIGHT,
    VALID_PREDICATE_NAMES,
    VALID_PRIORITY_NAMES,
    _dedup,
    load_policy,
    load_policy_translation,
    parse_policy,
    translate_policy_data,
)
from kubesched.errors import ConfigError
from kubesched.features import FEATURES_1_30
from kubesched.plugins.registry import REGISTRY

EXAMPLE_POLICY = Path(__file__).resolve().parents[2] / "examples" / "policy" / "policy.yaml"

# Seeded by createFromPolicy whatever the Policy says.
SEEDS = {"queueSort": ["PrioritySort"], "postFilter": ["DefaultPreemption"], "bind": ["DefaultBinder"]}
MANDATORY_FILTERS = ["NodeUnschedulable", "TaintToleration"]


def policy(**fields: Any) -> dict[str, Any]:
    return {"kind": "Policy", "apiVersion": "v1", **fields}


def translate(**fields: Any) -> KubeSchedulerConfiguration:
    return parse_policy(policy(**fields))


def enabled(cfg: KubeSchedulerConfiguration) -> dict[str, list[Any]]:
    """Every non-empty extension point: plugin names, (name, weight) at Score."""
    out: dict[str, list[Any]] = {}
    for key, ps in cfg.profiles[0].plugins.items():
        if ps.enabled:
            out[key] = [(p.name, p.weight) if key == "score" else p.name for p in ps.enabled]
    return out


def translated_points(cfg: KubeSchedulerConfiguration) -> dict[str, list[Any]]:
    """:func:`enabled` without the three seeded plugins (checked once, separately)."""
    out = enabled(cfg)
    for key, names in SEEDS.items():
        assert out.pop(key) == names
    return out


def error_of(raw: Any) -> str:
    with pytest.raises(ConfigError) as e:
        parse_policy(raw)
    return str(e.value)


# ---------------------------------------------------------------- the profile's shape
def test_the_result_is_one_default_scheduler_profile_running_only_the_translated_plugins() -> None:
    cfg = translate(predicates=[{"name": "HostName"}], priorities=[{"name": "ImageLocalityPriority", "weight": 5}])
    assert len(cfg.profiles) == 1
    prof = cfg.profiles[0]
    assert prof.scheduler_name == DEFAULT_SCHEDULER_NAME
    # The v1.30 MultiPoint defaults are all disabled ...
    assert prof.plugins.multi_point == PluginSet(disabled=(PluginRef("*"),))
    # ... and nothing else than the seeds, the mandatory filters and the policy's plugins runs.
    assert enabled(cfg) == {
        **SEEDS,
        "filter": ["NodeUnschedulable", "NodeName", "TaintToleration"],
        "score": [("ImageLocality", 5)],
    }
    fwk = build_framework(prof, REGISTRY, FrameworkHandle.for_nodes([]))
    assert [p.name for p in fwk.plugins_at("Filter")] == ["NodeUnschedulable", "NodeName", "TaintToleration"]
    assert [p.name for p in fwk.plugins_at("Score")] == ["ImageLocality"]
    assert fwk.score_weights == {"ImageLocality": 5}


def test_node_resources_fit_only_filters_in_a_translated_profile() -> None:
    # v1.30's NodeResourcesFit also scores by default; the legacy translation never scored with it.
    cfg = translate(predicates=[{"name": "GeneralPredicates"}], priorities=[])
    fwk = build_framework(cfg.profiles[0], REGISTRY, FrameworkHandle.for_nodes([]))
    assert "NodeResourcesFit" in [p.name for p in fwk.plugins_at("Filter")]
    assert "NodeResourcesFit" in [p.name for p in fwk.plugins_at("PreFilter")]
    assert fwk.plugins_at("Score") == [] and fwk.plugins_at("PreScore") == []


# ---------------------------------------------------------------- every predicate
PREDICATE_CASES = [
    pytest.param({"name": "GeneralPredicates"},
                 {"preFilter": ["NodeResourcesFit", "NodePorts", "NodeAffinity"],
                  "filter": ["NodeUnschedulable", "NodeResourcesFit", "NodeName", "NodePorts", "NodeAffinity",
                             "TaintToleration"]},
                 id="GeneralPredicates is resources, node name, ports and node affinity"),
    pytest.param({"name": "PodToleratesNodeTaints"}, {"filter": MANDATORY_FILTERS},
                 id="PodToleratesNodeTaints is TaintToleration (mandatory anyway)"),
    pytest.param({"name": "CheckNodeUnschedulable"}, {"filter": MANDATORY_FILTERS},
                 id="CheckNodeUnschedulable is NodeUnschedulable (mandatory anyway)"),
    pytest.param({"name": "PodFitsResources"},
                 {"preFilter": ["NodeResourcesFit"],
                  "filter": ["NodeUnschedulable", "NodeResourcesFit", "TaintToleration"]},
                 id="PodFitsResources is NodeResourcesFit at PreFilter and Filter"),
    pytest.param({"name": "HostName"}, {"filter": ["NodeUnschedulable", "NodeName", "TaintToleration"]},
                 id="HostName is NodeName"),
    pytest.param({"name": "PodFitsHostPorts"},
                 {"preFilter": ["NodePorts"], "filter": ["NodeUnschedulable", "NodePorts", "TaintToleration"]},
                 id="PodFitsHostPorts is NodePorts"),
    pytest.param({"name": "PodFitsPorts"},
                 {"preFilter": ["NodePorts"], "filter": ["NodeUnschedulable", "NodePorts", "TaintToleration"]},
                 id="PodFitsPorts is the old name of PodFitsHostPorts"),
    pytest.param({"name": "MatchNodeSelector"},
                 {"preFilter": ["NodeAffinity"], "filter": ["NodeUnschedulable", "NodeAffinity", "TaintToleration"]},
                 id="MatchNodeSelector is NodeAffinity"),
    pytest.param({"name": "NoDiskConflict"},
                 {"preFilter": ["VolumeRestrictions"],
                  "filter": ["NodeUnschedulable", "VolumeRestrictions", "TaintToleration"]},
                 id="NoDiskConflict is VolumeRestrictions with its v1.30 PreFilter"),
    pytest.param({"name": "NoVolumeZoneConflict"}, {"filter": [*MANDATORY_FILTERS, "VolumeZone"]},
                 id="NoVolumeZoneConflict is VolumeZone"),
    pytest.param({"name": "MaxCSIVolumeCountPred"}, {"filter": [*MANDATORY_FILTERS, "NodeVolumeLimits"]},
                 id="MaxCSIVolumeCountPred is NodeVolumeLimits"),
    pytest.param({"name": "MaxEBSVolumeCount"}, {"filter": [*MANDATORY_FILTERS, "EBSLimits"]},
                 id="MaxEBSVolumeCount is EBSLimits"),
    pytest.param({"name": "MaxGCEPDVolumeCount"}, {"filter": [*MANDATORY_FILTERS, "GCEPDLimits"]},
                 id="MaxGCEPDVolumeCount is GCEPDLimits"),
    pytest.param({"name": "MaxAzureDiskVolumeCount"}, {"filter": [*MANDATORY_FILTERS, "AzureDiskLimits"]},
                 id="MaxAzureDiskVolumeCount is AzureDiskLimits"),
    pytest.param({"name": "MaxCinderVolumeCount"}, {"filter": [*MANDATORY_FILTERS, "CinderLimits"]},
                 id="MaxCinderVolumeCount is CinderLimits"),
    pytest.param({"name": "CheckVolumeBinding"},
                 {"preFilter": ["VolumeBinding"], "filter": [*MANDATORY_FILTERS, "VolumeBinding"],
                  "reserve": ["VolumeBinding"], "preBind": ["VolumeBinding"]},
                 id="CheckVolumeBinding is VolumeBinding at PreFilter Filter Reserve and PreBind"),
    pytest.param({"name": "MatchInterPodAffinity"},
                 {"preFilter": ["InterPodAffinity"], "filter": [*MANDATORY_FILTERS, "InterPodAffinity"]},
                 id="MatchInterPodAffinity is InterPodAffinity"),
    pytest.param({"name": "EvenPodsSpread"},
                 {"preFilter": ["PodTopologySpread"], "filter": [*MANDATORY_FILTERS, "PodTopologySpread"]},
                 id="EvenPodsSpread is PodTopologySpread"),
    pytest.param({"name": "CheckNodeLabelPresence"}, {"filter": [*MANDATORY_FILTERS, "NodeLabel"]},
                 id="CheckNodeLabelPresence by name is NodeLabel without args"),
    pytest.param({"name": "CheckServiceAffinity"},
                 {"preFilter": ["ServiceAffinity"], "filter": [*MANDATORY_FILTERS, "ServiceAffinity"]},
                 id="CheckServiceAffinity by name is ServiceAffinity without args"),
    pytest.param({"name": "RequireZone", "argument": {"labelsPresence": {"labels": ["zone"], "presence": True}}},
                 {"filter": [*MANDATORY_FILTERS, "NodeLabel"]},
                 id="a custom labelsPresence predicate is NodeLabel"),
    pytest.param({"name": "ZoneAffinity", "argument": {"serviceAffinity": {"labels": ["zone"]}}},
                 {"preFilter": ["ServiceAffinity"], "filter": [*MANDATORY_FILTERS, "ServiceAffinity"]},
                 id="a custom serviceAffinity predicate is ServiceAffinity"),
    pytest.param({"name": "HostName", "argument": {"labelsPresence": {"labels": ["zone"], "presence": True}}},
                 {"filter": ["NodeUnschedulable", "NodeName", "TaintToleration"]},
                 id="a registered predicate name ignores its argument"),
]


@pytest.mark.parametrize("predicate, expected", PREDICATE_CASES)
def test_each_predicate_translates_to_its_plugins(predicate: dict[str, Any], expected: dict[str, list[str]]) -> None:
    assert translated_points(translate(predicates=[predicate], priorities=[])) == expected


def test_predicate_cases_cover_every_valid_predicate_name() -> None:
    covered = {p.values[0]["name"] for p in PREDICATE_CASES}
    assert set(VALID_PREDICATE_NAMES) <= covered


# ---------------------------------------------------------------- every priority
PRIORITY_CASES = [
    pytest.param({"name": "SelectorSpreadPriority"},
                 {"preScore": ["PodTopologySpread"], "score": [("PodTopologySpread", 3)]},
                 PodTopologySpreadArgs(defaulting_type="System"),
                 id="SelectorSpreadPriority is PodTopologySpread with the system default constraints"),
    pytest.param({"name": "ServiceSpreadingPriority"},
                 {"preScore": ["PodTopologySpread"], "score": [("PodTopologySpread", 3)]},
                 PodTopologySpreadArgs(defaulting_type="System"),
                 id="ServiceSpreadingPriority is the old name of SelectorSpreadPriority"),
    pytest.param({"name": "EvenPodsSpreadPriority"},
                 {"preScore": ["PodTopologySpread"], "score": [("PodTopologySpread", 3)]},
                 PodTopologySpreadArgs(defaulting_type="List"),
                 id="EvenPodsSpreadPriority is PodTopologySpread with the pod's constraints only"),
    pytest.param({"name": "TaintTolerationPriority"},
                 {"preScore": ["TaintToleration"], "score": [("TaintToleration", 3)]}, None,
                 id="TaintTolerationPriority is TaintToleration"),
    pytest.param({"name": "NodeAffinityPriority"},
                 {"preScore": ["NodeAffinity"], "score": [("NodeAffinity", 3)]}, None,
                 id="NodeAffinityPriority is NodeAffinity"),
    pytest.param({"name": "ImageLocalityPriority"}, {"score": [("ImageLocality", 3)]}, None,
                 id="ImageLocalityPriority is ImageLocality"),
    pytest.param({"name": "InterPodAffinityPriority"},
                 {"preScore": ["InterPodAffinity"], "score": [("InterPodAffinity", 3)]},
                 InterPodAffinityArgs(), id="InterPodAffinityPriority is InterPodAffinity with default args"),
    pytest.param({"name": "NodePreferAvoidPodsPriority"}, {"score": [("NodePreferAvoidPods", 3)]}, None,
                 id="NodePreferAvoidPodsPriority is NodePreferAvoidPods"),
    pytest.param({"name": "MostRequestedPriority"}, {"score": [("NodeResourcesMostAllocated", 3)]}, None,
                 id="MostRequestedPriority is NodeResourcesMostAllocated"),
    pytest.param({"name": "LeastRequestedPriority"}, {"score": [("NodeResourcesLeastAllocated", 3)]}, None,
                 id="LeastRequestedPriority is NodeResourcesLeastAllocated"),
    pytest.param({"name": "BalancedResourceAllocation"}, {"score": [("NodeResourcesBalancedAllocation", 3)]}, None,
                 id="BalancedResourceAllocation is NodeResourcesBalancedAllocation"),
    pytest.param({"name": "EqualPriority"}, {}, None, id="EqualPriority is skipped"),
    pytest.param({"name": "RequestedToCapacityRatioPriority", "argument": {"requestedToCapacityRatioArguments": {
                     "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}],
                     "resources": [{"name": "intel.com/foo", "weight": 3}, {"name": "intel.com/bar", "weight": 5}]}}},
                 {"score": [("RequestedToCapacityRatio", 3)]},
                 RequestedToCapacityRatioArgs(
                     shape=(UtilizationShapePoint(0, 0), UtilizationShapePoint(100, 10)),
                     resources=(ResourceSpec("intel.com/foo", 3), ResourceSpec("intel.com/bar", 5))),
                 id="RequestedToCapacityRatioPriority with arguments is RequestedToCapacityRatio"),
    pytest.param({"name": "PreferSSD", "argument": {"labelPreference": {"label": "ssd", "presence": True}}},
                 {"score": [("NodeLabel", 3)]}, NodeLabelArgs(present_labels_preference=("ssd",)),
                 id="a custom labelPreference priority is NodeLabel"),
    pytest.param({"name": "AvoidSpot", "argument": {"labelPreference": {"label": "spot"}}},
                 {"score": [("NodeLabel", 3)]}, NodeLabelArgs(absent_labels_preference=("spot",)),
                 id="a labelPreference without presence prefers nodes without the label"),
    pytest.param({"name": "RackSpread", "argument": {"serviceAntiAffinity": {"label": "rack"}}},
                 {"score": [("ServiceAffinity", 3)]}, ServiceAffinityArgs(anti_affinity_labels_preference=("rack",)),
                 id="a custom serviceAntiAffinity priority is ServiceAffinity"),
]


@pytest.mark.parametrize("priority, expected, args", PRIORITY_CASES)
def test_each_priority_translates_to_its_plugins_and_weight(priority: dict[str, Any], expected: dict[str, list[Any]],
                                                            args: Any) -> None:
    cfg = translate(predicates=[], priorities=[{**priority, "weight": 3}])
    assert translated_points(cfg) == {"filter": MANDATORY_FILTERS, **expected}
    if args is not None:
        plugin = expected["score"][0][0]
        assert cfg.profiles[0].plugin_config[plugin] == args


def test_priority_cases_cover_every_valid_priority_name() -> None:
    covered = {p.values[0]["name"] for p in PRIORITY_CASES}
    assert set(VALID_PRIORITY_NAMES) <= covered


# ---------------------------------------------------------------- unknown names list the valid ones
@pytest.mark.parametrize("name", ["PodFitsResource", "CheckNodeMemoryPressure", "MatchNodeSelectorPriority", ""],
                         ids=["a misspelt predicate", "a predicate removed before v1.21",
                              "a priority name used as a predicate", "an empty predicate name"])
def test_an_unknown_predicate_is_an_error_listing_the_valid_predicates(name: str) -> None:
    msg = error_of(policy(predicates=[{"name": "HostName"}, {"name": name}]))
    assert msg.startswith(f'predicates[1].name: predicate type not found for "{name}" (valid predicates: ')
    for valid in VALID_PREDICATE_NAMES:
        assert valid in msg
    assert "serviceAffinity or labelsPresence argument" in msg


@pytest.mark.parametrize("name", ["LeastRequested", "RequestedToCapacityRatioPriority", "PodFitsResources"],
                         ids=["a misspelt priority", "the RequestedToCapacityRatioPriority name without arguments",
                              "a predicate name used as a priority"])
def test_an_unknown_priority_is_an_error_listing_the_valid_priorities(name: str) -> None:
    msg = error_of(policy(priorities=[{"name": "ImageLocalityPriority", "weight": 1}, {"name": name, "weight": 1}]))
    assert msg.startswith(f'priorities[1].name: priority type not found for "{name}" (valid priorities: ')
    for valid in VALID_PRIORITY_NAMES:
        assert valid in msg


# ---------------------------------------------------------------- bad arguments and ValidatePolicy
RTCR = "requestedToCapacityRatioArguments"


def rtcr(shape: list[dict[str, int]], resources: list[dict[str, Any]] | None = None, name: str = "R",
         weight: int = 1) -> dict[str, Any]:
    arg: dict[str, Any] = {"shape": shape}
    if resources is not None:
        arg["resources"] = resources
    return {"name": name, "weight": weight, "argument": {RTCR: arg}}


GOOD_SHAPE = [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
EXT = {"urlPrefix": "http://ext", "filterVerb": "filter"}


@pytest.mark.parametrize("raw, message", [
    pytest.param(policy(predicates=[{"name": "P", "argument": {}}]),
                 'predicates[0].argument: exactly 1 predicate argument is required, numArgs: 0, predicate "P"',
                 id="a predicate argument without a member"),
    pytest.param(policy(predicates=[{"name": "HostName", "argument": {}}]),
                 'predicates[0].argument: exactly 1 predicate argument is required, numArgs: 0, predicate "HostName"',
                 id="an empty argument on a registered predicate"),
    pytest.param(policy(predicates=[{"name": "P", "argument": {"serviceAffinity": {"labels": ["a"]},
                                                               "labelsPresence": {"labels": ["b"]}}}]),
                 'predicates[0].argument: exactly 1 predicate argument is required, numArgs: 2, predicate "P"',
                 id="a predicate argument with two members"),
    pytest.param(policy(priorities=[{"name": "P", "weight": 1, "argument": {}}]),
                 "priorities[0].argument: no priority arguments set for priority P",
                 id="a priority argument without a member"),
    pytest.param(policy(priorities=[{"name": "P", "weight": 1, "argument": {
                     "labelPreference": {"label": "a"}, "serviceAntiAffinity": {"label": "b"}}}]),
                 'priorities[0].argument: exactly 1 priority argument is required, numArgs: 2, priority "P"',
                 id="a priority argument with two members"),
    pytest.param(policy(priorities=[{"name": "ImageLocalityPriority"}]),
                 "priorities[0].weight: priority ImageLocalityPriority should have a positive weight applied to it "
                 "or it has overflown",
                 id="a priority without a weight"),
    pytest.param(policy(priorities=[{"name": "EqualPriority", "weight": -1}]),
                 "priorities[0].weight: priority EqualPriority should have a positive weight applied to it "
                 "or it has overflown",
                 id="a negative weight even on the skipped EqualPriority"),
    pytest.param(policy(priorities=[{"name": "ImageLocalityPriority", "weight": MAX_WEIGHT}]),
                 "priorities[0].weight: priority ImageLocalityPriority should have a positive weight applied to it "
                 "or it has overflown",
                 id="a weight of MaxWeight"),
    pytest.param(policy(priorities=[{"name": "ImageLocalityPriority", "weight": 2**31}]),
                 "priorities[0].weight: the weight 2147483648 of priority ImageLocalityPriority does not fit in an int32",
                 id="a weight that does not fit the plugin weight"),
    pytest.param(policy(priorities=[
                     {"name": "a", "weight": 1, "argument": {"labelPreference": {"label": "x"}}},
                     {"name": "b", "weight": 2, "argument": {"labelPreference": {"label": "y"}}}]),
                 'priorities[1].argument: LabelPreference  priority "b" has a different weight with "a"',
                 id="labelPreference priorities with different weights"),
    pytest.param(policy(priorities=[
                     {"name": "a", "weight": 1, "argument": {"serviceAntiAffinity": {"label": "x"}}},
                     {"name": "b", "weight": 2, "argument": {"serviceAntiAffinity": {"label": "y"}}}]),
                 'priorities[1].argument: ServiceAntiAffinity  priority "b" has a different weight with "a"',
                 id="serviceAntiAffinity priorities with different weights"),
    pytest.param(policy(priorities=[rtcr(GOOD_SHAPE, name="a"), rtcr(GOOD_SHAPE, name="b")]),
                 'priorities[1].argument: priority "b" redeclares custom priority "RequestedToCapacityRatio", '
                 'from: "a"',
                 id="two requestedToCapacityRatio priorities"),
    pytest.param(policy(priorities=[rtcr([])]),
                 f"priorities[0].argument.{RTCR}.shape: Required value: at least one point must be specified",
                 id="a requestedToCapacityRatio shape without points"),
    pytest.param(policy(priorities=[rtcr([{"utilization": 101, "score": 0}])]),
                 f"priorities[0].argument.{RTCR}.shape[0].utilization: Invalid value: 101: not in valid range [0, 100]",
                 id="a shape utilization above 100"),
    pytest.param(policy(priorities=[rtcr([{"utilization": 0, "score": 11}])]),
                 f"priorities[0].argument.{RTCR}.shape[0].score: Invalid value: 11: not in valid range [0, 10]",
                 id="a shape score above 10"),
    pytest.param(policy(priorities=[rtcr([{"utilization": 50, "score": 1}, {"utilization": 50, "score": 2}])]),
                 f"priorities[0].argument.{RTCR}.shape[1].utilization: Invalid value: 50: utilization values must "
                 "be sorted in increasing order",
                 id="shape utilizations not increasing"),
    pytest.param(policy(priorities=[rtcr(GOOD_SHAPE, [{"name": "cpu"}])]),
                 f"priorities[0].argument.{RTCR}.resources[0].weight: Invalid value: 0: resource weight of cpu not "
                 "in valid range [1, inf)",
                 id="a requestedToCapacityRatio resource without a weight"),
    pytest.param(policy(hardPodAffinitySymmetricWeight=101),
                 "hardPodAffinitySymmetricWeight: Invalid value: 101: not in valid range [0-100]",
                 id="hardPodAffinitySymmetricWeight above 100"),
    pytest.param(policy(hardPodAffinitySymmetricWeight=-1),
                 "hardPodAffinitySymmetricWeight: Invalid value: -1: not in valid range [0-100]",
                 id="a negative hardPodAffinitySymmetricWeight"),
    pytest.param(policy(extenders=[{"urlPrefix": "http://e", "prioritizeVerb": "prioritize"}]),
                 "extenders[0].weight: Invalid value: 0: must have a positive weight applied to it",
                 id="a prioritizing extender without a weight"),
    pytest.param(policy(extenders=[{**EXT, "bindVerb": "bind"}, {**EXT, "bindVerb": "bind"}]),
                 'extenders: Invalid value: "found 2 extenders implementing bind": only one extender can implement '
                 "bind",
                 id="two binding extenders"),
    pytest.param(policy(extenders=[{**EXT, "managedResources": [{"name": "example.com/foo"}]},
                                   {**EXT, "managedResources": [{"name": "example.com/foo"}]}]),
                 'extenders[1].managedResources[0].name: Invalid value: "example.com/foo": duplicate extender '
                 "managed resource name",
                 id="a resource managed by two extenders"),
    pytest.param(policy(priorities=[{"name": "ImageLocalityPriority", "weight": 0}],
                        hardPodAffinitySymmetricWeight=200),
                 "[priorities[0].weight: priority ImageLocalityPriority should have a positive weight applied to it "
                 "or it has overflown, hardPodAffinitySymmetricWeight: Invalid value: 200: not in valid range "
                 "[0-100]]",
                 id="every ValidatePolicy error is reported at once"),
    pytest.param(policy(priorities=[{"name": "NodeLabel", "weight": 1}]),
                 'priorities[0].name: priority "NodeLabel" needs a labelPreference argument',
                 id="a NodeLabel priority by name without labelPreference"),
    pytest.param(policy(priorities=[{"name": "ServiceAffinity", "weight": 1}]),
                 'priorities[0].name: priority "ServiceAffinity" needs a serviceAntiAffinity argument',
                 id="a ServiceAffinity priority by name without serviceAntiAffinity"),
    pytest.param(policy(priorities=[{"name": "RequestedToCapacityRatio", "weight": 1,
                                     "argument": {RTCR: {"shape": GOOD_SHAPE}}}]),
                 'priorities[0].name: priority "RequestedToCapacityRatio" needs a requestedToCapacityRatioArguments '
                 'argument, and a priority of that name ignores its argument: name it differently, e.g. '
                 '"RequestedToCapacityRatioPriority"',
                 id="a priority named RequestedToCapacityRatio whose argument is ignored"),
    pytest.param(policy(predicates=[
                     {"name": "a", "argument": {"labelsPresence": {"labels": ["foo"], "presence": True}}},
                     {"name": "b", "argument": {"labelsPresence": {"labels": ["foo"], "presence": False}}}]),
                 "the NodeLabel args built from labelsPresence/labelPreference arguments are invalid: "
                 'presentLabels[0]: Invalid value: "foo": conflict with absentLabels[0]',
                 id="a label both required present and absent"),
])
def test_invalid_policies_are_rejected_with_upstream_wording(raw: dict[str, Any], message: str) -> None:
    assert error_of(raw) == message


# ---------------------------------------------------------------- strict decoding
@pytest.mark.parametrize("raw, message", [
    pytest.param(None, "empty policy: expected a Policy object", id="an empty document"),
    pytest.param({"apiVersion": "v1"}, 'kind: Required value: must be "Policy"', id="a document without kind"),
    pytest.param({"kind": "KubeSchedulerConfiguration"},
                 'kind: Unsupported value: "KubeSchedulerConfiguration": supported values: "Policy"',
                 id="another kind"),
    pytest.param(policy(apiVersion="v2"), 'apiVersion: Unsupported value: "v2": supported values: "v1"',
                 id="another apiVersion"),
    pytest.param(policy(predicate=[]), 'predicate: unknown field "predicate"', id="an unknown top-level field"),
    pytest.param(policy(Predicates=[]), 'Predicates: unknown field "Predicates"',
                 id="field names are case-sensitive outside extenders"),
    pytest.param(policy(priorities=[{"name": "a", "weight": 1}, {"name": "b", "weight": 1},
                                    {"name": "c", "weight": 1, "argument": {"labelPreference": {"lable": "x"}}}]),
                 'priorities[2].argument.labelPreference.lable: unknown field "lable"',
                 id="an unknown field deep in a priority argument"),
    pytest.param(policy(priorities=[{"name": "c", "weight": 1, "argument": {"labelPreference": {"label": 3}}}]),
                 "priorities[0].argument.labelPreference.label: Invalid value: 3: must be a string",
                 id="a label that is not a string"),
    pytest.param(policy(priorities=[{"name": "ImageLocalityPriority", "weight": "1"}]),
                 'priorities[0].weight: Invalid value: "1": must be an integer', id="a weight that is a string"),
    pytest.param(policy(predicates=[{"name": "p", "argument": {"serviceAffinity": {"labels": "zone"}}}]),
                 'predicates[0].argument.serviceAffinity.labels: Invalid value: "zone": must be a list',
                 id="serviceAffinity labels that are not a list"),
    pytest.param(policy(predicates=[{"name": "p", "argument": {"labelsPresence": {"labels": [], "presence": "yes"}}}]),
                 'predicates[0].argument.labelsPresence.presence: Invalid value: "yes": must be a boolean',
                 id="a presence that is not a boolean"),
    pytest.param(policy(predicates={"name": "HostName"}),
                 'predicates: Invalid value: {"name": "HostName"}: must be a list', id="predicates that are not a list"),
    pytest.param(policy(priorities=[rtcr([{"utilization": 0, "score": 0, "extra": 1}])]),
                 f'priorities[0].argument.{RTCR}.shape[0].extra: unknown field "extra"',
                 id="an unknown field in a shape point"),
    pytest.param(policy(hardPodAffinitySymmetricWeight=2**31),
                 "hardPodAffinitySymmetricWeight: Invalid value: 2147483648: must fit in a 32-bit integer",
                 id="hardPodAffinitySymmetricWeight beyond int32"),
    pytest.param(policy(extenders=[{**EXT, "urlprefx": "x"}]), 'extenders[0].urlprefx: unknown field "urlprefx"',
                 id="an unknown extender field"),
    pytest.param(policy(extenders=[{**EXT, "httpTimeout": "5s"}]),
                 'extenders[0].httpTimeout: Invalid value: "5s": must be an integer',
                 id="an extender timeout that is not nanoseconds"),
    pytest.param(policy(extenders=[{**EXT, "bindVerb": "a", "BindVerb": "b"}]),
                 'extenders[0].BindVerb: duplicate field "BindVerb" (field names are case-insensitive here)',
                 id="an extender field given twice in different cases"),
])
def test_policies_are_decoded_strictly(raw: Any, message: str) -> None:
    assert error_of(raw) == message


def test_a_policy_without_api_version_is_accepted() -> None:
    assert parse_policy({"kind": "Policy"}) == parse_policy({"kind": "Policy", "apiVersion": "v1"})


# ---------------------------------------------------------------- null vs empty lists
DEFAULT_PROVIDER_POINTS = {
    "preFilter": ["NodeResourcesFit", "NodePorts", "NodeAffinity", "VolumeRestrictions", "VolumeBinding",
                  "PodTopologySpread", "InterPodAffinity"],
    "filter": ["NodeUnschedulable", "NodeResourcesFit", "NodeName", "NodePorts", "NodeAffinity", "VolumeRestrictions",
               "TaintToleration", "EBSLimits", "GCEPDLimits", "NodeVolumeLimits", "AzureDiskLimits", "VolumeBinding",
               "VolumeZone", "PodTopologySpread", "InterPodAffinity"],
    "reserve": ["VolumeBinding"],
    "preBind": ["VolumeBinding"],
}
DEFAULT_PROVIDER_SCORING = {
    "preScore": ["PodTopologySpread", "InterPodAffinity", "NodeAffinity", "TaintToleration"],
    "score": [("NodeResourcesBalancedAllocation", 1), ("PodTopologySpread", 2), ("ImageLocality", 1),
              ("InterPodAffinity", 1), ("NodeResourcesLeastAllocated", 1), ("NodeAffinity", 1),
              ("NodePreferAvoidPods", 10000), ("TaintToleration", 1)],
}


@pytest.mark.parametrize("fields, expected", [
    pytest.param({}, {**DEFAULT_PROVIDER_POINTS, **DEFAULT_PROVIDER_SCORING},
                 id="absent lists mean the DefaultProvider predicates and priorities"),
    pytest.param({"predicates": None, "priorities": None}, {**DEFAULT_PROVIDER_POINTS, **DEFAULT_PROVIDER_SCORING},
                 id="null lists mean the DefaultProvider predicates and priorities"),
    pytest.param({"predicates": [], "priorities": []}, {"filter": MANDATORY_FILTERS},
                 id="empty lists mean only the mandatory predicates and no priority"),
    pytest.param({"predicates": []}, {"filter": MANDATORY_FILTERS, **DEFAULT_PROVIDER_SCORING},
                 id="empty predicates with absent priorities keep the default priorities"),
    pytest.param({"priorities": []}, DEFAULT_PROVIDER_POINTS,
                 id="empty priorities with absent predicates keep the default predicates"),
])
def test_null_and_empty_lists(fields: dict[str, Any], expected: dict[str, list[Any]]) -> None:
    assert translated_points(translate(**fields)) == expected


def test_default_predicates_are_the_documented_set() -> None:
    assert DEFAULT_PREDICATES == {
        "NoVolumeZoneConflict", "MaxEBSVolumeCount", "MaxGCEPDVolumeCount", "MaxAzureDiskVolumeCount",
        "MaxCSIVolumeCountPred", "MatchInterPodAffinity", "NoDiskConflict", "GeneralPredicates",
        "PodToleratesNodeTaints", "CheckVolumeBinding", "CheckNodeUnschedulable", "EvenPodsSpread",
    }


def test_default_provider_args_are_filled_in_for_v1_plugins() -> None:
    pc = translate().profiles[0].plugin_config
    # SelectorSpreadPriority overrides EvenPodsSpreadPriority's List args with System.
    assert pc["PodTopologySpread"] == PodTopologySpreadArgs(defaulting_type="System")
    assert pc["InterPodAffinity"] == InterPodAffinityArgs(hard_pod_affinity_weight=1)
    assert set(pc) == {"PodTopologySpread", "DefaultPreemption", "InterPodAffinity", "NodeAffinity",
                       "NodeResourcesBalancedAllocation", "NodeResourcesFit", "VolumeBinding"}


# ---------------------------------------------------------------- weights and args rules
def test_predicates_are_appended_in_predicate_ordering_not_policy_order() -> None:
    cfg = translate(predicates=[{"name": n} for n in ("MatchInterPodAffinity", "NoVolumeZoneConflict", "HostName",
                                                       "PodFitsResources", "CheckVolumeBinding")], priorities=[])
    assert translated_points(cfg)["filter"] == [
        "NodeUnschedulable", "NodeName", "NodeResourcesFit", "TaintToleration", "VolumeBinding", "VolumeZone",
        "InterPodAffinity"]


def test_priorities_are_applied_in_sorted_name_order() -> None:
    cfg = translate(predicates=[], priorities=[{"name": n, "weight": w} for n, w in (
        ("TaintTolerationPriority", 1), ("ImageLocalityPriority", 2), ("BalancedResourceAllocation", 3))])
    assert translated_points(cfg)["score"] == [
        ("NodeResourcesBalancedAllocation", 3), ("ImageLocality", 2), ("TaintToleration", 1)]


def test_label_preference_weight_is_multiplied_by_the_number_of_preferences() -> None:
    cfg = translate(predicates=[], priorities=[
        {"name": "L1", "weight": 4, "argument": {"labelPreference": {"label": "bar", "presence": True}}},
        {"name": "L2", "weight": 4, "argument": {"labelPreference": {"label": "foo", "presence": False}}}])
    assert translated_points(cfg)["score"] == [("NodeLabel", 8)]
    assert cfg.profiles[0].plugin_config["NodeLabel"] == NodeLabelArgs(
        present_labels_preference=("bar",), absent_labels_preference=("foo",))


def test_service_anti_affinity_weight_is_multiplied_by_the_number_of_labels() -> None:
    cfg = translate(predicates=[], priorities=[
        {"name": "S1", "weight": 3, "argument": {"serviceAntiAffinity": {"label": "zone"}}},
        {"name": "S2", "weight": 3, "argument": {"serviceAntiAffinity": {"label": "region"}}}])
    assert translated_points(cfg)["score"] == [("ServiceAffinity", 6)]


def test_predicates_and_priorities_share_the_node_label_and_service_affinity_args() -> None:
    # TestCreateFromConfig "policy with arguments".
    cfg = translate(
        predicates=[
            {"name": "TestZoneAffinity", "argument": {"serviceAffinity": {"labels": ["zone"]}}},
            {"name": "TestZoneAffinity", "argument": {"serviceAffinity": {"labels": ["foo"]}}},
            {"name": "TestRequireZone", "argument": {"labelsPresence": {"labels": ["zone"], "presence": True}}},
            {"name": "TestNoFooLabel", "argument": {"labelsPresence": {"labels": ["foo"], "presence": False}}},
        ],
        priorities=[
            {"name": "RackSpread", "weight": 3, "argument": {"serviceAntiAffinity": {"label": "rack"}}},
            {"name": "ZoneSpread", "weight": 3, "argument": {"serviceAntiAffinity": {"label": "zone"}}},
            {"name": "RequestedToCapacityRatioPriority", "weight": 2, "argument": {RTCR: {
                "shape": [{"utilization": 0, "score": 0}, {"utilization": 50, "score": 7}]}}},
            {"name": "LabelPreference1", "weight": 3, "argument": {"labelPreference": {"label": "l1", "presence": True}}},
            {"name": "LabelPreference2", "weight": 3,
             "argument": {"labelPreference": {"label": "l2", "presence": False}}},
            {"name": "NodeAffinityPriority", "weight": 2},
            {"name": "InterPodAffinityPriority", "weight": 1},
        ])
    prof = cfg.profiles[0]
    assert translated_points(cfg) == {
        "preFilter": ["ServiceAffinity"],
        "filter": ["NodeUnschedulable", "TaintToleration", "NodeLabel", "ServiceAffinity"],
        "preScore": ["InterPodAffinity", "NodeAffinity"],
        "score": [("InterPodAffinity", 1), ("NodeAffinity", 2), ("NodeLabel", 6), ("RequestedToCapacityRatio", 2),
                  ("ServiceAffinity", 6)],
    }
    assert list(prof.plugin_config)[:3] == ["NodeLabel", "ServiceAffinity", "RequestedToCapacityRatio"]
    assert prof.plugin_config["NodeLabel"] == NodeLabelArgs(
        present_labels=("zone",), absent_labels=("foo",), present_labels_preference=("l1",),
        absent_labels_preference=("l2",))
    assert prof.plugin_config["ServiceAffinity"] == ServiceAffinityArgs(
        affinity_labels=("zone", "foo"), anti_affinity_labels_preference=("rack", "zone"))
    assert prof.plugin_config["RequestedToCapacityRatio"] == RequestedToCapacityRatioArgs(
        shape=(UtilizationShapePoint(0, 0), UtilizationShapePoint(50, 7)), resources=())


@pytest.mark.parametrize("even, selector, weight", [
    pytest.param(2, 1, 2, id="the default provider weights give PodTopologySpread weight 2"),
    pytest.param(1, 5, 1, id="a heavier SelectorSpreadPriority does not raise EvenPodsSpreadPriority's weight"),
    pytest.param(5, 1, 5, id="a heavier EvenPodsSpreadPriority keeps its weight"),
])
def test_a_plugin_added_twice_keeps_the_first_weight(even: int, selector: int, weight: int) -> None:
    # appendToPluginSet's "keep the max" updated a copy of the entry: the first weight stays.
    cfg = translate(predicates=[], priorities=[{"name": "SelectorSpreadPriority", "weight": selector},
                                               {"name": "EvenPodsSpreadPriority", "weight": even}])
    assert translated_points(cfg)["score"] == [("PodTopologySpread", weight)]
    assert cfg.profiles[0].plugin_config["PodTopologySpread"] == PodTopologySpreadArgs(defaulting_type="System")


def test_a_priority_key_listed_twice_takes_the_last_weight() -> None:
    cfg = translate(predicates=[], priorities=[{"name": "SelectorSpreadPriority", "weight": 2},
                                               {"name": "ServiceSpreadingPriority", "weight": 5}])
    assert translated_points(cfg)["score"] == [("PodTopologySpread", 5)]


def test_a_node_label_priority_without_preferences_scores_with_the_default_weight() -> None:
    # weight x 0 preferences = 0: the framework then uses weight 1 (as v1.21's framework did).
    cfg = translate(predicates=[{"name": "P", "argument": {"labelsPresence": {"labels": ["x"], "presence": True}}}],
                    priorities=[{"name": "NodeLabel", "weight": 7}])
    assert translated_points(cfg)["score"] == [("NodeLabel", 0)]


def test_hard_pod_affinity_symmetric_weight_configures_inter_pod_affinity() -> None:
    t = translate_policy_data(policy(hardPodAffinitySymmetricWeight=10, predicates=[],
                                     priorities=[{"name": "InterPodAffinityPriority", "weight": 1}]))
    assert t.config.profiles[0].plugin_config["InterPodAffinity"] == InterPodAffinityArgs(hard_pod_affinity_weight=10)
    assert t.notes == ()


def test_hard_pod_affinity_symmetric_weight_needs_inter_pod_affinity_priority() -> None:
    t = translate_policy_data(policy(hardPodAffinitySymmetricWeight=10, predicates=[{"name": "MatchInterPodAffinity"}],
                                     priorities=[]))
    assert t.config.profiles[0].plugin_config["InterPodAffinity"] == InterPodAffinityArgs(hard_pod_affinity_weight=1)
    assert t.notes == ("hardPodAffinitySymmetricWeight is ignored without InterPodAffinityPriority "
                       "(as kube-scheduler did)",)


def test_always_check_all_predicates_is_accepted_with_a_note() -> None:
    t = translate_policy_data(policy(alwaysCheckAllPredicates=True))
    assert t.config == translate()
    assert len(t.notes) == 1 and t.notes[0].startswith("alwaysCheckAllPredicates has no KubeSchedulerConfiguration")


def test_requested_to_capacity_ratio_without_resources_is_kept_empty_with_a_note() -> None:
    t = translate_policy_data(policy(priorities=[rtcr(GOOD_SHAPE)]))
    assert t.config.profiles[0].plugin_config["RequestedToCapacityRatio"].resources == ()
    assert any("scores every node 0" in n for n in t.notes)


@pytest.mark.parametrize("priority, plugin", [
    pytest.param("SelectorSpreadPriority", "SelectorSpread", id="SelectorSpreadPriority is SelectorSpread"),
    pytest.param("EvenPodsSpreadPriority", "PodTopologySpread",
                 id="EvenPodsSpreadPriority is PodTopologySpread with List defaulting"),
])
def test_default_pod_topology_spread_gate_off(priority: str, plugin: str) -> None:
    cfg = parse_policy(policy(predicates=[], priorities=[{"name": priority, "weight": 2}]),
                       default_pod_topology_spread=False)
    assert translated_points(cfg) == {"filter": MANDATORY_FILTERS, "preScore": [plugin], "score": [(plugin, 2)]}
    if plugin == "PodTopologySpread":
        assert cfg.profiles[0].plugin_config[plugin] == PodTopologySpreadArgs(defaulting_type="List")
    else:
        assert plugin not in cfg.profiles[0].plugin_config


def test_identical_repeated_plugin_configs_collapse_and_different_ones_are_an_error() -> None:
    a, b = NodeLabelArgs(present_labels=("a",)), NodeLabelArgs(present_labels=("b",))
    assert _dedup([("NodeLabel", a), ("X", None), ("NodeLabel", a)]) == {"NodeLabel": a, "X": None}
    with pytest.raises(Exception, match="inconsistent configuration produced for plugin NodeLabel"):
        _dedup([("NodeLabel", a), ("NodeLabel", b)])


# ---------------------------------------------------------------- extenders
def test_legacy_extenders_are_carried_over_with_their_case_insensitive_fields() -> None:
    # TestCompatibility_v1_Scheduler "1.7": BindVerb and Insecure spelled the Go way, httpTimeout in ns.
    cfg = translate(extenders=[{
        "urlPrefix": "/prefix", "filterVerb": "filter", "prioritizeVerb": "prioritize", "weight": 1,
        "BindVerb": "bind", "enableHttps": True, "tlsConfig": {"Insecure": True}, "httpTimeout": 1,
        "nodeCacheCapable": True, "managedResources": [{"name": "example.com/foo", "ignoredByScheduler": True}],
        "ignorable": True}])
    assert cfg.extenders == (Extender(
        url_prefix="/prefix", filter_verb="filter", prioritize_verb="prioritize", weight=1, bind_verb="bind",
        enable_https=True, tls_config=ExtenderTLSConfig(insecure=True), http_timeout=1e-9, node_cache_capable=True,
        managed_resources=(ExtenderManagedResource("example.com/foo", True),), ignorable=True),)
    assert parse_config(dump_config(cfg), features=FEATURES_1_30) == cfg


def test_an_extender_without_timeout_gets_five_seconds() -> None:
    assert translate(extenders=[EXT]).extenders[0].http_timeout == 5.0


# ---------------------------------------------------------------- upstream compatibility cases
FULL_FILTERS = ["NodeUnschedulable", "NodeName", "NodePorts", "NodeAffinity", "NodeResourcesFit", "VolumeRestrictions",
                "TaintToleration", "NodeLabel", "ServiceAffinity"]
CUSTOM_PREDICATES = [
    {"name": "TestServiceAffinity", "argument": {"serviceAffinity": {"labels": ["region"]}}},
    {"name": "TestLabelsPresence", "argument": {"labelsPresence": {"labels": ["foo"], "presence": True}}},
]
ALL_V14_PRIORITIES = [{"name": n, "weight": 2} for n in (
    "EqualPriority", "ImageLocalityPriority", "LeastRequestedPriority", "BalancedResourceAllocation",
    "SelectorSpreadPriority", "NodePreferAvoidPodsPriority", "NodeAffinityPriority", "TaintTolerationPriority",
    "InterPodAffinityPriority", "MostRequestedPriority")]
V14_SCORE = [("NodeResourcesBalancedAllocation", 2), ("ImageLocality", 2), ("InterPodAffinity", 2),
             ("NodeResourcesLeastAllocated", 2), ("NodeResourcesMostAllocated", 2), ("NodeAffinity", 2),
             ("NodePreferAvoidPods", 2), ("PodTopologySpread", 2), ("TaintToleration", 2)]
V14_PRESCORE = ["InterPodAffinity", "NodeAffinity", "PodTopologySpread", "TaintToleration"]


def names(*ns: str) -> list[dict[str, str]]:
    return [{"name": n} for n in ns]


@pytest.mark.parametrize("fields, expected", [
    pytest.param(
        {"predicates": names("GeneralPredicates"), "priorities": []},
        {"preFilter": ["NodeResourcesFit", "NodePorts", "NodeAffinity"],
         "filter": ["NodeUnschedulable", "NodeResourcesFit", "NodeName", "NodePorts", "NodeAffinity",
                    "TaintToleration"]},
        id="upstream GeneralPredicate case"),
    pytest.param({"predicates": [], "priorities": []}, {"filter": MANDATORY_FILTERS},
                 id="upstream MandatoryFilters case"),
    pytest.param(
        {"predicates": [*names("MatchNodeSelector", "PodFitsResources", "PodFitsPorts", "NoDiskConflict"),
                        *CUSTOM_PREDICATES],
         "priorities": [{"name": "LeastRequestedPriority", "weight": 1},
                        {"name": "ServiceSpreadingPriority", "weight": 2},
                        {"name": "TestServiceAntiAffinity", "weight": 3,
                         "argument": {"serviceAntiAffinity": {"label": "zone"}}},
                        {"name": "TestLabelPreference", "weight": 4,
                         "argument": {"labelPreference": {"label": "bar", "presence": True}}}]},
        {"preFilter": ["NodePorts", "NodeAffinity", "NodeResourcesFit", "VolumeRestrictions", "ServiceAffinity"],
         "filter": [f for f in FULL_FILTERS if f != "NodeName"],
         "preScore": ["PodTopologySpread"],
         "score": [("NodeResourcesLeastAllocated", 1), ("NodeLabel", 4), ("PodTopologySpread", 2),
                   ("ServiceAffinity", 3)]},
        id="upstream v1.0 policy"),
    pytest.param(
        {"predicates": [*names("MatchNodeSelector", "PodFitsHostPorts", "PodFitsResources", "NoDiskConflict",
                               "HostName"), *CUSTOM_PREDICATES],
         "priorities": [
             *[{"name": n, "weight": 2} for n in ("EqualPriority", "LeastRequestedPriority",
                                                  "BalancedResourceAllocation", "SelectorSpreadPriority")],
             {"name": "TestServiceAntiAffinity1", "weight": 3, "argument": {"serviceAntiAffinity": {"label": "zone"}}},
             {"name": "TestServiceAntiAffinity2", "weight": 3,
              "argument": {"serviceAntiAffinity": {"label": "region"}}},
             {"name": "TestLabelPreference1", "weight": 4,
              "argument": {"labelPreference": {"label": "bar", "presence": True}}},
             {"name": "TestLabelPreference2", "weight": 4,
              "argument": {"labelPreference": {"label": "foo", "presence": False}}}]},
        {"preFilter": ["NodePorts", "NodeAffinity", "NodeResourcesFit", "VolumeRestrictions", "ServiceAffinity"],
         "filter": FULL_FILTERS,
         "preScore": ["PodTopologySpread"],
         "score": [("NodeResourcesBalancedAllocation", 2), ("NodeResourcesLeastAllocated", 2), ("NodeLabel", 8),
                   ("PodTopologySpread", 2), ("ServiceAffinity", 6)]},
        id="upstream v1.1 policy"),
    pytest.param(
        {"predicates": [*names("MatchNodeSelector", "PodFitsResources", "PodFitsHostPorts", "HostName",
                               "NoDiskConflict", "NoVolumeZoneConflict", "PodToleratesNodeTaints", "MaxEBSVolumeCount",
                               "MaxGCEPDVolumeCount", "MaxAzureDiskVolumeCount", "MatchInterPodAffinity"),
                        *CUSTOM_PREDICATES],
         "priorities": ALL_V14_PRIORITIES},
        {"preFilter": ["NodePorts", "NodeAffinity", "NodeResourcesFit", "VolumeRestrictions", "ServiceAffinity",
                       "InterPodAffinity"],
         "filter": [*FULL_FILTERS, "EBSLimits", "GCEPDLimits", "AzureDiskLimits", "VolumeZone", "InterPodAffinity"],
         "preScore": V14_PRESCORE, "score": V14_SCORE},
        id="upstream v1.4 policy"),
    pytest.param(
        {"predicates": [*names("MatchNodeSelector", "PodFitsResources", "PodFitsHostPorts", "HostName",
                               "NoDiskConflict", "NoVolumeZoneConflict", "PodToleratesNodeTaints", "MaxEBSVolumeCount",
                               "MaxGCEPDVolumeCount", "MaxAzureDiskVolumeCount", "MaxCSIVolumeCountPred",
                               "MaxCinderVolumeCount", "MatchInterPodAffinity", "CheckVolumeBinding"),
                        *CUSTOM_PREDICATES],
         "priorities": [*ALL_V14_PRIORITIES, {"name": "RequestedToCapacityRatioPriority", "weight": 2, "argument": {
             RTCR: {"shape": [{"utilization": 0, "score": 0}, {"utilization": 50, "score": 7}],
                    "resources": [{"name": "intel.com/foo", "weight": 3}, {"name": "intel.com/bar", "weight": 5}]}}}]},
        {"preFilter": ["NodePorts", "NodeAffinity", "NodeResourcesFit", "VolumeRestrictions", "ServiceAffinity",
                       "VolumeBinding", "InterPodAffinity"],
         "filter": [*FULL_FILTERS, "EBSLimits", "GCEPDLimits", "NodeVolumeLimits", "AzureDiskLimits", "CinderLimits",
                    "VolumeBinding", "VolumeZone", "InterPodAffinity"],
         "reserve": ["VolumeBinding"], "preBind": ["VolumeBinding"],
         "preScore": V14_PRESCORE,
         "score": [*V14_SCORE[:7], ("RequestedToCapacityRatio", 2), *V14_SCORE[7:]]},
        id="upstream v1.16 policy"),
])
def test_upstream_compatibility_policies(fields: dict[str, Any], expected: dict[str, list[Any]]) -> None:
    cfg = translate(**fields)
    assert translated_points(cfg) == expected
    assert parse_config(dump_config(cfg), features=FEATURES_1_30) == cfg  # the printed configuration means the same


# ---------------------------------------------------------------- every v1.5-era name at once, files
ISSUE_PREDICATES = ["NoDiskConflict", "NoVolumeZoneConflict", "PodFitsResources", "PodFitsHostPorts", "HostName",
                    "MatchNodeSelector", "MaxEBSVolumeCount", "MaxGCEPDVolumeCount", "MaxAzureDiskVolumeCount",
                    "CheckNodeUnschedulable", "PodToleratesNodeTaints", "MatchInterPodAffinity", "CheckVolumeBinding"]
ISSUE_PRIORITIES = ["LeastRequestedPriority", "MostRequestedPriority", "BalancedResourceAllocation",
                    "SelectorSpreadPriority", "ServiceSpreadingPriority", "InterPodAffinityPriority",
                    "NodeAffinityPriority", "TaintTolerationPriority", "ImageLocalityPriority"]


def issue_policy() -> dict[str, Any]:
    """Every predicate and priority name the v1.5-era issue lists (RequestedToCapacityRatioPriority
    with its arguments)."""
    return policy(
        predicates=names(*ISSUE_PREDICATES),
        priorities=[*({"name": n, "weight": 1} for n in ISSUE_PRIORITIES),
                    {"name": "RequestedToCapacityRatioPriority", "weight": 1, "argument": {RTCR: {
                        "shape": GOOD_SHAPE, "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]}}}],
    )


def test_a_policy_with_every_v15_era_name_is_accepted_and_converted() -> None:
    cfg = parse_policy(issue_policy())
    assert translated_points(cfg) == {
        "preFilter": ["NodePorts", "NodeAffinity", "NodeResourcesFit", "VolumeRestrictions", "VolumeBinding",
                      "InterPodAffinity"],
        "filter": ["NodeUnschedulable", "NodeName", "NodePorts", "NodeAffinity", "NodeResourcesFit",
                   "VolumeRestrictions", "TaintToleration", "EBSLimits", "GCEPDLimits", "AzureDiskLimits",
                   "VolumeBinding", "VolumeZone", "InterPodAffinity"],
        "reserve": ["VolumeBinding"], "preBind": ["VolumeBinding"],
        "preScore": ["InterPodAffinity", "NodeAffinity", "PodTopologySpread", "TaintToleration"],
        "score": [("NodeResourcesBalancedAllocation", 1), ("ImageLocality", 1), ("InterPodAffinity", 1),
                  ("NodeResourcesLeastAllocated", 1), ("NodeResourcesMostAllocated", 1), ("NodeAffinity", 1),
                  ("RequestedToCapacityRatio", 1), ("PodTopologySpread", 1), ("TaintToleration", 1)],
    }
    assert parse_config(dump_config(cfg), features=FEATURES_1_30) == cfg


def test_a_tab_indented_json_policy_file_loads(tmp_path: Path) -> None:
    path = tmp_path / "policy.json"
    path.write_text(json.dumps(issue_policy(), indent="\t"))
    assert load_policy(path) == parse_policy(issue_policy())


def test_a_yaml_policy_file_loads(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text("kind: Policy\npredicates: [{name: HostName}]\npriorities: []\n")
    assert load_policy(path) == translate(predicates=[{"name": "HostName"}], priorities=[])


@pytest.mark.parametrize("text, message", [
    pytest.param('{"kind": "Policy", "kind": "Policy"}', 'duplicate field "kind"', id="a duplicated JSON key"),
    pytest.param("kind: Policy\nkind: Policy\n", 'line 2: duplicate field "kind"', id="a duplicated YAML key"),
    pytest.param("kind: [Policy\n", "invalid YAML", id="broken YAML"),
])
def test_unreadable_policy_files_name_the_file(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as e:
        load_policy(path)
    assert str(e.value).startswith(f"{path}: {message}")


def test_errors_in_a_policy_file_name_the_file_and_field(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text("kind: Policy\npriorities: [{name: Nope, weight: 1}]\n")
    with pytest.raises(ConfigError) as e:
        load_policy(path)
    assert str(e.value).startswith(f'{path}: priorities[0].name: priority type not found for "Nope"')
    with pytest.raises(ConfigError, match="cannot read policy"):
        load_policy(tmp_path / "missing.yaml")


def test_the_example_policy_converts() -> None:
    t = load_policy_translation(EXAMPLE_POLICY)
    prof = t.config.profiles[0]
    assert t.notes == ()
    assert prof.plugin_config["NodeLabel"] == NodeLabelArgs(
        present_labels=("topology.kubernetes.io/zone",),
        present_labels_preference=("node.kubernetes.io/instance-type",))
    assert prof.plugin_config["InterPodAffinity"] == InterPodAffinityArgs(hard_pod_affinity_weight=10)
    assert ("NodeLabel", 2) in [(p.name, p.weight) for p in prof.plugins.score.enabled]
    assert parse_config(dump_config(t.config), features=FEATURES_1_30) == t.config


@pytest.mark.parametrize("gate", [True, False], ids=["with DefaultPodTopologySpread", "without the gate"])
@pytest.mark.parametrize("fields", [
    pytest.param({"predicates": names(*VALID_PREDICATE_NAMES), "priorities": []}, id="every predicate"),
    pytest.param({"predicates": [], "priorities": [{"name": n, "weight": 1} for n in VALID_PRIORITY_NAMES]},
                 id="every priority"),
    pytest.param({"predicates": CUSTOM_PREDICATES, "priorities": [
        {"name": "A", "weight": 1, "argument": {"labelPreference": {"label": "l"}}},
        {"name": "B", "weight": 1, "argument": {"serviceAntiAffinity": {"label": "rack"}}},
        rtcr(GOOD_SHAPE, [{"name": "cpu", "weight": 2}])]}, id="every custom predicate and priority"),
    pytest.param({}, id="the default provider"),
])
def test_translated_policies_build_a_framework(fields: dict[str, Any], gate: bool) -> None:
    # Every translated plugin is registered and implements each extension point it is enabled at.
    cfg = parse_policy(policy(**fields), default_pod_topology_spread=gate)
    fwk = build_framework(cfg.profiles[0], REGISTRY, FrameworkHandle.for_nodes([]))
    for key, ps in cfg.profiles[0].plugins.items():
        point = key[0].upper() + key[1:]
        if key != "multiPoint":
            assert [p.name for p in fwk.plugins_at(point)] == list(ps.names())
