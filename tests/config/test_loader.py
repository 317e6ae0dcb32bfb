"""Decoding, defaulting and validation of KubeSchedulerConfiguration files: typed args from
camelCase YAML, v1 defaulting of args (facts 1.4), and every validation error with upstream's
field path and wording (validation.go, validation_pluginargs.go, facts 8)."""

from __future__ import annotations

import base64
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from kubesched.config import (
    API_VERSION,
    KIND,
    Extender,
    ExtenderManagedResource,
    ExtenderTLSConfig,
    LeaderElection,
    default_configuration,
    default_profile,
    load_config,
    parse_config,
    parse_plugin_args,
    validate_configuration,
    validate_plugin_args,
)
from kubesched.config._duration import format_duration, parse_duration
from kubesched.config.args import (
    InterPodAffinityArgs,
    NodeAffinityArgs,
    NodeLabelArgs,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    PodTopologySpreadArgs,
    RequestedToCapacityRatioArgs,
    RequestedToCapacityRatioParam,
    ResourceSpec,
    ScoringStrategy,
    ServiceAffinityArgs,
    UtilizationShapePoint,
)
from kubesched.errors import ConfigError
from kubesched.objects import (
    NodeAffinity,
    NodeSelector,
    NodeSelectorTerm,
    PreferredSchedulingTerm,
    Requirement,
    TopologySpreadConstraint,
)


def cfg(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": KIND, **fields}


def with_args(plugin: str, args: Any, *, index: int = 0) -> dict[str, Any]:
    """One profile whose pluginConfig[index] configures ``plugin`` (earlier entries are filler)."""
    filler = [{"name": f"Filler{i}", "args": {}} for i in range(index)]
    return cfg(profiles=[{"pluginConfig": [*filler, {"name": plugin, "args": args}]}])


def args_of(plugin: str, args: Any) -> Any:
    return parse_config(with_args(plugin, args)).profiles[0].plugin_config[plugin]


# ---------------------------------------------------------------- args decoding and defaulting
@pytest.mark.parametrize(
    "plugin, raw, expected",
    [
        pytest.param(
            "NodeResourcesFit",
            {"scoringStrategy": {"type": "MostAllocated",
                                 "resources": [{"name": "cpu"}, {"name": "nvidia.com/gpu", "weight": 3}]}},
            NodeResourcesFitArgs(scoring_strategy=ScoringStrategy(
                "MostAllocated", (ResourceSpec("cpu", 1), ResourceSpec("nvidia.com/gpu", 3)))),
            id="fit resources without a weight get weight 1",
        ),
        pytest.param(
            "NodeResourcesFit", {"scoringStrategy": {"type": "MostAllocated"}},
            NodeResourcesFitArgs(scoring_strategy=ScoringStrategy("MostAllocated")),
            id="a fit strategy without resources gets cpu and memory",
        ),
        pytest.param(
            "NodeResourcesFit",
            {"apiVersion": API_VERSION, "kind": "NodeResourcesFitArgs",
             "ignoredResources": ["example.com/foo"], "ignoredResourceGroups": ["example.com"],
             "scoringStrategy": {"type": "RequestedToCapacityRatio", "resources": [{"name": "cpu", "weight": 0}],
                                 "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 10},
                                                                        {"utilization": 100}]}}},
            NodeResourcesFitArgs(
                ignored_resources=("example.com/foo",), ignored_resource_groups=("example.com",),
                scoring_strategy=ScoringStrategy(
                    "RequestedToCapacityRatio", (ResourceSpec("cpu", 1),),
                    RequestedToCapacityRatioParam((UtilizationShapePoint(0, 10), UtilizationShapePoint(100, 0))))),
            id="fit args with kind and apiVersion and a requested-to-capacity shape",
        ),
        pytest.param(
            "NodeResourcesFit", {}, NodeResourcesFitArgs(),
            id="empty fit args are the defaults",
        ),
        pytest.param(
            "NodeResourcesFit", None, NodeResourcesFitArgs(),
            id="missing fit args are the defaults",
        ),
        pytest.param(
            "NodeResourcesBalancedAllocation", {"resources": [{"name": "cpu"}, {"name": "example.com/x", "weight": 0}]},
            NodeResourcesBalancedAllocationArgs((ResourceSpec("cpu", 1), ResourceSpec("example.com/x", 1))),
            id="balanced allocation weights of zero become one",
        ),
        pytest.param(
            "InterPodAffinity", {"hardPodAffinityWeight": 0, "ignorePreferredTermsOfExistingPods": True},
            InterPodAffinityArgs(0, True),
            id="inter pod affinity args keep an explicit zero weight",
        ),
        pytest.param(
            "PodTopologySpread",
            {"defaultingType": "List", "defaultConstraints": [
                {"maxSkew": 3, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"},
                {"maxSkew": 1, "topologyKey": "node", "whenUnsatisfiable": "DoNotSchedule", "minDomains": 2,
                 "nodeAffinityPolicy": "Ignore", "nodeTaintsPolicy": "Honor", "matchLabelKeys": ["app"]}]},
            PodTopologySpreadArgs(
                (TopologySpreadConstraint(3, "zone", "ScheduleAnyway"),
                 TopologySpreadConstraint(1, "node", "DoNotSchedule", None, 2, "Ignore", "Honor", ("app",))),
                "List"),
            id="list defaulting constraints are decoded",
        ),
        pytest.param(
            "PodTopologySpread", {"defaultingType": "List"}, PodTopologySpreadArgs((), "List"),
            id="list defaulting without constraints is allowed",
        ),
        pytest.param(
            "NodeAffinity",
            {"addedAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}]},
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 5, "preference": {"matchFields": [
                        {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}}]}},
            NodeAffinityArgs(NodeAffinity(
                NodeSelector((NodeSelectorTerm((Requirement("zone", "In", ("a", "b")),)),)),
                (PreferredSchedulingTerm(5, NodeSelectorTerm((), (Requirement("metadata.name", "In", ("n1",)),))),))),
            id="node affinity added affinity is decoded",
        ),
        pytest.param(
            "NodeLabel", {"presentLabels": ["a"], "absentLabelsPreference": ["b"]},
            NodeLabelArgs(present_labels=("a",), absent_labels_preference=("b",)),
            id="legacy node label args are decoded",
        ),
        pytest.param(
            "ServiceAffinity", {"affinityLabels": ["zone"]}, ServiceAffinityArgs(affinity_labels=("zone",)),
            id="legacy service affinity args are decoded",
        ),
        pytest.param(
            "RequestedToCapacityRatio", {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]},
            RequestedToCapacityRatioArgs(
                (UtilizationShapePoint(0, 0), UtilizationShapePoint(100, 10)),
                (ResourceSpec("cpu", 1), ResourceSpec("memory", 1))),
            id="legacy requested to capacity ratio args default to cpu and memory",
        ),
        pytest.param(
            "OutOfTreePlugin", {"whatever": {"nested": True}}, {"whatever": {"nested": True}},
            id="args of an unknown plugin are kept as written",
        ),
    ],
)  # fmt: skip
def test_plugin_args_are_decoded_and_defaulted(plugin: str, raw: Any, expected: Any) -> None:
    assert args_of(plugin, raw) == expected


