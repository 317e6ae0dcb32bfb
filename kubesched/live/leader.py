"""Leader election on a coordination.k8s.io/v1 Lease, as kube-scheduler does it.

This mirrors client-go v0.30 ``tools/leaderelection`` (leaderelection.go: ``LeaderElector``,
``tryAcquireOrRenew``, ``acquire``, ``renew``, ``release``, ``Check``) with the leases lock
(resourcelock/leaselock.go). The lease's fields are the LeaderElectionRecord's: ``holderIdentity``,
``leaseDurationSeconds``, ``acquireTime``, ``renewTime``, ``leaseTransitions``.

How time is judged (as client-go): a candidate never trusts the timestamps written in the lease
(they come from another machine's clock). It remembers *when, by its own monotonic clock, it last
saw the lease record change* (``observedTime``); the lease is expired for it once
``observedTime + leaseDurationSeconds`` has passed with no change. A lease that nobody renews is
therefore taken over at most ``leaseDuration`` after the candidate last saw it change (a
candidate that starts after the holder died waits one full lease duration first).

The loop (:meth:`LeaderElector.run`, or :meth:`LeaderElector.step` driven by hand in tests):

- acquiring: try every ``retryPeriod`` x jitter (1 to 2.2 x retryPeriod, ``JitterFactor`` 1.2);
  the lease is taken when it is absent (create), released (empty holder) or expired (update,
  ``leaseTransitions`` + 1);
- leading: renew every ``retryPeriod`` (first an optimistic update of the lease as last seen,
  then get + update); when renewals have failed for ``renewDeadline`` leadership is lost:
  ``on_stopped_leading`` is called at once (kube-scheduler exits there);
- shutdown (``stop``): the lease is released (``holderIdentity`` "", ``leaseDurationSeconds``
  1, as ``ReleaseOnCancel``), so a standby takes over within about a retry period.

Two deliberate differences from client-go, both only make a loss visible sooner:

- a renewal that finds the lease held by *another* identity (with a valid lease) ends leadership
  immediately; client-go keeps polling until ``renewDeadline``, which can never succeed then
  (the other holder's lease stays valid for ``leaseDuration`` > ``renewDeadline`` from the moment
  it was seen);
- on a loss, ``on_stopped_leading`` runs *before* the best-effort release (client-go releases
  first), so a slow or unreachable API server cannot delay the stop. On a requested shutdown the
  order is client-go's: release, then ``on_stopped_leading``.

The API is reached through :class:`LeaseClient` (get / create / update of a Lease as a JSON
dict), implemented here over HTTP by :class:`HttpLeaseClient`; any client that raises
:class:`kubesched.errors.ApiError` with ``.status`` 404 / 409 the way an API server answers can
be used instead.
"""

from __future__ import annotations

import datetime as dt
import enum
import logging
import random
import re
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

from kubesched._lazy import lazy_module
from kubesched.config.types import LeaderElection
from kubesched.errors import ApiError, ConfigError

if TYPE_CHECKING:
    import httpx
else:
    httpx = lazy_module("httpx")  # only HttpLeaseClient's callers have an httpx client: imported then

log = logging.getLogger("kubesched.leaderelection")

JITTER_FACTOR = 1.2  # leaderelection.JitterFactor
DEFAULT_HEALTHZ_TIMEOUT = 20.0  # kube-scheduler: leaderelection.NewLeaderHealthzAdaptor(time.Second * 20)
LEASE_API_VERSION = "coordination.k8s.io/v1"
LEASES_PATH = "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"


# ============================================================================ clocks
class Clock(Protocol):
    """Where the elector reads time. ``now`` is written into the lease (acquireTime,
    renewTime); ``monotonic`` judges expiry and deadlines (Go's time.Time carries both)."""

    def now(self) -> dt.datetime: ...

    def monotonic(self) -> float: ...


class SystemClock:
    def now(self) -> dt.datetime:
        return dt.datetime.now(dt.UTC)

    def monotonic(self) -> float:
        return time.monotonic()


class ManualClock:
    """A clock that moves only when told (tests, simulations)."""

    def __init__(self, start: dt.datetime | None = None) -> None:
        self._start = start or dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
        self._t = 0.0

    def now(self) -> dt.datetime:
        return self._start + dt.timedelta(seconds=self._t)

    def monotonic(self) -> float:
        return self._t

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("a clock does not go back")
        self._t += seconds


# ===================================================================== lease record
_MICRO_TIME = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$")


