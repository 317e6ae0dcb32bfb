"""``kubesched bench --workload soak-live``: the soak's stream (kubesched.soak.SoakStream) played
against the live scheduler through the local API server (kubesched.testing.apiserver), with
faults injected along the way.

- The API server runs in a child process (``python -m kubesched.soak_live``), so that the RSS
  measured is the scheduler's (this process: the scheduler, its informers, and the driver),
  not the server's store and history. The child takes commands on stdin (faults, restart,
  its tallies) and tallies the request log as it goes: successful bindings per pod (a pod
  bound twice is a problem), binding conflicts, requests by code.
- The driver plays the stream in order, as fast as the scheduler keeps up (the virtual times
  only order the events; the driver waits while the scheduler's pod informer is more than
  :data:`RV_SLACK` revisions behind its latest pod write, or activeQ, backoffQ and the binding
  cycles in flight hold more than :data:`MAX_BACKLOG` pods): an arrival is a POST of the pod, a departure
  a DELETE (grace 0), a drain a PATCH cordoning the node then a DELETE (grace 1 s) of each pod
  bound there, a removal a DELETE of the node, a join a POST of a new node.
- :data:`FAULT_COUNT` faults evenly spaced over the arrivals, the kinds of :data:`FAULTS` in turn: binding
  POSTs answered 500, a binding's reply lost (the bind is made, the scheduler never hears of
  it), 429s with Retry-After, slow requests, status patches failing, every watch cut, watches
  answered 410 Gone (relists), and a restart of the API server.
- At the end (the stream exhausted) the driver waits until the scheduler has settled (every pod
  that can be is bound, the scheduler's cache and queue agree with the API server), then checks:
  no pod lost (every unbound pod is in the scheduler's queue), every bound pod in the cache on
  its node, no departed pod left in the cache, the queue, the nominator or the informer, no pod
  bound twice (the request log's successful bindings), the counts adding up, and the RSS flat
  after warm-up — which for live mode includes filling the event broadcaster's cache: an event
  is kept until it is quiet for kubesched.cluster.live.EVENT_FINISH_TIME (6 minutes upstream),
  checked that often, so up to twice that. The soak shortens it to :data:`EVENT_HORIZON` (a
  knob of the run, restored after it) so that the steady state comes within the run, and
  measures the growth from the first 5 % sample past both the warm-up (10 % of the arrivals)
  and twice that horizon, or from the 10 % one when the run is shorter (then said so).
"""

from __future__ import annotations

import contextlib
import gc
import json
import logging
import subprocess as sp
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import kubesched.cluster.live as live_cluster
from kubesched.cluster.live import ApiClient, ClusterConfig, LiveCluster, LiveOptions
from kubesched.errors import ApiError, KubeschedError
from kubesched.live.runner import LiveScheduler
from kubesched.soak import (
    ARRIVE,
    CORDON,
    DEPART,
    GROWTH_LIMIT,
    JOIN,
    NAMESPACE,
    REMOVE,
    SoakStream,
    node_manifest,
    node_name,
    pod_manifest,
    pod_name,
    priority_class_manifest,
    rss_bytes,
)

DEFAULT_NODES = 200
# Long enough that the run outlasts the event cache's horizon (2 x EVENT_HORIZON + 30 s) with
# samples to spare: at ~280 binds/s, 50,000 arrivals end at ~180 s, just past the 150 s horizon
# with no sample in between (the growth would then include the cache's filling); 100,000 take
# ~6 minutes.
DEFAULT_ARRIVALS = 100_000
MAX_BACKLOG = 64  # pods in activeQ + backoffQ + binding cycles before the driver waits
RV_SLACK = 200  # revisions the scheduler's pod informer may lag the driver's pod writes
FAULT_COUNT = 40  # faults over a run, evenly spaced over the arrivals
SETTLE_TIMEOUT = 180.0  # s to wait at the end for the scheduler to settle
EVENT_HORIZON = 60.0  # s an event stays in the broadcaster's cache during the soak (upstream: 360)
SCHEDULER_UA = "kubesched"
DRIVER_UA = "kubesched-soak-driver"
FAULTS = ("bind-500", "bind-reply-lost", "throttled-429", "slow-requests", "status-patch-500", "watches-cut",
          "watches-gone-410", "apiserver-restart")


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