def test_parse_plugin_args_alone() -> None:
    assert parse_plugin_args("InterPodAffinity", {"hardPodAffinityWeight": 7}) == InterPodAffinityArgs(7)
    with pytest.raises(ConfigError) as e:
        parse_plugin_args("InterPodAffinity", {"hardPodAffinityWeight": 700})
    assert str(e.value) == "hardPodAffinityWeight: Invalid value: 700: not in valid range [0, 100]"


# ---------------------------------------------------------------- global fields
def test_global_fields_are_decoded() -> None:
    c = parse_config(
        cfg(parallelism=4, percentageOfNodesToScore=40, podInitialBackoffSeconds=2, podMaxBackoffSeconds=20,
            enableProfiling=False, delayCacheUntilActive=True,
            leaderElection={"leaderElect": False, "leaseDuration": "1m", "renewDeadline": "30s",
                            "retryPeriod": "500ms", "resourceNamespace": "ns"},
            clientConnection={"kubeconfig": "/k", "qps": 12.5, "burst": 7})
    )  # fmt: skip
    assert (c.parallelism, c.percentage_of_nodes_to_score) == (4, 40)
    assert (c.pod_initial_backoff_seconds, c.pod_max_backoff_seconds) == (2, 20)
    assert (c.enable_profiling, c.enable_contention_profiling, c.delay_cache_until_active) == (False, False, True)
    assert c.leader_election == LeaderElection(False, 60.0, 30.0, 0.5, "leases", "kube-scheduler", "ns")
    cc = c.client_connection
    assert (cc.kubeconfig, cc.qps, cc.burst, cc.content_type) == ("/k", 12.5, 7, "application/vnd.kubernetes.protobuf")


