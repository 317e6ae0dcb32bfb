"""``kubesched bench --workload live``: end-to-end throughput of the live scheduler through
the local API server (kubesched.testing.apiserver) on 127.0.0.1.

Nodes are created through the API first (cpu 4, memory 32Gi, 110 pods, zones round-robin,
as the in-memory SchedulingBasic workload), then the live scheduler starts and syncs its
informers; the clock starts when the first measured pod is POSTed and stops when the API
server holds every pod bound. Pods are created by a separate client process while the
scheduler runs (as scheduler_perf's createPods), so creation, watch delivery, scheduling,
the bind requests and the confirming watch events all count. The API server runs in a
child process by default (a real API server is another process; sharing the GIL with the
scheduler would halve both). Afterwards it checks that every pod was bound exactly once and
that no node is over capacity.

CPU per bound pod (``cpu_ms_per_pod``, issue 12 item 4; kube-scheduler v1.30 spends about
2.5 ms): the CPU seconds (user + system) of the scheduler's process from the first pod
created until every pod is bound and the scheduler's event queue is written out (a few
milliseconds more than the pods/s window: the Scheduled events of the last pods belong to
them), divided by the pods bound. Only the scheduler is in that process during the window:
the API server and the pod creator are child processes, and the bench's own thread, which
polls the API server for the bound count (``/debug/bound``, a number, not the pods), is
subtracted by its thread CPU time. With the API server in a thread (``subprocess=False``)
its CPU cannot be told apart, and the figure is not given.
"""

from __future__ import annotations

import contextlib
import subprocess as sp
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx

from kubesched.cluster.live import ApiClient, ClusterConfig, LiveCluster, LiveOptions
from kubesched.errors import KubeschedError
from kubesched.live.runner import LiveScheduler
from kubesched.testing.apiserver import LocalApiServer

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
DEFAULT_NODES = 500
DEFAULT_PODS = 1000


@dataclass(slots=True)
class LiveBenchResult:
    nodes: int
    pods: int
    seconds: float
    bound: int
    setup_seconds: float = 0.0
    api_requests: int = 0
    cpu_seconds: float | None = None  # the scheduler process's, see the module docstring
    problems: list[str] = field(default_factory=list)
    workload: str = "live"

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def pods_per_second(self) -> float:
        return self.bound / self.seconds if self.seconds else 0.0

    @property
    def cpu_ms_per_pod(self) -> float | None:
        """The scheduler process's CPU milliseconds per bound pod (None: not measured)."""
        if self.cpu_seconds is None or not self.bound:
            return None
        return 1000.0 * self.cpu_seconds / self.bound

    def as_dict(self) -> dict[str, Any]:
        return {"workload": self.workload, "nodes": self.nodes, "pods": self.pods, "bound": self.bound,
                "seconds": round(self.seconds, 3), "pods_per_second": round(self.pods_per_second, 1),
                "setup_seconds": round(self.setup_seconds, 3), "api_requests": self.api_requests,
                "cpu_seconds": None if self.cpu_seconds is None else round(self.cpu_seconds, 3),
                "cpu_ms_per_pod": None if (cpu := self.cpu_ms_per_pod) is None else round(cpu, 3),
                "problems": self.problems}

    def summary(self) -> str:
        cpu = self.cpu_ms_per_pod
        cpu_text = (f"scheduler CPU: {cpu:.2f} ms per bound pod ({self.cpu_seconds:.2f} s)" if cpu is not None
                    else "scheduler CPU: not measured (API server in the scheduler's process)")
        return (f"workload=live nodes={self.nodes} pods={self.pods} bound={self.bound} "
                f"(local API server, {self.api_requests} API requests)\n"
                f"throughput: {self.pods_per_second:.1f} pods/s ({self.seconds:.2f} s from the first pod created "
                f"to the last bound; setup {self.setup_seconds:.2f} s)\n{cpu_text}")


def _node(i: int) -> dict[str, Any]:
    name = f"node-{i}"
    alloc = {"cpu": "4", "memory": "32Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {HOSTNAME: name, ZONE: f"zone{i % 3 + 1}"}},
            "status": {"capacity": alloc, "allocatable": alloc}}


