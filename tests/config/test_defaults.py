"""Defaults of kube-scheduler v1.30 (apis/config/v1 default_plugins.go, defaults.go) and the
plugin-set merge (mergePluginSet), including upstream's TestMergePlugins cases."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.config import (
    API_VERSION,
    DEFAULT_ARGS,
    KIND,
    PluginRef,
    Plugins,
    PluginSet,
    default_configuration,
    default_plugins,
    default_profile,
    merge_plugin_set,
    merge_plugins,
    parse_config,
    plugin_names_used,
)
from kubesched.config.args import (
    DefaultPreemptionArgs,
    DynamicResourcesArgs,
    InterPodAffinityArgs,
    NodeAffinityArgs,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    PodTopologySpreadArgs,
    ResourceSpec,
    ScoringStrategy,
    VolumeBindingArgs,
)
from kubesched.errors import ConfigError
from kubesched.features import FEATURES_1_30, FEATURES_1_36

# facts 1.1, in order, with weights (0 = no MultiPoint weight).
UPSTREAM_MULTI_POINT = [
    ("SchedulingGates", 0), ("PrioritySort", 0), ("NodeUnschedulable", 0), ("NodeName", 0), ("TaintToleration", 3),
    ("NodeAffinity", 2), ("NodePorts", 0), ("NodeResourcesFit", 1), ("VolumeRestrictions", 0), ("EBSLimits", 0),
    ("GCEPDLimits", 0), ("NodeVolumeLimits", 0), ("AzureDiskLimits", 0), ("VolumeBinding", 0), ("VolumeZone", 0),
    ("PodTopologySpread", 2), ("InterPodAffinity", 2), ("DefaultPreemption", 0),
    ("NodeResourcesBalancedAllocation", 1), ("ImageLocality", 1), ("DefaultBinder", 0),
]  # fmt: skip

# facts 1.4, in the order upstream appends them (sorted plugin names).
UPSTREAM_DEFAULT_ARGS: list[tuple[str, object]] = [
    ("DefaultPreemption", DefaultPreemptionArgs(min_candidate_nodes_percentage=10, min_candidate_nodes_absolute=100)),
    (
        "InterPodAffinity",
        InterPodAffinityArgs(hard_pod_affinity_weight=1, ignore_preferred_terms_of_existing_pods=False),
    ),
    ("NodeAffinity", NodeAffinityArgs(added_affinity=None)),
    (
        "NodeResourcesBalancedAllocation",
        NodeResourcesBalancedAllocationArgs(resources=(ResourceSpec("cpu", 1), ResourceSpec("memory", 1))),
    ),
    (
        "NodeResourcesFit",
        NodeResourcesFitArgs(
            ignored_resources=(),
            ignored_resource_groups=(),
            scoring_strategy=ScoringStrategy(
                type="LeastAllocated", resources=(ResourceSpec("cpu", 1), ResourceSpec("memory", 1))
            ),
        ),
    ),
    ("PodTopologySpread", PodTopologySpreadArgs(default_constraints=(), defaulting_type="System")),
    ("VolumeBinding", VolumeBindingArgs(bind_timeout_seconds=600, shape=())),
]


def minimal(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": KIND, **fields}


def test_default_multi_point_list_is_upstreams_with_weights() -> None:
    plugins = default_configuration(features=FEATURES_1_30).profiles[0].plugins
    assert [(p.name, p.weight) for p in plugins.multi_point.enabled] == UPSTREAM_MULTI_POINT
    assert plugins.multi_point.disabled == ()
    for key, ps in plugins.items():
        if key != "multiPoint":
            assert ps == PluginSet(), key


def test_default_plugin_config_is_upstreams_defaulted_args_in_sorted_order() -> None:
    prof = default_configuration(features=FEATURES_1_30).profiles[0]
    assert list(prof.plugin_config.items()) == UPSTREAM_DEFAULT_ARGS
    assert dict(DEFAULT_ARGS) == dict(UPSTREAM_DEFAULT_ARGS)


def test_global_defaults_are_upstreams() -> None:
    c = default_configuration()
    assert (c.parallelism, c.percentage_of_nodes_to_score) == (16, 0)
    assert (c.pod_initial_backoff_seconds, c.pod_max_backoff_seconds) == (1, 10)
    assert (c.enable_profiling, c.enable_contention_profiling, c.delay_cache_until_active) == (True, True, False)
    le = c.leader_election
    assert (le.leader_elect, le.lease_duration, le.renew_deadline, le.retry_period) == (True, 15.0, 10.0, 2.0)
    assert (le.resource_lock, le.resource_namespace, le.resource_name) == ("leases", "kube-system", "kube-scheduler")
    cc = c.client_connection
    assert (cc.content_type, cc.qps, cc.burst) == ("application/vnd.kubernetes.protobuf", 50.0, 100)
    assert [p.scheduler_name for p in c.profiles] == ["default-scheduler"]
    assert c.profiles[0].percentage_of_nodes_to_score is None
    assert c.extenders == ()


def test_a_file_with_only_apiversion_and_kind_is_the_default_configuration() -> None:
    assert parse_config(minimal()) == default_configuration()


def test_dynamic_resources_goes_right_before_default_preemption_when_its_gate_is_on() -> None:
    names = default_plugins(FEATURES_1_30, dynamic_resource_allocation=True).multi_point.names()
    i = names.index("DynamicResources")
    assert names[i + 1] == "DefaultPreemption"
    assert len(names) == len(UPSTREAM_MULTI_POINT) + 1


# ---------------------------------------------------------------- profiles defaulting
@pytest.mark.parametrize(
    "profiles, names",
    [
        pytest.param(None, ["default-scheduler"], id="no profiles gives one default-scheduler profile"),
        pytest.param([], ["default-scheduler"], id="an empty profile list gives one default-scheduler profile"),
        pytest.param([{}], ["default-scheduler"], id="a single profile without a name is the default-scheduler"),
        pytest.param([{"schedulerName": "mine"}], ["mine"], id="a single named profile keeps its name"),
        pytest.param(
            [{"schedulerName": "a"}, {"schedulerName": "b"}], ["a", "b"], id="several named profiles keep their names"
        ),
    ],
)
def test_profile_names_are_defaulted_like_upstream(profiles: Any, names: list[str]) -> None:
    raw = minimal() if profiles is None else minimal(profiles=profiles)
    assert [p.scheduler_name for p in parse_config(raw).profiles] == names


@pytest.mark.parametrize(
    "global_pct, profile_pct, effective",
    [
        pytest.param(None, None, 0, id="nothing set means the adaptive percentage 0"),
        pytest.param(30, None, 30, id="a profile without a percentage uses the global one"),
        pytest.param(30, 70, 70, id="a profile percentage overrides the global one"),
        pytest.param(30, 0, 0, id="a profile percentage of zero still overrides the global one"),
    ],
)
def test_profile_percentage_overrides_global(global_pct: int | None, profile_pct: int | None, effective: int) -> None:
    prof: dict[str, Any] = {} if profile_pct is None else {"percentageOfNodesToScore": profile_pct}
    raw = minimal(profiles=[prof])
    if global_pct is not None:
        raw["percentageOfNodesToScore"] = global_pct
    c = parse_config(raw)
    assert c.percentage_for(c.profiles[0]) == effective
    assert c.profiles[0].percentage_of_nodes_to_score == profile_pct


def test_plugin_names_used_lists_every_enabled_plugin_once_sorted() -> None:
    c = parse_config(
        minimal(
            profiles=[
                {"schedulerName": "a", "plugins": {"filter": {"enabled": [{"name": "Custom"}]}}},
                {"schedulerName": "b", "plugins": {"multiPoint": {"disabled": [{"name": "*"}]},
                                                   "bind": {"enabled": [{"name": "MyBinder"}]}}},
            ]
        ), features=FEATURES_1_30,
    )  # fmt: skip
    assert plugin_names_used(c) == tuple(sorted({n for n, _ in UPSTREAM_MULTI_POINT} | {"Custom", "MyBinder"}))


# ---------------------------------------------------------------- merge
def ps(*enabled: str | tuple[str, int], disabled: tuple[str, ...] = ()) -> PluginSet:
    refs = tuple(PluginRef(e) if isinstance(e, str) else PluginRef(*e) for e in enabled)
    return PluginSet(enabled=refs, disabled=tuple(PluginRef(d) for d in disabled))


# Upstream's TestMergePlugins (default_plugins_test.go), one extension point each.
@pytest.mark.parametrize(
    "default, custom, expected",
    [
        pytest.param(
            ps("DefaultPlugin1", "DefaultPlugin2"), ps("CustomPlugin"),
            ps("DefaultPlugin1", "DefaultPlugin2", "CustomPlugin"),
            id="a custom plugin is appended after the defaults",
        ),
        pytest.param(
            ps("DefaultPlugin1", "DefaultPlugin2"), ps("CustomPlugin", "DefaultPlugin2", disabled=("DefaultPlugin2",)),
            ps("DefaultPlugin1", "CustomPlugin", "DefaultPlugin2", disabled=("DefaultPlugin2",)),
            id="disabling a default and re-enabling it moves it after the custom plugin",
        ),
        pytest.param(
            ps("DefaultPlugin1", "DefaultPlugin2"),
            ps("CustomPlugin", "DefaultPlugin1", "DefaultPlugin2", disabled=("*",)),
            ps("CustomPlugin", "DefaultPlugin1", "DefaultPlugin2", disabled=("*",)),
            id="disabling all defaults lets a custom plugin go first",
        ),
        pytest.param(
            ps("DefaultPlugin1", "DefaultPlugin2"), ps("DefaultPlugin2", "DefaultPlugin1", disabled=("*",)),
            ps("DefaultPlugin2", "DefaultPlugin1", disabled=("*",)),
            id="disabling all defaults and re-enabling them reorders them",
        ),
        pytest.param(
            ps("Plugin1", "Plugin2", "Plugin3"), ps(("Plugin1", 2), ("Plugin3", 3)),
            ps(("Plugin1", 2), "Plugin2", ("Plugin3", 3)),
            id="a custom entry with a default's name replaces its weight in place",
        ),
        pytest.param(
            ps("Plugin1", "Plugin2", "Plugin3"), ps(("Plugin2", 2), ("Plugin1", 1)),
            ps(("Plugin1", 1), ("Plugin2", 2), "Plugin3"),
            id="replacing defaults keeps the default order",
        ),
        pytest.param(
            ps("Plugin1", "Plugin2", "Plugin3"), ps("Plugin1", ("Plugin2", 2), "Plugin3", ("Plugin2", 4)),
            ps("Plugin1", ("Plugin2", 4), "Plugin3", ("Plugin2", 2)),
            id="of repeated custom entries the last replaces the default and the others are appended",
        ),
        pytest.param(
            ps("DefaultPlugin1", "DefaultPlugin2"), ps("CustomPlugin", "CustomPlugin2", disabled=("DefaultPlugin2",)),
            ps("DefaultPlugin1", "CustomPlugin", "CustomPlugin2", disabled=("DefaultPlugin2",)),
            id="disabling one default drops only that default",
        ),
        pytest.param(
            ps("DefaultPlugin"), ps(disabled=("DefaultPlugin",)), ps(disabled=("DefaultPlugin",)),
            id="a set with only disabled entries is merged",
        ),
        pytest.param(
            ps("DefaultPlugin", disabled=("DefaultPlugin2",)), ps("CustomPlugin"),
            ps("DefaultPlugin", "CustomPlugin", disabled=("DefaultPlugin2",)),
            id="disabled entries of the default set are kept after the custom ones",
        ),
        pytest.param(
            ps("A", "B"), ps(disabled=("*", "A")), ps(disabled=("*", "A")),
            id="disabling star drops every default",
        ),
    ],
)  # fmt: skip
def test_merge_plugin_set(default: PluginSet, custom: PluginSet, expected: PluginSet) -> None:
    assert merge_plugin_set(default, custom) == expected


def test_merge_with_no_custom_plugins_returns_the_defaults() -> None:
    d = default_plugins()
    assert merge_plugins(d, None) is d


def test_merge_is_applied_at_every_extension_point() -> None:
    custom = Plugins(score=ps(disabled=("CustomPlugin2",)), multi_point=ps("CustomPlugin", "CustomPlugin2"))
    merged = merge_plugins(Plugins(multi_point=ps("DefaultPlugin1")), custom)
    assert merged == Plugins(
        score=ps(disabled=("CustomPlugin2",)), multi_point=ps("DefaultPlugin1", "CustomPlugin", "CustomPlugin2")
    )


def test_disabled_weights_are_dropped_by_the_merge() -> None:
    merged = merge_plugin_set(ps("A"), PluginSet(disabled=(PluginRef("A", 7),)))
    assert merged.disabled == (PluginRef("A"),)


# ---------------------------------------------------------------- merges through a file
def names_weights(ps_: PluginSet) -> list[tuple[str, int]]:
    return [(p.name, p.weight) for p in ps_.enabled]


@pytest.mark.parametrize(
    "plugins, expected",
    [
        pytest.param(
            {"multiPoint": {"disabled": [{"name": "ImageLocality"}]}},
            [x for x in UPSTREAM_MULTI_POINT if x[0] != "ImageLocality"],
            id="disabling one default multiPoint plugin removes only it",
        ),
        pytest.param(
            {"multiPoint": {"disabled": [{"name": "*"}], "enabled": [{"name": "PrioritySort"}, {"name": "Mine"}]}},
            [("PrioritySort", 0), ("Mine", 0)],
            id="disabling star keeps only the custom multiPoint plugins in their order",
        ),
        pytest.param(
            {"multiPoint": {"enabled": [{"name": "TaintToleration", "weight": 10}]}},
            [(n, 10 if n == "TaintToleration" else w) for n, w in UPSTREAM_MULTI_POINT],
            id="re-enabling a default with a weight replaces its weight in place",
        ),
        pytest.param(
            {"multiPoint": {"enabled": [{"name": "Custom", "weight": 5}]}},
            [*UPSTREAM_MULTI_POINT, ("Custom", 5)],
            id="a custom multiPoint plugin is appended after the defaults",
        ),
    ],
)
def test_profile_plugins_merge_with_the_defaults(plugins: dict[str, Any], expected: list[tuple[str, int]]) -> None:
    prof = parse_config(minimal(profiles=[{"plugins": plugins}]), features=FEATURES_1_30).profiles[0]
    assert names_weights(prof.plugins.multi_point) == expected


def test_default_args_are_added_only_for_enabled_plugins() -> None:
    prof = parse_config(
        minimal(profiles=[{"plugins": {"multiPoint": {"disabled": [{"name": "NodeResourcesFit"},
                                                                     {"name": "DefaultPreemption"}]}}}])
    ).profiles[0]  # fmt: skip
    assert "NodeResourcesFit" not in prof.plugin_config
    assert "DefaultPreemption" not in prof.plugin_config
    assert "InterPodAffinity" in prof.plugin_config


def test_explicit_plugin_config_comes_first_then_defaults_by_name() -> None:
    prof = parse_config(
        minimal(profiles=[{"pluginConfig": [
            {"name": "VolumeBinding", "args": {"bindTimeoutSeconds": 30}},
            {"name": "OutOfTree", "args": {"anything": [1, 2]}},
        ]}]), features=FEATURES_1_30,
    ).profiles[0]  # fmt: skip
    assert list(prof.plugin_config) == [
        "VolumeBinding", "OutOfTree", "DefaultPreemption", "InterPodAffinity", "NodeAffinity",
        "NodeResourcesBalancedAllocation", "NodeResourcesFit", "PodTopologySpread",
    ]  # fmt: skip
    assert prof.plugin_config["VolumeBinding"] == VolumeBindingArgs(bind_timeout_seconds=30)
    assert prof.plugin_config["OutOfTree"] == {"anything": [1, 2]}


def test_default_profile_helper_merges_and_completes_args() -> None:
    prof = default_profile("other", plugins=Plugins(multi_point=ps(disabled=("*",))))
    assert prof.scheduler_name == "other"
    assert prof.plugins.multi_point.enabled == ()
    assert prof.plugin_config == {}


# v1.36's getDefaultPlugins (apis/config/v1/default_plugins.go): no in-tree volume limits,
# DynamicResources (weight 2) before DefaultPreemption, NodeDeclaredFeatures last.
UPSTREAM_MULTI_POINT_136 = [
    ("SchedulingGates", 0), ("PrioritySort", 0), ("NodeUnschedulable", 0), ("NodeName", 0), ("TaintToleration", 3),
    ("NodeAffinity", 2), ("NodePorts", 0), ("NodeResourcesFit", 1), ("VolumeRestrictions", 0),
    ("NodeVolumeLimits", 0), ("VolumeBinding", 0), ("VolumeZone", 0), ("PodTopologySpread", 2),
    ("InterPodAffinity", 2), ("DynamicResources", 2), ("DefaultPreemption", 0),
    ("NodeResourcesBalancedAllocation", 1), ("ImageLocality", 1), ("DefaultBinder", 0), ("NodeDeclaredFeatures", 0),
]


def test_the_1_36_default_multi_point_list_is_upstreams_with_weights() -> None:
    prof = default_configuration(features=FEATURES_1_36).profiles[0]
    assert [(p.name, p.weight) for p in prof.plugins.multi_point.enabled] == UPSTREAM_MULTI_POINT_136
    # SetDefaults_DynamicResourcesArgs: filterTimeout 10 s, bindingTimeout 10 min, among the others by name.
    assert list(prof.plugin_config) == sorted(prof.plugin_config)
    assert prof.plugin_config["DynamicResources"] == DynamicResourcesArgs(filter_timeout=10.0, binding_timeout=600.0)
    assert default_configuration() == default_configuration(features=FEATURES_1_36)


def test_a_1_36_configuration_refuses_the_removed_in_tree_volume_limit_plugins() -> None:
    data = minimal(profiles=[{"plugins": {"filter": {"enabled": [{"name": "EBSLimits"}]}}}])
    assert parse_config(data, features=FEATURES_1_30).profiles[0].plugins.filter.enabled[0].name == "EBSLimits"
    with pytest.raises(ConfigError, match=r'profiles\[0\]\.plugins\.filter\.enabled\[0\]: Invalid value: "EBSLimits": '
                                          r'was invalid in version "kubescheduler.config.k8s.io/v1"'):
        parse_config(data, features=FEATURES_1_36)