def test_extenders_are_decoded_with_every_field() -> None:
    ca = base64.b64encode(b"PEM").decode()
    c = parse_config(
        cfg(extenders=[
            {"urlPrefix": "http://ext:80/sched", "filterVerb": "filter", "preemptVerb": "preempt",
             "prioritizeVerb": "prioritize", "weight": 3, "bindVerb": "bind", "enableHTTPS": True,
             "tlsConfig": {"insecure": True, "serverName": "ext", "certFile": "c", "keyFile": "k", "caFile": "a",
                           "caData": ca},
             "httpTimeout": "30s", "nodeCacheCapable": True, "ignorable": True,
             "managedResources": [{"name": "example.com/foo", "ignoredByScheduler": True}]},
            {"urlPrefix": "http://other", "httpTimeout": "0s"},
            {"urlPrefix": "http://third"},
        ])
    )  # fmt: skip
    assert c.extenders[0] == Extender(
        url_prefix="http://ext:80/sched", filter_verb="filter", preempt_verb="preempt", prioritize_verb="prioritize",
        weight=3, bind_verb="bind", enable_https=True,
        tls_config=ExtenderTLSConfig(True, "ext", "c", "k", "a", b"", b"", b"PEM"), http_timeout=30.0,
        node_cache_capable=True, managed_resources=(ExtenderManagedResource("example.com/foo", True),),
        ignorable=True,
    )  # fmt: skip
    assert c.extenders[1].http_timeout == 5.0  # zero means DefaultExtenderTimeout
    assert c.extenders[2] == Extender(url_prefix="http://third")
    assert c.extenders[0].name == "http://ext:80/sched"


# ---------------------------------------------------------------- errors
A = "profiles[0].pluginConfig[0].args"
FIT_TYPES = '"LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"'
QNAME_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