def _pod(i: int) -> dict[str, Any]:
    res = {"cpu": "100m", "memory": "500Mi"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"pod-{i:06d}", "namespace": "default"},
            "spec": {"containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.9",
                                     "ports": [{"containerPort": 80}],
                                     "resources": {"requests": res, "limits": res}}]}}


class _Api:
    """The bench's API server: a child process (``python -m kubesched.testing``: a
    real API server is another process, and serving must not compete with the scheduler for
    the GIL), or a thread of this process."""

    def __init__(self, subprocess: bool) -> None:
        self._api: LocalApiServer | None = None
        self._proc: sp.Popen[str] | None = None
        if not subprocess:
            self._api = LocalApiServer(bookmark_interval=5.0).start()
            self.url = self._api.url
        else:
            self._proc = sp.Popen([sys.executable, "-m", "kubesched.testing"], stdin=sp.PIPE,
                                  stdout=sp.PIPE, text=True)
            assert self._proc.stdout is not None
            self.url = self._proc.stdout.readline().strip()
            if not self.url.startswith("http://127.0.0.1:"):
                self.close()
                raise KubeschedError("the bench's API server process did not start")
        self._http = httpx.Client(base_url=self.url, timeout=30.0)

    def _pods(self) -> list[dict[str, Any]]:
        if self._api is not None:
            return self._api.store.list_objects("pods")[0]
        items: list[dict[str, Any]] = self._http.get("/api/v1/pods").json()["items"]
        return items

    def bound(self) -> int:
        """How many pods are bound: a count the server makes (not a list of every pod, which at
        5000 pods 20 times a second would load the server more than the scheduler does)."""
        if self._api is not None:
            return self._api.store.count_bound_pods()
        return int(self._http.get("/debug/bound").json()["bound"])

    def placements(self) -> list[str]:
        return [(p.get("spec") or {}).get("nodeName", "") for p in self._pods()]

    def requests(self) -> list[dict[str, Any]]:
        if self._api is not None:
            return [{"verb": c.verb, "resource": c.resource, "subresource": c.subresource, "name": c.name,
                     "code": c.code} for c in self._api.calls()]
        out: list[dict[str, Any]] = self._http.get("/debug/requests").json()
        return out

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._http.close()
        if self._api is not None:
            self._api.close()
        if self._proc is not None:
            if self._proc.stdin is not None:
                with contextlib.suppress(OSError):
                    self._proc.stdin.close()
            try:
                self._proc.wait(10)
            except sp.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(5)
            if self._proc.stdout is not None:
                self._proc.stdout.close()


class _Creator:
    """The pod creator: a child process (``python -c ... create_pods_main``) that POSTs the
    pods one after the other, as fast as the API server takes them, once told to start, so
    that its CPU is not the scheduler's. It prints ``ready`` when connected, then one
    ``error: ...`` line per failure, and exits when done."""

    def __init__(self, url: str, num_pods: int) -> None:
        self._proc = sp.Popen([sys.executable, "-c", "from kubesched.bench_live import create_pods_main; "
                               "create_pods_main()", url, str(num_pods)], stdin=sp.PIPE, stdout=sp.PIPE, text=True)
        assert self._proc.stdout is not None
        if self._proc.stdout.readline().strip() != "ready":
            self.close()
            raise KubeschedError("the bench's pod creator process did not start")
        self._errors: list[str] | None = None

    def go(self) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.write("go\n")
        self._proc.stdin.flush()

    def running(self) -> bool:
        return self._proc.poll() is None

    def errors(self) -> list[str]:
        """What failed (nothing while it runs)."""
        if self._errors is None:
            if self.running():
                return []
            assert self._proc.stdout is not None
            self._errors = [line.strip()[len("error: "):] for line in self._proc.stdout if line.startswith("error: ")]
            if self._proc.returncode and not self._errors:
                self._errors.append(f"the pod creator process exited with {self._proc.returncode}")
        return self._errors

    def close(self) -> None:
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.wait(5)
        for f in (self._proc.stdin, self._proc.stdout):
            if f is not None:
                with contextlib.suppress(OSError):
                    f.close()