def format_micro_time(t: dt.datetime) -> str:
    """metav1.MicroTime JSON: RFC3339 with microseconds, in UTC (``...T10:00:00.000000Z``)."""
    return t.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_micro_time(value: Any, field: str) -> dt.datetime | None:
    """metav1.MicroTime / Time from JSON; fractions beyond microseconds are truncated."""
    if value is None or value == "":
        return None
    m = _MICRO_TIME.match(value) if isinstance(value, str) else None
    if m is None:
        raise ApiError(f"lease {field}: {value!r} is not an RFC 3339 time")
    frac = (m.group(2) or "")[:6].ljust(6, "0")
    zone = "+00:00" if m.group(3) == "Z" else m.group(3)
    try:
        return dt.datetime.fromisoformat(f"{m.group(1)}.{frac}{zone}")
    except ValueError:
        raise ApiError(f"lease {field}: {value!r} is not an RFC 3339 time") from None


def _int_field(spec: Mapping[str, Any], key: str) -> int:
    value = spec.get(key)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise ApiError(f"lease spec.{key}: {value!r} is not an integer")
    return value


@dataclass(frozen=True, slots=True)
class LeaderElectionRecord:
    """resourcelock.LeaderElectionRecord: what a Lease's spec says about the election."""

    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time: dt.datetime | None = None
    renew_time: dt.datetime | None = None
    leader_transitions: int = 0

    @classmethod
    def from_lease_spec(cls, spec: Mapping[str, Any]) -> LeaderElectionRecord:
        """LeaseSpecToLeaderElectionRecord (absent fields are zero)."""
        holder = spec.get("holderIdentity")
        if holder is not None and not isinstance(holder, str):
            raise ApiError(f"lease spec.holderIdentity: {holder!r} is not a string")
        return cls(
            holder_identity=holder or "",
            lease_duration_seconds=_int_field(spec, "leaseDurationSeconds"),
            acquire_time=parse_micro_time(spec.get("acquireTime"), "spec.acquireTime"),
            renew_time=parse_micro_time(spec.get("renewTime"), "spec.renewTime"),
            leader_transitions=_int_field(spec, "leaseTransitions"),
        )

    def to_lease_spec(self) -> dict[str, Any]:
        """LeaderElectionRecordToLeaseSpec: every field written (holderIdentity "" included)."""
        spec: dict[str, Any] = {
            "holderIdentity": self.holder_identity,
            "leaseDurationSeconds": self.lease_duration_seconds,
        }
        if self.acquire_time is not None:
            spec["acquireTime"] = format_micro_time(self.acquire_time)
        if self.renew_time is not None:
            spec["renewTime"] = format_micro_time(self.renew_time)
        spec["leaseTransitions"] = self.leader_transitions
        return spec

    def change_key(self) -> tuple[Any, ...]:
        """What client-go compares to notice a change (``observedRawRecord``): the record's JSON,
        in which times are metav1.Time, i.e. whole seconds."""

        def sec(t: dt.datetime | None) -> int | None:
            return None if t is None else int(t.timestamp() // 1)

        return (self.holder_identity, self.lease_duration_seconds, sec(self.acquire_time), sec(self.renew_time),
                self.leader_transitions)


# ======================================================================= lease I/O
class LeaseClient(Protocol):
    """The four things leader election needs from an API server, on Lease objects as JSON.

    - ``get``: the Lease, or None when it does not exist (404);
    - ``create``: create it; ApiError status 409 when it already exists;
    - ``update``: replace it; the body carries ``metadata.resourceVersion`` as last read, and the
      server answers 409 (ApiError status 409) when the lease changed since, 404 when it is gone.

    Every other failure (5xx, timeout, connection refused) is an ApiError too (status None for
    transport errors). Each call returns the object as stored (with its new resourceVersion).
    """

    def get(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    def create(self, lease: dict[str, Any]) -> dict[str, Any]: ...

    def update(self, lease: dict[str, Any]) -> dict[str, Any]: ...


class HttpLeaseClient:
    """:class:`LeaseClient` over HTTP: ``/apis/coordination.k8s.io/v1/namespaces/{ns}/leases[/{name}]``
    below ``base_url``, with the given httpx client (which carries TLS and credentials).

    ``timeout`` bounds each request (kube-scheduler gives its leader-election client the renew
    deadline as timeout); None keeps the client's own timeout.
    """

    def __init__(self, base_url: str, client: httpx.Client, *, timeout: float | None = None) -> None:
        self._base = base_url.rstrip("/")
        self._client = client
        self._timeout = timeout

    def _url(self, namespace: str, name: str | None = None) -> str:
        url = self._base + LEASES_PATH.format(namespace=namespace)
        return url if name is None else f"{url}/{name}"

    def _send(self, method: str, url: str, body: dict[str, Any] | None = None) -> httpx.Response:
        try:
            return self._client.request(
                method, url, json=body, headers={"Accept": "application/json"},
                timeout=self._timeout if self._timeout is not None else self._client.timeout,
            )
        except httpx.HTTPError as e:
            raise ApiError(f"{method} {url}: {type(e).__name__}: {e}") from None

    @staticmethod
    def _error(method: str, url: str, resp: httpx.Response) -> ApiError:
        message = resp.text.strip()
        try:
            status = resp.json()
            if isinstance(status, dict) and isinstance(status.get("message"), str):
                message = status["message"]
        except ValueError:
            pass
        return ApiError(f"{method} {url}: HTTP {resp.status_code}: {message}", status=resp.status_code)

    @staticmethod
    def _object(method: str, url: str, resp: httpx.Response) -> dict[str, Any]:
        try:
            value = resp.json()
        except ValueError:
            raise ApiError(f"{method} {url}: the answer is not JSON", status=resp.status_code) from None
        if not isinstance(value, dict):
            raise ApiError(f"{method} {url}: the answer is not an object", status=resp.status_code)
        return value

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        url = self._url(namespace, name)
        resp = self._send("GET", url)
        if resp.status_code == 404:
            return None
        if resp.status_code != 200:
            raise self._error("GET", url, resp)
        return self._object("GET", url, resp)

    def create(self, lease: dict[str, Any]) -> dict[str, Any]:
        meta = lease.get("metadata") or {}
        url = self._url(str(meta.get("namespace", "")))
        resp = self._send("POST", url, lease)
        if resp.status_code not in (200, 201):
            raise self._error("POST", url, resp)
        return self._object("POST", url, resp)

    def update(self, lease: dict[str, Any]) -> dict[str, Any]:
        meta = lease.get("metadata") or {}
        url = self._url(str(meta.get("namespace", "")), str(meta.get("name", "")))
        resp = self._send("PUT", url, lease)
        if resp.status_code != 200:
            raise self._error("PUT", url, resp)
        return self._object("PUT", url, resp)


class LeaseLock:
    """resourcelock.LeaseLock: one Lease, read and written as a LeaderElectionRecord. Updates
    send the lease as last read or written (its resourceVersion), so a concurrent writer makes
    them fail with 409 instead of being overwritten."""

    def __init__(self, client: LeaseClient, namespace: str, name: str, identity: str) -> None:
        self.client = client
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self._lease: dict[str, Any] | None = None

    def describe(self) -> str:
        return f"{self.namespace}/{self.name}"

    def get(self) -> LeaderElectionRecord | None:
        """The current record, or None when the lease does not exist."""
        try:
            lease = self.client.get(self.namespace, self.name)
        except ApiError as e:
            if e.status == 404:
                return None
            raise
        if lease is None:
            return None
        self._lease = lease
        spec = lease.get("spec")
        return LeaderElectionRecord.from_lease_spec(spec if isinstance(spec, Mapping) else {})

    def create(self, record: LeaderElectionRecord) -> None:
        self._lease = self.client.create({
            "apiVersion": LEASE_API_VERSION,
            "kind": "Lease",
            "metadata": {"namespace": self.namespace, "name": self.name},
            "spec": record.to_lease_spec(),
        })

    def update(self, record: LeaderElectionRecord) -> None:
        if self._lease is None:
            raise ApiError("lease not initialized, call get or create first")
        lease = dict(self._lease)
        lease["spec"] = record.to_lease_spec()
        self._lease = self.client.update(lease)


# ========================================================================== elector
class LeaderMetrics(Protocol):
    """client-go's leaderMetricsAdapter (``leader_election_master_status``, slow-path count)."""

    def leader_on(self, name: str) -> None: ...

    def leader_off(self, name: str) -> None: ...

    def slowpath_exercised(self, name: str) -> None: ...


class _Phase(enum.Enum):
    ACQUIRING = "acquiring"
    LEADING = "leading"
    STOPPED = "stopped"


def default_identity() -> str:
    """kube-scheduler's lock identity: ``<hostname>_<uuid>`` (two processes on one host differ)."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


def validate_timing(lease_duration: float, renew_deadline: float, retry_period: float) -> None:
    """NewLeaderElector's checks (same messages)."""
    if lease_duration <= renew_deadline:
        raise ConfigError("leaseDuration must be greater than renewDeadline")
    if renew_deadline <= JITTER_FACTOR * retry_period:
        raise ConfigError("renewDeadline must be greater than retryPeriod*JitterFactor")
    if lease_duration <= 0:
        raise ConfigError("leaseDuration must be greater than zero")
    if renew_deadline <= 0:
        raise ConfigError("renewDeadline must be greater than zero")
    if retry_period <= 0:
        raise ConfigError("retryPeriod must be greater than zero")


class LeaderElector:
    """One candidate. ``on_started_leading(stop)`` runs in its own thread (as client-go's
    ``go OnStartedLeading(ctx)``) once the lease is acquired; ``stop`` (a threading.Event, the
    ctx) is set the moment leadership ends, so a blocking scheduling loop can return.
    ``on_stopped_leading()`` runs on the elector's thread when :meth:`run` ends — also when it
    never led, exactly as client-go's deferred OnStoppedLeading; :attr:`lost` tells a loss
    (renewal failed, another holder) from a requested stop. ``on_new_leader(identity)`` is called
    whenever the observed holder changes (first observation included); ``on_event(message)`` with
    "<identity> became leader" / "<identity> stopped leading" (the lock's RecordEvent, for an Event
    on the Lease). Callbacks other than ``on_started_leading`` must return quickly.
    """

    def __init__(
        self,
        lock: LeaseLock,
        *,
        on_started_leading: Callable[[threading.Event], None],
        on_stopped_leading: Callable[[], None],
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        on_new_leader: Callable[[str], None] | None = None,
        on_event: Callable[[str], None] | None = None,
        release_on_cancel: bool = True,
        name: str | None = None,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        metrics: LeaderMetrics | None = None,
        shutdown_timeout: float | None = None,
    ) -> None:
        validate_timing(lease_duration, renew_deadline, retry_period)
        if not lock.identity:
            raise ConfigError("Lock identity is empty")
        self.lock = lock
        self.identity = lock.identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.release_on_cancel = release_on_cancel
        self.name = name if name is not None else lock.name
        self._on_started = on_started_leading
        self._on_stopped = on_stopped_leading
        self._on_new_leader = on_new_leader
        self._on_event = on_event
        self._clock: Clock = clock or SystemClock()
        self._rng = rng or random.Random()
        self._metrics = metrics
        self._shutdown_timeout = renew_deadline if shutdown_timeout is None else shutdown_timeout

        self._mu = threading.Lock()  # observedRecordLock
        self._observed = LeaderElectionRecord()
        self._observed_time: float | None = None
        self._observed_raw: tuple[Any, ...] | None = None
        self._reported_leader = ""

        self._phase = _Phase.ACQUIRING
        self._failing_since: float | None = None
        self._leading_ctx = threading.Event()
        self._leading_thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.lost = False
        if metrics is not None:
            metrics.leader_off(self.name)

    @classmethod
    def for_config(
        cls,
        client: LeaseClient,
        config: LeaderElection,
        *,
        on_started_leading: Callable[[threading.Event], None],
        on_stopped_leading: Callable[[], None],
        identity: str | None = None,
        on_new_leader: Callable[[str], None] | None = None,
        on_event: Callable[[str], None] | None = None,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        metrics: LeaderMetrics | None = None,
    ) -> LeaderElector:
        """The elector kube-scheduler builds from ``leaderElection`` (ReleaseOnCancel on, lock
        name as metrics name)."""
        if config.resource_lock != "leases":
            raise ConfigError(f'leaderElection.resourceLock: {config.resource_lock!r}: resourceLock value must be "leases"')
        lock = LeaseLock(client, config.resource_namespace, config.resource_name, identity or default_identity())
        return cls(
            lock, on_started_leading=on_started_leading, on_stopped_leading=on_stopped_leading,
            lease_duration=config.lease_duration, renew_deadline=config.renew_deadline,
            retry_period=config.retry_period, on_new_leader=on_new_leader, on_event=on_event,
            release_on_cancel=True, name=config.resource_name, clock=clock, rng=rng, metrics=metrics,
        )

    # ------------------------------------------------------------------ observed state
    def _set_observed(self, record: LeaderElectionRecord) -> None:
        with self._mu:
            self._observed = record
            self._observed_time = self._clock.monotonic()

    @property
    def observed_record(self) -> LeaderElectionRecord:
        with self._mu:
            return self._observed

    def get_leader(self) -> str:
        """The last observed holder ("" when none seen yet)."""
        return self.observed_record.holder_identity

    def is_leader(self) -> bool:
        """IsLeader: the last observed record names this candidate."""
        return self.observed_record.holder_identity == self.identity

    @property
    def leading(self) -> bool:
        """True between on_started_leading and the end of leadership: what the scheduling loop
        should check before acting."""
        return self._phase is _Phase.LEADING

    @property
    def stopped(self) -> bool:
        return self._phase is _Phase.STOPPED

    @property
    def leading_thread(self) -> threading.Thread | None:
        """The thread running on_started_leading (None before the first acquisition)."""
        return self._leading_thread

    def _lease_valid(self, now: float) -> bool:
        with self._mu:
            if self._observed_time is None:
                return False
            return self._observed_time + self._observed.lease_duration_seconds > now

    # -------------------------------------------------------------- tryAcquireOrRenew
    def try_acquire_or_renew(self) -> bool:
        """One attempt to acquire or renew the lease; True when this candidate holds it now."""
        now = self._clock.now()
        mono = self._clock.monotonic()
        desired = LeaderElectionRecord(
            holder_identity=self.identity, lease_duration_seconds=int(self.lease_duration),
            acquire_time=now, renew_time=now,
        )
        # 1. Fast path: the leader updates the lease as it last saw it, without a get.
        if self.is_leader() and self._lease_valid(mono):
            old = self.observed_record
            record = replace(desired, acquire_time=old.acquire_time, leader_transitions=old.leader_transitions)
            try:
                self.lock.update(record)
            except ApiError as e:
                log.error("Failed to update lock optimistically: %s, falling back to slow path", e)
            else:
                self._set_observed(record)
                return True
        # 2. Get the lease, or create it.
        try:
            current = self.lock.get()
        except ApiError as e:
            log.error("error retrieving resource lock %s: %s", self.lock.describe(), e)
            return False
        if current is None:
            try:
                self.lock.create(desired)
            except ApiError as e:
                log.error("error initially creating leader election record: %s", e)
                return False
            self._set_observed(desired)
            return True
        # 3. Note a change of the record (by our own clock), then respect a valid lease of another.
        key = current.change_key()
        if key != self._observed_raw:
            self._set_observed(current)
            self._observed_raw = key
        if current.holder_identity and self._lease_valid(mono) and not self.is_leader():
            log.debug("lock is held by %s and has not yet expired", current.holder_identity)
            return False
        # 4. Take or keep it.
        if self.is_leader():
            record = replace(desired, acquire_time=current.acquire_time, leader_transitions=current.leader_transitions)
            if self._metrics is not None:
                self._metrics.slowpath_exercised(self.name)
        else:
            record = replace(desired, leader_transitions=current.leader_transitions + 1)
        try:
            self.lock.update(record)
        except ApiError as e:
            log.error("Failed to update lock: %s", e)
            return False
        self._set_observed(record)
        return True

    def release(self) -> bool:
        """Give the lease up if held: holder "", leaseDurationSeconds 1, transitions kept."""
        if not self.is_leader():
            return True
        now = self._clock.now()
        record = LeaderElectionRecord(
            holder_identity="", lease_duration_seconds=1, acquire_time=now, renew_time=now,
            leader_transitions=self.observed_record.leader_transitions,
        )
        try:
            self.lock.update(record)
        except ApiError as e:
            log.error("Failed to release lock: %s", e)
            return False
        self._set_observed(record)
        return True

    def check(self, max_tolerable_expired_lease: float = DEFAULT_HEALTHZ_TIMEOUT) -> str | None:
        """The healthz watchdog (HealthzAdaptor / Check): an error message when this candidate
        believes it leads but has not renewed for leaseDuration + the tolerance (a wedged
        loop); None otherwise (standbys are always healthy)."""
        if not self.is_leader():
            return None
        with self._mu:
            seen = self._observed_time
        if seen is not None and self._clock.monotonic() - seen > self.lease_duration + max_tolerable_expired_lease:
            return f"failed election to renew leadership on lease {self.name}"
        return None

    def _maybe_report_transition(self) -> None:
        holder = self.observed_record.holder_identity
        if holder == self._reported_leader:
            return
        self._reported_leader = holder
        if self._on_new_leader is not None:
            self._on_new_leader(holder)

    def _record_event(self, what: str) -> None:
        if self._on_event is not None:
            self._on_event(f"{self.identity} {what}")

    # --------------------------------------------------------------------- the loop
    def _jittered_retry(self) -> float:
        """wait.Jitter(RetryPeriod, JitterFactor)."""
        return self.retry_period * (1.0 + self._rng.random() * JITTER_FACTOR)

    def step(self) -> float:
        """Run one iteration of the acquire / renew loop; return the seconds to wait before the
        next one (``inf`` once stopped)."""
        if self._phase is _Phase.ACQUIRING:
            ok = self.try_acquire_or_renew()
            self._maybe_report_transition()
            if not ok:
                log.debug("failed to acquire lease %s", self.lock.describe())
                return self._jittered_retry()
            self._start_leading()
            return self.retry_period
        if self._phase is _Phase.LEADING:
            start = self._clock.monotonic()
            if self._failing_since is not None and start - self._failing_since >= self.renew_deadline:
                self._lose(f"failed to renew lease {self.lock.describe()}: timed out waiting for the condition")
                return float("inf")
            ok = self.try_acquire_or_renew()
            self._maybe_report_transition()
            if ok:
                self._failing_since = None
                return self.retry_period
            if self._failing_since is None:
                self._failing_since = start
            holder = self.observed_record.holder_identity
            if holder and holder != self.identity and self._lease_valid(self._clock.monotonic()):
                self._lose(f"lease {self.lock.describe()} is now held by {holder}")
                return float("inf")
            elapsed = self._clock.monotonic() - self._failing_since
            if elapsed >= self.renew_deadline:
                self._lose(f"failed to renew lease {self.lock.describe()}: timed out waiting for the condition")
                return float("inf")
            return min(self.retry_period, self.renew_deadline - elapsed)
        return float("inf")

    def _start_leading(self) -> None:
        log.info("successfully acquired lease %s", self.lock.describe())
        self._phase = _Phase.LEADING
        self._failing_since = None
        self._leading_ctx = threading.Event()
        self._record_event("became leader")
        if self._metrics is not None:
            self._metrics.leader_on(self.name)
        ctx = self._leading_ctx
        self._leading_thread = threading.Thread(target=self._on_started, args=(ctx,), name="kubesched-leading",
                                                daemon=True)
        self._leading_thread.start()

    def _end_leading(self) -> None:
        self._phase = _Phase.STOPPED
        self._leading_ctx.set()
        if self._metrics is not None:
            self._metrics.leader_off(self.name)
        self._record_event("stopped leading")

    def _lose(self, why: str) -> None:
        log.info("%s; leaderelection lost", why)
        self.lost = True
        self._end_leading()
        self._on_stopped()
        if self.release_on_cancel:
            self.release()

    def shutdown(self) -> None:
        """End the election now (the ctx of client-go's Run is cancelled): stop leading, wait
        up to ``shutdown_timeout`` for the on_started_leading thread, release the lease, then
        call on_stopped_leading. A no-op once stopped. While :meth:`run` is running in another
        thread, call :meth:`stop` instead (run ends with this, on its own thread)."""
        if self._phase is _Phase.STOPPED:
            return
        if self._phase is _Phase.LEADING:
            self._end_leading()
            thread = self._leading_thread
            if thread is not None and thread is not threading.current_thread():
                thread.join(self._shutdown_timeout)
            if self.release_on_cancel:
                self.release()
        self._phase = _Phase.STOPPED
        self._on_stopped()

    def run(self, stop: threading.Event | None = None) -> None:
        """Block in the election until ``stop`` (or :meth:`stop`) is set — then release and
        return — or until leadership is lost."""
        event = stop if stop is not None else self._stop
        log.info("attempting to acquire leader lease %s...", self.lock.describe())
        try:
            while not event.is_set() and not self.stopped:
                delay = self.step()
                if self.stopped:
                    break
                event.wait(delay)
        finally:
            self.shutdown()

    def start(self) -> threading.Thread:
        """Run the election in a daemon thread."""
        if self._thread is not None:
            raise RuntimeError("leader elector already started")
        self._thread = threading.Thread(target=self.run, name="kubesched-leader-election", daemon=True)
        self._thread.start()
        return self._thread

    def stop(self, timeout: float | None = None) -> None:
        """Request shutdown and wait (up to ``timeout``) for the election thread."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)