def two_profiles(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    return cfg(profiles=[{"schedulerName": "a", **a}, {"schedulerName": "b", **b}])


def fit(strategy: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return with_args("NodeResourcesFit", {"scoringStrategy": strategy, **extra})


def pts(args: dict[str, Any]) -> dict[str, Any]:
    return with_args("PodTopologySpread", args)


def constraint(**kw: Any) -> dict[str, Any]:
    return {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", **kw}


def extenders(*items: dict[str, Any]) -> dict[str, Any]:
    return cfg(extenders=list(items))


ERROR_CASES = [
    # --- top level
    pytest.param(None, "empty configuration: expected a KubeSchedulerConfiguration object",
                 id="an empty file is rejected"),
    pytest.param({"kind": KIND}, "apiVersion: Required value", id="apiVersion is required"),
    pytest.param({"apiVersion": API_VERSION}, "kind: Required value", id="kind is required"),
    pytest.param({"apiVersion": "kubescheduler.config.k8s.io/v1beta3", "kind": KIND},
                 'apiVersion: Unsupported value: "kubescheduler.config.k8s.io/v1beta3": '
                 'supported values: "kubescheduler.config.k8s.io/v1"',
                 id="an older apiVersion is rejected"),
    pytest.param({"apiVersion": API_VERSION, "kind": "Policy"},
                 'kind: Unsupported value: "Policy": supported values: "KubeSchedulerConfiguration"',
                 id="a Policy kind is rejected"),
    pytest.param(cfg(foo=1), 'foo: unknown field "foo"', id="an unknown top-level field is rejected"),
    pytest.param(cfg(profiles=[{"name": "x"}]), 'profiles[0].name: unknown field "name"',
                 id="an unknown profile field is rejected"),
    pytest.param(cfg(profiles=[{"plugins": {"Filter": {}}}]), 'profiles[0].plugins.Filter: unknown field "Filter"',
                 id="extension point keys are case sensitive"),
    pytest.param(cfg(profiles=[{"plugins": {"filter": {"enabled": [{"name": "X", "wieght": 1}]}}}]),
                 'profiles[0].plugins.filter.enabled[0].wieght: unknown field "wieght"',
                 id="an unknown plugin field is rejected"),
    pytest.param(cfg(parallelism="16"), 'parallelism: Invalid value: "16": must be an integer',
                 id="a quoted number is not an integer"),
    pytest.param(cfg(parallelism=2**31), "parallelism: Invalid value: 2147483648: must fit in a 32-bit integer",
                 id="an int32 field rejects larger numbers"),
    pytest.param(cfg(profiles={"schedulerName": "x"}),
                 'profiles: Invalid value: {"schedulerName": "x"}: must be a list',
                 id="profiles must be a list"),
    pytest.param(cfg(leaderElection={"leaseDuration": 15}),
                 'leaderElection.leaseDuration: Invalid value: 15: must be a duration such as "5s" or "1m30s"',
                 id="a duration must be a duration string"),
    pytest.param(cfg(parallelism=0), "parallelism: Invalid value: 0: should be an integer value greater than zero",
                 id="parallelism must be positive"),
    pytest.param(cfg(percentageOfNodesToScore=101),
                 "percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]",
                 id="global percentage above 100 is rejected"),
    pytest.param(cfg(percentageOfNodesToScore=-1),
                 "percentageOfNodesToScore: Invalid value: -1: not in valid range [0-100]",
                 id="negative global percentage is rejected"),
    pytest.param(cfg(profiles=[{"percentageOfNodesToScore": 120}]),
                 "profiles[0].percentageOfNodesToScore: Invalid value: 120: not in valid range [0-100]",
                 id="profile percentage above 100 is rejected"),
    pytest.param(cfg(podInitialBackoffSeconds=0),
                 "podInitialBackoffSeconds: Invalid value: 0: must be greater than 0",
                 id="initial backoff must be positive"),
    pytest.param(cfg(podInitialBackoffSeconds=5, podMaxBackoffSeconds=4),
                 "podMaxBackoffSeconds: Invalid value: 4: must be greater than or equal to PodInitialBackoffSeconds",
                 id="max backoff below initial backoff is rejected"),
    pytest.param(cfg(clientConnection={"burst": -1}), "clientConnection.burst: Invalid value: -1: must be non-negative",
                 id="negative burst is rejected"),
    pytest.param(cfg(leaderElection={"resourceLock": "endpoints"}),
                 'leaderElection.resourceLock: Invalid value: "endpoints": resourceLock value must be "leases"',
                 id="leader election needs a leases lock"),
    pytest.param(cfg(leaderElection={"leaseDuration": "5s"}),
                 "leaderElection.leaseDuration: Invalid value: 10s: must be greater than `RenewDeadline`",
                 id="lease duration must exceed the renew deadline"),
    pytest.param(cfg(leaderElection={"leaderElect": False, "leaseDuration": "5s", "resourceLock": "endpoints"}), None,
                 id="leader election settings are not checked when leader election is off"),
    # --- profiles
    pytest.param(cfg(profiles=[{"schedulerName": ""}]), "profiles[0].schedulerName: Required value",
                 id="an empty scheduler name is rejected"),
    pytest.param(cfg(profiles=[{"schedulerName": "a"}, {}]), "profiles[1].schedulerName: Required value",
                 id="with several profiles each needs a scheduler name"),
    pytest.param(cfg(profiles=[{"schedulerName": "a"}, {"schedulerName": "a"}]),
                 'profiles[1].schedulerName: Duplicate value: "profiles[0].schedulerName"',
                 id="duplicate scheduler names are rejected"),
    pytest.param(two_profiles({"plugins": {"queueSort": {"enabled": [{"name": "Mine"}],
                                                         "disabled": [{"name": "*"}]}}}, {}),
                 'profiles[1].plugins.queueSort: Invalid value: {"disabled": [], "enabled": []}: '
                 "must be the same for all profiles",
                 id="queue sort must be the same in every profile"),
    pytest.param(cfg(profiles=[{"plugins": {"queueSort": {"enabled": [{"name": "A"}, {"name": "B"}]}}}]),
                 "profiles[0].plugins.queueSort.Enabled: Invalid value: 2: only one queue sort plugin can be enabled",
                 id="only one explicit queue sort plugin is allowed"),
    pytest.param(two_profiles({"plugins": {"queueSort": {"enabled": [{"name": "Q"}]}}},
                              {"plugins": {"queueSort": {"enabled": [{"name": "Q"}]}},
                               "pluginConfig": [{"name": "Q", "args": {"x": 1}}]}),
                 "profiles[1].pluginConfig.args: Invalid value: {'x': 1}: queueSort must be the same for all profiles",
                 id="queue sort args must be the same in every profile"),
    pytest.param(cfg(profiles=[{"pluginConfig": [{"name": "NodeResourcesFit", "args": {}},
                                                 {"name": "NodeResourcesFit", "args": {}}]}]),
                 "profiles[0].pluginConfig[1]: repeated config for plugin NodeResourcesFit",
                 id="a repeated plugin config is rejected"),
    pytest.param(cfg(profiles=[{"pluginConfig": [{"name": "X", "arg": {}}]}]),
                 'profiles[0].pluginConfig[0].arg: unknown field "arg"',
                 id="an unknown plugin config field is rejected"),
    # --- args envelope
    pytest.param(with_args("NodeResourcesFit", {"kind": "InterPodAffinityArgs"}),
                 f"{A}.kind: args for plugin NodeResourcesFit were not of type "
                 "NodeResourcesFitArgs.kubescheduler.config.k8s.io, "
                 "got InterPodAffinityArgs.kubescheduler.config.k8s.io",
                 id="args of another kind are rejected"),
    pytest.param(with_args("NodeResourcesFit", {"apiVersion": "kubescheduler.config.k8s.io/v1beta2"}),
                 f'{A}.apiVersion: Unsupported value: "kubescheduler.config.k8s.io/v1beta2": '
                 'supported values: "kubescheduler.config.k8s.io/v1"',
                 id="args of another apiVersion are rejected"),
    pytest.param(with_args("NodeResourcesFit", {"scoringStrategy": {"type": "MostAllocated", "foo": 1}}, index=1),
                 'profiles[0].pluginConfig[1].args.scoringStrategy.foo: unknown field "foo"',
                 id="an unknown nested args field is rejected"),
    pytest.param(with_args("InterPodAffinity", {"hardPodAffinityWieght": 1}),
                 f'{A}.hardPodAffinityWieght: unknown field "hardPodAffinityWieght"',
                 id="a misspelt args field is rejected"),
    # --- NodeResourcesFit
    pytest.param(with_args("NodeResourcesFit", {"scoringStrategy": {"type": "Foo"}}, index=1),
                 'profiles[0].pluginConfig[1].args.scoringStrategy.type: Unsupported value: "Foo": '
                 f"supported values: {FIT_TYPES}",
                 id="an unknown scoring strategy type is rejected"),
    pytest.param(fit({"resources": [{"name": "cpu"}]}),
                 f'{A}.scoringStrategy.type: Unsupported value: "": supported values: {FIT_TYPES}',
                 id="an explicit scoring strategy needs a type"),
    pytest.param(fit({"type": "LeastAllocated", "resources": [{"name": "cpu", "weight": 101}]}),
                 f"{A}.scoringStrategy.resources[0].weight: Invalid value: 101: "
                 "resource weight of cpu not in valid range (0, 100]",
                 id="a fit resource weight above 100 is rejected"),
    pytest.param(fit({"type": "MostAllocated", "resources": [{"name": "memory", "weight": -1}]}),
                 f"{A}.scoringStrategy.resources[0].weight: Invalid value: -1: "
                 "resource weight of memory not in valid range (0, 100]",
                 id="a negative fit resource weight is rejected"),
    pytest.param(fit({"type": "RequestedToCapacityRatio"}),
                 f"{A}.scoringStrategy.requestedToCapacityRatio: Required value: "
                 "must be specified when type is RequestedToCapacityRatio",
                 id="requested to capacity ratio needs its parameters"),
    pytest.param(fit({"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": []}}),
                 f"{A}.scoringStrategy.shape: Required value: at least one point must be specified",
                 id="a shape needs at least one point"),
    pytest.param(fit({"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {
                     "shape": [{"utilization": 50, "score": 1}, {"utilization": 10, "score": 2}]}}),
                 f"{A}.scoringStrategy.shape[1].utilization: Invalid value: 10: "
                 "utilization values must be sorted in increasing order",
                 id="shape utilizations must increase"),
    pytest.param(fit({"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {
                     "shape": [{"utilization": 101, "score": 1}]}}),
                 f"{A}.scoringStrategy.shape[0].utilization: Invalid value: 101: not in valid range [0, 100]",
                 id="shape utilization above 100 is rejected"),
    pytest.param(fit({"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {
                     "shape": [{"utilization": 10, "score": 11}]}}),
                 f"{A}.scoringStrategy.shape[0].score: Invalid value: 11: not in valid range [0, 10]",
                 id="shape score above 10 is rejected"),
    pytest.param(fit({"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {
                     "shape": [{"utilization": 10, "score": -1}]}}),
                 f"{A}.scoringStrategy.shape[0].score: Invalid value: -1: not in valid range [0, 10]",
                 id="negative shape score is rejected"),
    pytest.param(with_args("NodeResourcesFit", {"ignoredResources": ["a/b/c"]}),
                 f'{A}.ignoredResources[0]: Invalid value: "a/b/c": a qualified name '
                 + QNAME_MSG.removeprefix("name part ")
                 + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                 id="an ignored resource must be a qualified name"),
    pytest.param(with_args("NodeResourcesFit", {"ignoredResources": ["-bad"]}),
                 f'{A}.ignoredResources[0]: Invalid value: "-bad": {QNAME_MSG}',
                 id="an ignored resource must start with an alphanumeric"),
    pytest.param(with_args("NodeResourcesFit", {"ignoredResourceGroups": ["example.com/foo"]}),
                 f"{A}.ignoredResourceGroups[0]: Invalid value: \"example.com/foo\": "
                 "resource group name can't contain '/'",
                 id="an ignored resource group cannot contain a slash"),
    # --- InterPodAffinity
    pytest.param(with_args("InterPodAffinity", {"hardPodAffinityWeight": 101}),
                 f"{A}.hardPodAffinityWeight: Invalid value: 101: not in valid range [0, 100]",
                 id="hard pod affinity weight above 100 is rejected"),
    pytest.param(with_args("InterPodAffinity", {"hardPodAffinityWeight": -1}),
                 f"{A}.hardPodAffinityWeight: Invalid value: -1: not in valid range [0, 100]",
                 id="negative hard pod affinity weight is rejected"),
    # --- DefaultPreemption
    pytest.param(with_args("DefaultPreemption", {"minCandidateNodesPercentage": 101}),
                 f"{A}.minCandidateNodesPercentage: Invalid value: 101: not in valid range [0, 100]",
                 id="min candidate nodes percentage above 100 is rejected"),
    pytest.param(with_args("DefaultPreemption", {"minCandidateNodesAbsolute": -1}),
                 f"{A}.minCandidateNodesAbsolute: Invalid value: -1: not in valid range [0, inf)",
                 id="negative min candidate nodes absolute is rejected"),
    pytest.param(with_args("DefaultPreemption", {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0}),
                 f"[{A}.minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same time as "
                 f"minCandidateNodesAbsolute, {A}.minCandidateNodesAbsolute: Invalid value: 0: cannot be zero at the "
                 "same time as minCandidateNodesPercentage]",
                 id="both min candidate limits zero is rejected twice"),
    # --- NodeResourcesBalancedAllocation
    pytest.param(with_args("NodeResourcesBalancedAllocation", {"resources": [{"name": "cpu", "weight": 2}]}),
                 f"{A}.resources[0].weight: Invalid value: 2: must be 1",
                 id="balanced allocation weights must be 1"),
    pytest.param(with_args("NodeResourcesBalancedAllocation", {"resources": [{"name": "cpu"}, {"name": "cpu"}]}),
                 f'{A}.resources[1].name: Duplicate value: "cpu"',
                 id="balanced allocation resources must be unique"),
    # --- PodTopologySpread
    pytest.param(pts({"defaultConstraints": [constraint()]}),
                 f'{A}.defaultingType: Invalid value: "System": when .defaultConstraints are not empty',
                 id="system defaulting forbids default constraints"),
    pytest.param(pts({"defaultingType": "Foo"}),
                 f'{A}.defaultingType: Unsupported value: "Foo": supported values: "System", "List"',
                 id="an unknown defaulting type is rejected"),
    pytest.param(pts({"defaultingType": "List", "defaultConstraints": [constraint(maxSkew=0)]}),
                 f"{A}.defaultConstraints[0].maxSkew: Invalid value: 0: not in valid range (0, inf)",
                 id="a default constraint needs a positive max skew"),
    pytest.param(pts({"defaultingType": "List", "defaultConstraints": [constraint(topologyKey="")]}),
                 f"{A}.defaultConstraints[0].topologyKey: Required value: can not be empty",
                 id="a default constraint needs a topology key"),
    pytest.param(pts({"defaultingType": "List", "defaultConstraints": [constraint(topologyKey="a b")]}),
                 f'{A}.defaultConstraints[0].topologyKey: Invalid value: "a b": {QNAME_MSG}',
                 id="a default constraint topology key must be a label name"),
    pytest.param(pts({"defaultingType": "List", "defaultConstraints": [constraint(whenUnsatisfiable="")]}),
                 f"{A}.defaultConstraints[0].whenUnsatisfiable: Required value: can not be empty",
                 id="a default constraint needs an action"),
    pytest.param(pts({"defaultingType": "List", "defaultConstraints": [constraint(whenUnsatisfiable="Foo")]}),
                 f'{A}.defaultConstraints[0].whenUnsatisfiable: Unsupported value: "Foo": '
                 'supported values: "DoNotSchedule", "ScheduleAnyway"',
                 id="a default constraint action must be known"),
    pytest.param(pts({"defaultingType": "List", "defaultConstraints": [constraint(labelSelector={})]}),
                 f"{A}.defaultConstraints[0].labelSelector: Forbidden: "
                 "constraint must not define a selector, as they deduced for each pod",
                 id="a default constraint cannot have a selector"),
    pytest.param(pts({"defaultingType": "List", "defaultConstraints": [constraint(maxSkew=1), constraint(maxSkew=2)]}),
                 f'{A}.defaultConstraints[1]: Duplicate value: "{{zone, DoNotSchedule}}"',
                 id="default constraints cannot repeat a key and action"),
    pytest.param(pts({"defaultingType": "List", "defaultConstraints": [constraint(maxSkow=1)]}),
                 f'{A}.defaultConstraints[0].maxSkow: unknown field "maxSkow"',
                 id="an unknown default constraint field is rejected"),
    # --- VolumeBinding
    pytest.param(with_args("VolumeBinding", {"bindTimeoutSeconds": -1}),
                 f"{A}.bindTimeoutSeconds: Invalid value: -1: "
                 "invalid BindTimeoutSeconds, should not be a negative value",
                 id="a negative bind timeout is rejected"),
    pytest.param(with_args("VolumeBinding", {"shape": [{"utilization": 0, "score": 0}]}),
                 f'{A}.shape: Invalid value: [{{"score": 0, "utilization": 0}}]: unexpected field `shape`, '
                 "remove it or turn on the feature gate VolumeCapacityPriority",
                 id="a volume binding shape needs the VolumeCapacityPriority gate"),
    # --- NodeAffinity
    pytest.param(with_args("NodeAffinity", {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                     "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In"}]}]}}}),
                 f"{A}.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
                 ".matchExpressions[0].values: must be specified when `operator` is 'In' or 'NotIn'",
                 id="added affinity requirements are checked"),
    pytest.param(with_args("NodeAffinity", {"addedAffinity": {"required": {}}}),
                 f'{A}.addedAffinity.required: unknown field "required"',
                 id="an unknown added affinity field is rejected"),
    # --- legacy args
    pytest.param(with_args("NodeLabel", {"presentLabels": ["a", "b"], "absentLabels": ["b"]}),
                 f'{A}.presentLabels[1]: Invalid value: "b": conflict with {A}.absentLabels[0]',
                 id="a node label cannot be both present and absent"),
    pytest.param(with_args("RequestedToCapacityRatio", {"shape": [{"utilization": 0, "score": 0}],
                                                        "resources": [{"name": "cpu", "weight": -1}]}),
                 f"{A}.resources[0].weight: Invalid value: -1: resource weight of cpu not in valid range [1, inf)",
                 id="legacy requested to capacity ratio weights must be positive"),
    # --- extenders (facts 8)
    pytest.param(extenders({"urlPrefix": "http://e", "prioritizeVerb": "prioritize"}),
                 "extenders[0].weight: Invalid value: 0: must have a positive weight applied to it",
                 id="a prioritizing extender needs a positive weight"),
    pytest.param(extenders({"urlPrefix": "http://e", "prioritizeVerb": "p", "weight": -2}),
                 "extenders[0].weight: Invalid value: -2: must have a positive weight applied to it",
                 id="a prioritizing extender cannot have a negative weight"),
    pytest.param(extenders({"urlPrefix": "http://e", "weight": 0}), None,
                 id="an extender without prioritize verb needs no weight"),
    pytest.param(extenders({"urlPrefix": "http://a", "bindVerb": "bind"},
                           {"urlPrefix": "http://b", "bindVerb": "bind"}),
                 'extenders: Invalid value: "found 2 extenders implementing bind": '
                 "only one extender can implement bind",
                 id="only one extender may bind"),
    pytest.param(extenders({"urlPrefix": "e", "managedResources": [{"name": "cpu"}]}),
                 'extenders[0].managedResources[0].name: Invalid value: "cpu": is an invalid extended resource name',
                 id="a native resource cannot be managed by an extender"),
    pytest.param(extenders({"urlPrefix": "e", "managedResources": [{"name": "kubernetes.io/foo"}]}),
                 'extenders[0].managedResources[0].name: Invalid value: "kubernetes.io/foo": '
                 "is an invalid extended resource name",
                 id="a kubernetes.io resource cannot be managed by an extender"),
    pytest.param(extenders({"urlPrefix": "e", "managedResources": [{"name": "example.com/a b"}]}),
                 f'extenders[0].managedResources[0].name: Invalid value: "example.com/a b": {QNAME_MSG}',
                 id="a managed resource must be a qualified name"),
    pytest.param(extenders({"urlPrefix": "a", "managedResources": [{"name": "example.com/foo"}]},
                           {"urlPrefix": "b", "managedResources": [{"name": "example.com/foo"}]}),
                 'extenders[1].managedResources[0].name: Invalid value: "example.com/foo": '
                 "duplicate extender managed resource name",
                 id="a managed resource cannot be listed by two extenders"),
    pytest.param(extenders({"urlPrefix": "e", "httpTimeout": "soon"}),
                 'extenders[0].httpTimeout: Invalid value: "soon": must be a duration such as "5s" or "1m30s"',
                 id="an extender timeout must be a duration"),
    pytest.param(extenders({"urlPrefix": "e", "tlsConfig": {"caData": "%%%"}}),
                 'extenders[0].tlsConfig.caData: Invalid value: "%%%": must be base64-encoded data',
                 id="extender certificate data must be base64"),
    pytest.param(extenders({"urlPrefix": "e", "filterverb": "filter"}),
                 'extenders[0].filterverb: unknown field "filterverb"',
                 id="an unknown extender field is rejected"),
    pytest.param(extenders({"urlPrefix": ""}), None, id="an empty url prefix is not validated"),
    # --- several errors
    pytest.param(cfg(parallelism=0, percentageOfNodesToScore=200),
                 "[parallelism: Invalid value: 0: should be an integer value greater than zero, "
                 "percentageOfNodesToScore: Invalid value: 200: not in valid range [0-100]]",
                 id="several errors are reported together in upstream order"),
]  # fmt: skip


