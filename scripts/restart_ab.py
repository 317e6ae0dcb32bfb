"""Restart to first bind, two (or more) source trees side by side: starts of ``kubesched run``
alternate between the trees against one local API server (200 nodes, 1000 pending pods, as
``kubesched bench --workload restart``), so that a slow moment of the machine hits every tree
alike. How a change to the start path is judged on a machine whose speed wanders.

    git worktree add /tmp/before HEAD~3
    python scripts/restart_ab.py --rounds 12 /tmp/before .

Each tree runs with ``PYTHONPATH=<tree>`` and ``cwd=<tree>`` (its bytecode and start-up code
cache written first, as an installed package has them); the first round warms the page cache and
is not counted. Prints each tree's median and minimum time from spawn to the first
``pods/binding`` at the server, and the process's CPU by then.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trees", nargs="+", help="source trees (each holding a kubesched package)")
    ap.add_argument("--rounds", type=int, default=10, help="starts of each tree (default 10)")
    ap.add_argument("--nodes", type=int, default=200)
    ap.add_argument("--pods", type=int, default=1000)
    args = ap.parse_args()
    trees = [str(Path(t).resolve()) for t in args.trees]
    for t in trees:
        env = dict(os.environ, PYTHONPATH=t)
        subprocess.run([sys.executable, "-m", "compileall", "-q", f"{t}/kubesched"], env=env, cwd=t, check=True)
        # The tree's start-up code cache (kubesched._code_cache; _dataclass_code in older trees).
        cache = "_code_cache" if Path(t, "kubesched", "_code_cache.py").exists() else "_dataclass_code"
        subprocess.run([sys.executable, "-m", f"kubesched.{cache}"], env=env, cwd=t, check=True,
                       stdout=subprocess.DEVNULL)

    from kubesched import bench_restart as br

    cluster = br._Cluster(args.nodes, args.pods)  # noqa: SLF001 - the bench's own cluster
    work = Path(tempfile.mkdtemp())
    kubeconfig = cluster.kubeconfig(work / "kubeconfig")
    took: dict[str, list[float]] = {t: [] for t in trees}
    cpu: dict[str, list[float]] = {t: [] for t in trees}
    try:
        for r in range(args.rounds + 1):
            for t in (trees if r % 2 == 0 else trees[::-1]):
                cluster.top_up()
                before = cluster.api.bound()
                env = br._child_env()  # noqa: SLF001
                env["PYTHONPATH"] = t
                argv = [sys.executable, "-m", "kubesched", *br._run_args(kubeconfig, leader_elect=False)]  # noqa: SLF001
                spawned = time.monotonic()
                with open(work / "log", "wb") as log:
                    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                            env=env, cwd=t)
                    while cluster.api.bound() == before and time.monotonic() < spawned + 60:
                        time.sleep(0.005)
                    used = br._cpu_seconds(proc.pid)  # noqa: SLF001
                    proc.send_signal(signal.SIGKILL)
                    proc.wait()
                first = cluster.first_bind_since(spawned)
                if first is None:
                    raise SystemExit(f"{t}: no bind within 60 s (see {work / 'log'})")
                if r > 0:
                    took[t].append(first - spawned)
                    if used is not None:
                        cpu[t].append(used)
    finally:
        cluster.close()
    for t in trees:
        times = took[t]
        print(f"{t}: median {statistics.median(times):.3f} s, min {min(times):.3f} s, CPU by the first bind "
              f"{statistics.median(cpu[t]) if cpu[t] else float('nan'):.3f} s  "
              f"[{' '.join(f'{x:.3f}' for x in times)}]")


if __name__ == "__main__":
    main()
