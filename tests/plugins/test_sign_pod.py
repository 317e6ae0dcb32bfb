"""SignPod of every default plugin (OpportunisticBatching, 1.36): the fragments each one adds to a
pod's signature and the pods each one refuses to sign, as upstream's SignPod methods and the
signers of k8s.io/kube-scheduler/framework/signers.go; then the profile's signature
(frameworkImpl.SignPod / computeBatchablePlugins)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from builders import PodBuilder, make_pod

from kubesched._runtime.framework import Framework
from kubesched._runtime.handle import FrameworkHandle
from kubesched._runtime.profile import build_framework
from kubesched._runtime.registry import in_tree_registry
from kubesched.cluster.memory import MemoryObjects
from kubesched.config import default_configuration, parse_config
from kubesched.features import FEATURES_1_30, FEATURES_1_36, Features, features_for
from kubesched.framework import Code, SignFragment, Status
from kubesched.framework.signers import (
    FEATURES_SIGNER_NAME,
    HOST_PORTS_SIGNER_NAME,
    IMAGE_NAMES_SIGNER_NAME,
    LABELS_SIGNER_NAME,
    NODE_AFFINITY_SIGNER_NAME,
    NODE_NAME_SIGNER_NAME,
    NODE_SELECTOR_SIGNER_NAME,
    RESOURCES_SIGNER_NAME,
    TOLERATIONS_SIGNER_NAME,
    VOLUMES_SIGNER_NAME,
)
from kubesched.objects import Pod
from kubesched.objects.devices import parse_device_class
from kubesched.objects.parse import parse_pod
from kubesched.plugins.nodedeclaredfeatures import NodeDeclaredFeatures

GPU = "example.com/gpu"
PTS_LIST = {"name": "PodTopologySpread", "args": {"defaultingType": "List"}}


def profile(*plugin_config: dict[str, Any], features: Features = FEATURES_1_36, objects: MemoryObjects | None = None,
            extra: dict[str, Any] | None = None) -> Framework:
    """The default profile with these pluginConfig entries (none: the default configuration)."""
    if not plugin_config and extra is None:
        cfg = default_configuration(features=features)
    else:
        cfg = parse_config({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                            "profiles": [{"pluginConfig": list(plugin_config), **(extra or {})}]}, features=features)
    return build_framework(cfg.profiles[0], in_tree_registry(features),
                           FrameworkHandle.for_nodes([], objects=objects, features=features))


def plugin(fwk: Framework, name: str) -> Any:
    for p in (*fwk.pre_filter, *fwk.filter, *fwk.pre_score, *fwk.score):
        if p.name == name:
            return p
    raise AssertionError(f"{name} is not in the profile")


def sign(fwk: Framework, name: str, pod: Pod) -> list[SignFragment] | Status:
    out: list[SignFragment] | Status = plugin(fwk, name).sign_pod(pod)
    return out


def with_spec(b: PodBuilder, **spec: Any) -> Pod:
    m = b.manifest()
    m["spec"].update(spec)
    return parse_pod(m, features=FEATURES_1_36)


def base() -> PodBuilder:
    return make_pod().name("p").req(cpu="500m", memory="1Gi")


# ---------------------------------------------------------------- fragments
RESOURCES = {"MilliCPU": 500, "Memory": 1 << 30, "EphemeralStorage": 0, "AllowedPodNumber": 0,
             "ScalarResources": None}

FRAGMENTS: list[Any] = [
    pytest.param("NodeName", base().obj(), [SignFragment(NODE_NAME_SIGNER_NAME, "")],
                 id="NodeName signs the pod's nodeName"),
    pytest.param("NodePorts",
                 with_spec(make_pod().name("p").host_port(9090).host_port(8080).host_port(9090),
                           initContainers=[{"name": "i0", "image": "x",
                                            "ports": [{"containerPort": 7070, "hostPort": 7070}]}]),
                 [SignFragment(HOST_PORTS_SIGNER_NAME, [7070, 8080, 9090])],
                 id="NodePorts signs the distinct host ports of containers and init containers, sorted"),
    pytest.param("NodePorts", make_pod().name("p").container(ports=[{"containerPort": 80}]).obj(),
                 [SignFragment(HOST_PORTS_SIGNER_NAME, [])],
                 id="NodePorts ignores container ports without a host port"),
    pytest.param("NodeResourcesFit", base().obj(), [SignFragment(RESOURCES_SIGNER_NAME, RESOURCES)],
                 id="NodeResourcesFit signs the pod's requests"),
    pytest.param("NodeResourcesBalancedAllocation", base().obj(), [SignFragment(RESOURCES_SIGNER_NAME, RESOURCES)],
                 id="NodeResourcesBalancedAllocation signs the same requests under the same key"),
    pytest.param("NodeResourcesFit",
                 make_pod().name("p").container(requests={"cpu": "1", GPU: "0", "hugepages-2Mi": "2Mi"})
                 .overhead(cpu="100m").obj(),
                 [SignFragment(RESOURCES_SIGNER_NAME, {"MilliCPU": 1100, "Memory": 0, "EphemeralStorage": 0,
                                                       "AllowedPodNumber": 0,
                                                       "ScalarResources": {GPU: 0, "hugepages-2Mi": 2 << 20}})],
                 id="NodeResourcesFit keeps zero scalar requests and adds the overhead"),
    pytest.param("ImageLocality",
                 make_pod().name("p").container("nginx").container("nginx:latest").container("r.io/a/b:1")
                 .init_container("busybox").obj(),
                 [SignFragment(IMAGE_NAMES_SIGNER_NAME, ["busybox:latest", "nginx:latest", "r.io/a/b:1"])],
                 id="ImageLocality signs the distinct normalized images, sorted"),
    pytest.param("NodeAffinity", base().obj(),
                 [SignFragment(NODE_AFFINITY_SIGNER_NAME, None), SignFragment(NODE_SELECTOR_SIGNER_NAME, None)],
                 id="NodeAffinity signs nulls for a pod without node affinity or nodeSelector"),
    pytest.param("NodeAffinity", base().node_selector({}).obj(),
                 [SignFragment(NODE_AFFINITY_SIGNER_NAME, None), SignFragment(NODE_SELECTOR_SIGNER_NAME, {})],
                 id="NodeAffinity tells an empty nodeSelector from none"),
    pytest.param("NodeAffinity", base().node_affinity_in("zone", ["b", "a"]).node_selector({"disk": "ssd"}).obj(),
                 [SignFragment(NODE_AFFINITY_SIGNER_NAME,
                               {"Required": ['{"MatchExpressions":["{\\"key\\":\\"zone\\",\\"operator\\":\\"In\\",'
                                             '\\"values\\":[\\"a\\",\\"b\\"]}"],"MatchFields":[]}'],
                                "Preferred": []}),
                  SignFragment(NODE_SELECTOR_SIGNER_NAME, {"disk": "ssd"})],
                 id="NodeAffinity signs the required terms canonically, values sorted"),
    pytest.param("TaintToleration",
                 base().toleration(key="b", operator="Exists").toleration(key="a", value="2", effect="NoSchedule")
                 .toleration(key="a", value="1", tolerationSeconds=30, effect="NoExecute").obj(),
                 [SignFragment(TOLERATIONS_SIGNER_NAME,
                               [{"key": "a", "operator": "Equal", "value": "1", "effect": "NoExecute",
                                 "tolerationSeconds": 30},
                                {"key": "a", "operator": "Equal", "value": "2", "effect": "NoSchedule"},
                                {"key": "b", "operator": "Exists"}])],
                 id="TaintToleration signs the tolerations ordered by key then value"),
    pytest.param("NodeUnschedulable", base().toleration(key="k", operator="Exists").obj(),
                 [SignFragment(TOLERATIONS_SIGNER_NAME, [{"key": "k", "operator": "Exists"}])],
                 id="NodeUnschedulable signs the tolerations too"),
    pytest.param("VolumeBinding",
                 base().volume("cfg", "configMap", {"name": "c"}).volume("sec", "secret", {"secretName": "s"})
                 .pvc("data").volume("scratch", "emptyDir", {}).obj(),
                 [SignFragment(VOLUMES_SIGNER_NAME, ['{"emptyDir":{}}',
                                                     '{"persistentVolumeClaim":{"claimName":"data"}}'])],
                 id="VolumeBinding signs the volume sources but ConfigMaps and Secrets, sorted, without names"),
    pytest.param("InterPodAffinity", base().label("app", "web").obj(),
                 [SignFragment(LABELS_SIGNER_NAME, {"app": "web"})],
                 id="InterPodAffinity signs the labels other pods' terms may select"),
    pytest.param("PodTopologySpread", base().obj(), [],
                 id="PodTopologySpread adds nothing for a pod without constraints under List defaulting"),
    pytest.param("DynamicResources", base().obj(), [], id="DynamicResources adds nothing for a pod without claims"),
    pytest.param("NodeDeclaredFeatures", base().obj(), [SignFragment(FEATURES_SIGNER_NAME, "")],
                 id="NodeDeclaredFeatures signs an empty feature set for a plain pod"),
    pytest.param("NodeDeclaredFeatures",
                 with_spec(base(), hostNetwork=True, hostUsers=False),
                 [SignFragment(FEATURES_SIGNER_NAME, "UserNamespacesHostNetworkSupport")],
                 id="NodeDeclaredFeatures signs the features the pod needs"),
]


@pytest.mark.parametrize(("name", "pod", "want"), FRAGMENTS)
def test_each_plugin_signs_what_its_decisions_depend_on(name: str, pod: Pod, want: list[SignFragment]) -> None:
    assert sign(profile(PTS_LIST), name, pod) == want


def test_every_volume_plugin_signs_the_same_volumes() -> None:
    fwk = profile(PTS_LIST)
    pod = base().pvc("data").volume("cfg", "configMap", {"name": "c"}).obj()
    signed = [sign(fwk, n, pod) for n in ("VolumeBinding", "VolumeRestrictions", "VolumeZone", "NodeVolumeLimits")]
    assert signed == [[SignFragment(VOLUMES_SIGNER_NAME, ['{"persistentVolumeClaim":{"claimName":"data"}}'])]] * 4


# ---------------------------------------------------------------- refusals
def gpu_classes() -> MemoryObjects:
    cls = parse_device_class({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
                              "spec": {"extendedResourceName": GPU}})
    return MemoryObjects(device_classes=[cls])


POD_AFFINITY = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone"}]}}
POD_ANTI_AFFINITY = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
    {"weight": 1, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone"}}]}}

REFUSALS: list[Any] = [
    pytest.param("DynamicResources", lambda: profile(PTS_LIST),
                 with_spec(base(), resourceClaims=[{"name": "gpu", "resourceClaimName": "c1"}]),
                 "pods with dra resource claims are not signable", id="DynamicResources refuses a pod with claims"),
    pytest.param("InterPodAffinity", lambda: profile(PTS_LIST), base().affinity(POD_AFFINITY).obj(),
                 "pods with InterPodAffinity are not signable", id="InterPodAffinity refuses pod affinity"),
    pytest.param("InterPodAffinity", lambda: profile(PTS_LIST), base().affinity(POD_ANTI_AFFINITY).obj(),
                 "pods with InterPodAffinity are not signable", id="InterPodAffinity refuses pod anti-affinity"),
    pytest.param("PodTopologySpread", lambda: profile(PTS_LIST), base().spread(1, "zone").obj(),
                 "pods with topology constraints are not signable",
                 id="PodTopologySpread refuses a pod with topology spread constraints"),
    pytest.param("PodTopologySpread", lambda: profile(), base().obj(),
                 "pods with default topology constraints are not signable",
                 id="PodTopologySpread refuses every pod under System defaulting"),
    pytest.param("PodTopologySpread",
                 lambda: profile({"name": "PodTopologySpread", "args": {
                     "defaultingType": "List", "defaultConstraints": [
                         {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"}]}}),
                 base().obj(), "pods with default topology constraints are not signable",
                 id="PodTopologySpread refuses every pod when List defaulting has constraints"),
    pytest.param("NodeResourcesFit", lambda: profile(PTS_LIST, objects=gpu_classes()),
                 make_pod().name("p").container(requests={GPU: "1"}).obj(),
                 "signature disabled when dra extended resources are used in the cluster",
                 id="NodeResourcesFit refuses a pod asking for an extended resource a DeviceClass provides"),
    pytest.param("NodeResourcesBalancedAllocation", lambda: profile(PTS_LIST, objects=gpu_classes()),
                 make_pod().name("p").container(requests={GPU: "1"}).obj(),
                 "signature disabled when dra extended resources are used in the cluster",
                 id="NodeResourcesBalancedAllocation refuses it too"),
]


@pytest.mark.parametrize(("name", "fwk", "pod", "message"), REFUSALS)
def test_plugins_refuse_pods_whose_decisions_depend_on_more_than_the_pod(
        name: str, fwk: Callable[[], Framework], pod: Pod, message: str) -> None:
    got = sign(fwk(), name, pod)
    assert isinstance(got, Status)
    assert (got.code, got.message) == (Code.UNSCHEDULABLE, message)


@pytest.mark.parametrize(("classes", "requests", "signed"), [
    pytest.param(False, {GPU: "1"}, True, id="an extended resource no DeviceClass provides is signed"),
    pytest.param(True, {GPU: "0"}, True, id="a zero request of a DRA-provided resource is signed"),
])
def test_fit_signs_extended_resources_left_to_device_plugins(classes: bool, requests: dict[str, str],
                                                              signed: bool) -> None:
    fwk = profile(PTS_LIST, objects=gpu_classes() if classes else None)
    got = sign(fwk, "NodeResourcesFit", make_pod().name("p").container(requests=requests).obj())
    assert isinstance(got, list) == signed


def test_fit_signs_dra_provided_resources_when_the_gate_is_off() -> None:
    features = features_for("1.36", ["DRAExtendedResource=false"])
    fwk = profile(PTS_LIST, objects=gpu_classes(), features=features)
    assert isinstance(sign(fwk, "NodeResourcesFit", make_pod().name("p").container(requests={GPU: "1"}).obj()), list)


def test_inter_pod_affinity_leaves_labels_out_when_existing_pods_preferred_terms_are_ignored() -> None:
    fwk = profile(PTS_LIST, {"name": "InterPodAffinity", "args": {"ignorePreferredTermsOfExistingPods": True}})
    assert sign(fwk, "InterPodAffinity", base().label("app", "web").obj()) == []


def test_node_declared_features_with_its_gate_off_fails_to_sign() -> None:
    # Upstream's disabled plugin has no framework nor version: its inference errs.
    features = features_for("1.36", ["NodeDeclaredFeatures=false"])
    got = NodeDeclaredFeatures(FrameworkHandle.for_nodes([], features=features)).sign_pod(base().obj())
    assert isinstance(got, Status) and got.code == Code.ERROR


# ---------------------------------------------------------------- the profile's signature
def test_pods_of_one_template_share_a_signature() -> None:
    fwk = profile(PTS_LIST)

    def replica(name: str, tolerations: list[dict[str, Any]]) -> Pod:
        b = make_pod().name(name).label("app", "web").req(cpu="1").host_port(8080)
        b = b.volume("cfg", "configMap", {"name": f"cfg-{name}"}).volume("tok", "secret", {"secretName": name})
        for t in tolerations:
            b = b.toleration(**t)
        return b.obj()

    a = replica("web-1", [{"key": "a", "operator": "Exists"}, {"key": "b", "operator": "Exists"}])
    b = replica("web-2", [{"key": "b", "operator": "Exists"}, {"key": "a", "operator": "Exists"}])
    sa, sb = fwk.sign_pod(a), fwk.sign_pod(b)
    assert sa is not None and sa == sb
    assert '"v1.Pod.Spec.SchedulerName":"default-scheduler"' in sa


@pytest.mark.parametrize("other", [
    pytest.param(make_pod().name("q").label("app", "web").req(cpu="2").obj(), id="other requests"),
    pytest.param(make_pod().name("q").label("app", "db").req(cpu="1").obj(), id="other labels"),
    pytest.param(make_pod().name("q").label("app", "web").req(cpu="1").scheduler_name("x").obj(),
                 id="another schedulerName"),
    pytest.param(make_pod().name("q").label("app", "web").req(cpu="1").toleration(key="k", operator="Exists").obj(),
                 id="another toleration"),
    pytest.param(make_pod().name("q").label("app", "web").container("img", requests={"cpu": "1"}).obj(),
                 id="another image"),
])
def test_pods_that_differ_where_a_plugin_looks_get_other_signatures(other: Pod) -> None:
    fwk = profile(PTS_LIST)
    mine = fwk.sign_pod(make_pod().name("p").label("app", "web").req(cpu="1").obj())
    theirs = fwk.sign_pod(other)
    assert mine is not None and theirs is not None and mine != theirs


def test_the_default_profile_signs_no_pod() -> None:
    # System defaulting gives PodTopologySpread default constraints: it refuses every pod.
    fwk = profile()
    assert fwk.signatures_enabled
    assert fwk.sign_pod(base().obj()) is None


def test_one_refusing_plugin_leaves_the_pod_unsigned() -> None:
    assert profile(PTS_LIST).sign_pod(base().affinity(POD_AFFINITY).obj()) is None


class Unsigned:
    """An out-of-tree Filter plugin without sign_pod."""

    name = "Unsigned"

    def filter(self, state: Any, pod: Pod, node_info: Any) -> Status | None:
        return None


def test_a_plugin_that_cannot_sign_turns_signatures_off_for_its_profile() -> None:
    features = FEATURES_1_36
    cfg = parse_config({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                        "profiles": [{"pluginConfig": [PTS_LIST],
                                      "plugins": {"filter": {"enabled": [{"name": "Unsigned"}]}}}]},
                       features=features)
    reg = dict(in_tree_registry(features))
    reg["Unsigned"] = lambda args, handle: Unsigned()
    fwk = build_framework(cfg.profiles[0], reg, FrameworkHandle.for_nodes([], features=features))
    assert (fwk.signatures_enabled, fwk.unsigned_plugins) == (False, ("Unsigned",))
    assert fwk.sign_pod(base().obj()) is None


def test_extenders_turn_signatures_off() -> None:
    features = FEATURES_1_36
    cfg = parse_config({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                        "profiles": [{"pluginConfig": [PTS_LIST]}]}, features=features)
    handle = FrameworkHandle.for_nodes([], features=features, extenders=[object()])  # type: ignore[list-item]
    fwk = build_framework(cfg.profiles[0], in_tree_registry(features), handle)
    assert not fwk.signatures_enabled
    assert fwk.sign_pod(base().obj()) is None


@pytest.mark.parametrize(("features", "batching"), [
    pytest.param(FEATURES_1_36, True, id="1.36 has a batch per profile"),
    pytest.param(features_for("1.36", ["OpportunisticBatching=false"]), False, id="the gate off leaves it out"),
    pytest.param(FEATURES_1_30, False, id="1.30 has none"),
])
def test_the_batch_exists_only_with_the_gate(features: Features, batching: bool) -> None:
    fwk = profile(features=features)
    assert (fwk.batch is not None, fwk.signatures_enabled) == (batching, batching)