@pytest.mark.parametrize("raw, message", ERROR_CASES)
def test_validation_errors_name_the_field(raw: Any, message: str | None) -> None:
    if message is None:
        parse_config(raw)
        return
    with pytest.raises(ConfigError) as e:
        parse_config(raw)
    assert str(e.value) == message


def test_errors_carry_the_field_path_separately() -> None:
    with pytest.raises(ConfigError) as e:
        parse_config(fit({"type": "Foo"}), file="sched.yaml")
    assert e.value.file == "sched.yaml"
    assert e.value.field == f"{A}.scoringStrategy.type"
    assert str(e.value).startswith(f"sched.yaml: {A}.scoringStrategy.type: Unsupported value")


# ---------------------------------------------------------------- files
def test_load_config_reads_yaml(tmp_path: Path) -> None:
    p = tmp_path / "sched.yaml"
    p.write_text(
        f"apiVersion: {API_VERSION}\nkind: {KIND}\nprofiles:\n- schedulerName: s\n"
        "  pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        type: MostAllocated\n"
    )
    c = load_config(p)
    assert c.profiles[0].scheduler_name == "s"
    assert c.profiles[0].plugin_config["NodeResourcesFit"].scoring_strategy.type == "MostAllocated"


@pytest.mark.parametrize(
    "text, message",
    [
        pytest.param("kind: [", "invalid YAML", id="broken YAML names the file"),
        pytest.param(f"apiVersion: {API_VERSION}\nkind: {KIND}\nparallelism: 1\nparallelism: 2\n",
                     'line 4: duplicate field "parallelism"', id="a duplicated field is rejected"),
        pytest.param(f"apiVersion: {API_VERSION}\nkind: {KIND}\nparallelism: 0\n",
                     "parallelism: Invalid value: 0", id="validation errors name the file"),
    ],
)  # fmt: skip
def test_load_config_errors_name_the_file(tmp_path: Path, text: str, message: str) -> None:
    p = tmp_path / "bad.yaml"
    p.write_text(text)
    with pytest.raises(ConfigError) as e:
        load_config(p)
    assert str(e.value).startswith(f"{p}: {message}")