# ----------------------------------------------------------------------------- the child
class _Tally:
    """What the request log says, tallied as it goes (the log itself is a bounded deque)."""

    def __init__(self) -> None:
        self.binds: Counter[str] = Counter()  # pod name -> successful binding POSTs
        self.bind_conflicts = 0
        self.bind_failures = 0
        self.by_code: Counter[str] = Counter()  # "<user agent> <verb> <resource>[/sub] <code>"
        self.requests = 0

    def add(self, rec: Any) -> None:
        self.requests += 1
        sub = f"/{rec.subresource}" if rec.subresource else ""
        who = "scheduler" if rec.user_agent == SCHEDULER_UA else "driver" if rec.user_agent == DRIVER_UA else "other"
        self.by_code[f"{who} {rec.verb} {rec.resource}{sub} {rec.code}"] += 1
        if rec.verb == "create" and rec.resource == "pods" and rec.subresource == "binding":
            if rec.code == 201:
                self.binds[rec.name] += 1
            elif rec.code == 409:
                self.bind_conflicts += 1
            else:
                self.bind_failures += 1

    def as_dict(self) -> dict[str, Any]:
        twice = sorted(k for k, n in self.binds.items() if n > 1)
        return {"binds": sum(self.binds.values()), "bound_pods": len(self.binds), "bound_twice": twice[:20],
                "bound_twice_count": len(twice), "bind_conflicts": self.bind_conflicts,
                "bind_failures": self.bind_failures, "requests": self.requests, "by_code": dict(self.by_code)}


def serve(argv: list[str] | None = None) -> None:
    """The child: a LocalApiServer on 127.0.0.1 (its URL is the first line of stdout), then one
    JSON command per stdin line, one JSON reply per stdout line; stdin closing stops it."""
    from kubesched.testing.apiserver import LocalApiServer

    del argv
    api = LocalApiServer(history=20_000, bookmark_interval=5.0).start()
    tally = _Tally()
    lock = threading.Lock()
    stop = threading.Event()

    def drain() -> None:
        # popleft is atomic: the server thread keeps appending meanwhile.
        while True:
            try:
                rec = api.requests.popleft()
            except IndexError:
                return
            tally.add(rec)

    def drainer() -> None:
        while not stop.wait(0.2):
            with lock:
                drain()

    threading.Thread(target=drainer, name="tally", daemon=True).start()
    print(api.url, flush=True)
    try:
        for line in sys.stdin:
            cmd = json.loads(line)
            op, args = cmd.get("op"), cmd.get("args") or {}
            reply: Any = {"ok": True}
            try:
                if op in ("fail_next", "drop_reply_next", "delay_next", "drop_watches", "expire_next_watch",
                          "clear_faults"):
                    getattr(api, op)(**args)
                elif op == "restart":
                    api.restart(keep_state=True, downtime=float(args.get("downtime", 0.0)))
                elif op == "tally":
                    with lock:
                        drain()
                        reply = {**tally.as_dict(), "rss": rss_bytes()}
                elif op == "pods":
                    reply = {"pods": [_pod_row(p) for p in api.store.list_objects("pods")[0]]}
                elif op == "quit":
                    break
                else:
                    reply = {"ok": False, "error": f"unknown op {op!r}"}
            except Exception as e:  # noqa: BLE001 - report it to the driver
                reply = {"ok": False, "error": str(e)}
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()
    finally:
        stop.set()
        api.close()


