"""Leader election on a Lease: client-go's semantics, driven step by step on a manual clock
against an in-memory API (tests/live/leases.py), plus the HTTP client and a real-time run."""

from __future__ import annotations

import datetime as dt
import json
import random
import threading
import time
from typing import Any

import httpx
import pytest

from kubesched.config.types import LeaderElection
from kubesched.errors import ApiError, ConfigError
from kubesched.live.leader import (
    JITTER_FACTOR,
    HttpLeaseClient,
    LeaderElectionRecord,
    LeaderElector,
    LeaseLock,
    ManualClock,
    format_micro_time,
    parse_micro_time,
)
from kubesched.live.serving import SchedulerMetrics

from .leases import MemoryLeases

NS, NAME = "kube-system", "kubesched"


class Candidate:
    """A LeaderElector with recording callbacks."""

    def __init__(self, api: Any, clock: ManualClock, identity: str, *, seed: int = 0, **kwargs: Any) -> None:
        self.clock = clock
        self.started: list[threading.Event] = []
        self.stopped: list[float] = []
        self.leaders: list[str] = []
        self.events: list[str] = []
        self.lease_at_stop: list[dict[str, Any] | None] = []
        self.api = api

        def on_stopped() -> None:
            self.stopped.append(clock.monotonic())
            found = api.objects.get((NS, NAME)) if isinstance(api, MemoryLeases) else None
            self.lease_at_stop.append(dict(found["spec"]) if found else None)

        self.elector = LeaderElector(
            LeaseLock(api, NS, NAME, identity), on_started_leading=self.started.append, on_stopped_leading=on_stopped,
            on_new_leader=self.leaders.append, on_event=self.events.append, clock=clock, rng=random.Random(seed),
            **kwargs,
        )

    def wait_started(self) -> threading.Event:
        thread = self.elector.leading_thread
        assert thread is not None, "never started leading"
        thread.join(5)
        assert self.started, "on_started_leading did not run"
        return self.started[-1]


class Sim:
    """Runs candidates' loops on the manual clock: each steps when its returned delay is due."""

    def __init__(self, clock: ManualClock, *candidates: Candidate) -> None:
        self.clock = clock
        self.due = {c: clock.monotonic() for c in candidates}
        self.log: list[tuple[float, Candidate, bool]] = []

    def add(self, c: Candidate) -> None:
        self.due[c] = self.clock.monotonic()

    def crash(self, c: Candidate) -> None:
        """The process stops dead: no more steps, no release."""
        del self.due[c]

    def run_until(self, t_end: float) -> None:
        while self.due:
            c = min(self.due, key=lambda k: self.due[k])
            t = self.due[c]
            if t > t_end:
                break
            self.clock.advance(t - self.clock.monotonic())
            delay = c.elector.step()
            self.log.append((t, c, c.elector.leading))
            if c.elector.stopped:
                del self.due[c]
            else:
                self.due[c] = t + delay
        self.clock.advance(max(0.0, t_end - self.clock.monotonic()))

    def first_leading(self, c: Candidate) -> float | None:
        return next((t for t, who, leading in self.log if who is c and leading), None)


@pytest.fixture
def api() -> MemoryLeases:
    return MemoryLeases()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(dt.datetime(2024, 5, 1, 12, 0, 0, tzinfo=dt.UTC))


# ------------------------------------------------------------------------- acquire
def test_acquires_an_absent_lease_by_creating_it(api: MemoryLeases, clock: ManualClock) -> None:
    a = Candidate(api, clock, "a")
    assert a.elector.step() == 2.0
    assert a.elector.leading and a.elector.is_leader()
    assert api.spec() == {
        "holderIdentity": "a", "leaseDurationSeconds": 15, "acquireTime": "2024-05-01T12:00:00.000000Z",
        "renewTime": "2024-05-01T12:00:00.000000Z", "leaseTransitions": 0,
    }
    assert api.calls == [("get", NAME), ("create", NAME)]
    ctx = a.wait_started()
    assert not ctx.is_set()
    assert a.leaders == ["a"]
    assert a.events == ["a became leader"]


