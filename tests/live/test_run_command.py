"""``kubesched run`` end to end against the local API server: configuration, API client,
serving, leader election on a Lease and the scheduling loop wired together by
kubesched.live.command.run (and the click command on top of it).

Each replica runs in-process on its own thread with its own API client; the clients carry
distinct User-Agents, which the local API server records on every request, so the tests can
tell which replica bound which pod and can cut one replica off the Lease (fault injection
scoped to its User-Agent). Leader election runs on short durations (seconds), so failovers
take a few seconds of real time."""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from kubesched.cli import main
from kubesched.cluster.live import ApiClient, ApiLeaseClient, ClusterConfig, lease_request_timeout
from kubesched.live.command import RunOptions, run
from kubesched.live.flags import LeaderElectionFlags, ServingOptions
from kubesched.live.runner import RunResult
from kubesched.plugins.registry import REGISTRY
from kubesched.testing.apiserver import LocalApiServer

from .apihelpers import events, node, placements, pod, successful_binds, wait_until

NS = "kube-system"
LOCK = "kubesched"
PROFILE = "kubesched"
NO_SERVING = ServingOptions(secure_port=0)
NO_ELECTION = LeaderElectionFlags(leader_elect=False)
FROM_CONFIG = LeaderElectionFlags()  # no --leader-elect* flag: the configuration file's leaderElection
# lease 4 s / renew 2 s / retry 0.4 s: a leader whose renewals fail gives up at most retry +
# renew = 2.4 s after its last renewal; a standby takes the lease leaseDuration after it last saw
# the lease change, and (as client-go, which compares the record's JSON, whose times are whole
# seconds) it may see a renewal up to a second late: 4 - 1 > 2.4 keeps the two apart.
LEASE, RENEW, RETRY = 4.0, 2.0, 0.4
MAX_RETRY = RETRY * 2.2  # a candidate's jittered wait between attempts (JitterFactor 1.2)


def config_file(directory: Path, *, lease: float = LEASE, renew: float = RENEW, retry: float = RETRY) -> str:
    """A KubeSchedulerConfiguration as deploy/configmap.yaml has it, with short durations."""
    path = directory / "kubesched.yaml"
    path.write_text(f"""apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: true
  resourceLock: leases
  resourceNamespace: {NS}
  resourceName: {LOCK}
  leaseDuration: {int(lease * 1000)}ms
  renewDeadline: {int(renew * 1000)}ms
  retryPeriod: {int(retry * 1000)}ms
profiles:
- schedulerName: {PROFILE}
""")
    return str(path)


@pytest.fixture
def api() -> Iterator[LocalApiServer]:
    with LocalApiServer(bookmark_interval=0.2) as server:
        for name in ("n1", "n2", "n3"):
            server.create(node(name))
        yield server


@pytest.fixture(autouse=True)
def no_ambient_cluster(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """--master alone must be enough: no kubeconfig or in-cluster configuration is picked up."""
    for var in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))


class Replica:
    """One ``kubesched run`` on a thread: its own API client (User-Agent ``agent``) and stop
    event (standing in for SIGTERM)."""

    def __init__(self, api: LocalApiServer, agent: str, options: RunOptions, *,
                 election: LeaderElectionFlags = FROM_CONFIG,
                 serving: ServingOptions = NO_SERVING, own_client: bool = True) -> None:
        self.agent = agent
        self.stop = threading.Event()
        self.result: RunResult | None = None
        self.error: BaseException | None = None
        self.returned_at: float | None = None
        client = ApiClient(ClusterConfig(server=api.url), qps=0, timeout=10.0, user_agent=agent) if own_client \
            else None

        def target() -> None:
            try:
                self.result = run(options, serving, election, REGISTRY, stop=self.stop, api=client)
            except BaseException as e:  # noqa: BLE001 - reported by finish()
                self.error = e
            finally:
                self.returned_at = time.monotonic()

        self.thread = threading.Thread(target=target, name=f"kubesched-run-{agent}", daemon=True)
        self.thread.start()

    def finish(self, timeout: float = 15.0) -> RunResult:
        """Wait for run() to return (without asking it to) and give its result."""
        self.thread.join(timeout)
        assert not self.thread.is_alive(), f"{self.agent}: run() did not return within {timeout} s"
        if self.error is not None:
            raise self.error
        assert self.result is not None
        return self.result

    def halt(self, timeout: float = 15.0) -> RunResult:
        self.stop.set()
        return self.finish(timeout)


