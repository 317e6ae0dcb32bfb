"""Fluent builders for test objects. They build manifests and parse them through the real
parsers, so tests exercise the same defaulting as `kubesched simulate`.

    pod = make_pod().name("p").namespace("ns").req(cpu="100m", memory="1Gi").toleration(key="k", operator="Exists").obj()
    node = make_node().name("n1").capacity(cpu="4", memory="32Gi", pods=110).label("zone", "a").obj()
"""

from __future__ import annotations

import copy
from typing import Any

from kubesched.features import Features
from kubesched.objects import Node, Pod
from kubesched.objects.parse import (
    parse_csinode,
    parse_node,
    parse_pdb,
    parse_pod,
    parse_pv,
    parse_pvc,
    parse_service,
    parse_storage_class,
    parse_workload,
)


class PodBuilder:
    def __init__(self) -> None:
        self.m: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "pod", "namespace": "default", "uid": ""},
            "spec": {"containers": []},
        }
        self._ctr_added = False

    # metadata
    def name(self, name: str) -> PodBuilder:
        self.m["metadata"]["name"] = name
        if not self.m["metadata"]["uid"]:
            self.m["metadata"]["uid"] = ""
        return self

    def namespace(self, ns: str) -> PodBuilder:
        self.m["metadata"]["namespace"] = ns
        return self

    def uid(self, uid: str) -> PodBuilder:
        self.m["metadata"]["uid"] = uid
        return self

    def label(self, key: str, value: str) -> PodBuilder:
        self.m["metadata"].setdefault("labels", {})[key] = value
        return self

    def labels(self, labels: dict[str, str]) -> PodBuilder:
        self.m["metadata"].setdefault("labels", {}).update(labels)
        return self

    def owner(self, kind: str, name: str, api_version: str = "apps/v1", controller: bool = True) -> PodBuilder:
        self.m["metadata"].setdefault("ownerReferences", []).append(
            {"apiVersion": api_version, "kind": kind, "name": name, "uid": f"uid-{name}", "controller": controller})
        return self

    def creation(self, ts: str) -> PodBuilder:
        self.m["metadata"]["creationTimestamp"] = ts
        return self

    def terminating(self, ts: str = "2024-01-01T00:00:00Z") -> PodBuilder:
        self.m["metadata"]["deletionTimestamp"] = ts
        return self

    # spec
    def container(self, image: str = "", *, name: str | None = None, requests: dict[str, Any] | None = None,
                  limits: dict[str, Any] | None = None, ports: list[dict[str, Any]] | None = None) -> PodBuilder:
        c: dict[str, Any] = {"name": name or f"c{len(self.m['spec']['containers'])}", "image": image}
        res: dict[str, Any] = {}
        if requests:
            res["requests"] = dict(requests)
        if limits:
            res["limits"] = dict(limits)
        if res:
            c["resources"] = res
        if ports:
            c["ports"] = ports
        self.m["spec"]["containers"].append(c)
        return self

    def init_container(self, image: str = "", *, requests: dict[str, Any] | None = None, sidecar: bool = False) -> PodBuilder:
        c: dict[str, Any] = {"name": f"i{len(self.m['spec'].get('initContainers', []))}", "image": image}
        if requests:
            c["resources"] = {"requests": dict(requests)}
        if sidecar:
            c["restartPolicy"] = "Always"
        self.m["spec"].setdefault("initContainers", []).append(c)
        return self

    def req(self, **requests: Any) -> PodBuilder:
        """Add a container with these requests (keyword names: cpu, memory, ephemeral_storage;
        use container(requests=...) for names with dots or slashes)."""
        return self.container(requests={k.replace("_", "-"): v for k, v in requests.items()})

    def host_port(self, port: int, protocol: str = "TCP", host_ip: str = "") -> PodBuilder:
        p: dict[str, Any] = {"containerPort": port, "hostPort": port, "protocol": protocol}
        if host_ip:
            p["hostIP"] = host_ip
        return self.container(ports=[p])

    def overhead(self, **res: Any) -> PodBuilder:
        self.m["spec"]["overhead"] = {k.replace("_", "-"): v for k, v in res.items()}
        return self

    def node(self, name: str) -> PodBuilder:
        self.m["spec"]["nodeName"] = name
        return self

    def scheduler_name(self, name: str) -> PodBuilder:
        self.m["spec"]["schedulerName"] = name
        return self

    def priority(self, p: int) -> PodBuilder:
        self.m["spec"]["priority"] = p
        return self

    def preemption_policy(self, p: str) -> PodBuilder:
        self.m["spec"]["preemptionPolicy"] = p
        return self

    def node_selector(self, sel: dict[str, str]) -> PodBuilder:
        self.m["spec"]["nodeSelector"] = dict(sel)
        return self

    def node_affinity_in(self, key: str, values: list[str], op: str = "In") -> PodBuilder:
        """A required node affinity term with one expression (ANDed into term 0)."""
        na = self.m["spec"].setdefault("affinity", {}).setdefault("nodeAffinity", {})
        req = na.setdefault("requiredDuringSchedulingIgnoredDuringExecution", {"nodeSelectorTerms": [{}]})
        req["nodeSelectorTerms"][0].setdefault("matchExpressions", []).append({"key": key, "operator": op, "values": values})
        return self

    def affinity(self, affinity: dict[str, Any]) -> PodBuilder:
        self.m["spec"]["affinity"] = copy.deepcopy(affinity)
        return self

    def toleration(self, **tol: Any) -> PodBuilder:
        self.m["spec"].setdefault("tolerations", []).append(dict(tol))
        return self

    def spread(self, max_skew: int, key: str, when: str = "DoNotSchedule", selector: dict[str, Any] | None = None,
               **extra: Any) -> PodBuilder:
        c: dict[str, Any] = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when}
        if selector is not None:
            c["labelSelector"] = selector
        c.update(extra)
        self.m["spec"].setdefault("topologySpreadConstraints", []).append(c)
        return self

    def volume(self, name: str, kind: str, source: dict[str, Any]) -> PodBuilder:
        self.m["spec"].setdefault("volumes", []).append({"name": name, kind: source})
        return self

    def pvc(self, claim: str, name: str | None = None, read_only: bool = False) -> PodBuilder:
        src: dict[str, Any] = {"claimName": claim}
        if read_only:
            src["readOnly"] = True
        return self.volume(name or f"v-{claim}", "persistentVolumeClaim", src)

    def scheduling_group(self, pod_group: str) -> PodBuilder:
        """spec.schedulingGroup.podGroupName (kept by the parser only with GenericWorkload)."""
        self.m["spec"]["schedulingGroup"] = {"podGroupName": pod_group}
        return self

    def scheduling_gate(self, name: str) -> PodBuilder:
        self.m["spec"].setdefault("schedulingGates", []).append({"name": name})
        return self

    def nominated(self, node: str) -> PodBuilder:
        self.m.setdefault("status", {})["nominatedNodeName"] = node
        return self

    def start_time(self, ts: str) -> PodBuilder:
        self.m.setdefault("status", {})["startTime"] = ts
        return self

    def phase(self, phase: str) -> PodBuilder:
        self.m.setdefault("status", {})["phase"] = phase
        return self

    def manifest(self) -> dict[str, Any]:
        m = copy.deepcopy(self.m)
        if not m["spec"]["containers"]:
            m["spec"]["containers"] = [{"name": "c0", "image": ""}]
        if not m["metadata"]["uid"]:
            m["metadata"]["uid"] = f"uid-{m['metadata']['namespace']}-{m['metadata']['name']}"
        return m

    def obj(self, features: Features | None = None) -> Pod:
        """The pod as ``features``' release reads it (default: the newest)."""
        return parse_pod(self.manifest(), features=features)