def test_load_config_of_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read configuration"):
        load_config(tmp_path / "nope.yaml")


# ---------------------------------------------------------------- durations
@pytest.mark.parametrize(
    "text, ns, canonical",
    [
        pytest.param("15s", 15_000_000_000, "15s", id="seconds"),
        pytest.param("1m30s", 90_000_000_000, "1m30s", id="minutes and seconds"),
        pytest.param("90s", 90_000_000_000, "1m30s", id="seconds above a minute print as minutes"),
        pytest.param("1h", 3_600_000_000_000, "1h0m0s", id="an hour prints all units"),
        pytest.param("1.5s", 1_500_000_000, "1.5s", id="fractional seconds"),
        pytest.param("500ms", 500_000_000, "500ms", id="milliseconds"),
        pytest.param("1.5us", 1_500, "1.5\u00b5s", id="microseconds print with the micro sign"),
        pytest.param("7ns", 7, "7ns", id="nanoseconds"),
        pytest.param("0", 0, "0s", id="a bare zero"),
        pytest.param("-2s", -2_000_000_000, "-2s", id="negative durations"),
    ],
)
def test_go_durations(text: str, ns: int, canonical: str) -> None:
    assert parse_duration(text) == ns
    assert format_duration(ns) == canonical


@pytest.mark.parametrize("text", ["", "5", "s", "5x", "1..5s", "--1s"])
def test_bad_go_durations(text: str) -> None:
    assert parse_duration(text) is None