def lease_spec(api: LocalApiServer) -> dict[str, Any]:
    try:
        spec = api.get("leases", LOCK, NS).get("spec") or {}
    except Exception:  # noqa: BLE001 - not created yet
        return {}
    assert isinstance(spec, dict)
    return spec


def holder(api: LocalApiServer) -> str:
    return str(lease_spec(api).get("holderIdentity") or "")


def agent_of(api: LocalApiServer, identity: str) -> str:
    """Which client wrote the lease for ``identity`` (the replica behind a holderIdentity)."""
    agents = {c.user_agent for c in api.calls(resource="leases") if c.verb in ("create", "update")
              and c.code in (200, 201) and ((c.body or {}).get("spec") or {}).get("holderIdentity") == identity}
    assert len(agents) == 1, f"lease writes for {identity!r} came from {agents}"
    return agents.pop()


def binders(api: LocalApiServer) -> dict[str, str]:
    """pod name -> User-Agent of the client whose bind succeeded."""
    return {c.name: c.user_agent for c in api.calls("create", "pods", "binding", 201)}


def bind_requests(api: LocalApiServer, agent: str) -> list[str]:
    return [c.name for c in api.calls("create", "pods", "binding", user_agent=agent)]


def no_pod_bound_twice(api: LocalApiServer) -> None:
    twice = {k: n for k, n in successful_binds(api).items() if n > 1}
    assert not twice, f"bound more than once: {twice}"


def create_pods(api: LocalApiServer, names: list[str], scheduler: str = PROFILE) -> list[str]:
    for name in names:
        api.create(pod(name, scheduler=scheduler))
    return names


