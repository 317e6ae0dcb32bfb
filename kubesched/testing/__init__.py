"""Test doubles for kubesched users: a local API server to test plugins, extenders and
``kubesched run`` against without a cluster.

:class:`LocalApiServer` (:mod:`kubesched.testing.apiserver`) is an in-memory HTTP server that
behaves like the Kubernetes API for the resources a scheduler uses (nodes, pods and their
bindings, PVs, PVCs, storage classes, CSI objects, PDBs, services, workloads, leases, events):
list and watch with resourceVersions and bookmarks, 409 conflicts, graceful deletion, the pod
admission a cluster applies, and fault injection (failing or slow requests, cut watches, 410
Gone, restarts). It is not part of the scheduler: the live path never imports it.

A plugin author's test, end to end through the live scheduler::

    from kubesched.testing import LocalApiServer

    with LocalApiServer() as api:
        api.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
                    "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}})
        api.create(pod_manifest)              # spec.schedulerName: kubesched
        ...                                   # run `kubesched run --master api.url` or LiveScheduler
        assert api.get("pods", "p", "default")["spec"]["nodeName"] == "n1"
"""

from kubesched.testing.apiserver import ApiStatusError, LocalApiServer, merge_patch

__all__ = ["ApiStatusError", "LocalApiServer", "merge_patch"]
