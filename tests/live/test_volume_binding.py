"""VolumeBinding's PreBind in live mode (BindPodVolumes) against the local API server, with a
tiny PV controller / external provisioner thread standing in for kube-controller-manager and a
CSI provisioner: a pod whose WaitForFirstConsumer claim is unbound is bound to its node only
after its claim was bound — the scheduler PUTs the chosen PV's claimRef (static binding) or the
claim's selected-node annotation (dynamic provisioning) and waits for the controller — and a
binding that never completes (or that the provisioner gives up on) fails the binding cycle with
``binding volumes: ...``, forgets the assumed pod and retries it. No pod is ever bound twice."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from kubesched.cluster.live import API_CALLS, ApiCall, ApiClient, ClusterConfig, LiveCluster
from kubesched.config.loader import parse_config
from kubesched.live.runner import LiveScheduler
from kubesched.testing.apiserver import ApiStatusError, LocalApiServer

from .apihelpers import FAST, events, live_scheduler, node, placements, pod, successful_binds, wait_until

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
CSI_DRIVER = "csi.example.com"


@pytest.fixture
def api() -> Iterator[LocalApiServer]:
    with LocalApiServer(bookmark_interval=0.2) as server:
        yield server


# ------------------------------------------------------------------------------------ manifests
def storage_class(name: str, provisioner: str) -> dict[str, Any]:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
            "provisioner": provisioner, "volumeBindingMode": "WaitForFirstConsumer", "reclaimPolicy": "Delete"}


def claim(name: str, class_name: str, storage: str = "1Gi") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": "default"},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": class_name,
                     "resources": {"requests": {"storage": storage}}},
            "status": {"phase": "Pending"}}


def local_pv(name: str, host: str, storage: str = "10Gi") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": {"storage": storage}, "accessModes": ["ReadWriteOnce"], "storageClassName": "local",
                     "persistentVolumeReclaimPolicy": "Delete", "local": {"path": f"/mnt/{name}"},
                     "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                         {"key": HOSTNAME, "operator": "In", "values": [host]}]}]}}},
            "status": {"phase": "Available"}}


def pod_with_claim(name: str, claim_name: str, **spec: Any) -> dict[str, Any]:
    return pod(name, volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": claim_name}}], **spec)


def cluster(api: LocalApiServer) -> None:
    api.create(node("n1", labels={ZONE: "a"}))
    api.create(node("n2", labels={ZONE: "b"}))
    api.create(storage_class("local", NO_PROVISIONER))
    api.create(storage_class("fast", CSI_DRIVER))


def scheduler_config(bind_timeout: int | None = None) -> Any:
    profile: dict[str, Any] = {"schedulerName": "default-scheduler"}
    if bind_timeout is not None:
        profile["pluginConfig"] = [{"name": "VolumeBinding", "args": {"bindTimeoutSeconds": bind_timeout}}]
    return parse_config({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                         "podInitialBackoffSeconds": 1, "podMaxBackoffSeconds": 2, "profiles": [profile]})


# ------------------------------------------------------------------------------------ the PV controller
class PvController:
    """What kube-controller-manager's PV controller and an external CSI provisioner do, on
    the API server's objects (polled every 20 ms): a PV whose claimRef names an unbound claim
    gets both bound (claim: volumeName, bind-completed, phase Bound; PV: phase Bound); a claim
    of a provisioned WaitForFirstConsumer class annotated with the selected node gets a new PV
    restricted to that node's zone, pre-bound to it. ``provision`` off: the provisioner never
    acts; ``give_up``: it removes the selected-node annotation instead (provisioning failed)."""

    def __init__(self, api: LocalApiServer, *, provision: bool = True, give_up: bool = False) -> None:
        self.api = api
        self.provision = threading.Event()
        if provision:
            self.provision.set()
        self.give_up = give_up
        self.bound: dict[str, str] = {}  # claim -> PV
        self.rejected: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="test-pv-controller", daemon=True)

    def __enter__(self) -> PvController:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            try:
                self.step()
            except ApiStatusError:
                pass  # an object changed or went away meanwhile: next round

    def step(self) -> None:
        api = self.api
        classes = {c["metadata"]["name"]: c for c in api.objects("storageclasses")}
        pvs = api.objects("persistentvolumes")
        claimed = {(pv["spec"].get("claimRef") or {}).get("uid") for pv in pvs}
        for pvc in api.objects("persistentvolumeclaims"):
            meta, spec = pvc["metadata"], pvc["spec"]
            selected = (meta.get("annotations") or {}).get(SELECTED_NODE)
            sc = classes.get(spec.get("storageClassName") or "")
            if not selected or spec.get("volumeName") or sc is None or sc["provisioner"] == NO_PROVISIONER:
                continue
            if self.give_up:
                api.patch("persistentvolumeclaims", meta["name"], {"metadata": {"annotations": {SELECTED_NODE: None}}},
                          meta["namespace"])
                self.rejected.append(meta["name"])
            elif self.provision.is_set() and meta["uid"] not in claimed:
                zone = api.get("nodes", selected)["metadata"]["labels"][ZONE]
                name = f"pvc-{meta['uid']}"
                api.create({"apiVersion": "v1", "kind": "PersistentVolume",
                            "metadata": {"name": name, "annotations": {"pv.kubernetes.io/provisioned-by": CSI_DRIVER}},
                            "spec": {"capacity": dict(spec["resources"]["requests"]), "accessModes": spec["accessModes"],
                                     "storageClassName": sc["metadata"]["name"],
                                     "persistentVolumeReclaimPolicy": "Delete",
                                     "csi": {"driver": CSI_DRIVER, "volumeHandle": name},
                                     "claimRef": {"kind": "PersistentVolumeClaim", "apiVersion": "v1",
                                                  "namespace": meta["namespace"], "name": meta["name"],
                                                  "uid": meta["uid"]},
                                     "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                                         {"key": ZONE, "operator": "In", "values": [zone]}]}]}}},
                            "status": {"phase": "Pending"}})
        for pv in api.objects("persistentvolumes"):
            ref = pv["spec"].get("claimRef")
            if not ref or (pv.get("status") or {}).get("phase") == "Bound":
                continue
            try:
                pvc = api.get("persistentvolumeclaims", ref["name"], ref.get("namespace", "default"))
            except ApiStatusError:
                continue
            if ref.get("uid") and ref["uid"] != pvc["metadata"]["uid"]:
                continue
            name = pv["metadata"]["name"]
            # syncVolume -> bindVolumeToClaim (phase), then bindClaimToVolume.
            api.patch("persistentvolumes", name, {"status": {"phase": "Bound"}})
            api.patch("persistentvolumeclaims", ref["name"], {
                "metadata": {"annotations": {BIND_COMPLETED: "yes", BOUND_BY_CONTROLLER: "yes"}},
                "spec": {"volumeName": name}, "status": {"phase": "Bound"}}, pvc["metadata"]["namespace"])
            self.bound[ref["name"]] = name


# ------------------------------------------------------------------------------------ checks
def _no_pod_bound_twice(api: LocalApiServer) -> None:
    twice = {k: n for k, n in successful_binds(api).items() if n > 1}
    assert not twice, f"bound more than once: {twice}"


def _claim(api: LocalApiServer, name: str) -> dict[str, Any]:
    return api.get("persistentvolumeclaims", name, "default")


def _bound_after_claim(api: LocalApiServer, pod_name: str, claim_name: str) -> None:
    """The pod's binding (its last write) came after the claim's binding (its last write)."""
    pod_rv = int(api.get("pods", pod_name, "default")["metadata"]["resourceVersion"])
    claim_rv = int(_claim(api, claim_name)["metadata"]["resourceVersion"])
    assert pod_rv > claim_rv, "the pod was bound before its claim"


def _failed_scheduling(api: LocalApiServer, pod_name: str) -> list[str]:
    return [e["note"] for e in events(api, "FailedScheduling") if e["regarding"]["name"] == pod_name]


def test_pv_and_pvc_updates_are_declared_api_calls() -> None:
    assert ApiCall("update", "", "persistentvolumes") in API_CALLS
    assert ApiCall("update", "", "persistentvolumeclaims") in API_CALLS


def test_the_local_api_server_puts_volumes_with_resource_version_conflicts(api: LocalApiServer) -> None:
    pv = api.create(local_pv("pv-put", "n1"))
    pv["spec"]["claimRef"] = {"namespace": "default", "name": "c", "uid": "u"}
    updated = api.update("persistentvolumes", "pv-put", pv)
    assert updated["spec"]["claimRef"]["name"] == "c"
    assert int(updated["metadata"]["resourceVersion"]) > int(pv["metadata"]["resourceVersion"])
    with pytest.raises(ApiStatusError) as stale:
        api.update("persistentvolumes", "pv-put", pv)  # the old resourceVersion
    assert stale.value.code == 409
    api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}})
    pvc = api.create({**claim("c-put", "local"), "metadata": {"name": "c-put", "namespace": "other"}})
    pvc["metadata"].setdefault("annotations", {})[SELECTED_NODE] = "n1"
    assert api.update("persistentvolumeclaims", "c-put", pvc, "other")["metadata"]["annotations"] == {
        SELECTED_NODE: "n1"}


# ------------------------------------------------------------------------------------ static binding
def test_a_pod_with_a_local_pv_claim_is_bound_once_the_pv_controller_bound_its_claim(api: LocalApiServer) -> None:
    cluster(api)
    api.create(local_pv("local-n2", "n2"))
    api.create(claim("data", "local", "5Gi"))
    api.create(pod_with_claim("db", "data"))
    with PvController(api) as ctl, live_scheduler(api, scheduler_config()):
        wait_until(lambda: placements(api).get("db"), what="db bound")
    assert placements(api)["db"] == "n2"
    pv = api.get("persistentvolumes", "local-n2")
    pvc = _claim(api, "data")
    assert pv["spec"]["claimRef"]["name"] == "data" and pv["spec"]["claimRef"]["uid"] == pvc["metadata"]["uid"]
    assert pv["metadata"]["annotations"][BOUND_BY_CONTROLLER] == "yes"
    assert pv["status"]["phase"] == "Bound"
    assert pvc["spec"]["volumeName"] == "local-n2" and pvc["status"]["phase"] == "Bound"
    assert BIND_COMPLETED in pvc["metadata"]["annotations"]
    assert ctl.bound == {"data": "local-n2"}
    # One PUT of the PV (bindAPIUpdate), none of the claim; then the pod's binding.
    puts = api.calls("update", "persistentvolumes")
    assert [(c.name, c.code) for c in puts] == [("local-n2", 200)]
    assert puts[0].body["spec"]["claimRef"]["name"] == "data"
    assert not api.calls("update", "persistentvolumeclaims")
    _bound_after_claim(api, "db", "data")
    _no_pod_bound_twice(api)


def test_a_conflicting_pv_update_fails_the_binding_cycle_and_the_pod_is_retried(api: LocalApiServer) -> None:
    cluster(api)
    api.create(local_pv("local-n1", "n1"))
    api.create(claim("logs", "local"))
    api.create(pod_with_claim("app", "logs"))
    api.fail_next(1, 409, verbs=["update"], resources=["persistentvolumes"])
    with PvController(api), live_scheduler(api, scheduler_config()) as sched:
        wait_until(lambda: placements(api).get("app"), what="app bound on the second attempt")
        assert sched.stats.bind_failures == 1
    assert placements(api)["app"] == "n1"
    notes = wait_until(lambda: _failed_scheduling(api, "app"), what="FailedScheduling event")
    # bindAPIUpdate's error is returned as it is (no "binding volumes:" prefix).
    assert notes[0] == 'running PreBind plugin "VolumeBinding": injected failure (409)'
    assert [c.code for c in api.calls("update", "persistentvolumes")] == [409, 200]
    _bound_after_claim(api, "app", "logs")
    _no_pod_bound_twice(api)


# ------------------------------------------------------------------------------------ provisioning
def test_a_dynamically_provisioned_claim_gets_the_selected_node_and_the_pod_binds_after_provisioning(
        api: LocalApiServer) -> None:
    cluster(api)
    api.create(claim("scratch", "fast", "2Gi"))
    api.create(pod_with_claim("job", "scratch", nodeSelector={ZONE: "b"}))
    with PvController(api) as ctl, live_scheduler(api, scheduler_config()):
        wait_until(lambda: placements(api).get("job"), what="job bound")
    pvc = _claim(api, "scratch")
    assert placements(api)["job"] == "n2"
    assert pvc["metadata"]["annotations"][SELECTED_NODE] == "n2"
    pv = api.get("persistentvolumes", ctl.bound["scratch"])
    assert pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == ["b"]
    assert pvc["spec"]["volumeName"] == pv["metadata"]["name"] and BIND_COMPLETED in pvc["metadata"]["annotations"]
    puts = api.calls("update", "persistentvolumeclaims")
    assert [(c.name, c.code) for c in puts] == [("scratch", 200)]
    assert puts[0].body["metadata"]["annotations"][SELECTED_NODE] == "n2"
    assert not api.calls("update", "persistentvolumes")
    _bound_after_claim(api, "job", "scratch")
    _no_pod_bound_twice(api)


def test_a_provisioner_that_never_acts_times_out_the_binding_and_the_pod_is_retried(api: LocalApiServer) -> None:
    cluster(api)
    api.create(claim("cache", "fast"))
    api.create(pod_with_claim("web", "cache"))
    with PvController(api, provision=False) as ctl, live_scheduler(api, scheduler_config(bind_timeout=2)) as sched:
        start = time.monotonic()
        notes = wait_until(lambda: _failed_scheduling(api, "web"), timeout=10, what="the binding times out")
        assert time.monotonic() - start >= 2.0
        assert notes[0] == 'running PreBind plugin "VolumeBinding": binding volumes: context deadline exceeded'
        selected = _claim(api, "cache")["metadata"]["annotations"][SELECTED_NODE]
        assert placements(api)["web"] == ""

        def scheduler_error() -> Any:
            conds = api.get("pods", "web", "default").get("status", {}).get("conditions") or []
            return next((c for c in conds if c["type"] == "PodScheduled" and c["reason"] == "SchedulerError"), None)

        cond = wait_until(scheduler_error, what="PodScheduled=False SchedulerError")
        assert cond["message"] == notes[0]
        uid = api.get("pods", "web", "default")["metadata"]["uid"]
        with sched.lock:
            # The assumed pod was forgotten (unless its retry already assumed it again).
            assert sched.stats.bind_failures == 1
            assert sched.in_flight or uid not in sched.cache.assumed
        # The pod is retried — a pod still assumed would be skipped, so a second update of
        # the claim also proves it was forgotten — on the same node (the claim keeps its
        # selected-node annotation) and, once the provisioner acts, bound there.
        wait_until(lambda: len(api.calls("update", "persistentvolumeclaims")) >= 2, timeout=10, what="a retry")
        assert sched.stats.skipped == 0
        ctl.provision.set()
        wait_until(lambda: placements(api).get("web"), timeout=10, what="web bound after provisioning")
    assert placements(api)["web"] == selected
    assert ctl.bound.get("cache")
    _bound_after_claim(api, "web", "cache")
    _no_pod_bound_twice(api)


@pytest.mark.parametrize(("annotations", "error"), [
    # The PV controller annotates a claim of a provisioned class with its provisioner.
    ({"volume.kubernetes.io/storage-provisioner": CSI_DRIVER}, 'provisioning failed for PVC "tmp"'),
    ({}, 'selectedNode annotation reset for PVC "tmp"'),
], ids=["claim keeping other annotations: provisioning failed", "claim left without annotations: annotation reset"])
def test_a_provisioner_giving_up_fails_the_binding_at_once(api: LocalApiServer, annotations: dict[str, str],
                                                           error: str) -> None:
    cluster(api)
    pvc = claim("tmp", "fast")
    pvc["metadata"]["annotations"] = annotations
    api.create(pvc)
    api.create(pod_with_claim("batch", "tmp"))
    with PvController(api, give_up=True) as ctl, live_scheduler(api, scheduler_config()) as sched:
        start = time.monotonic()
        notes = wait_until(lambda: _failed_scheduling(api, "batch"), timeout=10, what="the binding fails")
        assert time.monotonic() - start < 5.0, "not waited out until the 600 s timeout"
        assert notes[0] == f'running PreBind plugin "VolumeBinding": binding volumes: {error}'
        assert ctl.rejected and sched.stats.bind_failures >= 1
    assert placements(api)["batch"] == ""
    assert not successful_binds(api)


def test_stopping_the_scheduler_cancels_a_binding_waiting_for_volumes(api: LocalApiServer) -> None:
    cluster(api)
    api.create(claim("slow", "fast"))
    api.create(pod_with_claim("waiter", "slow"))
    client = ApiClient(ClusterConfig(server=api.url), qps=0, timeout=10.0)
    sched = LiveScheduler(scheduler_config(), LiveCluster(client, options=FAST), deterministic=True)
    try:
        sched.start_loop()
        wait_until(lambda: SELECTED_NODE in (_claim(api, "slow")["metadata"].get("annotations") or {}),
                   what="the claim annotated (the binding cycle waits for provisioning)")
        assert sched.in_flight == 1
        start = time.monotonic()
        sched.stop(timeout=10)
        assert time.monotonic() - start < 3.0, "stop waited for the 600 s bind timeout"
        assert sched.in_flight == 0 and sched.stats.bind_failures == 1
    finally:
        sched.stop(timeout=5)
        client.close()
    assert placements(api)["waiter"] == ""
    assert _failed_scheduling(api, "waiter") == [
        'running PreBind plugin "VolumeBinding": binding volumes: context canceled']
    assert not successful_binds(api)