def bound(api: LocalApiServer, names: list[str]) -> bool:
    placed = placements(api)
    return all(placed.get(n) for n in names)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LossLog(logging.Handler):
    """When the elector logged the end of leadership (kubesched.leaderelection)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.at: float | None = None

    def emit(self, record: logging.LogRecord) -> None:
        if "leaderelection lost" in record.getMessage() and self.at is None:
            self.at = time.monotonic()


@pytest.fixture
def losses() -> Iterator[LossLog]:
    handler = LossLog()
    elector_log = logging.getLogger("kubesched.leaderelection")
    level = elector_log.level
    elector_log.addHandler(handler)
    elector_log.setLevel(logging.INFO)
    try:
        yield handler
    finally:
        elector_log.removeHandler(handler)
        elector_log.setLevel(level)


# ------------------------------------------------------------------------------------ one replica
def test_run_binds_its_profiles_pods_leaves_others_alone_and_finishes_binds_in_flight_on_stop(
        api: LocalApiServer, tmp_path: Path) -> None:
    theirs = [*create_pods(api, ["other-1"], scheduler="other-scheduler"),
              *create_pods(api, ["default-1"], scheduler="default-scheduler")]
    mine = create_pods(api, ["a", "b", "c"])
    # `kubesched run --config ... --master URL --leader-elect=false --secure-port 0`, in-process.
    replica = Replica(api, "kubesched", RunOptions(config=config_file(tmp_path), master=api.url, deterministic=True),
                      election=NO_ELECTION, own_client=False)
    try:
        wait_until(lambda: bound(api, mine), what="the profile's pods bound")
        # Binds in flight when the stop comes: the server holds the next three for 1.5 s.
        api.delay_next(3, 1.5, verbs=["create"], resources=["pods"])
        late = create_pods(api, ["d", "e", "f"])
        wait_until(lambda: api.faults_left() == 0, what="three binds on the wire")
        assert not any(placements(api)[n] for n in late)
        replica.stop.set()
        result = replica.finish()
    finally:
        replica.stop.set()
        replica.thread.join(15)
    assert result.reason == "stopped"
    assert result.stats.attempts["scheduled"] == 6
    assert bound(api, mine + late), placements(api)
    assert set(successful_binds(api)) == {f"default/{n}" for n in mine + late}
    no_pod_bound_twice(api)
    # Other schedulers' pods: not bound, never written to, no event about them.
    assert all(placements(api)[n] == "" for n in theirs)
    assert not [c for c in api.calls() if c.name in theirs and c.verb not in ("get", "list", "watch")]
    assert not [e for e in events(api) if e["regarding"]["name"] in theirs]
    assert {e["regarding"]["name"] for e in events(api, "Scheduled")} == set(mine + late)
    # --master alone reached the server, as kubesched; --leader-elect=false: no Lease at all.
    assert {c.user_agent for c in api.calls()} == {"kubesched"}
    assert not api.calls(resource="leases")


def test_sigterm_stops_the_cli_which_exits_zero(api: LocalApiServer, tmp_path: Path) -> None:
    """The click command on the main thread, where run() installs its SIGTERM handler (and
    puts the previous one back when it returns)."""
    previous = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    mine = create_pods(api, ["a", "b"])
    outcome: list[Any] = []

    def terminate_once_scheduling() -> None:
        try:
            wait_until(lambda: bound(api, mine), what="pods bound by the CLI")
            outcome.append("bound")
        finally:
            os.kill(os.getpid(), signal.SIGTERM)

    helper = threading.Thread(target=terminate_once_scheduling, daemon=True)
    helper.start()
    result = CliRunner().invoke(main, ["run", f"--config={config_file(tmp_path)}", f"--master={api.url}",
                                       "--leader-elect=false", "--secure-port=0"])
    helper.join(5)
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == previous
    assert outcome == ["bound"]
    assert result.exit_code == 0, result.output + repr(result.exception)
    no_pod_bound_twice(api)


# ------------------------------------------------------------------------------------ two replicas
def test_two_replicas_one_leads_and_binds_then_the_standby_takes_over_when_the_leader_dies(
        api: LocalApiServer, tmp_path: Path) -> None:
    options = RunOptions(config=config_file(tmp_path), deterministic=True)
    replicas = {agent: Replica(api, agent, options) for agent in ("kubesched-a", "kubesched-b")}
    try:
        first = wait_until(lambda: holder(api), timeout=10, what="a leader")
        leader = agent_of(api, first)
        standby = next(a for a in replicas if a != leader)
        before = create_pods(api, [f"p{i}" for i in range(6)])
        wait_until(lambda: bound(api, before), what="pods bound by the leader")
        time.sleep(2 * RETRY)  # a few more renewals and standby polls
        spec = lease_spec(api)
        assert spec["holderIdentity"] == first and spec["leaseTransitions"] == 0
        assert spec["leaseDurationSeconds"] == int(LEASE)
        # Exactly one leader: the standby never wrote the lease successfully, nor bound anything.
        assert not [c for c in api.calls(resource="leases", user_agent=standby)
                    if c.verb in ("create", "update") and c.code in (200, 201)]
        assert bind_requests(api, standby) == []
        assert binders(api) == dict.fromkeys(before, leader)

        # The leader dies: from now on every Lease request of it fails (it cannot renew).
        api.fail_next(10**9, 500, resources=["leases"], user_agent=leader)
        died = time.monotonic()
        second = wait_until(lambda: holder(api) not in ("", first) and holder(api), timeout=LEASE + 5,
                            what="the standby takes the lease")
        took_over = time.monotonic() - died
        assert agent_of(api, second) == standby
        # Within the lease duration (+ one jittered retry and some slack), and not before the
        # lease the standby last saw renewed (a second late at worst) could have expired.
        assert took_over <= LEASE + MAX_RETRY + 1.0, took_over
        assert took_over >= LEASE - 1.0 - RETRY - 0.2, took_over
        assert lease_spec(api)["leaseTransitions"] == 1
        # The old leader stopped scheduling on its own: run() returned lost-leadership.
        lost = replicas[leader].finish(timeout=5)
        assert lost.reason == "lost-leadership"
        assert lost.stats.attempts["scheduled"] == len(before)

        after = create_pods(api, [f"q{i}" for i in range(4)])
        wait_until(lambda: bound(api, after), what="pods created after the failover bound")
        assert {n: a for n, a in binders(api).items() if n in after} == dict.fromkeys(after, standby)
        assert sorted(bind_requests(api, leader)) == sorted(before), "the dead leader bound nothing more"
        no_pod_bound_twice(api)
        assert replicas[standby].halt().reason == "stopped"
    finally:
        for r in replicas.values():
            r.stop.set()
        for r in replicas.values():
            r.thread.join(15)
    api.clear_faults()


def test_a_gracefully_stopped_leader_releases_the_lease_and_the_standby_takes_over_at_once(
        api: LocalApiServer, tmp_path: Path) -> None:
    # A long lease: a takeover "at once" (the next retry) is far from an expiry takeover.
    lease = 6.0
    options = RunOptions(config=config_file(tmp_path, lease=lease, renew=4.0, retry=0.3), deterministic=True)
    replicas = {agent: Replica(api, agent, options) for agent in ("kubesched-a", "kubesched-b")}
    try:
        first = wait_until(lambda: holder(api), timeout=10, what="a leader")
        leader = agent_of(api, first)
        standby = next(a for a in replicas if a != leader)
        before = create_pods(api, ["p0", "p1"])
        wait_until(lambda: bound(api, before), what="pods bound by the leader")

        result = replicas[leader].halt()
        stopped = time.monotonic()
        assert result.reason == "stopped"
        now_held_by = holder(api)
        assert now_held_by == "" or agent_of(api, now_held_by) == standby
        released = [c for c in api.calls("update", "leases", code=200, user_agent=leader)
                    if ((c.body or {}).get("spec") or {}).get("holderIdentity") == ""]
        assert len(released) == 1 and released[0].body["spec"]["leaseDurationSeconds"] == 1
        wait_until(lambda: holder(api) not in ("", first), timeout=lease, what="the standby takes the lease")
        assert time.monotonic() - stopped <= 0.3 * 2.2 + 1.0, "taken at the standby's next try, not at expiry"
        assert agent_of(api, holder(api)) == standby

        after = create_pods(api, ["q0", "q1"])
        wait_until(lambda: bound(api, after), what="pods bound by the new leader")
        assert binders(api) == {**dict.fromkeys(before, leader), **dict.fromkeys(after, standby)}
        no_pod_bound_twice(api)
        assert replicas[standby].halt().reason == "stopped"
        assert holder(api) == "", "the last leader released the lease too"
    finally:
        for r in replicas.values():
            r.stop.set()
        for r in replicas.values():
            r.thread.join(15)


# ------------------------------------------------------------------------------------ losing the lease
def _lose_the_lease(api: LocalApiServer) -> float:
    """Every lease update fails from now on (the leader cannot renew); returns when."""
    api.fail_next(10**9, 500, verbs=["update"], resources=["leases"])
    return time.monotonic()


def test_a_leader_that_cannot_renew_stops_scheduling_at_the_renew_deadline(api: LocalApiServer, tmp_path: Path,
                                                                            losses: LossLog) -> None:
    replica = Replica(api, "kubesched", RunOptions(config=config_file(tmp_path), deterministic=True))
    try:
        wait_until(lambda: holder(api), timeout=10, what="leadership")
        before = create_pods(api, ["p0", "p1"])
        wait_until(lambda: bound(api, before), what="pods bound while leading")
        failing = _lose_the_lease(api)
        result = replica.finish(timeout=RENEW + RETRY + 10)
    finally:
        replica.stop.set()
        replica.thread.join(15)
    assert result.reason == "lost-leadership"
    assert losses.at is not None and replica.returned_at is not None
    # Leadership ends once renewals have failed for the renew deadline, not before...
    assert RENEW - 0.05 <= losses.at - failing <= RENEW + MAX_RETRY + 0.5, losses.at - failing
    # ...and scheduling stops right then: run() returns without waiting for anything else.
    assert replica.returned_at - losses.at < 1.0, replica.returned_at - losses.at
    create_pods(api, ["late"])
    time.sleep(0.5)
    assert placements(api)["late"] == "" and "late" not in bind_requests(api, "kubesched")
    assert sorted(binders(api)) == sorted(before)
    api.clear_faults()


def test_a_renewal_hanging_on_the_network_ends_leadership_at_the_renew_deadline(api: LocalApiServer, tmp_path: Path,
                                                                               losses: LossLog) -> None:
    """Lease requests time out (lease_request_timeout) instead of waiting for the API client's
    30 s: a leader whose renewals hang gives up at its renew deadline, before a standby may
    take the lease, not once the requests finally return."""
    replica = Replica(api, "kubesched", RunOptions(config=config_file(tmp_path), deterministic=True))
    try:
        wait_until(lambda: holder(api), timeout=10, what="leadership")
        api.delay_next(10**9, 2 * LEASE, verbs=["update"], resources=["leases"])
        hung = time.monotonic()
        result = replica.finish(timeout=LEASE + 10)
    finally:
        replica.stop.set()
        replica.thread.join(15)
        api.clear_faults()
    assert result.reason == "lost-leadership"
    assert losses.at is not None and replica.returned_at is not None
    assert losses.at - hung <= RETRY + RENEW + 0.5 < LEASE - 1.0, losses.at - hung
    # run() returns once the best-effort release (itself one timed-out request) is over.
    assert replica.returned_at - losses.at <= lease_request_timeout(RENEW) + 1.0, replica.returned_at - losses.at


def test_lease_requests_do_not_queue_behind_the_schedulers_rate_limit(api: LocalApiServer) -> None:
    """As kube-scheduler's separate leader-election client: the Lease calls have their own
    token bucket (same qps / burst), so a burst of binds cannot delay a renewal."""
    client = ApiClient(ClusterConfig(server=api.url), qps=1, burst=1)
    try:
        client.limiter.acquire()  # the scheduler spent its burst: its next call waits ~1 s
        leases = ApiLeaseClient(client, timeout=1.0)
        started = time.monotonic()
        assert leases.get(NS, "absent") is None
        assert time.monotonic() - started < 0.5
        assert client.limiter.reserve() > 0.5, "the scheduler's own bucket is still empty"
    finally:
        client.close()


def test_the_cli_exits_non_zero_with_leaderelection_lost(api: LocalApiServer, tmp_path: Path) -> None:
    out: list[Any] = []
    args = ["run", f"--master={api.url}", "--secure-port=0", f"--leader-elect-resource-name={LOCK}",
            f"--leader-elect-lease-duration={int(LEASE)}s", f"--leader-elect-renew-deadline={int(RENEW)}s",
            f"--leader-elect-retry-period={int(RETRY * 1000)}ms"]
    cli = threading.Thread(target=lambda: out.append(CliRunner().invoke(main, args)), daemon=True)
    cli.start()
    try:
        wait_until(lambda: holder(api), timeout=10, what="leadership")
        before = create_pods(api, ["p0"], scheduler="default-scheduler")
        wait_until(lambda: bound(api, before), what="a pod bound by the CLI")
        _lose_the_lease(api)
        cli.join(RENEW + RETRY + 10)
        assert not cli.is_alive(), "the CLI did not exit after losing its lease"
    finally:
        api.clear_faults()
    (result,) = out
    assert result.exit_code == 1, result.output
    assert "leaderelection lost" in result.output


# ------------------------------------------------------------------------------------ serving
def test_health_readiness_and_metrics_are_served_on_the_secure_port_while_running(api: LocalApiServer,
                                                                                   tmp_path: Path) -> None:
    port = free_port()
    replica = Replica(api, "kubesched", RunOptions(config=config_file(tmp_path), deterministic=True),
                      serving=ServingOptions(secure_port=port))
    base = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=base, timeout=5.0) as http:

            def get(path: str) -> httpx.Response | None:
                try:
                    return http.get(path)
                except httpx.TransportError:
                    return None

            wait_until(lambda: (r := get("/readyz")) is not None and r.status_code == 200, timeout=10,
                       what="/readyz ok")
            healthz = http.get("/healthz?verbose")
            assert healthz.status_code == 200
            assert "[+]ping ok" in healthz.text and "[+]leaderElection ok" in healthz.text
            readyz = http.get("/readyz?verbose").text
            assert "[+]sched-handler-sync ok" in readyz and "[+]shutdown ok" in readyz
            assert http.get("/livez").text == "ok"

            wait_until(lambda: holder(api), timeout=10, what="leadership")
            mine = create_pods(api, ["a", "b", "c"])
            wait_until(lambda: bound(api, mine), what="pods bound")

            def metrics() -> str:
                return http.get("/metrics").text

            expected = f'scheduler_schedule_attempts_total{{profile="{PROFILE}",result="scheduled"}} 3.0'
            text = wait_until(lambda: next((t for t in [metrics()] if expected in t), None),
                              what="3 scheduled attempts in /metrics")
            assert f'leader_election_master_status{{name="{LOCK}"}} 1.0' in text
            assert "scheduler_pending_pods" in text
        assert replica.halt().reason == "stopped"
    finally:
        replica.stop.set()
        replica.thread.join(15)
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{base}/healthz", timeout=1.0)


def test_each_pod_is_bound_by_exactly_one_replica_under_a_burst(api: LocalApiServer, tmp_path: Path) -> None:
    """Many pods at once with two replicas: every bind comes from the leader, one per pod."""
    options = RunOptions(config=config_file(tmp_path), deterministic=True)
    replicas = [Replica(api, agent, options) for agent in ("kubesched-a", "kubesched-b")]
    try:
        leader = agent_of(api, wait_until(lambda: holder(api), timeout=10, what="a leader"))
        names = create_pods(api, [f"burst-{i}" for i in range(40)])
        wait_until(lambda: bound(api, names), timeout=20, what="the burst bound")
        assert Counter(binders(api).values()) == {leader: len(names)}
        no_pod_bound_twice(api)
        for r in replicas:
            assert r.halt().reason == "stopped"
    finally:
        for r in replicas:
            r.stop.set()
        for r in replicas:
            r.thread.join(15)


# ------------------------------------------------------------------------ garbage collection
@pytest.fixture
def paused_collection(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The garbage collector paused as the ``kubesched`` command pauses it while it starts
    (kubesched._entry.main), restored afterwards."""
    import gc

    from kubesched import _startup

    was_enabled = gc.isenabled()
    monkeypatch.setattr(_startup, "_paused", True)
    monkeypatch.setattr("kubesched._code_cache.save", lambda: None)
    gc.disable()
    try:
        yield
    finally:
        gc.unfreeze()
        if was_enabled:
            gc.enable()