def test_renews_every_retry_period_with_one_optimistic_update(api: MemoryLeases, clock: ManualClock) -> None:
    a = Candidate(api, clock, "a")
    a.elector.step()
    api.calls.clear()
    for _ in range(5):
        clock.advance(2.0)
        assert a.elector.step() == 2.0
        assert api.spec()["renewTime"] == format_micro_time(clock.now())
    assert api.spec()["acquireTime"] == "2024-05-01T12:00:00.000000Z"
    assert api.spec()["leaseTransitions"] == 0
    assert api.calls == [("update", NAME)] * 5, "the fast path renews without a get"
    assert a.elector.leading and not a.stopped


def test_renewal_falls_back_to_get_and_update_when_the_optimistic_update_conflicts(api: MemoryLeases,
                                                                                  clock: ManualClock) -> None:
    metrics = SchedulerMetrics()
    a = Candidate(api, clock, "a", metrics=metrics)
    a.elector.step()
    spec = dict(api.spec())
    api.force(spec)  # same content, new resourceVersion: the lease as last seen is stale
    api.calls.clear()
    clock.advance(2.0)
    a.elector.step()
    assert api.calls == [("update", NAME), ("get", NAME), ("update", NAME)]
    assert api.spec()["holderIdentity"] == "a" and api.spec()["acquireTime"] == spec["acquireTime"]
    assert b"leader_election_slowpath_total{name=\"kubesched\"} 1.0" in metrics.render()


def test_another_candidate_cannot_acquire_while_the_lease_is_renewed(api: MemoryLeases, clock: ManualClock) -> None:
    a, b = Candidate(api, clock, "a"), Candidate(api, clock, "b", seed=1)
    sim = Sim(clock, a)
    sim.run_until(0.5)
    sim.add(b)
    sim.run_until(120.0)
    assert a.elector.leading
    assert not b.elector.leading and not b.started
    assert b.elector.get_leader() == "a" and b.leaders == ["a"]
    assert api.spec()["holderIdentity"] == "a" and api.spec()["leaseTransitions"] == 0
    assert a.stopped == [] and b.stopped == []


def test_acquire_retries_are_jittered_between_one_and_2_2_retry_periods(api: MemoryLeases,
                                                                       clock: ManualClock) -> None:
    Candidate(api, clock, "a").elector.step()
    b = Candidate(api, clock, "b", seed=7)
    delays = [b.elector.step() for _ in range(200)]
    assert all(2.0 <= d <= 2.0 * (1 + JITTER_FACTOR) for d in delays)
    assert max(delays) - min(delays) > 1.0


def test_failover_after_the_leader_stops_renewing_within_the_lease_duration(api: MemoryLeases,
                                                                           clock: ManualClock) -> None:
    a, b = Candidate(api, clock, "a"), Candidate(api, clock, "b", seed=3)
    sim = Sim(clock, a)
    sim.run_until(0.5)
    sim.add(b)
    sim.run_until(20.0)
    sim.crash(a)  # last renewal at t=20
    sim.run_until(60.0)
    took = sim.first_leading(b)
    assert took is not None
    # b counts the lease from when *it* saw the last renewal (its first poll after t=20, at most
    # one jittered retry later), then waits the full 15 s lease duration, then one more poll at most.
    assert 20.0 + 15.0 < took <= 20.0 + 4.4 + 15.0 + 4.4
    assert api.spec()["holderIdentity"] == "b"
    assert api.spec()["leaseTransitions"] == 1
    assert api.spec()["acquireTime"] == format_micro_time(dt.datetime(2024, 5, 1, 12, tzinfo=dt.UTC)
                                                          + dt.timedelta(seconds=took))
    assert b.leaders == ["a", "b"]