def _pod_row(pod: dict[str, Any]) -> list[Any]:
    """[name, uid, nodeName, being deleted, app label] of a stored pod."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    return [meta.get("name", ""), meta.get("uid", ""), spec.get("nodeName", ""), bool(meta.get("deletionTimestamp")),
            (meta.get("labels") or {}).get("app", "")]


class _ApiChild:
    """The child API server process and its command channel (used by one thread)."""

    def __init__(self) -> None:
        self._proc = sp.Popen([sys.executable, "-m", "kubesched.soak_live"], stdin=sp.PIPE, stdout=sp.PIPE,
                              text=True)
        assert self._proc.stdout is not None
        self.url = self._proc.stdout.readline().strip()
        if not self.url.startswith("http://127.0.0.1:"):
            self.close()
            raise KubeschedError("the soak's API server process did not start")

    def call(self, op: str, **args: Any) -> Any:
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write(json.dumps({"op": op, "args": args}) + "\n")
        self._proc.stdin.flush()
        line = self._proc.stdout.readline()
        if not line:
            raise KubeschedError(f"the soak's API server process died ({op})")
        reply = json.loads(line)
        if isinstance(reply, dict) and reply.get("ok") is False:
            raise KubeschedError(f"the soak's API server process: {op}: {reply.get('error')}")
        return reply

    def close(self) -> None:
        if self._proc.stdin is not None:
            with contextlib.suppress(OSError):
                self._proc.stdin.close()
        try:
            self._proc.wait(15)
        except sp.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(5)
        if self._proc.stdout is not None:
            self._proc.stdout.close()


# ----------------------------------------------------------------------------- the result
@dataclass(frozen=True, slots=True)
class LiveCheckpoint:
    fraction: float
    arrivals: int
    rss: int
    wall: float

    def as_dict(self) -> dict[str, Any]:
        return {"fraction": self.fraction, "arrivals": self.arrivals, "rss_mib": round(self.rss / 2**20, 1),
                "wall_seconds": round(self.wall, 1)}


@dataclass(slots=True)
class SoakLiveResult:
    nodes: int
    arrivals: int
    seconds: float = 0.0  # the stream, wall
    settle_seconds: float = 0.0
    setup_seconds: float = 0.0
    departed_bound: int = 0
    departed_pending: int = 0
    evicted: int = 0
    preempted: int = 0  # gone (deleted by the scheduler) before their departure or the end
    departed_unknown: int = 0  # deleted, but the answer was lost (bound or not: unknown)
    running: int = 0
    pending: int = 0
    binds: int = 0  # successful binding POSTs (the request log)
    bound_twice: int = 0
    bind_conflicts: int = 0
    bind_failures: int = 0
    api_requests: int = 0
    attempts: Counter[str] = field(default_factory=Counter)
    scheduler_bind_failures: int = 0
    victims: int = 0
    nodes_joined: int = 0
    nodes_drained: int = 0
    nodes_left: int = 0
    faults: Counter[str] = field(default_factory=Counter)
    relists: int = 0
    rewatches: int = 0
    checkpoints: list[LiveCheckpoint] = field(default_factory=list)
    samples: list[LiveCheckpoint] = field(default_factory=list)  # every 5 %
    baseline: LiveCheckpoint | None = None  # the growth's starting point
    baseline_note: str = ""
    invariants: bool = False
    event_horizon: float = 0.0  # the event broadcaster's finish time during the run
    growth_limit: float | None = GROWTH_LIMIT
    problems: list[str] = field(default_factory=list)
    workload: str = "soak-live"

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def growth(self) -> float | None:
        if self.baseline is None or not self.checkpoints or self.baseline.rss <= 0:
            return None
        return (self.checkpoints[-1].rss - self.baseline.rss) / self.baseline.rss

    @property
    def binds_per_second(self) -> float:
        return self.binds / self.seconds if self.seconds else 0.0

    @property
    def attempts_per_second(self) -> float:
        return sum(self.attempts.values()) / self.seconds if self.seconds else 0.0

    def as_dict(self) -> dict[str, Any]:
        g = self.growth
        return {
            "workload": self.workload, "nodes": self.nodes, "arrivals": self.arrivals,
            "departures": {"lifetime_bound": self.departed_bound, "lifetime_pending": self.departed_pending,
                           "evicted": self.evicted, "preempted": self.preempted, "unknown": self.departed_unknown},
            "running_at_end": self.running, "pending_at_end": self.pending, "binds": self.binds,
            "bound_twice": self.bound_twice, "bind_conflicts": self.bind_conflicts,
            "bind_failures": self.bind_failures, "attempts": dict(sorted(self.attempts.items())),
            "victims": self.victims, "nodes_joined": self.nodes_joined, "nodes_drained": self.nodes_drained,
            "nodes_left": self.nodes_left, "faults": dict(sorted(self.faults.items())),
            "informer_relists": self.relists, "informer_rewatches": self.rewatches, "api_requests": self.api_requests,
            "seconds": round(self.seconds, 1), "settle_seconds": round(self.settle_seconds, 1),
            "setup_seconds": round(self.setup_seconds, 1), "binds_per_second": round(self.binds_per_second, 1),
            "attempts_per_second": round(self.attempts_per_second, 1),
            "rss": [c.as_dict() for c in self.checkpoints],
            "rss_baseline": self.baseline.as_dict() if self.baseline else None, "rss_baseline_note": self.baseline_note,
            "rss_growth": None if g is None else round(g, 4), "event_finish_seconds": self.event_horizon,
            "invariants": self.invariants,
            "problems": self.problems,
        }

    def summary(self) -> str:
        g = self.growth
        base = self.baseline
        lines = [
            f"workload=soak-live nodes={self.nodes} arrivals={self.arrivals} (local API server in a child process, "
            f"{sum(self.faults.values())} faults: {', '.join(f'{k} {v}' for k, v in sorted(self.faults.items()))})",
            f"departures: {self.departed_bound} after running, {self.departed_pending} before being bound, "
            f"{self.evicted} evicted by drains, {self.preempted} preempted; at the end {self.running} running, "
            f"{self.pending} pending",
            f"binds {self.binds} (request log: {self.bound_twice} pods bound twice, {self.bind_conflicts} binding "
            f"conflicts, {self.bind_failures} failed binding requests); attempts "
            f"{', '.join(f'{k} {v}' for k, v in sorted(self.attempts.items()))}; {self.victims} victims",
            f"nodes: {self.nodes_drained} drained, {self.nodes_left} left, {self.nodes_joined} joined; informers: "
            f"{self.relists} relists, {self.rewatches} re-watches; {self.api_requests} API requests",
            f"{self.seconds:.1f} s wall for the stream (setup {self.setup_seconds:.1f} s, settling "
            f"{self.settle_seconds:.1f} s): {self.binds_per_second:.1f} binds/s, {self.attempts_per_second:.1f} "
            "attempts/s",
            "scheduler RSS: " + ", ".join(f"{c.fraction:.0%} ({c.arrivals} arrivals, {c.wall:.0f} s) {_mib(c.rss)}"
                                          for c in self.checkpoints)
            + ("" if g is None or base is None else
               f"; growth from {base.fraction:.0%} ({base.wall:.0f} s) to 100%: {g:+.1%}")
            + (f" ({self.baseline_note})" if self.baseline_note else ""),
            f"event broadcaster's finish time during the run: {self.event_horizon:.0f} s; invariant checker: "
            f"{'on' if self.invariants else 'off'}",
        ]
        return "\n".join(lines)


# ----------------------------------------------------------------------------- the driver
def _index(name: str) -> int:
    return int(name.rsplit("-", 1)[1])


class _Driver:
    """Plays the stream against the API server (driver requests retried across restarts)."""

    def __init__(self, admin: ApiClient, res: SoakLiveResult) -> None:
        self.admin = admin
        self.res = res
        self.live: set[int] = set()  # pods created and not deleted by the driver
        self.last_pod_rv = 0  # the resourceVersion of the driver's latest pod write
        self.retried = False  # the last request had to be sent again

    def _retry(self, fn: Callable[[], Any], *, gone_ok: bool = False, exists_ok: bool = False) -> Any:
        """``fn`` until it is answered (the API server may be restarting): None for 404 with
        ``gone_ok``, 409 AlreadyExists with ``exists_ok``. :attr:`retried`: whether a try got
        no answer (a write may then have been applied by it)."""
        deadline = time.monotonic() + 60.0
        self.retried = False
        while True:
            try:
                return fn()
            except ApiError as e:
                if e.status == 404 and gone_ok:
                    return None
                if e.status == 409 and exists_ok:
                    return None
                if e.status is not None and e.status < 500 and e.status != 429:
                    raise
                if time.monotonic() > deadline:
                    raise
                self.retried = self.retried or e.status is None
                time.sleep(0.1)

    def _wrote(self, obj: dict[str, Any] | None) -> None:
        rv = (obj or {}).get("metadata", {}).get("resourceVersion")
        if rv:
            self.last_pod_rv = max(self.last_pod_rv, int(rv))

    def create_pod(self, index: int, manifest: dict[str, Any]) -> None:
        self._wrote(self._retry(lambda: self.admin.request("create", "pods", namespace=NAMESPACE, body=manifest),
                                exists_ok=True))
        self.live.add(index)

    def delete_pod(self, name: str, grace: int) -> dict[str, Any] | None:
        out: dict[str, Any] | None = self._retry(
            lambda: self.admin.request("delete", "pods", namespace=NAMESPACE, name=name,
                                       params={"gracePeriodSeconds": str(grace)}), gone_ok=True)
        self._wrote(out)
        return out

    def depart(self, index: int) -> None:
        if index not in self.live:
            return  # evicted already
        self.live.discard(index)
        gone = self.delete_pod(pod_name(index), 0)
        if gone is None and self.retried:
            self.res.departed_unknown += 1  # our first DELETE went through, its answer was lost
        elif gone is None:
            self.res.preempted += 1
        elif (gone.get("spec") or {}).get("nodeName"):
            self.res.departed_bound += 1
        else:
            self.res.departed_pending += 1

    def cordon(self, index: int) -> None:
        name = node_name(index)
        patched = self._retry(lambda: self.admin.request(
            "patch", "nodes", name=name, body={"spec": {"unschedulable": True}},
            content_type="application/merge-patch+json"), gone_ok=True)
        if patched is None:
            return
        self.res.nodes_drained += 1
        items, _, _ = self._retry(lambda: self.admin.list_pages("pods", field_selector=f"spec.nodeName={name}"))
        for pod in items:
            pname = (pod.get("metadata") or {}).get("name", "")
            if not pname.startswith("soak-"):
                continue
            i = _index(pname)
            if i in self.live and self.delete_pod(pname, 1) is not None:
                self.live.discard(i)
                self.res.evicted += 1

    def remove(self, index: int) -> None:
        if self._retry(lambda: self.admin.request("delete", "nodes", name=node_name(index)), gone_ok=True) is not None:
            self.res.nodes_left += 1

    def join(self, index: int) -> None:
        self._retry(lambda: self.admin.request("create", "nodes", body=node_manifest(index)), exists_ok=True)
        self.res.nodes_joined += 1


def _inject(child: _ApiChild, kind: str) -> None:
    ua = SCHEDULER_UA
    if kind == "bind-500":
        child.call("fail_next", count=3, status=500, verbs=["create"], resources=["pods"], user_agent=ua)
    elif kind == "bind-reply-lost":
        child.call("drop_reply_next", count=1, verbs=["create"], resources=["pods"], user_agent=ua)
    elif kind == "throttled-429":
        child.call("fail_next", count=5, status=429, user_agent=ua, retry_after=1, watch=False)
    elif kind == "slow-requests":
        child.call("delay_next", count=20, seconds=0.2, user_agent=ua)
    elif kind == "status-patch-500":
        child.call("fail_next", count=5, status=500, verbs=["patch"], resources=["pods"], user_agent=ua)
    elif kind == "watches-cut":
        child.call("drop_watches")
    elif kind == "watches-gone-410":
        child.call("expire_next_watch", count=4)
        child.call("drop_watches")
    elif kind == "apiserver-restart":
        child.call("restart", downtime=0.5)
    else:  # pragma: no cover - FAULTS lists the kinds
        raise KubeschedError(f"unknown fault {kind!r}")


def _snapshot(sched: LiveScheduler) -> tuple[dict[str, str], set[str], set[str], set[str], int]:
    """(cache uid -> node, queued uids, nominated uids, informer pod uids, binding cycles in
    flight), under the scheduler's lock."""
    with sched.lock:
        cache = {pod.uid: node for node, pod in sched.cache.placements()}
        queued = {p.uid for p in sched.queue.pending_pods()}
        nominated = {pi.pod.uid for node in sched.nominator.nominated_node_names()
                     for pi in sched.nominator.nominated_pods_for_node(node)}
        informed = {p.uid for p in sched.objects.all_pods()}
        return cache, queued, nominated, informed, sched.in_flight


