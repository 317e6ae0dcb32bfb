"""Helpers for the snapshot tests: a scenario's manifests loaded into the local API server as
the cluster they describe (objects created, bound pods bound, statuses set), and a snapshot
read back through the API."""

from __future__ import annotations

import copy
from pathlib import Path

from kubesched.cluster.live import ApiClient, ClusterConfig
from kubesched.cluster.resources import RESOURCE_BY_KIND, format_time
from kubesched.cluster.snapshot import SNAPSHOT_CALLS, USER_AGENT, Snapshot, snapshot_resources, take_snapshot
from kubesched.features import Features
from kubesched.objects.manifests import Documents, expand_lists, load_manifests, read_documents
from kubesched.testing.apiserver import LocalApiServer

# Created first: what admission and the namespaces of other objects need.
_FIRST = {"Namespace": 0, "PriorityClass": 1}


def read_scenario(file: Path) -> Documents:
    """A scenario file's documents, read once (the manifest loader reads them as it reads the
    file: Documents named after it)."""
    return Documents(str(file), tuple(read_documents(file)))


def load_into(api: LocalApiServer, scenario: Documents, features: Features) -> None:
    """Create the objects of ``scenario`` in ``api`` as the cluster they describe: namespaces
    and PriorityClasses first, then everything in document order, each pod with the
    creationTimestamp and uid the manifest loader gives it (restored, as from a backup), a pod
    with spec.nodeName created bound, a ResourceClaim's status written through its status
    subresource (a create drops it)."""
    objs = load_manifests([scenario], controllers="none", features=features)
    pods = {p.key: p for p in objs.pods}
    raws = [dict(raw) for index, doc in enumerate(scenario.documents)
            for raw, _ in expand_lists(doc, scenario.name, index)]
    existing = {o["metadata"]["name"] for o in api.objects("namespaces")}
    classes = {o["metadata"]["name"] for o in api.objects("priorityclasses")}
    written = {str(r["metadata"]["name"]): r for r in raws if r.get("kind") == "Namespace"}
    for ns in objs.namespaces:
        raw = written.get(ns.name, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns.name}})
        if ns.name in existing:
            if (raw.get("metadata") or {}).get("labels"):
                api.patch("namespaces", ns.name, {"metadata": {"labels": raw["metadata"]["labels"]}})
            continue
        api.create(raw, restore=True)
    for raw in sorted(raws, key=lambda r: _FIRST.get(str(r.get("kind")), 2)):
        kind = str(raw.get("kind"))
        if kind == "Namespace":
            continue
        if kind == "PriorityClass" and raw["metadata"]["name"] in classes:
            continue  # the built-in system classes
        body = copy.deepcopy(raw)
        meta = body.setdefault("metadata", {})
        if kind == "Pod":
            pod = pods[f"{meta.get('namespace') or 'default'}/{meta['name']}"]
            assert pod.meta.creation_timestamp is not None
            meta.setdefault("creationTimestamp", format_time(pod.meta.creation_timestamp))
            meta.setdefault("uid", pod.uid)
        api.create(body, restore=True)
        if kind == "ResourceClaim" and body.get("status"):
            api.update(RESOURCE_BY_KIND[kind].plural, meta["name"], {"status": body["status"]},
                       str(meta.get("namespace") or "default"), subresource="status")


def snapshot_of(api: LocalApiServer, features: Features, *, page_size: int = 500) -> Snapshot:
    """A snapshot of ``api`` as `--kubeconfig` takes it."""
    with ApiClient(ClusterConfig(server=api.url), qps=0, user_agent=USER_AGENT, calls=SNAPSHOT_CALLS) as client:
        return take_snapshot(client, resources=snapshot_resources(features), page_size=page_size)
