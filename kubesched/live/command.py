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

import dataclasses
import functools
import logging
import re
import signal
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kubesched.cluster.live import (
    ApiClient,
    ApiLeaseClient,
    FirstLists,
    LiveCluster,
    LiveOptions,
    lease_request_timeout,
)
from kubesched.config import KubeSchedulerConfiguration, default_configuration, load_config
from kubesched.errors import ConfigError, KubeschedError
from kubesched.features import Features, KubeVersion, features_for
from kubesched.live.flags import DeprecatedFlags, LeaderElectionFlags, ServingOptions
from kubesched.live.serving import HealthChecks, SchedulerMetrics, ServingThread, TLSSettings, bind_serving, build_app

if TYPE_CHECKING:
    from kubesched.live.leader import LeaderElector
    from kubesched.live.runner import RunResult
    from kubesched.plugins.registry import Factory

log = logging.getLogger("kubesched.run")
# At most this long after run() starts, garbage collection resumes even if the scheduling loop
# has not made its first attempt yet (kubesched._entry pauses it while the command starts).
GC_PAUSE_LIMIT = 5.0  # s
SWITCH_INTERVAL = 0.001  # s: sys.setswitchinterval while `kubesched run` runs (see run)


@dataclass(frozen=True, slots=True)
class RunOptions:
    """What ``kubesched run`` runs with besides serving and leader election. ``kubeconfig``
    overrides the configuration's ``clientConnection.kubeconfig`` whatever the configuration (the
    command line's deprecated ``--kubeconfig`` arrives in ``deprecated`` instead, applied only
    without ``--config`` as kube-scheduler does)."""

    config: str | None = None
    kubeconfig: str = ""
    master: str = ""
    deterministic: bool = False
    kube_version: str | None = None
    feature_gates: tuple[str, ...] = ()
    deprecated: DeprecatedFlags = DeprecatedFlags()
    # --pod-max-in-unschedulable-pods-duration (seconds; None: its default, 5 min)
    pod_max_in_unschedulable_pods_duration: float | None = None


def effective_configuration(options: RunOptions, leader_election_flags: LeaderElectionFlags,
                            features: Features | None = None) -> KubeSchedulerConfiguration:
    """options.go ApplyTo: without ``--config``, the release's defaults with the deprecated flags
    (ApplyDeprecated) and the leader-election flags applied; with it, the file with only the
    leader-election flags applied (ApplyLeaderElectionTo), then validated."""
    features = features if features is not None else features_for(options.kube_version, options.feature_gates)
    if options.config:
        cfg = load_config(options.config, features=features)
    else:
        cfg = options.deprecated.apply(default_configuration(features=features))
    return dataclasses.replace(cfg, leader_election=leader_election_flags.apply(cfg.leader_election))


def write_configuration(path: str, cfg: KubeSchedulerConfiguration, registry: Mapping[str, Factory]) -> None:
    """``--write-config-to``: the effective configuration, as v1 YAML (LogOrWriteConfig). As
    kube-scheduler, which writes it only once scheduler.New has built the profiles, every profile is
    built first (an unknown plugin or bad args fail here); nothing connects to the API server."""
    import yaml

    from kubesched._runtime.handle import FrameworkHandle
    from kubesched._runtime.profile import build_framework
    from kubesched.config import dump_config

    for index, profile in enumerate(cfg.profiles):
        build_framework(profile, registry, FrameworkHandle.for_nodes([], features=cfg.features), index=index)
    text = yaml.safe_dump(dump_config(cfg), sort_keys=False)
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        raise ConfigError(f"--write-config-to {path}: {e.strerror or e}") from None
    log.info("Wrote configuration to %s", path)


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


class KlogJSONFormatter(logging.Formatter):
    """``--logging-format=json``: one JSON object a line as component-base's JSON logger writes
    them — ``ts`` (seconds since the epoch), ``caller``, ``msg``, and ``v`` (the verbosity; absent
    on errors, which carry ``err`` when there is an exception)."""

    def format(self, record: logging.LogRecord) -> str:
        import json
        import os

        out: dict[str, Any] = {"ts": record.created, "caller": f"{os.path.basename(record.pathname)}:{record.lineno}",
                               "msg": record.getMessage()}
        if record.levelno >= logging.ERROR:
            if record.exc_info:
                out["err"] = self.formatException(record.exc_info)
        else:
            out["v"] = 0 if record.levelno >= logging.INFO else 4
        return json.dumps(out)


