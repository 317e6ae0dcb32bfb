"""``kubesched bench --workload restart``: how long a SIGKILLed ``kubesched run`` takes, once
started again, to bind a pod (issue 21 item 3: a failover's cost is the new process's time to
its first bind; kube-scheduler takes a few tens of milliseconds).

- The cluster: the local API server (kubesched.testing.apiserver) in a child process, with
  ``--nodes`` nodes (default 200) and ``--pods`` pending pods (default 1000) of the default
  profile's schedulerName, created before any scheduler starts. Before every start the pending
  pods are topped up to that number (the previous process bound some).
- Each start is the real command as a deployment runs it: ``kubesched run
  --kubeconfig=<a kubeconfig naming the API server> --secure-port=<a free port>`` (health and
  metrics served, events written) as a child process -- the ``kubesched`` executable that
  installing the package puts beside the interpreter (deploy/Containerfile's ENTRYPOINT), or
  ``python -m kubesched`` where there is none (a source tree on PYTHONPATH; ``python -m`` costs
  ~30 ms more: runpy, and the module found as ``__main__``); the summary names which; once the API server has seen it bind
  some pods it is killed with SIGKILL (no lease released, no binds finished) and started again.
- The time of a start: from just before the process is spawned (fork and exec included) to the
  arrival at the API server of its first successful ``pods/binding`` request. The API server
  stamps every request with ``time.monotonic()`` as it arrives; that clock (CLOCK_MONOTONIC) is
  the machine's, shared by the bench's process and the server's. The first start is reported
  apart (``cold``) from the ``restarts`` (median, min, max).
- Leader election: ``kubesched run`` elects a leader by default, as kube-scheduler does
  (``--leader-elect=true``, lease ``kube-system/kube-scheduler``, 15 s). A new process has a new
  identity (``<hostname>_<uuid>``), so after a SIGKILL it waits, as kube-scheduler's does, until
  the dead leader's lease has not been renewed for leaseDuration. The primary figures are
  therefore measured with ``--leader-elect=false`` (the process's own start), and one cold start
  and one restart with the default leader election are measured after them
  (``leader_election``): the restart shows the lease's wait.
- Bytecode: a deployed kubesched is installed with its modules compiled (``pip install``
  writes the ``.pyc`` files) and its start-up code cache written (deploy/Containerfile runs
  ``python -m kubesched._code_cache``); the bench does both before the first start, lets
  the children read them (it drops PYTHONDONTWRITEBYTECODE from their environment), and says
  whether they were cached.
"""

from __future__ import annotations

import compileall
import contextlib
import importlib.util
import os
import shutil
import signal
import socket
import statistics
import subprocess as sp
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kubesched
from kubesched.bench_live import _Api, _node, _pod
from kubesched.cluster.live import ApiClient, ClusterConfig
from kubesched.errors import KubeschedError

DEFAULT_NODES = 200
DEFAULT_PODS = 1000
DEFAULT_RESTARTS = 5
BIND_TIMEOUT = 60.0  # s a start may take to bind its first pod before the bench gives up on it
LINGER = 0.3  # s a started scheduler keeps binding after its first bind before it is killed
POLL = 0.02  # s between two looks at the API server's bound count
SCHEDULER_UA = "kubesched"  # kubesched run's User-Agent


@dataclass(frozen=True, slots=True)
class Start:
    """One start of ``kubesched run``: seconds from spawn to its first bind (None: none within
    the timeout), how many pods it bound before it was killed, and the CPU seconds it had used
    when the bench saw its first bind (at most :data:`POLL` s after it; None where the system
    does not tell): well below ``seconds`` when the machine was busy."""

    seconds: float | None
    bound: int
    leader_elect: bool
    cpu_seconds: float | None = None