# ---------------------------------------------------------------- configurations built in code
def test_configurations_built_in_code_are_validated_the_same_way() -> None:
    good = default_configuration()
    validate_configuration(good)
    bad_args = default_profile(plugin_config={"InterPodAffinity": NodeResourcesFitArgs()})
    with pytest.raises(ConfigError) as e:
        validate_configuration(replace(good, profiles=(bad_args,)))
    assert str(e.value) == (
        "profiles[0].pluginConfig[0].args: Invalid value: NodeResourcesFitArgs: has to match plugin args"
    )
    binders = (Extender(url_prefix="a", bind_verb="b"), Extender(url_prefix="b", bind_verb="b"))
    with pytest.raises(ConfigError, match="only one extender can implement bind"):
        validate_configuration(replace(good, extenders=binders))


def test_validate_plugin_args_checks_one_args_value() -> None:
    validate_plugin_args(InterPodAffinityArgs(100))
    with pytest.raises(ConfigError) as e:
        validate_plugin_args(InterPodAffinityArgs(101), "args")
    assert str(e.value) == "args.hardPodAffinityWeight: Invalid value: 101: not in valid range [0, 100]"


def test_parse_plugin_args_keeps_unknown_plugins_args() -> None:
    assert parse_plugin_args("Mine", {"a": 1}) == {"a": 1}
