"""kube-scheduler's HTTP endpoints: /healthz, /livez, /readyz and /metrics.

- ``/metrics``: Prometheus text format (0.0.4) from a dedicated
  :class:`prometheus_client.CollectorRegistry` holding kube-scheduler v1.30's metrics under their
  upstream names, types, labels and buckets (pkg/scheduler/metrics/metrics.go), plus client-go's
  ``leader_election_master_status``. :class:`SchedulerMetrics` is what the scheduling loop calls.
- ``/healthz``, ``/livez``, ``/readyz`` (and ``/<endpoint>/<check>``): the apiserver healthz
  handlers' behaviour and text — ``ok``; ``?verbose`` lists every check (``[+]ping ok``); a failure
  answers 500 with every check listed, reasons withheld, and ``<endpoint> check failed``;
  ``?exclude=<check>`` skips one. As in kube-scheduler, /readyz waits for the informers to sync
  (``sched-handler-sync``) and turns 500 once shutdown starts (``shutdown``) but does *not*
  depend on leadership: a standby replica is ready. With leader election on, /healthz and
  /readyz include ``leaderElection`` (the elector's watchdog: fails only when this replica thinks
  it leads but has not renewed for leaseDuration + 20 s).

Serving: ``--bind-address`` (default 127.0.0.1) and ``--secure-port`` (default 10259; 0 disables
serving). kube-scheduler serves HTTPS with a self-signed certificate there; kubesched serves plain
HTTP on that port unless ``--tls-cert-file``/``--tls-private-key-file`` (``--cert``/``--key``) are
given, and does no delegated authentication/authorization: bind it to a trusted network only.
"""

from __future__ import annotations

import datetime
import functools
import ipaddress
import logging
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from kubesched._lazy import lazy_module
from kubesched._serving import ThreadedServer
from kubesched.errors import ConfigError

if TYPE_CHECKING:
    import ssl

    # prometheus_client (~40 ms of imports: its exposition brings http.server, email, urllib) is
    # imported when the metrics are built: at once for SchedulerMetrics(), once `kubesched run`
    # schedules for SchedulerMetrics(deferred=True). The web server (uvicorn, starlette: ~0.1 s
    # of imports) is imported when serving starts, which `kubesched run` does once it schedules
    # (see :func:`bind_serving`).
    import uvicorn
    from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

    from kubesched.live._exposition import WithoutCreated
else:
    ssl = lazy_module("ssl")  # only serving with TLS needs it

log = logging.getLogger("kubesched.serving")

DEFAULT_BIND_ADDRESS = "127.0.0.1"
DEFAULT_SECURE_PORT = 10259  # kube-scheduler's KubeSchedulerPort
METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# Label values kube-scheduler uses (facts sheet, section 10).
RESULTS = ("scheduled", "unschedulable", "error")
QUEUES = ("active", "backoff", "unschedulable", "gated")
INCOMING_QUEUES = ("active", "backoff", "unschedulable")  # gated pods count as unschedulable here
STATUS_CODES = ("Success", "Error", "Unschedulable", "UnschedulableAndUnresolvable", "Wait", "Skip", "Pending")
EXTENSION_POINTS = (
    "PreFilter", "Filter", "PreFilterExtensionAddPod", "PreFilterExtensionRemovePod", "PostFilter", "PreScore",
    "Score", "ScoreExtensionNormalize", "PreBind", "Bind", "PostBind", "Reserve", "Unreserve", "Permit", "PreEnqueue",
)
CACHE_SIZE_TYPES = ("assumed_pods", "pods", "nodes")


def exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    """prometheus.ExponentialBuckets: each bound is the previous one times ``factor`` (repeated
    multiplication, as Go computes them, so the printed bounds match)."""
    if count < 1 or start <= 0 or factor <= 1:
        raise ValueError("exponential_buckets needs count >= 1, start > 0, factor > 1")
    out = [start]
    for _ in range(count - 1):
        out.append(out[-1] * factor)
    return tuple(out)


ATTEMPT_DURATION_BUCKETS = exponential_buckets(0.001, 2, 15)
EXTENSION_POINT_BUCKETS = exponential_buckets(0.0001, 2, 12)
PLUGIN_EXECUTION_BUCKETS = exponential_buckets(0.00001, 1.5, 20)
POD_SCHEDULING_DURATION_BUCKETS = exponential_buckets(0.01, 2, 20)
PREEMPTION_VICTIMS_BUCKETS = exponential_buckets(1, 2, 7)
POD_SCHEDULING_ATTEMPTS_BUCKETS = exponential_buckets(1, 2, 5)


