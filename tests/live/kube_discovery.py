"""Just enough of an API server for ``kubectl apply --dry-run=client``: legacy discovery for the
kinds in deploy/ (so kubectl can map kind -> resource and scope) and 404 for every object (so each
manifest is "created (dry run)"). Nothing is stored; requests are recorded."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]

# group version -> [(plural, singular, kind, namespaced)]
RESOURCES: dict[str, list[tuple[str, str, str, bool]]] = {
    "v1": [
        ("serviceaccounts", "serviceaccount", "ServiceAccount", True),
        ("configmaps", "configmap", "ConfigMap", True),
        ("namespaces", "namespace", "Namespace", False),
        ("pods", "pod", "Pod", True),
        ("services", "service", "Service", True),
    ],
    "apps/v1": [("deployments", "deployment", "Deployment", True)],
    "rbac.authorization.k8s.io/v1": [
        ("clusterroles", "clusterrole", "ClusterRole", False),
        ("clusterrolebindings", "clusterrolebinding", "ClusterRoleBinding", False),
        ("roles", "role", "Role", True),
        ("rolebindings", "rolebinding", "RoleBinding", True),
    ],
    "coordination.k8s.io/v1": [("leases", "lease", "Lease", True)],
}


def _resource_list(gv: str) -> dict[str, Any]:
    return {
        "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv,
        "resources": [{"name": plural, "singularName": singular, "namespaced": namespaced, "kind": kind,
                       "verbs": _VERBS} for plural, singular, kind, namespaced in RESOURCES[gv]],
    }


def _group_list() -> dict[str, Any]:
    groups = []
    for gv in RESOURCES:
        if "/" not in gv:
            continue
        group, version = gv.split("/")
        entry = {"groupVersion": gv, "version": version}
        groups.append({"name": group, "versions": [entry], "preferredVersion": entry})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    def _send(self, code: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        path = self.path.split("?", 1)[0].rstrip("/")
        self.server.requests.append(("GET", path))
        if path == "/api":
            self._send(200, {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
                {"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]})
        elif path == "/apis":
            self._send(200, _group_list())
        elif path == "/api/v1":
            self._send(200, _resource_list("v1"))
        elif path.startswith("/apis/") and path.count("/") == 3 and path[len("/apis/"):] in RESOURCES:
            self._send(200, _resource_list(path[len("/apis/"):]))
        elif path == "/version":
            self._send(200, {"major": "1", "minor": "30", "gitVersion": "v1.30.12"})
        else:
            self._send(404, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound",
                             "code": 404, "message": f"{path} not found"})

    def do_POST(self) -> None:  # noqa: N802
        self.server.requests.append(("POST", self.path))
        self._send(405, {"kind": "Status", "status": "Failure", "code": 405, "message": "read-only stub"})

    do_PUT = do_PATCH = do_DELETE = do_POST  # noqa: N815


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[tuple[str, str]] = []


@contextmanager
def discovery_server() -> Iterator[_Server]:
    server = _Server()
    thread = threading.Thread(target=server.serve_forever, name="kube-discovery-stub", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
