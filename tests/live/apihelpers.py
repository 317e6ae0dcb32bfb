"""Helpers for the live-mode tests: manifests, a fast-retrying live scheduler over the local
API server, and waiting with a deadline."""

from __future__ import annotations

import contextlib
import dataclasses
import socket
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

from kubesched.cluster.live import ApiClient, Backoff, ClusterConfig, LiveCluster, LiveOptions
from kubesched.config import KubeSchedulerConfiguration, default_configuration
from kubesched.features import Features
from kubesched.live.runner import LiveScheduler
from kubesched.testing.apiserver import LocalApiServer

FAST = LiveOptions(backoff=Backoff(initial=0.02, maximum=0.2, jitter=0.5), watch_timeout=30.0)


def node(name: str, cpu: str = "4", memory: str = "8Gi", *, pods: str = "110", labels: dict[str, str] | None = None,
         taints: list[dict[str, str]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = taints
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
            "spec": spec,
            "status": {"capacity": {"cpu": cpu, "memory": memory, "pods": pods},
                       "allocatable": {"cpu": cpu, "memory": memory, "pods": pods}}}


def pod(name: str, cpu: str = "100m", memory: str = "100Mi", *, namespace: str = "default",
        node_name: str = "", priority_class: str = "", grace: int | None = None, labels: dict[str, str] | None = None,
        scheduler: str = "", **spec: Any) -> dict[str, Any]:
    s: dict[str, Any] = {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9",
                                         "resources": {"requests": {"cpu": cpu, "memory": memory}}}], **spec}
    if node_name:
        s["nodeName"] = node_name
    if priority_class:
        s["priorityClassName"] = priority_class
    if grace is not None:
        s["terminationGracePeriodSeconds"] = grace
    if scheduler:
        s["schedulerName"] = scheduler
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {}}, "spec": s}


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}


def read_request_head(conn: socket.socket) -> bytes:
    """What a raw test server received up to the end of a request's headers (less if the
    client closed first)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


def wait_until(cond: Callable[[], Any], timeout: float = 10.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = cond()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.02)


def placements(api: LocalApiServer, namespace: str = "default") -> dict[str, str]:
    return {p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in api.objects("pods")
            if p["metadata"]["namespace"] == namespace}


def all_bound(api: LocalApiServer, names: list[str] | None = None) -> bool:
    placed = placements(api)
    return all(placed.get(n) for n in (names if names is not None else list(placed)))


def successful_binds(api: LocalApiServer) -> Counter[str]:
    """How many times each pod was bound with a 201: a pod bound twice would show 2 (the
    second bind would have had to succeed against a bound pod)."""
    return Counter(f"{c.namespace}/{c.name}" for c in api.calls("create", "pods", "binding", 201))


def events(api: LocalApiServer, reason: str | None = None) -> list[dict[str, Any]]:
    return [e for e in api.objects("events") if reason is None or e.get("reason") == reason]


@contextlib.contextmanager
def live_scheduler(api: LocalApiServer, config: KubeSchedulerConfiguration | None = None, *,
                   deterministic: bool = True, names: tuple[str, ...] = ("default-scheduler",),
                   options: LiveOptions = FAST, features: Features | None = None) -> Iterator[LiveScheduler]:
    """``features``: the release deciding (default: the configuration's, else the newest)."""
    client = ApiClient(ClusterConfig(server=api.url), qps=0, timeout=10.0)
    if features is not None:
        options = dataclasses.replace(options, features=features)
        if config is None:
            config = default_configuration(features=features)
    cluster = LiveCluster(client, scheduler_names=names, options=options)
    sched = LiveScheduler(config, cluster, deterministic=deterministic, features=features)
    try:
        sched.start_loop()
        yield sched
    finally:
        sched.stop(timeout=10.0)
        client.close()


# ------------------------------------------------------------------------------------ a throwaway PKI
def make_pki(directory: Any) -> dict[str, Any]:
    """A CA, a server certificate for 127.0.0.1 and a client certificate, as PEM files in
    ``directory`` (paths) and bytes (``*_pem``)."""
    import datetime as dt
    import ipaddress
    from pathlib import Path

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    d = Path(directory)
    now = dt.datetime.now(dt.UTC)

    def key() -> ec.EllipticCurvePrivateKey:
        return ec.generate_private_key(ec.SECP256R1())

    def pem_key(k: ec.EllipticCurvePrivateKey) -> bytes:
        return k.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                               serialization.NoEncryption())

    ca_key = key()
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubesched-test-ca")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(hours=1))
          .not_valid_after(now + dt.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))

    def leaf(cn: str, usage: Any, san: list[Any] | None) -> tuple[bytes, bytes]:
        k = key()
        b = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)]))
             .issuer_name(ca_name).public_key(k.public_key()).serial_number(x509.random_serial_number())
             .not_valid_before(now - dt.timedelta(hours=1)).not_valid_after(now + dt.timedelta(days=1))
             .add_extension(x509.ExtendedKeyUsage([usage]), critical=False))
        if san:
            b = b.add_extension(x509.SubjectAlternativeName(san), critical=False)
        cert = b.sign(ca_key, hashes.SHA256())
        return cert.public_bytes(serialization.Encoding.PEM), pem_key(k)

    out: dict[str, Any] = {"ca_pem": ca.public_bytes(serialization.Encoding.PEM)}
    out["server_pem"], out["server_key_pem"] = leaf("127.0.0.1", ExtendedKeyUsageOID.SERVER_AUTH,
                                                    [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
    out["client_pem"], out["client_key_pem"] = leaf("system:kube-scheduler", ExtendedKeyUsageOID.CLIENT_AUTH, None)
    for name in ("ca", "server", "server_key", "client", "client_key"):
        path = d / f"{name}.pem"
        path.write_bytes(out[f"{name}_pem"])
        out[name] = str(path)
    return out