def test_a_stale_lease_seen_for_the_first_time_is_honoured_for_a_full_lease_duration(api: MemoryLeases,
                                                                                     clock: ManualClock) -> None:
    # renewTime says an hour ago, but a candidate never trusts another machine's clock.
    long_ago = format_micro_time(clock.now() - dt.timedelta(hours=1))
    api.force({"holderIdentity": "dead", "leaseDurationSeconds": 15, "acquireTime": long_ago, "renewTime": long_ago,
               "leaseTransitions": 4})
    b = Candidate(api, clock, "b")
    assert not b.elector.try_acquire_or_renew()
    clock.advance(14.9)
    assert not b.elector.try_acquire_or_renew()
    clock.advance(0.2)
    assert b.elector.try_acquire_or_renew()
    assert api.spec()["holderIdentity"] == "b" and api.spec()["leaseTransitions"] == 5


def test_a_released_lease_is_taken_at_once(api: MemoryLeases, clock: ManualClock) -> None:
    now = format_micro_time(clock.now())
    api.force({"holderIdentity": "", "leaseDurationSeconds": 1, "acquireTime": now, "renewTime": now,
               "leaseTransitions": 2})
    b = Candidate(api, clock, "b")
    b.elector.step()
    assert b.elector.leading
    assert api.spec()["holderIdentity"] == "b" and api.spec()["leaseTransitions"] == 3


# ------------------------------------------------------------------------ losing
def test_losing_renewal_for_the_renew_deadline_stops_leading_at_that_moment(api: MemoryLeases,
                                                                           clock: ManualClock) -> None:
    a = Candidate(api, clock, "a")
    a.elector.step()
    ctx = a.wait_started()
    clock.advance(2.0)
    a.elector.step()
    api.down = True
    clock.advance(2.0)  # t=4: first failed renewal; the renew deadline runs from here
    delays = [a.elector.step()]
    while a.elector.leading:
        assert clock.monotonic() < 4.0 + 10.0
        clock.advance(delays[-1])
        delays.append(a.elector.step())
    assert clock.monotonic() == pytest.approx(14.0), "stopped exactly renewDeadline after the first failure"
    assert a.stopped == [pytest.approx(14.0)]
    assert ctx.is_set() and a.elector.lost and a.elector.stopped
    assert a.events == ["a became leader", "a stopped leading"]
    assert all(d <= 2.0 for d in delays[:-1])


def test_a_lease_taken_by_another_holder_stops_leading_immediately(api: MemoryLeases, clock: ManualClock) -> None:
    a = Candidate(api, clock, "a")
    a.elector.step()
    ctx = a.wait_started()
    now = format_micro_time(clock.now())
    api.force({"holderIdentity": "intruder", "leaseDurationSeconds": 15, "acquireTime": now, "renewTime": now,
               "leaseTransitions": 1})
    clock.advance(2.0)
    assert a.elector.step() == float("inf")
    assert a.stopped == [2.0] and ctx.is_set() and a.elector.lost
    assert api.spec()["holderIdentity"] == "intruder", "a does not release a lease it no longer holds"


def test_a_renewal_that_succeeds_before_the_deadline_keeps_leading(api: MemoryLeases, clock: ManualClock) -> None:
    a = Candidate(api, clock, "a")
    a.elector.step()
    api.down = True
    for _ in range(4):  # 8 s of failures, < renewDeadline
        clock.advance(2.0)
        a.elector.step()
    api.down = False
    clock.advance(1.5)
    a.elector.step()
    assert a.elector.leading and a.stopped == []
    api.down = True
    for _ in range(4):  # the deadline restarts after a success
        clock.advance(2.0)
        a.elector.step()
    assert a.elector.leading


# ----------------------------------------------------------------------- release
def test_shutdown_releases_the_lease_then_calls_on_stopped_leading(api: MemoryLeases, clock: ManualClock) -> None:
    a = Candidate(api, clock, "a")
    a.elector.step()
    ctx = a.wait_started()
    clock.advance(2.0)
    a.elector.step()
    a.elector.shutdown()
    released = {"holderIdentity": "", "leaseDurationSeconds": 1, "acquireTime": format_micro_time(clock.now()),
                "renewTime": format_micro_time(clock.now()), "leaseTransitions": 0}
    assert api.spec() == released
    assert a.lease_at_stop == [released], "released before on_stopped_leading"
    assert ctx.is_set() and not a.elector.lost and not a.elector.leading
    a.elector.shutdown()
    assert len(a.stopped) == 1
    b = Candidate(api, clock, "b")
    b.elector.step()
    assert b.elector.leading and api.spec()["leaseTransitions"] == 1


