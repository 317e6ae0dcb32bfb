"""``kubesched run``: kubesched as a real scheduler for a cluster (kube-scheduler's Run).

Wires the pieces together: the KubeSchedulerConfiguration, the API client (kubeconfig or
in-cluster), health and metrics serving, leader election on a Lease, and the scheduling
loop. Only the leader schedules; losing the lease stops scheduling at once and the process
exits (as kube-scheduler does, so that it restarts as a candidate). SIGTERM / SIGINT stop
popping pods, wait for binds in flight and release the lease.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubesched.cluster.live import ApiClient, ApiLeaseClient, lease_request_timeout
from kubesched.config import KubeSchedulerConfiguration, default_configuration, load_config
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
    cfg: KubeSchedulerConfiguration = load_config(options.config) if options.config else default_configuration()
    le = leader_election_flags.apply(cfg.leader_election)
    stop = stop if stop is not None else threading.Event()
    if api is None:
        api = ApiClient.for_client_connection(cfg.client_connection, kubeconfig=options.kubeconfig,
                                              master=options.master)
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
        if le.leader_elect:

            def on_stopped_leading() -> None:
                # kube-scheduler's OnStoppedLeading: a requested shutdown (or a standby
                # stopping) is no loss; only a lost lease is.
                if elector is not None and elector.lost:
                    log.error("leaderelection lost")
                else:
                    log.info("requested to terminate: leader election stopped")

            elector = LeaderElector.for_config(
                ApiLeaseClient(api, timeout=lease_request_timeout(le.renew_deadline)), le,
                on_started_leading=lambda ev: log.info("started leading (lease %s/%s)", le.resource_namespace,
                                                       le.resource_name),
                on_stopped_leading=on_stopped_leading,
                metrics=metrics,
            )
            checks.add_leader_election(elector)
            elector.start()
            leader = elector

            def is_leader() -> bool:
                return leader.leading

        return run_scheduler(cfg, api, stop, is_leader, registry=registry, metrics=metrics,
                             on_synced=checks.mark_synced, deterministic=options.deterministic)
    finally:
        checks.mark_shutting_down()
        # Binds in flight are done (run_scheduler waited for them): only now is the lease released.
        if elector is not None:
            elector.stop(timeout=10.0)
        if server is not None:
            server.stop()
        api.close()
        restore_signals()


def _always() -> bool:
    return True
