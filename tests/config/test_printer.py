"""dump_config: the defaulted v1 shape kube-scheduler writes (``--write-config-to``), and the
YAML round trip ``parse_config(dump_config(c)) == c``."""

from __future__ import annotations

import base64
from typing import Any

import pytest
import yaml

from kubesched.config import API_VERSION, KIND, default_configuration, dump_config, parse_config
from kubesched.features import FEATURES_1_30, FEATURES_1_36

# What kube-scheduler v1.30 prints for an empty configuration (keys sorted, weight 0 for
# MultiPoint plugins without a weight, every extension point present).
UPSTREAM_DEFAULTS_YAML = """\
apiVersion: kubescheduler.config.k8s.io/v1
clientConnection:
  acceptContentTypes: ""
  burst: 100
  contentType: application/vnd.kubernetes.protobuf
  kubeconfig: ""
  qps: 50
enableContentionProfiling: true
enableProfiling: true
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: true
  leaseDuration: 15s
  renewDeadline: 10s
  resourceLock: leases
  resourceName: kube-scheduler
  resourceNamespace: kube-system
  retryPeriod: 2s
parallelism: 16
percentageOfNodesToScore: 0
podInitialBackoffSeconds: 1
podMaxBackoffSeconds: 10
profiles:
- pluginConfig:
  - args:
      apiVersion: kubescheduler.config.k8s.io/v1
      kind: DefaultPreemptionArgs
      minCandidateNodesAbsolute: 100
      minCandidateNodesPercentage: 10
    name: DefaultPreemption
  - args:
      apiVersion: kubescheduler.config.k8s.io/v1
      hardPodAffinityWeight: 1
      ignorePreferredTermsOfExistingPods: false
      kind: InterPodAffinityArgs
    name: InterPodAffinity
  - args:
      apiVersion: kubescheduler.config.k8s.io/v1
      kind: NodeAffinityArgs
    name: NodeAffinity
  - args:
      apiVersion: kubescheduler.config.k8s.io/v1
      kind: NodeResourcesBalancedAllocationArgs
      resources:
      - name: cpu
        weight: 1
      - name: memory
        weight: 1
    name: NodeResourcesBalancedAllocation
  - args:
      apiVersion: kubescheduler.config.k8s.io/v1
      kind: NodeResourcesFitArgs
      scoringStrategy:
        resources:
        - name: cpu
          weight: 1
        - name: memory
          weight: 1
        type: LeastAllocated
    name: NodeResourcesFit
  - args:
      apiVersion: kubescheduler.config.k8s.io/v1
      defaultingType: System
      kind: PodTopologySpreadArgs
    name: PodTopologySpread
  - args:
      apiVersion: kubescheduler.config.k8s.io/v1
      bindTimeoutSeconds: 600
      kind: VolumeBindingArgs
    name: VolumeBinding
  plugins:
    bind: {}
    filter: {}
    multiPoint:
      enabled:
      - name: SchedulingGates
        weight: 0
      - name: PrioritySort
        weight: 0
      - name: NodeUnschedulable
        weight: 0
      - name: NodeName
        weight: 0
      - name: TaintToleration
        weight: 3
      - name: NodeAffinity
        weight: 2
      - name: NodePorts
        weight: 0
      - name: NodeResourcesFit
        weight: 1
      - name: VolumeRestrictions
        weight: 0
      - name: EBSLimits
        weight: 0
      - name: GCEPDLimits
        weight: 0
      - name: NodeVolumeLimits
        weight: 0
      - name: AzureDiskLimits
        weight: 0
      - name: VolumeBinding
        weight: 0
      - name: VolumeZone
        weight: 0
      - name: PodTopologySpread
        weight: 2
      - name: InterPodAffinity
        weight: 2
      - name: DefaultPreemption
        weight: 0
      - name: NodeResourcesBalancedAllocation
        weight: 1
      - name: ImageLocality
        weight: 1
      - name: DefaultBinder
        weight: 0
    permit: {}
    postBind: {}
    postFilter: {}
    preBind: {}
    preEnqueue: {}
    preFilter: {}
    preScore: {}
    queueSort: {}
    reserve: {}
    score: {}
  schedulerName: default-scheduler
"""


def test_defaults_print_like_upstream() -> None:
    assert dump_config(default_configuration(features=FEATURES_1_30)) == yaml.safe_load(UPSTREAM_DEFAULTS_YAML)


def test_the_1_36_defaults_print_dynamic_resources_args_as_durations() -> None:
    printed = dump_config(default_configuration(features=FEATURES_1_36))
    args = {c["name"]: c["args"] for c in printed["profiles"][0]["pluginConfig"]}
    assert args["DynamicResources"] == {"apiVersion": API_VERSION, "kind": "DynamicResourcesArgs",
                                        "bindingTimeout": "10m0s", "filterTimeout": "10s"}
    names = [p["name"] for p in printed["profiles"][0]["plugins"]["multiPoint"]["enabled"]]
    assert "EBSLimits" not in names and names[-1] == "NodeDeclaredFeatures"


def test_printed_keys_are_in_alphabetical_order() -> None:
    text = yaml.safe_dump(dump_config(default_configuration()), sort_keys=False)
    assert yaml.safe_dump(yaml.safe_load(text), sort_keys=True) == text