class NodeBuilder:
    def __init__(self) -> None:
        self.m: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node"}, "spec": {},
                                  "status": {"capacity": {}, "allocatable": None}}

    def name(self, name: str) -> NodeBuilder:
        self.m["metadata"]["name"] = name
        self.m["metadata"].setdefault("labels", {}).setdefault("kubernetes.io/hostname", name)
        return self

    def label(self, key: str, value: str) -> NodeBuilder:
        self.m["metadata"].setdefault("labels", {})[key] = value
        return self

    def labels(self, labels: dict[str, str]) -> NodeBuilder:
        self.m["metadata"].setdefault("labels", {}).update(labels)
        return self

    def annotation(self, key: str, value: str) -> NodeBuilder:
        self.m["metadata"].setdefault("annotations", {})[key] = value
        return self

    def capacity(self, **res: Any) -> NodeBuilder:
        """Capacity (and allocatable unless set separately). Names: cpu, memory, pods,
        ephemeral_storage; pass others via capacity_map."""
        return self.capacity_map({k.replace("_", "-"): v for k, v in res.items()})

    def capacity_map(self, res: dict[str, Any]) -> NodeBuilder:
        self.m["status"]["capacity"].update(res)
        return self

    def allocatable(self, res: dict[str, Any]) -> NodeBuilder:
        self.m["status"]["allocatable"] = dict(res)
        return self

    def taint(self, key: str, value: str = "", effect: str = "NoSchedule") -> NodeBuilder:
        self.m["spec"].setdefault("taints", []).append({"key": key, "value": value, "effect": effect})
        return self

    def unschedulable(self, v: bool = True) -> NodeBuilder:
        self.m["spec"]["unschedulable"] = v
        return self

    def image(self, size: int, *names: str) -> NodeBuilder:
        self.m["status"].setdefault("images", []).append({"names": list(names), "sizeBytes": size})
        return self

    def manifest(self) -> dict[str, Any]:
        m = copy.deepcopy(self.m)
        if m["status"]["allocatable"] is None:
            del m["status"]["allocatable"]
        return m

    def obj(self) -> Node:
        return parse_node(self.manifest())


def make_pod() -> PodBuilder:
    return PodBuilder()


def make_node() -> NodeBuilder:
    return NodeBuilder()


def obj(manifest: dict[str, Any]) -> Any:
    """Parse any supported manifest dict (PV, PVC, StorageClass, CSINode, Service, ...)."""
    kind = manifest["kind"]
    parsers = {"PersistentVolume": parse_pv, "PersistentVolumeClaim": parse_pvc, "StorageClass": parse_storage_class,
               "CSINode": parse_csinode, "Service": parse_service, "PodDisruptionBudget": parse_pdb,
               "ReplicaSet": parse_workload, "StatefulSet": parse_workload, "ReplicationController": parse_workload,
               "Pod": parse_pod, "Node": parse_node}
    return parsers[kind](manifest)