def create_pods_main() -> None:
    """The pod creator process (:class:`_Creator`): ``argv``: the API server's URL, the
    number of pods."""
    url, num_pods = sys.argv[1], int(sys.argv[2])
    with ApiClient(ClusterConfig(server=url), qps=0, check_calls=False, user_agent="kubesched-bench") as admin:
        print("ready", flush=True)
        if sys.stdin.readline().strip() != "go":
            return
        try:
            for i in range(num_pods):
                admin.request("create", "pods", namespace="default", body=_pod(i))
        except KubeschedError as e:
            print(f"error: {e}", flush=True)


def _cpu_seconds() -> float:
    """This process's CPU seconds (user + system, every thread)."""
    return time.process_time()


def run_live_bench(num_nodes: int = DEFAULT_NODES, num_pods: int = DEFAULT_PODS, *, seed: int = 1,
                   timeout: float = 600.0, qps: float = 5000.0, burst: int = 5000,
                   subprocess: bool = True) -> LiveBenchResult:
    """Create ``num_nodes`` nodes, start the live scheduler, create ``num_pods`` pods and
    time until all are bound (and measure the scheduler's CPU meanwhile: see the module
    docstring). ``qps``/``burst``: the scheduler's client rate limit (scheduler_perf raises
    it likewise; kube-scheduler's default 50/100 would cap binds). ``subprocess``: serve the
    API from a child process (as a real API server is another process), else from a thread
    of this one."""
    if num_nodes < 1 or num_pods < 0:
        raise KubeschedError(f"want at least one node and no negative pod count, got nodes={num_nodes} "
                             f"pods={num_pods}")
    t_setup = time.perf_counter()
    api = _Api(subprocess)
    admin = ApiClient(ClusterConfig(server=api.url), qps=0, check_calls=False, user_agent="kubesched-bench")
    client = ApiClient(ClusterConfig(server=api.url), qps=qps, burst=burst)
    sched: LiveScheduler | None = None
    creator: _Creator | None = None
    try:
        for i in range(num_nodes):
            admin.request("create", "nodes", body=_node(i))
        creator = _Creator(api.url, num_pods)
        cluster = LiveCluster(client, options=LiveOptions())
        sched = LiveScheduler(None, cluster, seed=seed)
        sched.start_loop()
        setup = time.perf_counter() - t_setup

        t0 = time.perf_counter()
        cpu0, own0 = _cpu_seconds(), time.thread_time()
        creator.go()
        deadline = time.monotonic() + timeout
        bound = 0
        while time.monotonic() < deadline and not creator.errors():
            created = not creator.running()
            bound = api.bound()
            if bound >= num_pods and created:
                break
            time.sleep(0.05)
        elapsed = time.perf_counter() - t0
        if cluster.events is not None:
            cluster.events.flush(10.0)
        cpu = (_cpu_seconds() - cpu0) - (time.thread_time() - own0)
        sched.stop()
        sched = None
        errors = creator.errors()
        requests = api.requests()
        res = LiveBenchResult(num_nodes, num_pods, elapsed, bound, setup, len(requests),
                              cpu_seconds=cpu if subprocess else None)
        res.problems.extend(errors)
        if bound < num_pods:
            res.problems.append(f"{num_pods - bound} pods not bound within {timeout:.0f} s")
        binds = Counter(r["name"] for r in requests
                        if (r["verb"], r["resource"], r["subresource"], r["code"]) == ("create", "pods", "binding", 201))
        twice = [k for k, n in binds.items() if n > 1]
        if twice:
            res.problems.append(f"{len(twice)} pods bound more than once (e.g. {twice[0]})")
        per_node = Counter(api.placements())
        over = [n for n, k in per_node.items() if n and k > 40]  # 4 cpu / 100m
        if over:
            res.problems.append(f"node {over[0]} is over capacity")
        return res
    finally:
        if sched is not None:
            sched.stop()
        if creator is not None:
            creator.close()
        client.close()
        admin.close()
        api.close()