def _settled(sched: LiveScheduler, pods: list[list[Any]]) -> list[str]:
    """What still differs between the scheduler and the API server (empty: settled)."""
    cache, queued, nominated, informed, in_flight = _snapshot(sched)
    out: list[str] = []
    api = {uid: (name, node, deleting) for name, uid, node, deleting, _ in pods}
    unbound = [(uid, name) for uid, (name, node, _) in api.items() if not node]
    # An unbound pod is queued, or assumed (in the cache: its binding cycle is in flight).
    lost = [name for uid, name in unbound if uid not in queued and uid not in cache]
    if lost:
        out.append(f"{len(lost)} unbound pods are in no queue of the scheduler (lost), e.g. {lost[0]}")
    bound = {uid: node for uid, (_, node, _) in api.items() if node}
    wrong = [api[uid][0] for uid, node in bound.items() if cache.get(uid) != node]
    if wrong:
        out.append(f"{len(wrong)} bound pods are not in the scheduler's cache on their node, e.g. {wrong[0]}")
    for what, uids in (("cache", set(cache)), ("queue", queued), ("nominator", nominated), ("pod informer", informed)):
        extra = uids - set(api)
        if extra:
            out.append(f"the scheduler's {what} still holds {len(extra)} pods the API server no longer has")
    if in_flight:
        out.append(f"{in_flight} binding cycles in flight")
    return out