def attempts_label(attempts: int) -> str:
    """getAttemptsLabel: ``1`` ... ``14``, then ``15+`` (bounded cardinality)."""
    return "15+" if attempts >= 15 else str(attempts)


def _check(value: str, allowed: Iterable[str], label: str) -> str:
    if value not in allowed:
        raise ValueError(f"{label} {value!r} is not one of {', '.join(allowed)}")
    return value


def exposed_without_created(registry: CollectorRegistry) -> CollectorRegistry:
    """What /metrics renders of ``registry``: its metrics without the ``*_created`` samples
    (kubesched.live._exposition)."""
    from kubesched.live._exposition import exposed_without_created as exposed

    return exposed(registry)[0]


# SchedulerMetrics' prometheus_client metrics, by attribute.
METRIC_ATTRIBUTES = (
    "schedule_attempts", "scheduling_attempt_duration", "scheduling_algorithm_duration", "preemption_victims_hist",
    "preemption_attempts", "pending_pods", "pod_scheduling_duration", "pod_scheduling_sli_duration",
    "pod_scheduling_attempts", "framework_extension_point_duration", "plugin_execution_duration",
    "queue_incoming_pods", "permit_wait_duration", "cache_size", "unschedulable_pods", "plugin_evaluation",
    "leader_election_master_status", "leader_election_slowpath",
)

# One recorded operation of a deferred metric: attribute, label values (None: the metric
# itself), method (inc, set, observe) and its argument.
_Recorded = tuple[str, tuple[tuple[str, str], ...] | None, str, float]


def _apply(metric: Any, labels: tuple[tuple[str, str], ...] | None, method: str, value: float) -> None:
    """One recorded operation on a prometheus_client metric (its labelled child if ``labels``)."""
    if labels is not None:
        metric = metric.labels(**dict(labels))
    getattr(metric, method)(value)


class _Deferred:
    """A metric of a deferred :class:`SchedulerMetrics` (or one of its labelled children) before
    its prometheus_client object exists: what is done to it is recorded, in order, and replayed
    on the real metric when it is built (:meth:`SchedulerMetrics.materialize`); done after that,
    it goes to the real metric."""

    __slots__ = ("_owner", "_name", "_labels")

    def __init__(self, owner: SchedulerMetrics, name: str, labels: tuple[tuple[str, str], ...] | None = None) -> None:
        self._owner = owner
        self._name = name
        self._labels = labels

    def labels(self, **labels: str) -> _Deferred:
        return _Deferred(self._owner, self._name, tuple(labels.items()))

    def inc(self, amount: float = 1.0) -> None:
        self._owner._record((self._name, self._labels, "inc", amount))

    def set(self, value: float) -> None:
        self._owner._record((self._name, self._labels, "set", value))

    def observe(self, amount: float) -> None:
        self._owner._record((self._name, self._labels, "observe", amount))