def cfg(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": KIND, **fields}


ROUND_TRIP_CASES = [
    pytest.param(cfg(), id="the default configuration"),
    pytest.param(
        cfg(parallelism=8, percentageOfNodesToScore=35, podInitialBackoffSeconds=3, podMaxBackoffSeconds=30,
            enableProfiling=False, delayCacheUntilActive=True,
            leaderElection={"leaderElect": False, "leaseDuration": "1m30s", "retryPeriod": "250ms"},
            clientConnection={"qps": 7.5, "burst": 3, "kubeconfig": "/etc/kube", "acceptContentTypes": "x"}),
        id="changed global settings",
    ),
    pytest.param(
        cfg(profiles=[
            {"schedulerName": "packer", "percentageOfNodesToScore": 50,
             "plugins": {
                 "multiPoint": {"enabled": [{"name": "TaintToleration", "weight": 9}, {"name": "Custom", "weight": 4}],
                                "disabled": [{"name": "ImageLocality"}]},
                 "score": {"enabled": [{"name": "NodeResourcesFit", "weight": 5}], "disabled": [{"name": "*"}]},
                 "filter": {"disabled": [{"name": "NodePorts"}]},
                 "queueSort": {"enabled": [{"name": "PrioritySort"}]}},
             "pluginConfig": [
                 {"name": "NodeResourcesFit", "args": {
                     "ignoredResources": ["example.com/a"], "ignoredResourceGroups": ["example.com"],
                     "scoringStrategy": {"type": "RequestedToCapacityRatio",
                                         "resources": [{"name": "cpu", "weight": 2}, {"name": "example.com/gpu"}],
                                         "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 10},
                                                                                {"utilization": 100, "score": 0}]}}}},
                 {"name": "Custom", "args": {"free": ["form", {"data": 1}]}},
                 {"name": "NoArgs"},
             ]},
            {"schedulerName": "spreader",
             "plugins": {"queueSort": {"enabled": [{"name": "PrioritySort"}]}},
             "pluginConfig": [
                 {"name": "PodTopologySpread", "args": {"defaultingType": "List", "defaultConstraints": [
                     {"maxSkew": 2, "topologyKey": "topology.kubernetes.io/zone",
                      "whenUnsatisfiable": "ScheduleAnyway", "minDomains": 3, "nodeAffinityPolicy": "Honor",
                      "nodeTaintsPolicy": "Ignore", "matchLabelKeys": ["app"]}]}},
                 {"name": "NodeAffinity", "args": {"addedAffinity": {
                     "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                         {"matchExpressions": [{"key": "pool", "operator": "NotIn", "values": ["spot"]},
                                               {"key": "gpu", "operator": "Exists"}]}]},
                     "preferredDuringSchedulingIgnoredDuringExecution": [
                         {"weight": 7, "preference": {"matchFields": [
                             {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}}]}}},
                 {"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": 0,
                                                       "ignorePreferredTermsOfExistingPods": True}},
                 {"name": "DefaultPreemption", "args": {"minCandidateNodesPercentage": 0}},
                 {"name": "NodeResourcesBalancedAllocation", "args": {"resources": [{"name": "example.com/x"}]}},
                 {"name": "VolumeBinding", "args": {"bindTimeoutSeconds": 0}},
                 {"name": "NodeLabel", "args": {"presentLabels": ["a"], "absentLabels": ["b"],
                                                "presentLabelsPreference": ["c"], "absentLabelsPreference": ["d"]}},
                 {"name": "ServiceAffinity", "args": {"affinityLabels": ["zone"],
                                                      "antiAffinityLabelsPreference": ["rack"]}},
                 {"name": "RequestedToCapacityRatio", "args": {"shape": [{"utilization": 50, "score": 5}]}},
             ]},
        ]),
        id="two customised profiles with every args kind",
    ),
    pytest.param(
        cfg(extenders=[
            {"urlPrefix": "https://ext:8443/scheduler", "filterVerb": "filter", "prioritizeVerb": "prioritize",
             "weight": 5, "bindVerb": "bind", "preemptVerb": "preempt", "enableHTTPS": True,
             "tlsConfig": {"insecure": True, "serverName": "ext", "certFile": "/c", "keyFile": "/k", "caFile": "/a",
                           "certData": base64.b64encode(b"cert").decode(),
                           "keyData": base64.b64encode(b"key").decode(),
                           "caData": base64.b64encode(b"ca").decode()},
             "httpTimeout": "1m0.5s", "nodeCacheCapable": True, "ignorable": True,
             "managedResources": [{"name": "example.com/foo", "ignoredByScheduler": True},
                                  {"name": "example.com/bar"}]},
            {"urlPrefix": "http://plain", "tlsConfig": {}},
        ]),
        id="extenders with every field",
    ),
]  # fmt: skip


@pytest.mark.parametrize("raw", ROUND_TRIP_CASES)
def test_yaml_round_trip(raw: dict[str, Any]) -> None:
    config = parse_config(raw)
    dumped = dump_config(config)
    text = yaml.safe_dump(dumped, sort_keys=False)
    again = parse_config(yaml.safe_load(text))
    assert again == config
    assert dump_config(again) == dumped


def test_extender_timeout_prints_as_a_go_duration() -> None:
    dumped = dump_config(parse_config(cfg(extenders=[{"urlPrefix": "e", "httpTimeout": "90s"}, {"urlPrefix": "f"}])))
    assert [e["httpTimeout"] for e in dumped["extenders"]] == ["1m30s", "5s"]


def test_explicit_plugin_config_without_args_prints_without_args() -> None:
    dumped = dump_config(parse_config(cfg(profiles=[{"pluginConfig": [{"name": "NoArgs"}]}])))
    assert dumped["profiles"][0]["pluginConfig"][0] == {"name": "NoArgs"}