def test_garbage_collection_stays_paused_until_the_first_scheduling_attempt(
        api: LocalApiServer, tmp_path: Path, paused_collection: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """A restart's time to its first bind: the collector would walk the informers' stores and
    the cache being built; it resumes once the loop has made its first attempt."""
    import gc

    from kubesched.live.runner import LiveScheduler

    during: list[bool] = []
    cycle = LiveScheduler._scheduling_cycle

    def recording(self: LiveScheduler, *args: Any) -> Any:
        during.append(gc.isenabled())
        return cycle(self, *args)

    monkeypatch.setattr(LiveScheduler, "_scheduling_cycle", recording)
    mine = create_pods(api, ["a"])
    replica = Replica(api, "kubesched", RunOptions(config=config_file(tmp_path), master=api.url, deterministic=True),
                      election=NO_ELECTION)
    try:
        wait_until(lambda: bound(api, mine), what="the pod bound")
        wait_until(gc.isenabled, what="garbage collection resumed")
    finally:
        replica.halt()
    assert during[0] is False


def test_garbage_collection_resumes_after_a_while_when_scheduling_cannot_start(
        tmp_path: Path, paused_collection: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """An API server that never answers: the informers never sync, and the requests retried
    meanwhile leave garbage behind, so the pause ends after GC_PAUSE_LIMIT all the same."""
    import gc

    import kubesched.live.command as command

    monkeypatch.setattr(command, "GC_PAUSE_LIMIT", 0.3)
    unreachable = f"http://127.0.0.1:{free_port()}"
    stop = threading.Event()
    thread = threading.Thread(target=lambda: run(RunOptions(master=unreachable), NO_SERVING, NO_ELECTION, REGISTRY,
                                                 stop=stop), daemon=True)
    started = time.monotonic()
    thread.start()
    try:
        wait_until(gc.isenabled, what="garbage collection resumed", timeout=5.0)
        assert time.monotonic() - started >= 0.3
    finally:
        stop.set()
        thread.join(15)


def test_the_interpreter_switches_threads_every_millisecond_while_running(api: LocalApiServer, tmp_path: Path) -> None:
    """Binding workers and informers wait for the interpreter after each API reply: at most
    SWITCH_INTERVAL while the command runs; the process's own setting is back once the last
    run() in the process returns (tests run several replicas in one)."""
    import sys

    from kubesched.live.command import SWITCH_INTERVAL

    before = sys.getswitchinterval()
    sys.setswitchinterval(0.005)  # Python's default
    try:
        mine = create_pods(api, ["a", "b"])
        one = Replica(api, "one", RunOptions(config=config_file(tmp_path), master=api.url, deterministic=True),
                      election=NO_ELECTION)
        two = Replica(api, "two", RunOptions(config=config_file(tmp_path), master=api.url, deterministic=True),
                      election=NO_ELECTION)
        try:
            wait_until(lambda: bound(api, mine), what="the pods bound")
            assert sys.getswitchinterval() == SWITCH_INTERVAL
            one.halt()
            assert sys.getswitchinterval() == SWITCH_INTERVAL  # the other still runs
        finally:
            one.halt()
            two.halt()
        assert sys.getswitchinterval() == 0.005
    finally:
        sys.setswitchinterval(before)