class SchedulerMetrics:
    """kube-scheduler v1.30's metrics in their own registry (never the global one, so two
    schedulers or tests in one process do not collide). All methods are thread-safe.

    ``deferred``: the prometheus_client metrics are built (and prometheus_client imported) by
    :meth:`materialize`, or the first :meth:`render`, not now; what is recorded before is kept
    in order and replayed on them then, so they read exactly as if they had existed from the
    start. ``kubesched run`` defers them until its scheduling loop's first attempt and its
    binding cycle are done (a restarted scheduler's time to its first bind)."""

    schedule_attempts: Counter | _Deferred
    scheduling_attempt_duration: Histogram | _Deferred
    scheduling_algorithm_duration: Histogram | _Deferred
    preemption_victims_hist: Histogram | _Deferred
    preemption_attempts: Counter | _Deferred
    pending_pods: Gauge | _Deferred
    pod_scheduling_duration: Histogram | _Deferred
    pod_scheduling_sli_duration: Histogram | _Deferred
    pod_scheduling_attempts: Histogram | _Deferred
    framework_extension_point_duration: Histogram | _Deferred
    plugin_execution_duration: Histogram | _Deferred
    queue_incoming_pods: Counter | _Deferred
    permit_wait_duration: Histogram | _Deferred
    cache_size: Gauge | _Deferred
    unschedulable_pods: Gauge | _Deferred
    plugin_evaluation: Counter | _Deferred
    leader_election_master_status: Gauge | _Deferred
    leader_election_slowpath: Counter | _Deferred

    def __init__(self, *, deferred: bool = False) -> None:
        self._lock = threading.Lock()
        self._disabled: frozenset[str] = frozenset()
        self._registry: CollectorRegistry | None = None
        self._exposed: CollectorRegistry | None = None
        self._filter: WithoutCreated | None = None
        self._log: list[_Recorded] | None = None
        if deferred:
            self._log = []
            for name in METRIC_ATTRIBUTES:
                setattr(self, name, _Deferred(self, name))
        else:
            self._install(self._build())

    @property
    def registry(self) -> CollectorRegistry:
        """The registry of every metric (built now if deferred)."""
        self.materialize()
        assert self._registry is not None
        return self._registry

    def materialize(self) -> None:
        """Build the prometheus_client metrics of a deferred instance and replay on them what was
        recorded (nothing for one built at once, or built already)."""
        if self._log is None:
            return
        # Built (prometheus_client imported) without the lock: recording goes on meanwhile.
        built = self._build()
        with self._lock:
            if self._log is None:
                return  # another thread built them first
            for name, labels, op, value in self._log:
                _apply(built[name], labels, op, value)
            # Installed only once every recorded operation is replayed: a gauge set meanwhile
            # (it waits for the lock) lands after the older values.
            self._install(built)
            self._log = None

    def _record(self, op: _Recorded) -> None:
        """A deferred metric's operation: kept, or done on the real metric once built."""
        with self._lock:
            if self._log is not None:
                self._log.append(op)
                return
        name, labels, method, value = op
        _apply(getattr(self, name), labels, method, value)

    def _install(self, built: dict[str, Any]) -> None:
        from kubesched.live._exposition import exposed_without_created

        registry = built.pop("registry")
        for name, metric in built.items():
            setattr(self, name, metric)
        self._exposed, filtered = exposed_without_created(registry, self._disabled)
        self._filter = filtered
        self._registry = registry

    def _build(self) -> dict[str, Any]:
        """The metrics (prometheus_client objects, by attribute) and their ``registry``."""
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        r = CollectorRegistry(auto_describe=True)
        m: dict[str, Any] = {"registry": r}
        m["schedule_attempts"] = Counter(
            "scheduler_schedule_attempts_total",
            "[STABLE] Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be "
            "scheduled, while 'error' means an internal scheduler problem.",
            ("result", "profile"), registry=r)
        m["scheduling_attempt_duration"] = Histogram(
            "scheduler_scheduling_attempt_duration_seconds",
            "[STABLE] Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            ("result", "profile"), buckets=ATTEMPT_DURATION_BUCKETS, registry=r)
        m["scheduling_algorithm_duration"] = Histogram(
            "scheduler_scheduling_algorithm_duration_seconds", "[ALPHA] Scheduling algorithm latency in seconds",
            buckets=ATTEMPT_DURATION_BUCKETS, registry=r)
        m["preemption_victims_hist"] = Histogram(
            "scheduler_preemption_victims", "[STABLE] Number of selected preemption victims",
            buckets=PREEMPTION_VICTIMS_BUCKETS, registry=r)
        m["preemption_attempts"] = Counter(
            "scheduler_preemption_attempts_total", "[STABLE] Total preemption attempts in the cluster till now",
            registry=r)
        m["pending_pods"] = Gauge(
            "scheduler_pending_pods",
            "[STABLE] Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' "
            "means number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods that the "
            "scheduler attempted to schedule and failed; 'gated' is the number of unschedulable pods that the "
            "scheduler never attempted to schedule because they are gated.",
            ("queue",), registry=r)
        for q in QUEUES:
            m["pending_pods"].labels(queue=q).set(0)
        m["pod_scheduling_duration"] = Histogram(
            "scheduler_pod_scheduling_duration_seconds",
            "[STABLE] (Deprecated since 1.29.0) E2e latency for a pod being scheduled which may include multiple "
            "scheduling attempts.",
            ("attempts",), buckets=POD_SCHEDULING_DURATION_BUCKETS, registry=r)
        m["pod_scheduling_sli_duration"] = Histogram(
            "scheduler_pod_scheduling_sli_duration_seconds",
            "[BETA] E2e latency for a pod being scheduled, from the time the pod enters the scheduling queue and "
            "might involve multiple scheduling attempts.",
            ("attempts",), buckets=POD_SCHEDULING_DURATION_BUCKETS, registry=r)
        m["pod_scheduling_attempts"] = Histogram(
            "scheduler_pod_scheduling_attempts", "[STABLE] Number of attempts to successfully schedule a pod.",
            buckets=POD_SCHEDULING_ATTEMPTS_BUCKETS, registry=r)
        m["framework_extension_point_duration"] = Histogram(
            "scheduler_framework_extension_point_duration_seconds",
            "[STABLE] Latency for running all plugins of a specific extension point.",
            ("extension_point", "status", "profile"), buckets=EXTENSION_POINT_BUCKETS, registry=r)
        m["plugin_execution_duration"] = Histogram(
            "scheduler_plugin_execution_duration_seconds",
            "[ALPHA] Duration for running a plugin at a specific extension point.",
            ("plugin", "extension_point", "status"), buckets=PLUGIN_EXECUTION_BUCKETS, registry=r)
        m["queue_incoming_pods"] = Counter(
            "scheduler_queue_incoming_pods_total",
            "[STABLE] Number of pods added to scheduling queues by event and queue type.",
            ("queue", "event"), registry=r)
        m["permit_wait_duration"] = Histogram(
            "scheduler_permit_wait_duration_seconds", "[ALPHA] Duration of waiting on permit.",
            ("result",), buckets=ATTEMPT_DURATION_BUCKETS, registry=r)
        m["cache_size"] = Gauge(
            "scheduler_scheduler_cache_size",
            "[ALPHA] Number of nodes, pods, and assumed (bound) pods in the scheduler cache.",
            ("type",), registry=r)
        m["unschedulable_pods"] = Gauge(
            "scheduler_unschedulable_pods",
            "[ALPHA] The number of unschedulable pods broken down by plugin name. A pod will increment the gauge "
            "for all plugins that caused it to not schedule and so this metric have meaning only when broken down "
            "by plugin.",
            ("plugin", "profile"), registry=r)
        m["plugin_evaluation"] = Counter(
            "scheduler_plugin_evaluation_total",
            "[ALPHA] Number of attempts to schedule pods by each plugin and the extension point (available only in "
            "PreFilter, Filter, PreScore, and Score).",
            ("plugin", "extension_point", "profile"), registry=r)
        m["leader_election_master_status"] = Gauge(
            "leader_election_master_status",
            "[ALPHA] Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 "
            "indicates master. 'name' is the string used to identify the lease. Please make sure to group by name.",
            ("name",), registry=r)
        m["leader_election_slowpath"] = Counter(
            "leader_election_slowpath_total",
            "[ALPHA] Total number of slow path exercised in renewing leader leases. 'name' is the string used to "
            "identify the lease. Please make sure to group by name.",
            ("name",), registry=r)
        return m

    def disable(self, names: Iterable[str]) -> None:
        """``--disabled-metrics``: leave these metrics (fully qualified names) out of /metrics, as
        component-base's metrics.SetDisabledMetrics does."""
        with self._lock:
            self._disabled = self._disabled | frozenset(names)
            if self._filter is not None:
                self._filter.disabled = self._disabled

    # ------------------------------------------------------------ scheduling cycle
    def observe_attempt(self, result: str, profile: str, seconds: float) -> None:
        """One scheduling attempt ended (PodScheduled / PodUnschedulable / PodScheduleError):
        ``result`` is scheduled (after bind), unschedulable (rejected) or error."""
        _check(result, RESULTS, "result")
        self.schedule_attempts.labels(result=result, profile=profile).inc()
        self.scheduling_attempt_duration.labels(result=result, profile=profile).observe(seconds)

    def observe_algorithm(self, seconds: float) -> None:
        """SchedulingAlgorithmLatency: schedulePod's duration."""
        self.scheduling_algorithm_duration.observe(seconds)

    def observe_pod_scheduled(self, attempts: int, sli_seconds: float) -> None:
        """A pod was bound: its attempt count and the time since it first entered the queue
        (PodSchedulingAttempts, PodSchedulingSLIDuration and the deprecated
        PodSchedulingDuration, which upstream observes with the same value)."""
        label = attempts_label(attempts)
        self.pod_scheduling_attempts.observe(attempts)
        self.pod_scheduling_sli_duration.labels(attempts=label).observe(sli_seconds)
        self.pod_scheduling_duration.labels(attempts=label).observe(sli_seconds)

    def observe_extension_point(self, point: str, status: str, profile: str, seconds: float) -> None:
        """FrameworkExtensionPointDuration: all plugins of one extension point, with the
        resulting status code name (``Success`` when the status is nil)."""
        _check(point, EXTENSION_POINTS, "extension_point")
        _check(status, STATUS_CODES, "status")
        self.framework_extension_point_duration.labels(extension_point=point, status=status,
                                                       profile=profile).observe(seconds)

    def observe_plugin(self, plugin: str, point: str, status: str, seconds: float) -> None:
        """PluginExecutionDuration (upstream samples 10% of cycles for it)."""
        _check(point, EXTENSION_POINTS, "extension_point")
        _check(status, STATUS_CODES, "status")
        self.plugin_execution_duration.labels(plugin=plugin, extension_point=point, status=status).observe(seconds)

    def plugin_evaluated(self, plugin: str, point: str, profile: str, n: int = 1) -> None:
        """PluginEvaluationTotal."""
        _check(point, EXTENSION_POINTS, "extension_point")
        self.plugin_evaluation.labels(plugin=plugin, extension_point=point, profile=profile).inc(n)

    def observe_permit_wait(self, result: str, seconds: float) -> None:
        """PermitWaitDuration: result is the status code name of the wait's outcome."""
        _check(result, STATUS_CODES, "result")
        self.permit_wait_duration.labels(result=result).observe(seconds)

    # -------------------------------------------------------------------- preemption
    def preemption_attempt(self) -> None:
        self.preemption_attempts.inc()

    def preemption_victims(self, n: int) -> None:
        """Victims chosen by one successful preemption (observed only when a candidate was found)."""
        self.preemption_victims_hist.observe(n)

    # ------------------------------------------------------------------------ queue
    def set_pending(self, counts: Mapping[str, int]) -> None:
        """scheduler_pending_pods: the given queues' sizes (active, backoff, unschedulable, gated);
        queues not named keep their value."""
        for queue, n in counts.items():
            _check(queue, QUEUES, "queue")
            self.pending_pods.labels(queue=queue).set(n)

    def incoming(self, queue: str, event: str, n: int = 1) -> None:
        """scheduler_queue_incoming_pods_total: ``n`` pods moved to ``queue`` by ``event`` (PodAdd,
        ScheduleAttemptFailure, BackoffComplete, ForceActivate, PodUpdate, NodeAdd, ...)."""
        _check(queue, INCOMING_QUEUES, "queue")
        if n:
            self.queue_incoming_pods.labels(queue=queue, event=event).inc(n)

    def unschedulable_pods_add(self, plugin: str, profile: str, delta: int) -> None:
        """scheduler_unschedulable_pods: +1 per rejecting plugin when a pod is put back, -1 on Pop."""
        self.unschedulable_pods.labels(plugin=plugin, profile=profile).inc(delta)

    def set_cache_size(self, *, nodes: int, pods: int, assumed_pods: int) -> None:
        self.cache_size.labels(type="nodes").set(nodes)
        self.cache_size.labels(type="pods").set(pods)
        self.cache_size.labels(type="assumed_pods").set(assumed_pods)

    # ------------------------------------------------ leader election (LeaderMetrics)
    def leader_on(self, name: str) -> None:
        self.leader_election_master_status.labels(name=name).set(1)

    def leader_off(self, name: str) -> None:
        self.leader_election_master_status.labels(name=name).set(0)

    def slowpath_exercised(self, name: str) -> None:
        self.leader_election_slowpath.labels(name=name).inc()

    # ---------------------------------------------------------------------- output
    def render(self) -> bytes:
        """The Prometheus text exposition of every metric."""
        from prometheus_client import generate_latest

        self.materialize()
        assert self._exposed is not None
        return generate_latest(self._exposed)


# ================================================================= health checks
HealthCheck = Callable[[], "str | None"]  # None = healthy, else the failure reason

ENDPOINTS = ("healthz", "livez", "readyz")


@dataclass(frozen=True, slots=True)
class _Check:
    """A health check and the endpoints it answers for."""

    name: str
    fn: HealthCheck
    endpoints: frozenset[str]


class HealthChecks:
    """The checks behind /healthz, /livez and /readyz, in kube-scheduler's arrangement:

    - ``ping`` everywhere;
    - ``leaderElection`` (after :meth:`add_leader_election`) on /healthz and /readyz;
    - ``shutdown`` on /readyz: fails once :meth:`mark_shutting_down` is called;
    - ``sched-handler-sync`` on /readyz: fails until :meth:`mark_synced` (informers synced and
      event handlers registered).
    """

    def __init__(self) -> None:
        self._synced = threading.Event()
        self._shutting_down = threading.Event()
        self._checks: list[_Check] = []
        self._lock = threading.Lock()
        self.add("ping", lambda: None)
        self.add("shutdown", self._shutdown_check, endpoints=("readyz",))
        self.add("sched-handler-sync", self._sync_check, endpoints=("readyz",))

    def add(self, name: str, check: HealthCheck, *, endpoints: Iterable[str] = ENDPOINTS) -> None:
        eps = frozenset(endpoints)
        unknown = eps - set(ENDPOINTS)
        if unknown:
            raise ValueError(f"unknown health endpoint(s): {', '.join(sorted(unknown))}")
        with self._lock:
            if any(c.name == name for c in self._checks):
                raise ValueError(f"health check {name!r} is already registered")
            self._checks.append(_Check(name, check, eps))

    def add_leader_election(self, elector: Any, timeout: float = 20.0) -> None:
        """The leader elector's watchdog (anything with ``check(timeout) -> str | None``, i.e.
        :class:`kubesched.live.leader.LeaderElector`) as ``leaderElection``."""
        self.add("leaderElection", functools.partial(elector.check, timeout), endpoints=("healthz", "readyz"))

    def mark_synced(self) -> None:
        self._synced.set()

    def mark_shutting_down(self) -> None:
        self._shutting_down.set()

    @property
    def synced(self) -> bool:
        return self._synced.is_set()

    def _shutdown_check(self) -> str | None:
        return "process is shutting down" if self._shutting_down.is_set() else None

    def _sync_check(self) -> str | None:
        return None if self._synced.is_set() else "waiting for handlers to sync"

    def checks(self, endpoint: str) -> list[tuple[str, HealthCheck]]:
        with self._lock:
            return [(c.name, c.fn) for c in self._checks if endpoint in c.endpoints]

    @staticmethod
    def run_one(fn: HealthCheck) -> str | None:
        try:
            return fn()
        except Exception as e:  # a crashing check is a failing check
            return f"{type(e).__name__}: {e}"

    def evaluate(self, endpoint: str, *, exclude: Iterable[str] = ()) -> tuple[bool, str, list[str]]:
        """(healthy, the verbose listing, the failure details for the log)."""
        excluded = set(exclude)
        lines: list[str] = []
        failures: list[str] = []
        for name, fn in self.checks(endpoint):
            if name in excluded:
                excluded.discard(name)
                lines.append(f"[+]{name} excluded: ok")
                continue
            err = self.run_one(fn)
            if err is None:
                lines.append(f"[+]{name} ok")
            else:
                lines.append(f"[-]{name} failed: reason withheld")
                failures.append(f"[-]{name} failed: {err}")
        if excluded:
            quoted = ",".join(f'"{n}"' for n in sorted(excluded))
            lines.append(f"warn: some health checks cannot be excluded: no matches for {quoted}")
        return not failures, "".join(line + "\n" for line in lines), failures


_TEXT_HEADERS = {"X-Content-Type-Options": "nosniff"}


def _text(body: str, status: int = 200) -> Response:
    from starlette.responses import PlainTextResponse

    return PlainTextResponse(body, status_code=status, headers=_TEXT_HEADERS)


class MetricsSource(Protocol):
    """What /metrics serves: :class:`SchedulerMetrics`, or another registry's exposition
    (``kubesched shadow``'s metrics)."""

    def render(self) -> bytes: ...


def build_app(metrics: MetricsSource, checks: HealthChecks) -> Starlette:
    """The ASGI app serving /metrics and the health endpoints."""
    from starlette.applications import Starlette
    from starlette.responses import Response
    from starlette.routing import Route

    def metrics_endpoint(request: Request) -> Response:
        return Response(metrics.render(), media_type=METRICS_CONTENT_TYPE)

    def health(endpoint: str) -> Callable[[Request], Response]:
        def handler(request: Request) -> Response:
            ok, listing, failures = checks.evaluate(endpoint, exclude=request.query_params.getlist("exclude"))
            if not ok:
                log.info("%s check failed: %s", endpoint, "; ".join(failures))
                return _text(f"{listing}{endpoint} check failed\n", 500)
            if "verbose" in request.query_params:
                return _text(f"{listing}{endpoint} check passed\n")
            return _text("ok")

        return handler

    def single(endpoint: str) -> Callable[[Request], Response]:
        def handler(request: Request) -> Response:
            name = request.path_params["check"]
            for check_name, fn in checks.checks(endpoint):
                if check_name == name:
                    err = checks.run_one(fn)
                    if err is None:
                        return _text("ok")
                    return _text(f"internal server error: {err}\n", 500)
            return _text("404 page not found\n", 404)

        return handler

    routes = [Route("/metrics", metrics_endpoint, methods=["GET"])]
    for ep in ENDPOINTS:
        routes.append(Route(f"/{ep}", health(ep), methods=["GET"]))
        routes.append(Route(f"/{ep}/{{check}}", single(ep), methods=["GET"]))
    return Starlette(routes=routes)


# ======================================================================== serving
@dataclass(frozen=True, slots=True)
class TLSSettings:
    """SecureServingOptions.ApplyTo's TLS knobs: ``--tls-min-version`` (cliflag.TLSVersion's name,
    "" = Go's server default, TLS 1.2) and ``--tls-cipher-suites`` (OpenSSL's names of Go's
    suites; TLS 1.3 suites are not configurable, in Go as in OpenSSL)."""

    min_version: str = ""
    ciphers: tuple[str, ...] = ()

    def apply(self, context: ssl.SSLContext) -> None:
        from kubesched.live.kube_flags import TLS_CIPHERS, TLS_VERSIONS

        version = TLS_VERSIONS.get(self.min_version or "VersionTLS12")
        if version is None:
            raise ConfigError(f'unknown tls version "{self.min_version}"')
        context.minimum_version = ssl.TLSVersion[version]
        names = [TLS_CIPHERS[c] for c in self.ciphers if TLS_CIPHERS.get(c)]
        if names:
            try:
                context.set_ciphers(":".join(names))
            except ssl.SSLError:
                raise ConfigError("--tls-cipher-suites: none of " + ",".join(self.ciphers)
                                  + " is available in this OpenSSL") from None


@functools.cache
def _tls_config_class() -> Callable[..., uvicorn.Config]:
    """uvicorn's Config with the TLS settings applied to the SSL context it creates (a class made
    on first use: uvicorn is imported only when serving starts)."""
    import uvicorn

    class TLSConfig(uvicorn.Config):
        def __init__(self, *args: Any, tls: TLSSettings, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.tls = tls

        def load(self) -> None:
            super().load()
            if self.ssl is not None:
                self.tls.apply(self.ssl)

    return TLSConfig


def _check_tls(cert_file: str | None, key_file: str | None, tls: TLSSettings) -> None:
    """What serving's TLS would fail on, checked before serving starts: the pair given together,
    readable, matching, and the TLS settings known (uvicorn makes its SSL context likewise)."""
    if bool(cert_file) != bool(key_file):
        raise ConfigError("--tls-cert-file and --tls-private-key-file must be given together")
    if not cert_file:
        return
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(cert_file, key_file)
    except (OSError, ssl.SSLError) as e:
        raise ConfigError(f"cannot serve with --tls-cert-file {cert_file} and --tls-private-key-file {key_file}: "
                          f"{getattr(e, 'strerror', None) or e}") from None
    tls.apply(context)


def _uvicorn_config(app: Any, host: str, port: int, cert_file: str | None, key_file: str | None,
                    log_level: str, tls: TLSSettings = TLSSettings()) -> uvicorn.Config:
    if bool(cert_file) != bool(key_file):
        raise ConfigError("--tls-cert-file and --tls-private-key-file must be given together")
    return _tls_config_class()(app, host=host, port=port, log_level=log_level, lifespan="off", log_config=None,
                               ssl_certfile=cert_file or None, ssl_keyfile=key_file or None, access_log=False,
                               timeout_graceful_shutdown=2, tls=tls)


class ServingThread(ThreadedServer):
    """Serve an ASGI app from a daemon thread on a socket bound up front (``port=0`` picks a
    free port — for tests; use :func:`start_serving` for the ``--secure-port`` semantics).
    ``make_app`` instead of ``app``: the app is made when serving starts (:func:`bind_serving`)."""

    what = "serving"

    def __init__(self, app: Any = None, *, host: str = DEFAULT_BIND_ADDRESS, port: int = 0,
                 cert_file: str | None = None, key_file: str | None = None, log_level: str = "warning",
                 tls: TLSSettings = TLSSettings(), reuse_port: bool = False,
                 make_app: Callable[[], Any] | None = None) -> None:
        if (app is None) == (make_app is None):
            raise ValueError("ServingThread serves an app or what make_app makes: give one of them")
        _check_tls(cert_file, key_file, tls)

        def config() -> uvicorn.Config:
            return _uvicorn_config(app if make_app is None else make_app(), host, port, cert_file, key_file,
                                   log_level, tls)

        super().__init__(config, host=host, port=port, https=bool(cert_file), thread_name="kubesched-serving",
                         reuse_port=reuse_port)


def start_serving(app: Any, *, bind_address: str = DEFAULT_BIND_ADDRESS, secure_port: int = DEFAULT_SECURE_PORT,
                  cert_file: str | None = None, key_file: str | None = None,
                  log_level: str = "warning", tls: TLSSettings = TLSSettings(),
                  reuse_port: bool = False) -> ServingThread | None:
    """Start serving as ``--bind-address``/``--secure-port`` say: None when the port is 0
    (serving disabled, as kube-scheduler's ``--secure-port=0``). ``reuse_port``:
    ``--permit-port-sharing`` (SO_REUSEPORT)."""
    if secure_port == 0:
        return None
    if not 0 < secure_port < 65536:
        raise ConfigError(f"--secure-port {secure_port} must be between 0 and 65535, inclusive. 0 for turning off "
                          "secure port")
    return ServingThread(app, host=bind_address, port=secure_port, cert_file=cert_file, key_file=key_file,
                         log_level=log_level, tls=tls, reuse_port=reuse_port).start()


def bind_serving(make_app: Callable[[], Any], *, bind_address: str = DEFAULT_BIND_ADDRESS,
                 secure_port: int = DEFAULT_SECURE_PORT, cert_file: str | None = None, key_file: str | None = None,
                 log_level: str = "warning", tls: TLSSettings = TLSSettings(),
                 reuse_port: bool = False) -> ServingThread | None:
    """:func:`start_serving` in two steps, for ``kubesched run``'s start: on return the port is
    bound and listening (a port in use, or TLS files that cannot serve, fail here, at the start,
    as before) and the returned server's :meth:`~ServingThread.start` -- which imports the web
    server, makes the app (``make_app()``) and serves -- is left to the caller, which calls it
    once scheduling has begun. A request that comes meanwhile waits in the listen backlog and
    is answered once serving starts. None when the port is 0."""
    if secure_port == 0:
        return None
    if not 0 < secure_port < 65536:
        raise ConfigError(f"--secure-port {secure_port} must be between 0 and 65535, inclusive. 0 for turning off "
                          "secure port")
    return ServingThread(host=bind_address, port=secure_port, cert_file=cert_file, key_file=key_file,
                         log_level=log_level, tls=tls, reuse_port=reuse_port, make_app=make_app)


def self_signed_pair(cert_dir: str, pair_name: str, bind_address: str) -> tuple[str, str]:
    """SecureServingOptions.MaybeDefaultWithSelfSignedCerts with ``--cert-dir``: the pair
    ``<cert_dir>/<pair_name>.crt|.key`` when both can be read, else a self-signed certificate for
    ``localhost`` and 127.0.0.1 (plus the bind address, or the name ``localhost`` when it is
    unspecified) written there. Generating one needs the ``cryptography`` package."""
    cert, key = os.path.join(cert_dir, f"{pair_name}.crt"), os.path.join(cert_dir, f"{pair_name}.key")
    if os.access(cert, os.R_OK) and os.access(key, os.R_OK):
        return cert, key
    try:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import rsa
        from cryptography.x509.oid import NameOID
    except ImportError:
        raise ConfigError(f"--cert-dir {cert_dir}: {pair_name}.crt/.key are not there, and generating a "
                          "self-signed pair needs the 'cryptography' package") from None
    ips = [ipaddress.ip_address("127.0.0.1")]
    dns = ["localhost"]
    address = ipaddress.ip_address(bind_address)
    if not address.is_unspecified and address not in ips:
        ips.append(address)
    now = datetime.datetime.now(datetime.UTC)
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"localhost@{int(now.timestamp())}")])
    certificate = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(private.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=365))
        .add_extension(x509.SubjectAlternativeName([*(x509.DNSName(d) for d in dns),
                                                    *(x509.IPAddress(i) for i in ips)]), critical=False)
        .sign(private, hashes.SHA256()))
    os.makedirs(cert_dir, exist_ok=True)
    with open(cert, "wb") as f:
        f.write(certificate.public_bytes(serialization.Encoding.PEM))
    fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                      serialization.NoEncryption()))
    log.info("Generated self-signed cert (%s, %s)", cert, key)
    return cert, key