@dataclass(slots=True)
class RestartBenchResult:
    nodes: int
    pods: int
    cold: Start | None = None
    restarts: list[Start] = field(default_factory=list)
    election_cold: Start | None = None
    election_restart: Start | None = None
    bytecode_cached: bool = False
    problems: list[str] = field(default_factory=list)
    workload: str = "restart"
    command: str = "kubesched"  # what was started: the installed executable or `python -m kubesched`

    @property
    def ok(self) -> bool:
        return not self.problems

    def _times(self) -> list[float]:
        return [s.seconds for s in self.restarts if s.seconds is not None]

    @property
    def median(self) -> float | None:
        times = self._times()
        return statistics.median(times) if times else None

    def as_dict(self) -> dict[str, Any]:
        def rounded(x: float | None) -> float | None:
            return None if x is None else round(x, 3)

        def start(s: Start | None) -> dict[str, Any] | None:
            return None if s is None else {"seconds": rounded(s.seconds), "bound": s.bound,
                                           "leader_elect": s.leader_elect, "cpu_seconds": rounded(s.cpu_seconds)}

        times = self._times()
        return {"workload": self.workload, "nodes": self.nodes, "pods": self.pods,
                "cold_seconds": rounded(self.cold.seconds if self.cold else None),
                "restart_seconds": [rounded(s.seconds) for s in self.restarts],
                "restart_median_seconds": rounded(self.median),
                "restart_min_seconds": rounded(min(times)) if times else None,
                "restart_max_seconds": rounded(max(times)) if times else None,
                "starts": [start(s) for s in (self.cold, *self.restarts)],
                "leader_election": {"cold": start(self.election_cold), "restart": start(self.election_restart)},
                "bytecode_cached": self.bytecode_cached, "command": self.command, "problems": self.problems}

    def summary(self) -> str:
        def secs(s: Start | None) -> str:
            return "not measured" if s is None else "no bind" if s.seconds is None else f"{s.seconds:.3f} s"

        times = self._times()
        cpu = [s.cpu_seconds for s in self.restarts if s.cpu_seconds is not None]
        lines = [f"workload=restart nodes={self.nodes} pods={self.pods} pending at every start (local API server; "
                 f"`{self.command} run` SIGKILLed once it binds, then started again)"]
        if times:
            lines.append(f"restart to first bind (--leader-elect=false): median {statistics.median(times):.3f} s "
                         f"(min {min(times):.3f}, max {max(times):.3f}) over {len(times)} restarts; "
                         f"cold start {secs(self.cold)}")
            if cpu:
                lines.append(f"CPU used by then (median): {statistics.median(cpu):.3f} s")
        else:
            lines.append(f"restart to first bind: no restart bound a pod; cold start {secs(self.cold)}")
        if self.election_cold is not None or self.election_restart is not None:
            lines.append(f"with leader election (the default): cold start {secs(self.election_cold)}, restart "
                         f"{secs(self.election_restart)} (the SIGKILLed leader's lease must expire first, as for "
                         "kube-scheduler: leaseDuration 15 s)")
        lines.append("bytecode: " + ("modules, dataclass methods and regular expressions compiled and cached, "
                                     "as installed" if self.bytecode_cached
                                     else "not cached (every start compiles the modules)"))
        return "\n".join(lines)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _kubeconfig(path: Path, server: str) -> None:
    path.write_text(f"""apiVersion: v1
kind: Config
clusters:
- name: bench
  cluster:
    server: {server}
users:
- name: bench
  user: {{}}
contexts:
- name: bench
  context:
    cluster: bench
    user: bench
current-context: bench
""", encoding="utf-8")


def _compile_package() -> bool:
    """Byte-compile the kubesched package where it is installed (as ``pip install`` does) and
    write its start-up code cache (as deploy/Containerfile does: kubesched._code_cache);
    say whether both are cached now (False: not writable, or the interpreter caches no bytecode)."""
    package = Path(kubesched.__file__).parent
    with contextlib.suppress(OSError):
        compileall.compile_dir(str(package), quiet=2, workers=1)
    # It prints where it wrote the cache, and exits non-zero when it could not.
    written = sp.run([sys.executable, "-m", "kubesched._code_cache"], env=_child_env(), stdin=sp.DEVNULL,
                     capture_output=True, check=False).returncode == 0
    probe = package / "live" / "runner.py"
    try:
        cached = Path(importlib.util.cache_from_source(str(probe)))
        return written and cached.stat().st_mtime >= probe.stat().st_mtime
    except (NotImplementedError, OSError):
        return False