def test_shutdown_before_acquiring_calls_on_stopped_leading_and_writes_nothing(api: MemoryLeases,
                                                                              clock: ManualClock) -> None:
    Candidate(api, clock, "a").elector.step()
    b = Candidate(api, clock, "b")
    b.elector.step()
    before = dict(api.spec())
    b.elector.shutdown()
    assert b.stopped == [0.0] and not b.elector.lost
    assert api.spec() == before


def test_without_release_on_cancel_the_lease_stays_held(api: MemoryLeases, clock: ManualClock) -> None:
    a = Candidate(api, clock, "a", release_on_cancel=False)
    a.elector.step()
    a.elector.shutdown()
    assert api.spec()["holderIdentity"] == "a"


# ---------------------------------------------------------------------- conflicts
def test_two_candidates_creating_the_lease_at_once_one_wins(api: MemoryLeases, clock: ManualClock,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = Candidate(api, clock, "a"), Candidate(api, clock, "b")
    with monkeypatch.context() as m:
        m.setattr(api, "get", lambda ns, name: None)  # both saw "absent"
        assert a.elector.try_acquire_or_renew()
        assert not b.elector.try_acquire_or_renew(), "b's create answers 409"
    assert api.spec()["holderIdentity"] == "a"
    assert not b.elector.is_leader()


def test_two_candidates_taking_an_expired_lease_at_once_one_wins(api: MemoryLeases, clock: ManualClock) -> None:
    now = format_micro_time(clock.now())
    api.force({"holderIdentity": "", "leaseDurationSeconds": 1, "acquireTime": now, "renewTime": now,
               "leaseTransitions": 0})
    a, b = Candidate(api, clock, "a"), Candidate(api, clock, "b")
    # b reads the released lease; a takes it before b's update lands: b's update carries a stale
    # resourceVersion and is refused with 409.
    api.before_update = lambda: None if a.elector.try_acquire_or_renew() else pytest.fail("a could not acquire")
    assert not b.elector.try_acquire_or_renew()
    assert a.elector.is_leader() and not b.elector.is_leader()
    assert api.spec()["holderIdentity"] == "a" and api.spec()["leaseTransitions"] == 1
    assert not b.elector.try_acquire_or_renew(), "and then respects a's fresh lease"


def test_a_conflicting_update_is_retried_from_a_fresh_read(api: MemoryLeases, clock: ManualClock) -> None:
    now = format_micro_time(clock.now())
    api.force({"holderIdentity": "", "leaseDurationSeconds": 1, "acquireTime": now, "renewTime": now,
               "leaseTransitions": 0})
    b = Candidate(api, clock, "b")
    api.before_update = lambda: api.force(dict(api.spec()))  # someone touches it mid-flight
    assert not b.elector.try_acquire_or_renew()
    assert b.elector.try_acquire_or_renew(), "the next attempt reads the new resourceVersion"
    assert api.spec()["holderIdentity"] == "b"


def test_an_unreadable_lease_is_an_error_not_a_crash(api: MemoryLeases, clock: ManualClock) -> None:
    api.force({"holderIdentity": "a", "leaseDurationSeconds": 15, "renewTime": "yesterday"})
    b = Candidate(api, clock, "b")
    assert not b.elector.try_acquire_or_renew()
    assert b.elector.step() >= 2.0 and not b.elector.leading


# ----------------------------------------------------------------- configuration
@pytest.mark.parametrize(
    ("lease", "renew", "retry", "message"),
    [
        (10.0, 10.0, 2.0, "leaseDuration must be greater than renewDeadline"),
        (15.0, 2.4, 2.0, "renewDeadline must be greater than retryPeriod*JitterFactor"),
        (15.0, 10.0, 0.0, "retryPeriod must be greater than zero"),
    ],
    ids=["lease equal to the renew deadline is rejected", "renew deadline within the jittered retry is rejected",
         "a zero retry period is rejected"],
)
def test_timing_is_validated_like_new_leader_elector(api: MemoryLeases, lease: float, renew: float, retry: float,
                                                    message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("*", r"\*")):
        Candidate(api, ManualClock(), "a", lease_duration=lease, renew_deadline=renew, retry_period=retry)


def test_for_config_takes_the_lock_and_timing_from_leader_election(api: MemoryLeases, clock: ManualClock) -> None:
    cfg = LeaderElection(lease_duration=30.0, renew_deadline=20.0, retry_period=5.0, resource_name="kubesched",
                         resource_namespace="kube-system")
    el = LeaderElector.for_config(api, cfg, identity="x", on_started_leading=lambda ctx: None,
                                  on_stopped_leading=lambda: None, clock=clock)
    assert el.step() == 5.0
    assert api.spec()["leaseDurationSeconds"] == 30
    assert el.name == "kubesched" and el.release_on_cancel
    with pytest.raises(ConfigError, match="resourceLock"):
        LeaderElector.for_config(api, LeaderElection(resource_lock="endpoints"), on_started_leading=lambda ctx: None,
                                 on_stopped_leading=lambda: None)


def test_default_identity_is_hostname_and_a_uuid(api: MemoryLeases) -> None:
    el = LeaderElector.for_config(api, LeaderElection(), on_started_leading=lambda ctx: None,
                                  on_stopped_leading=lambda: None)
    host, _, uid = el.identity.rpartition("_")
    assert host and len(uid) == 36


def test_watchdog_fails_only_for_a_leader_that_stopped_renewing(api: MemoryLeases, clock: ManualClock) -> None:
    a, b = Candidate(api, clock, "a"), Candidate(api, clock, "b")
    a.elector.step()
    b.elector.step()
    clock.advance(15.0 + 20.0 + 0.1)
    assert a.elector.check(20.0) == "failed election to renew leadership on lease kubesched"
    assert b.elector.check(20.0) is None
    a.elector.step()
    assert a.elector.check(20.0) is None


def test_leader_metrics_follow_leadership(api: MemoryLeases, clock: ManualClock) -> None:
    metrics = SchedulerMetrics()
    a = Candidate(api, clock, "a", metrics=metrics)
    assert b'leader_election_master_status{name="kubesched"} 0.0' in metrics.render()
    a.elector.step()
    assert b'leader_election_master_status{name="kubesched"} 1.0' in metrics.render()
    a.elector.shutdown()
    assert b'leader_election_master_status{name="kubesched"} 0.0' in metrics.render()


# ------------------------------------------------------------------ lease record
def test_micro_time_round_trips_and_truncates_nanoseconds() -> None:
    t = parse_micro_time("2024-05-01T12:00:00.123456789Z", "renewTime")
    assert t == dt.datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=dt.UTC)
    assert format_micro_time(t) == "2024-05-01T12:00:00.123456Z"
    assert parse_micro_time("2024-05-01T14:00:00+02:00", "x") == dt.datetime(2024, 5, 1, 12, tzinfo=dt.UTC)
    assert parse_micro_time(None, "x") is None
    with pytest.raises(ApiError, match="not an RFC 3339 time"):
        parse_micro_time("yesterday", "renewTime")


