"""``kubesched run``: kubesched as a real scheduler for a cluster (kube-scheduler's Run).

Wires the pieces together: the KubeSchedulerConfiguration, the API client (kubeconfig or
in-cluster), health and metrics serving, leader election on a Lease, and the scheduling
loop. In kube-scheduler's order: the informers start and sync first, then the replica
becomes a candidate for the lease, and the scheduling loop runs as soon as it leads. Only
the leader schedules; losing the lease stops scheduling at once (no bind after it) and the
process exits (as kube-scheduler does, so that it restarts as a candidate). SIGTERM / SIGINT
stop popping pods, wait for binds in flight and release the lease.
"""

from __future__ import annotations

import logging
import re
import signal
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubesched.cluster.live import ApiClient, ApiLeaseClient, lease_request_timeout
from kubesched.config import KubeSchedulerConfiguration, default_configuration, load_config
from kubesched.features import Features, KubeVersion, features_for
from kubesched.live.flags import LeaderElectionFlags, ServingOptions
from kubesched.live.leader import LeaderElector
from kubesched.live.runner import RunResult, run_scheduler
from kubesched.live.serving import HealthChecks, SchedulerMetrics, build_app, start_serving
from kubesched.plugins.registry import Factory

log = logging.getLogger("kubesched.run")


@dataclass(frozen=True, slots=True)
class RunOptions:
    config: str | None = None
    kubeconfig: str = ""
    master: str = ""
    deterministic: bool = False
    kube_version: str | None = None
    feature_gates: tuple[str, ...] = ()


_AUTHORIZATION = re.compile(r"""(?i)(authorization['"]?\s*[:=,]\s*['"]?(?:b['"])?)(bearer|basic)\s+[^\s'",})\]]+""")
_PRIVATE_KEY = re.compile(r"-----BEGIN ([A-Z ]*)PRIVATE KEY-----.*?(-----END [A-Z ]*PRIVATE KEY-----|$)", re.S)


def redact(text: str) -> str:
    """``text`` with credentials masked as client-go masks them in its request logs
    (``Authorization: Bearer <masked>``), and PEM private keys left out."""
    text = _AUTHORIZATION.sub(lambda m: f"{m.group(1)}{m.group(2)} <masked>", text)
    return _PRIVATE_KEY.sub(lambda m: f"<masked {m.group(1)}PRIVATE KEY>", text)


class RedactCredentials(logging.Filter):
    """A handler filter masking credentials in every record it passes (its message, arguments
    and traceback). kubesched itself never logs a token, key or Authorization header
    (tests/test_security_defaults.py); this keeps a library's or plugin's debug output, at
    ``-v=10``, from doing so either."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        masked = redact(message)
        if masked != message:
            record.msg, record.args = masked, ()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True


def redact_credentials_in_logs(logger: logging.Logger | None = None) -> None:
    """Add :class:`RedactCredentials` to every handler of ``logger`` (the root logger)."""
    for handler in (logger or logging.getLogger()).handlers:
        if not any(isinstance(f, RedactCredentials) for f in handler.filters):
            handler.addFilter(RedactCredentials())


def _install_signal_handlers(stop: threading.Event) -> Callable[[], None]:
    """SIGTERM / SIGINT set ``stop``; returns what puts the previous handlers back."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None  # signals can only be handled on the main thread (tests run us elsewhere)

    def handler(signum: int, frame: Any) -> None:
        log.info("received signal %d: stopping", signum)
        stop.set()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGINT)}

    def restore() -> None:
        for sig, old in previous.items():
            signal.signal(sig, old)

    return restore