def configure_logging(verbosity: int, logging_format: str = "text") -> None:
    """``-v`` and ``--logging-format``: klog prints Info at the default verbosity (-v=0), so does
    kubesched; -v 4 and above turn debug on, -v 6 and above the API client's request logs."""
    handler = logging.StreamHandler()
    handler.setFormatter(KlogJSONFormatter() if logging_format == "json"
                         else logging.Formatter("%(asctime)s %(levelname).1s %(name)s] %(message)s"))
    logging.basicConfig(level=logging.DEBUG if verbosity >= 4 else logging.INFO, handlers=[handler])
    # httpx logs every request at INFO; client-go's round tripper logs requests from -v=6 on
    # (the API client's own transport logs them at debug, see kubesched.cluster._http).
    logging.getLogger("httpx").setLevel(logging.DEBUG if verbosity >= 6 else logging.WARNING)
    logging.getLogger("kubesched.cluster._http").setLevel(logging.DEBUG if verbosity >= 6 else logging.INFO)
    # Whatever a library logs at -v=10, no token, key or Authorization header is written.
    redact_credentials_in_logs()


def install_stop_signals(stop: threading.Event, on_signal: Callable[[], None] | None = None) -> Callable[[], None]:
    """SIGTERM / SIGINT call ``on_signal`` and set ``stop``; returns what puts the previous
    handlers back (nothing is installed off the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None  # signals can only be handled on the main thread (tests run us elsewhere)

    def handler(signum: int, frame: Any) -> None:
        log.info("received signal %d: stopping", signum)
        if on_signal is not None:
            on_signal()
        stop.set()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGINT)}

    def restore() -> None:
        for sig, old in previous.items():
            signal.signal(sig, old)

    return restore


def run(options: RunOptions, serving: ServingOptions, leader_election_flags: LeaderElectionFlags,
        registry: Mapping[str, Factory] | Callable[[], Mapping[str, Factory]], *, stop: threading.Event | None = None,
        api: ApiClient | None = None) -> RunResult:
    """kube-scheduler's Run. Returns when stopped ("stopped": binds in flight finished, lease
    released) or as soon as leadership is lost ("lost-leadership"). ``api`` replaces the client
    the configuration and ``--kubeconfig`` / ``--master`` would give (it is closed on return).
    ``registry``: the plugin registry, or what makes it (called once the informers' first LISTs
    are sent: the plugins' modules are imported while the API server answers)."""
    features = features_for(options.kube_version, options.feature_gates)
    cfg = effective_configuration(options, leader_election_flags, features)
    le = cfg.leader_election
    stop = stop if stop is not None else threading.Event()
    if api is None:
        api = ApiClient.for_client_connection(cfg.client_connection, kubeconfig=options.kubeconfig,
                                              master=options.master)
    # The informers' first LISTs go out now; the scheduler (its modules, plugins, cache and queue)
    # is imported and built while the API server answers them.
    first_lists = FirstLists(api, cfg.features)
    # Only a log line depends on the API server's /version: read meanwhile, not on the way to scheduling.
    threading.Thread(target=warn_on_version_skew, args=(api, features), name="version-skew", daemon=True).start()
    restore_signals = install_stop_signals(stop)
    # Garbage collection, paused while the command starts, resumes once the scheduling loop's
    # first attempt and its binding cycle are done (_running), or after GC_PAUSE_LIMIT if that
    # takes longer (informers that cannot sync: retried requests leave garbage behind).
    gc_limit = threading.Timer(GC_PAUSE_LIMIT, _resume_collection)
    gc_limit.daemon = True
    gc_limit.start()
    # Built (prometheus_client imported) once scheduling has begun: _running.
    metrics = SchedulerMetrics(deferred=True)
    metrics.disable(serving.disabled_metrics)
    checks = HealthChecks()
    server: _DeferredServing | None = None
    elector: LeaderElector | None = None
    # The binding workers, informers and event writers wait on the API server and then for the
    # interpreter, which the scheduling loop holds while it computes: each such wait lasts up to
    # the switch interval, Python's default 5 ms. 1 ms lets a bind go out sooner (a restarted
    # scheduler's first bind, every pod's bind after its cycle) at no cost to throughput
    # (`kubesched bench --workload live`: 272-302 pods/s against 260-277 with 5 ms).
    _switch_often(True)
    try:
        if serving.enabled:
            cert_file, key_file = serving.certificate()
            # The port is bound (and listening) now; the web server starts once scheduling has
            # begun, so that its imports do not delay the first bind (a restarted scheduler's).
            bound = bind_serving(functools.partial(build_app, metrics, checks), bind_address=serving.bind_address,
                                 secure_port=serving.secure_port, cert_file=cert_file, key_file=key_file,
                                 tls=TLSSettings(serving.tls_min_version, serving.cipher_suites),
                                 reuse_port=serving.permit_port_sharing)
            if bound is not None:
                server = _DeferredServing(bound, stop)
        is_leader = _always
        on_synced: Callable[[], None] = checks.mark_synced
        wakers: list[Callable[[], None]] = []

        def wake() -> None:
            for w in list(wakers):
                w()

        if le.leader_elect:
            from kubesched.live.leader import LeaderElector

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

        from kubesched.live.runner import run_scheduler

        cluster = LiveCluster(api, scheduler_names=[p.scheduler_name for p in cfg.profiles],
                              options=LiveOptions(features=cfg.features), first_lists=first_lists)
        result = run_scheduler(cfg, cluster, stop, is_leader,
                               registry=registry() if callable(registry) else registry, metrics=metrics,
                               on_synced=on_synced, register_wake=wakers.append,
                               on_running=functools.partial(_running, metrics, server),
                               deterministic=options.deterministic,
                               pod_max_in_unschedulable_pods_duration=options.pod_max_in_unschedulable_pods_duration)
        if server is not None:
            server.raise_failure()
        return result
    finally:
        gc_limit.cancel()
        checks.mark_shutting_down()
        # Binds in flight are done (run_scheduler waited for them): only now is the lease released.
        if elector is not None:
            elector.stop(timeout=10.0)
        if server is not None:
            server.stop()
        api.close()
        restore_signals()
        _switch_often(False)


_switching_lock = threading.Lock()
_switching_runs = 0  # run() calls under way in this process (tests run several replicas in one)
_switching_saved = 0.0  # the process's own interval, put back when the last of them returns


def _switch_often(on: bool) -> None:
    """sys.setswitchinterval(SWITCH_INTERVAL) while a run() is under way (see run)."""
    global _switching_runs, _switching_saved
    with _switching_lock:
        if on:
            if _switching_runs == 0:
                _switching_saved = sys.getswitchinterval()
                sys.setswitchinterval(SWITCH_INTERVAL)
            _switching_runs += 1
        else:
            _switching_runs -= 1
            if _switching_runs == 0:
                sys.setswitchinterval(_switching_saved)


def _resume_collection() -> None:
    from kubesched._startup import startup_done

    startup_done()


def _running(metrics: SchedulerMetrics, server: _DeferredServing | None) -> None:
    """What waits for the scheduling loop's first attempt and its binding cycle: garbage
    collection, paused by the ``kubesched`` command while it starts (kubesched._entry: the
    collector would otherwise walk the modules, informer stores and cache being built, ~50 ms
    of a restart's ~0.6 s to its first bind); and, on a thread of their own, the metrics'
    prometheus_client objects (what was recorded so far replayed on them) and the web server of
    health and metrics."""
    _resume_collection()

    def after_start() -> None:
        metrics.materialize()
        if server is not None:
            server.serve()

    threading.Thread(target=after_start, name="kubesched-serving-start", daemon=True).start()


class _DeferredServing:
    """Health and metrics serving on a port bound at the start, served from when :meth:`serve` is
    called (once the scheduling loop runs: :func:`_running`, on a thread of its own). A failure
    to serve stops the scheduler (``stop``) and is raised by :meth:`raise_failure`, as a failure
    at the start would be."""

    def __init__(self, server: ServingThread, stop: threading.Event) -> None:
        self._server = server
        self._stop = stop
        self._lock = threading.Lock()
        self._closed = False
        self._failure: KubeschedError | None = None

    def serve(self) -> None:
        """Start serving, on the calling thread."""
        with self._lock:
            if self._closed:
                return
            try:
                self._server.start()
            except KubeschedError as e:
                log.error("cannot serve health and metrics: %s", e)
                self._failure = e
                self._stop.set()
                return
        log.info("serving health and metrics on %s", self._server.url)

    def raise_failure(self) -> None:
        if self._failure is not None:
            raise self._failure

    def stop(self) -> None:
        with self._lock:
            self._closed = True
            self._server.stop()


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