def test_record_reads_a_lease_spec_with_missing_fields_as_zero() -> None:
    assert LeaderElectionRecord.from_lease_spec({}) == LeaderElectionRecord()
    rec = LeaderElectionRecord.from_lease_spec({"holderIdentity": "a", "leaseDurationSeconds": 15,
                                                "leaseTransitions": 2})
    assert rec.to_lease_spec() == {"holderIdentity": "a", "leaseDurationSeconds": 15, "leaseTransitions": 2}


# ------------------------------------------------------------------ HTTP client
class FakeLeaseServer:
    """The Lease REST endpoints in an httpx.MockTransport, with resourceVersion checks."""

    def __init__(self) -> None:
        self.store = MemoryLeases()
        self.requests: list[tuple[str, str]] = []

    def handler(self, request: httpx.Request) -> httpx.Response:
        self.requests.append((request.method, request.url.path))
        parts = request.url.path.split("/")
        assert parts[:6] == ["", "apis", "coordination.k8s.io", "v1", "namespaces", NS] and parts[6] == "leases"
        try:
            if request.method == "GET":
                found = self.store.get(NS, parts[7])
                if found is None:
                    return httpx.Response(404, json={"kind": "Status", "reason": "NotFound",
                                                     "message": f'leases.coordination.k8s.io "{parts[7]}" not found'})
                return httpx.Response(200, json=found)
            body = json.loads(request.content)
            if request.method == "POST":
                assert len(parts) == 7
                return httpx.Response(201, json=self.store.create(body))
            if request.method == "PUT":
                assert parts[7] == body["metadata"]["name"]
                return httpx.Response(200, json=self.store.update(body))
        except ApiError as e:
            return httpx.Response(e.status or 500, json={"kind": "Status", "message": str(e)})
        return httpx.Response(405)