def run(options: RunOptions, serving: ServingOptions, leader_election_flags: LeaderElectionFlags,
        registry: Mapping[str, Factory], *, stop: threading.Event | None = None,
        api: ApiClient | None = None) -> RunResult:
    """kube-scheduler's Run. Returns when stopped ("stopped": binds in flight finished, lease
    released) or as soon as leadership is lost ("lost-leadership"). ``api`` replaces the client
    the configuration and ``--kubeconfig`` / ``--master`` would give (it is closed on return)."""
    features = features_for(options.kube_version, options.feature_gates)
    cfg: KubeSchedulerConfiguration = (load_config(options.config, features=features) if options.config
                                       else default_configuration(features=features))
    le = leader_election_flags.apply(cfg.leader_election)
    stop = stop if stop is not None else threading.Event()
    if api is None:
        api = ApiClient.for_client_connection(cfg.client_connection, kubeconfig=options.kubeconfig,
                                              master=options.master)
    warn_on_version_skew(api, features)
    restore_signals = _install_signal_handlers(stop)
    metrics = SchedulerMetrics()
    checks = HealthChecks()
    server = None
    elector: LeaderElector | None = None
    try:
        if serving.enabled:
            server = start_serving(build_app(metrics, checks), bind_address=serving.bind_address,
                                   secure_port=serving.secure_port, cert_file=serving.cert_file,
                                   key_file=serving.key_file)
            if server is not None:
                log.info("serving health and metrics on %s", server.url)
        is_leader = _always
        on_synced: Callable[[], None] = checks.mark_synced
        wakers: list[Callable[[], None]] = []

        def wake() -> None:
            for w in list(wakers):
                w()

        if le.leader_elect:

            def on_started_leading(ev: threading.Event) -> None:
                log.info("started leading (lease %s/%s)", le.resource_namespace, le.resource_name)
                wake()  # OnStartedLeading: sched.Run

            def on_stopped_leading() -> None:
                # kube-scheduler's OnStoppedLeading: a requested shutdown (or a standby
                # stopping) is no loss; only a lost lease is.
                if elector is not None and elector.lost:
                    log.error("leaderelection lost")
                else:
                    log.info("requested to terminate: leader election stopped")
                wake()

            elector = LeaderElector.for_config(
                ApiLeaseClient(api, timeout=lease_request_timeout(le.renew_deadline)), le,
                on_started_leading=on_started_leading,
                on_stopped_leading=on_stopped_leading,
                metrics=metrics,
            )
            checks.add_leader_election(elector)
            leader = elector

            def is_leader() -> bool:
                return leader.leading

            def synced_then_elect() -> None:
                # kube-scheduler's Run: startInformersAndWaitForSync, then leaderElector.Run.
                checks.mark_synced()
                leader.start()

            on_synced = synced_then_elect

        return run_scheduler(cfg, api, stop, is_leader, registry=registry, metrics=metrics,
                             on_synced=on_synced, register_wake=wakers.append,
                             deterministic=options.deterministic)
    finally:
        checks.mark_shutting_down()
        # Binds in flight are done (run_scheduler waited for them): only now is the lease released.
        if elector is not None:
            elector.stop(timeout=10.0)
        if server is not None:
            server.stop()
        api.close()
        restore_signals()


def warn_on_version_skew(api: ApiClient, features: Features) -> str | None:
    """Read the API server's /version and warn when its release is not the one whose semantics
    decide (``--kube-version``): the cluster's own scheduler would decide differently. Returns the
    warning (None when they agree or /version cannot be read)."""
    try:
        info = api.get_json("/version")
        version = KubeVersion.parse(str(info.get("gitVersion") or f"{info.get('major')}.{info.get('minor')}"))
    except Exception as e:  # noqa: BLE001 - only a warning depends on it
        log.warning("cannot read the API server's /version (%s): deciding as %s", e, features.oracle)
        return None
    if version == features.version:
        log.info("API server %s; deciding as %s", info.get("gitVersion", version), features.oracle)
        return None
    msg = (f"the API server runs Kubernetes {version} but kubesched decides as {features.oracle} "
           f"(--kube-version {features.version}): decisions follow {features.version}'s scheduler")
    log.warning(msg)
    return msg


def _always() -> bool:
    return True