def run_soak_live(num_nodes: int = DEFAULT_NODES, arrivals: int = DEFAULT_ARRIVALS, *, seed: int = 1,
                  faults: int = FAULT_COUNT, growth_limit: float | None = GROWTH_LIMIT,
                  settle_timeout: float = SETTLE_TIMEOUT, check_invariants: bool | None = None,
                  progress: Callable[[str], None] | None = None, qps: float = 5000.0,
                  stream: SoakStream | None = None, event_horizon: float | None = EVENT_HORIZON) -> SoakLiveResult:
    """Play the soak's stream against the live scheduler (see the module docstring).
    ``faults``: how many (0: none); ``check_invariants``: the live scheduler's checker (None:
    KUBESCHED_CHECK_INVARIANTS); ``event_horizon``: the event broadcaster's finish time during
    the run (None: kube-scheduler's 6 minutes)."""
    # The faults make the scheduler log warnings (failed status patches and event writes, which
    # it does not retry): expected here; errors still show.
    logger = logging.getLogger("kubesched")
    level = logger.level
    logger.setLevel(max(level, logging.ERROR))
    finish_time = live_cluster.EVENT_FINISH_TIME
    if event_horizon is not None:
        live_cluster.EVENT_FINISH_TIME = event_horizon
    try:
        return _run(num_nodes, arrivals, seed=seed, faults=faults, growth_limit=growth_limit,
                    settle_timeout=settle_timeout, check_invariants=check_invariants, progress=progress, qps=qps,
                    stream=stream)
    finally:
        logger.setLevel(level)
        live_cluster.EVENT_FINISH_TIME = finish_time