def test_http_lease_client_speaks_the_lease_rest_api(clock: ManualClock) -> None:
    server = FakeLeaseServer()
    with httpx.Client(transport=httpx.MockTransport(server.handler)) as http:
        leases = HttpLeaseClient("https://api.example:6443/", http)
        a = Candidate(leases, clock, "a")
        b = Candidate(leases, clock, "b")
        assert a.elector.try_acquire_or_renew()
        assert not b.elector.try_acquire_or_renew()
        clock.advance(2.0)
        assert a.elector.try_acquire_or_renew()
        assert leases.get(NS, "absent") is None
        with pytest.raises(ApiError) as conflict:
            leases.create({"metadata": {"namespace": NS, "name": NAME}, "spec": {}})
        assert conflict.value.status == 409 and "already exists" in str(conflict.value)
        stale = leases.get(NS, NAME)
        assert stale is not None
        a.elector.try_acquire_or_renew()
        with pytest.raises(ApiError) as modified:
            leases.update(stale)
        assert modified.value.status == 409
    path = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"
    assert server.requests[:4] == [("GET", f"{path}/kubesched"), ("POST", path), ("GET", f"{path}/kubesched"),
                                   ("PUT", f"{path}/kubesched")]
    assert server.store.spec()["holderIdentity"] == "a"


def test_http_lease_client_turns_transport_failures_into_api_errors() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    with httpx.Client(transport=httpx.MockTransport(refuse)) as http:
        leases = HttpLeaseClient("http://127.0.0.1:1", http, timeout=1.0)
        with pytest.raises(ApiError, match="connection refused") as err:
            leases.get(NS, NAME)
        assert err.value.status is None

    def broken(request: httpx.Request) -> httpx.Response:
        return httpx.Response(503, text="etcd unavailable")

    with httpx.Client(transport=httpx.MockTransport(broken)) as http:
        with pytest.raises(ApiError, match="HTTP 503: etcd unavailable") as err:
            HttpLeaseClient("http://x", http).get(NS, NAME)
        assert err.value.status == 503


# ----------------------------------------------------------------- real threads
def test_run_in_a_thread_leads_then_releases_on_stop(api: MemoryLeases) -> None:
    started = threading.Event()
    stopped = threading.Event()
    seen_ctx: list[threading.Event] = []

    def lead(ctx: threading.Event) -> None:  # a blocking "scheduling loop"
        seen_ctx.append(ctx)
        started.set()
        ctx.wait(10)

    el = LeaderElector(LeaseLock(api, NS, NAME, "real"), on_started_leading=lead, on_stopped_leading=stopped.set,
                       lease_duration=2.0, renew_deadline=1.0, retry_period=0.2)
    el.start()
    try:
        assert started.wait(5)
        deadline = time.monotonic() + 5
        while api.rv < 3 and time.monotonic() < deadline:  # create + at least two renewals
            time.sleep(0.05)
        assert api.rv >= 3
    finally:
        el.stop(timeout=5)
    assert stopped.is_set() and seen_ctx[0].is_set()
    assert api.spec()["holderIdentity"] == "" and api.spec()["leaseDurationSeconds"] == 1
    assert not el.lost