class _Cluster:
    """The API server child, its pods kept topped up, and the request log's bindings."""

    def __init__(self, num_nodes: int, num_pods: int) -> None:
        self.api = _Api(subprocess=True)
        self.admin = ApiClient(ClusterConfig(server=self.api.url), qps=0, check_calls=False,
                               user_agent="kubesched-bench")
        self.num_pods = num_pods
        self.created = 0
        for i in range(num_nodes):
            self.admin.request("create", "nodes", body=_node(i))
        self.top_up()

    def top_up(self) -> None:
        """Create pods until ``num_pods`` are pending."""
        pending = self.created - self.api.bound()
        for _ in range(self.num_pods - pending):
            self.admin.request("create", "pods", namespace="default", body=_pod(self.created))
            self.created += 1

    def kubeconfig(self, path: Path) -> Path:
        """Write a kubeconfig for the API server at ``path`` (returned)."""
        _kubeconfig(path, self.api.url)
        return path

    def first_bind_since(self, since: float) -> float | None:
        """The arrival (time.monotonic) of the first successful binding after ``since``."""
        times = [r["at"] for r in self.api.requests()
                 if (r["verb"], r["resource"], r["subresource"], r["code"]) == ("create", "pods", "binding", 201)
                 and r.get("at", 0.0) >= since]
        return min(times) if times else None

    def close(self) -> None:
        self.admin.close()
        self.api.close()


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # read the bytecode an installed package has
    # The kubesched the bench runs (a checkout on PYTHONPATH, or the installed one).
    root = str(Path(kubesched.__file__).parent.parent)
    env["PYTHONPATH"] = os.pathsep.join([root, *(p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p)])
    for var in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"):
        env.pop(var, None)
    return env


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of process ``pid`` so far (Linux's /proc; None elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def _command() -> list[str]:
    """How a deployment starts kubesched: the ``kubesched`` executable installed with this
    interpreter (pip writes it beside ``python`` in the environment's bin directory), else
    ``python -m kubesched`` (the package is importable without being installed)."""
    executable = Path(sys.executable).parent / "kubesched"
    if executable.is_file() and os.access(executable, os.X_OK):
        return [str(executable)]
    return [sys.executable, "-m", "kubesched"]


def _run_args(kubeconfig: Path, *, leader_elect: bool) -> list[str]:
    """``kubesched run``'s arguments against the bench's API server: its kubeconfig, a free port
    for serving, leader election on or off."""
    return ["run", f"--kubeconfig={kubeconfig}", f"--secure-port={_free_port()}",
            f"--leader-elect={'true' if leader_elect else 'false'}"]


def _start(cluster: _Cluster, kubeconfig: Path, logs: Path, index: int, *, leader_elect: bool,
           timeout: float, problems: list[str], command: list[str]) -> Start:
    """Start ``kubesched run``, wait for its first bind, let it bind a little more, SIGKILL it."""
    cluster.top_up()
    bound_before = cluster.api.bound()
    log_path = logs / f"start-{index}.log"
    argv = [*command, *_run_args(kubeconfig, leader_elect=leader_elect)]
    with open(log_path, "wb") as log:
        spawned = time.monotonic()
        proc = sp.Popen(argv, stdin=sp.DEVNULL, stdout=log, stderr=sp.STDOUT, env=_child_env())
    try:
        deadline = spawned + timeout
        bound = bound_before
        cpu = None
        while time.monotonic() < deadline and proc.poll() is None:
            bound = cluster.api.bound()
            if bound > bound_before:
                cpu = _cpu_seconds(proc.pid)
                break
            time.sleep(POLL)
        if bound > bound_before:
            time.sleep(LINGER)
    finally:
        exited = proc.poll()
        if exited is None:
            proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    first = cluster.first_bind_since(spawned)
    bound = cluster.api.bound() - bound_before
    if first is None:
        tail = log_path.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-3:]
        why = f"exited with {exited}" if exited is not None else f"bound nothing within {timeout:.0f} s"
        problems.append(f"start {index} ({' '.join(argv[len(command):])}) {why}" + (f": {' / '.join(tail)}" if tail else ""))
    return Start(None if first is None else first - spawned, bound, leader_elect, cpu)


def run_restart_bench(num_nodes: int = DEFAULT_NODES, num_pods: int = DEFAULT_PODS, *,
                      restarts: int = DEFAULT_RESTARTS, leader_election: bool = True,
                      timeout: float = BIND_TIMEOUT, log_dir: str | None = None) -> RestartBenchResult:
    """A cold start and ``restarts`` SIGKILL-and-restart cycles of ``kubesched run
    --leader-elect=false``, then (``leader_election``) a cold start and a restart with the default
    leader election. ``log_dir``: keep each start's output there (``start-<n>.log``)."""
    if num_nodes < 1 or num_pods < 1 or restarts < 1:
        raise KubeschedError(f"want at least one node, one pod and one restart, got nodes={num_nodes} "
                             f"pods={num_pods} restarts={restarts}")
    command = _command()
    res = RestartBenchResult(num_nodes, num_pods, bytecode_cached=_compile_package(),
                             command="kubesched" if len(command) == 1 else "python -m kubesched")
    work = Path(tempfile.mkdtemp(prefix="kubesched-bench-restart-"))
    logs = Path(log_dir) if log_dir else work
    logs.mkdir(parents=True, exist_ok=True)
    cluster = _Cluster(num_nodes, num_pods)
    try:
        kubeconfig = cluster.kubeconfig(work / "kubeconfig")
        starts = [_start(cluster, kubeconfig, logs, i, leader_elect=False, timeout=timeout, problems=res.problems,
                         command=command) for i in range(restarts + 1)]
        res.cold, res.restarts = starts[0], starts[1:]
        if leader_election:
            # The lease's wait can take leaseDuration (15 s) + a retry period (2 s) and more.
            res.election_cold = _start(cluster, kubeconfig, logs, restarts + 1, leader_elect=True,
                                       timeout=timeout, problems=res.problems, command=command)
            res.election_restart = _start(cluster, kubeconfig, logs, restarts + 2, leader_elect=True,
                                          timeout=timeout, problems=res.problems, command=command)
        return res
    finally:
        cluster.close()
        shutil.rmtree(work, ignore_errors=True)