def _run(num_nodes: int, arrivals: int, *, seed: int, faults: int, growth_limit: float | None,
         settle_timeout: float, check_invariants: bool | None, progress: Callable[[str], None] | None, qps: float,
         stream: SoakStream | None) -> SoakLiveResult:
    t_setup = time.perf_counter()
    stream = stream if stream is not None else SoakStream(num_nodes, arrivals, seed=seed)
    res = SoakLiveResult(num_nodes, stream.arrivals, growth_limit=growth_limit,
                         event_horizon=live_cluster.EVENT_FINISH_TIME)
    child = _ApiChild()
    admin = ApiClient(ClusterConfig(server=child.url), qps=0, check_calls=False, user_agent=DRIVER_UA)
    client = ApiClient(ClusterConfig(server=child.url), qps=qps, burst=int(qps), user_agent=SCHEDULER_UA)
    driver = _Driver(admin, res)
    sched: LiveScheduler | None = None
    try:
        admin.request("create", "priorityclasses", body=priority_class_manifest())
        for i in stream.initial_nodes():
            admin.request("create", "nodes", body=node_manifest(i))
        sched = LiveScheduler(None, LiveCluster(client, options=LiveOptions()), seed=seed,
                              check_invariants=check_invariants)
        res.invariants = sched.invariants is not None
        sched.start_loop()
        res.setup_seconds = time.perf_counter() - t_setup
        t0 = time.perf_counter()
        every = max(1, stream.arrivals // 20)
        fault_every = max(1, stream.arrivals // (faults + 1)) if faults > 0 else 0
        marks = [f for f in (0.1, 0.5) if f * stream.arrivals >= 1]
        arrived = 0
        queue = sched.queue

        def sample(fraction: float) -> LiveCheckpoint:
            gc.collect()
            return LiveCheckpoint(fraction, arrived, rss_bytes(), time.perf_counter() - t0)

        pod_informer = sched.cluster.informers["pods"]
        running = sched

        def behind() -> bool:
            """The scheduler lags the stream: its pod informer has not seen the driver's writes
            (up to :data:`RV_SLACK` revisions ago), or it has too many pods to attempt (sizes
            read without the lock: a hint)."""
            try:
                seen = int(pod_informer.resource_version or 0)
            except ValueError:
                seen = 0
            return (driver.last_pod_rv - seen > RV_SLACK
                    or queue.num_active + queue.num_backoff + running.in_flight > MAX_BACKLOG)

        while not stream.exhausted:
            while behind():
                if not sched.loop_alive():
                    # Waiting on a dead loop would never end: report why it stopped.
                    raise KubeschedError(f"soak-live: the scheduling loop stopped: {sched.loop_error!r}")
                time.sleep(0.002)
            ev = stream.pop()
            if ev.kind == ARRIVE:
                assert ev.shape is not None
                driver.create_pod(ev.index, pod_manifest(ev.shape, pod_name(ev.index), live=True))
                arrived += 1
                if fault_every and arrived % fault_every == 0 and sum(res.faults.values()) < faults:
                    kind = FAULTS[(arrived // fault_every - 1) % len(FAULTS)]
                    _inject(child, kind)
                    res.faults[kind] += 1
                if arrived % every == 0:
                    res.samples.append(sample(arrived / stream.arrivals))
                    if progress is not None:
                        progress(f"soak-live: {arrived}/{stream.arrivals} arrivals, {len(driver.live)} pods alive, "
                                 f"scheduler RSS {_mib(res.samples[-1].rss)}, {res.samples[-1].wall:.0f} s")
                while marks and arrived >= marks[0] * stream.arrivals:
                    res.checkpoints.append(sample(marks.pop(0)))
            elif ev.kind == DEPART:
                driver.depart(ev.index)
            elif ev.kind == CORDON:
                if ev.index >= 0:
                    driver.cordon(ev.index)
            elif ev.kind == REMOVE:
                driver.remove(ev.index)
            elif ev.kind == JOIN:
                driver.join(ev.index)
        res.seconds = time.perf_counter() - t0
        # Settle: every pod that can be is bound, and the scheduler agrees with the API server.
        t_settle = time.perf_counter()
        deadline = time.monotonic() + settle_timeout
        diffs: list[str] = []
        while True:
            pods = child.call("pods")["pods"]
            unbound = [name for name, _, node, _, app in pods if not node and app != "stuck"]
            terminating = [name for name, _, _, deleting, _ in pods if deleting]
            diffs = _settled(sched, pods)
            if not unbound and not terminating and not diffs:
                break
            if time.monotonic() > deadline:
                if unbound:
                    diffs.append(f"{len(unbound)} pods not bound {settle_timeout:.0f} s after the stream ended, "
                                 f"e.g. {unbound[0]}")
                break
            time.sleep(0.5)
        res.settle_seconds = time.perf_counter() - t_settle
        res.problems.extend(diffs)
        res.checkpoints.append(sample(1.0))
        _growth_baseline(res)
        # Counts.
        alive_api = {row[0] for row in pods}
        res.running = sum(1 for row in pods if row[2])
        res.pending = len(pods) - res.running
        unknown = [n for n in alive_api if not n.startswith("soak-") or _index(n) not in driver.live]
        if unknown:
            res.problems.append(f"the API server has {len(unknown)} pods the driver did not create or deleted, "
                                f"e.g. {unknown[0]}")
        res.preempted += sum(1 for i in driver.live if pod_name(i) not in alive_api)
        with sched.lock:
            stats = sched.stats
            res.attempts = Counter(stats.attempts)
            res.scheduler_bind_failures = stats.bind_failures
            res.victims = stats.victims
            informers = list(sched.cluster.informers.values())
            res.relists = sum(inf.relists for inf in informers)
            res.rewatches = sum(inf.rewatches for inf in informers)
        tally = child.call("tally")
        res.binds, res.bound_twice = tally["binds"], tally["bound_twice_count"]
        res.bind_conflicts, res.bind_failures = tally["bind_conflicts"], tally["bind_failures"]
        res.api_requests = tally["requests"]
        if res.bound_twice:
            res.problems.append(f"{res.bound_twice} pods bound twice (successful binding POSTs), e.g. "
                                f"{tally['bound_twice'][0]}")
        departed = res.departed_bound + res.departed_pending + res.evicted + res.departed_unknown
        if res.arrivals != departed + len(driver.live):
            res.problems.append(f"arrivals {res.arrivals} != departed {departed} + alive {len(driver.live)}")
        if len(driver.live) != len(pods) + sum(1 for i in driver.live if pod_name(i) not in alive_api):
            res.problems.append("the driver's pods do not match the API server's")
        bound_once = res.departed_bound + res.evicted + res.preempted + res.running
        if not bound_once <= res.binds <= bound_once + res.departed_unknown:
            res.problems.append(f"binds {res.binds} != departed bound {res.departed_bound} + evicted {res.evicted} + "
                                f"preempted {res.preempted} + running {res.running} (+ up to "
                                f"{res.departed_unknown} departed, bound or not)")
        sched.stop()
        sched = None
    except KubeschedError as e:  # an invariant violation (raised by stop), a failed driver request
        res.problems.append(str(e))
    finally:
        if sched is not None:
            with contextlib.suppress(KubeschedError):
                sched.stop()
        client.close()
        admin.close()
        child.close()
    g = res.growth
    if growth_limit is not None and g is not None and g >= growth_limit and res.baseline is not None:
        res.problems.append(f"the scheduler's RSS grew {g:.1%} from {res.baseline.fraction:.0%} to 100% of the "
                            f"arrivals ({_mib(res.baseline.rss)} -> {_mib(res.checkpoints[-1].rss)}): limit "
                            f"{growth_limit:.0%}")
    return res


def _growth_baseline(res: SoakLiveResult) -> None:
    """The first sample past the warm-up (10 % of the arrivals) and the event cache's horizon
    (an event stays up to twice the finish time)."""
    finish = live_cluster.EVENT_FINISH_TIME
    horizon = 2 * finish + 30.0
    ten = next((c for c in res.checkpoints if c.fraction == 0.1), None)
    for c in [*res.samples, *res.checkpoints]:
        if c.fraction >= 0.1 and c.wall >= horizon and c.fraction < 1.0:
            res.baseline = c
            return
    res.baseline = ten
    if ten is not None:
        res.baseline_note = (f"the run is shorter than the event broadcaster's cache ({finish:.0f} s, kept up to "
                             "twice that): the growth includes its filling")


if __name__ == "__main__":  # pragma: no cover - the child of run_soak_live
    serve()
