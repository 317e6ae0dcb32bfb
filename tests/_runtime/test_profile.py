"""Profile building: MultiPoint expansion, explicit overrides, weights and the checks
NewFramework performs."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched._runtime.framework import Framework
from kubesched._runtime.handle import FrameworkHandle
from kubesched._runtime.profile import build_framework
from kubesched._runtime.registry import in_tree_registry
from kubesched.config import default_configuration, parse_config
from kubesched.errors import ConfigError, PluginError
from kubesched.features import FEATURES_1_30, Features


def names(plugins: list[Any]) -> list[str]:
    return [p.name for p in plugins]


def build(yaml_profile: dict[str, Any] | None = None, registry: Any = None, features: Features | None = None) -> Any:
    cfg = default_configuration(features=features) if yaml_profile is None else parse_config(
        {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration", "profiles": [yaml_profile]},
        features=features)
    return build_framework(cfg.profiles[0], registry or in_tree_registry(features),
                           FrameworkHandle.for_nodes([], features=features))


def test_default_profile_expands_like_upstream() -> None:
    fwk = build(features=FEATURES_1_30)
    assert names(fwk.pre_enqueue) == ["SchedulingGates"]
    assert fwk.queue_sort.name == "PrioritySort"
    assert names(fwk.pre_filter) == ["NodeAffinity", "NodePorts", "NodeResourcesFit", "VolumeRestrictions", "EBSLimits",
                                     "GCEPDLimits", "NodeVolumeLimits", "AzureDiskLimits", "VolumeBinding", "VolumeZone",
                                     "PodTopologySpread", "InterPodAffinity"]
    assert names(fwk.filter) == ["NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts",
                                 "NodeResourcesFit", "VolumeRestrictions", "EBSLimits", "GCEPDLimits", "NodeVolumeLimits",
                                 "AzureDiskLimits", "VolumeBinding", "VolumeZone", "PodTopologySpread", "InterPodAffinity"]
    assert names(fwk.post_filter) == ["DefaultPreemption"]
    assert names(fwk.pre_score) == ["TaintToleration", "NodeAffinity", "NodeResourcesFit", "VolumeBinding",
                                    "PodTopologySpread", "InterPodAffinity", "NodeResourcesBalancedAllocation"]
    assert {p.name: fwk.score_weights[p.name] for p in fwk.score} == {
        "TaintToleration": 3, "NodeAffinity": 2, "NodeResourcesFit": 1, "VolumeBinding": 1, "PodTopologySpread": 2,
        "InterPodAffinity": 2, "NodeResourcesBalancedAllocation": 1, "ImageLocality": 1}
    assert names(fwk.reserve) == ["VolumeBinding"]
    assert names(fwk.pre_bind) == ["VolumeBinding"]
    assert names(fwk.bind) == ["DefaultBinder"]


def test_disabling_a_plugin_at_one_point_keeps_it_elsewhere() -> None:
    fwk = build({"plugins": {"score": {"disabled": [{"name": "ImageLocality"}, {"name": "TaintToleration"}]}}})
    assert "ImageLocality" not in names(fwk.score) and "TaintToleration" not in names(fwk.score)
    assert "TaintToleration" in names(fwk.filter)


def test_explicit_score_weight_overrides_multipoint_weight() -> None:
    fwk = build({"plugins": {"score": {"enabled": [{"name": "NodeResourcesFit", "weight": 7}]}}})
    assert fwk.score_weights["NodeResourcesFit"] == 7
    assert names(fwk.score)[0] == "NodeResourcesFit"


def test_unknown_plugin_is_a_config_error_listing_known_ones() -> None:
    with pytest.raises(ConfigError, match="plugin 'Nope' does not exist"):
        build({"plugins": {"filter": {"enabled": [{"name": "Nope"}]}}})


def test_plugin_enabled_at_a_point_it_does_not_implement_is_rejected() -> None:
    with pytest.raises(ConfigError, match="does not extend Filter plugin"):
        build({"plugins": {"filter": {"enabled": [{"name": "ImageLocality"}]}}})


def test_a_profile_without_queue_sort_or_bind_is_rejected() -> None:
    with pytest.raises(PluginError, match="only one queue sort plugin required"):
        build({"plugins": {"queueSort": {"disabled": [{"name": "*"}]}}})
    with pytest.raises(PluginError, match="at least one bind plugin is needed"):
        build({"plugins": {"bind": {"disabled": [{"name": "*"}]}}})


class _Scorer:
    def __init__(self, name: str) -> None:
        self.name = name

    def score(self, state: Any, pod: Any, node_info: Any) -> int:
        return 0


def test_weights_that_could_overflow_the_total_score_are_rejected() -> None:
    # Config weights are int32, so only a programmatic framework can get here (getScoreWeights).
    base = build()
    points = {"QueueSort": [base.queue_sort], "Bind": base.bind, "Score": [_Scorer("A"), _Scorer("B")]}
    with pytest.raises(PluginError, match="total score of Score plugins could overflow"):
        Framework("p", points, {"A": 2**62, "B": 2**62}, FrameworkHandle.for_nodes([]))


def test_zero_weight_means_one() -> None:
    base = build()
    fwk = Framework("p", {"QueueSort": [base.queue_sort], "Bind": base.bind, "Score": [_Scorer("A")]}, {"A": 0},
                    FrameworkHandle.for_nodes([]))
    assert fwk.score_weights["A"] == 1
