"""Instructions a restarted ``kubesched run`` executes by its first bind, counted by valgrind's
callgrind: a figure that does not follow the machine's speed, where times do (see
scripts/machine_speed.py), so two versions compare on a machine whose speed wanders.

    python scripts/restart_instructions.py /path/to/venv-a/bin/kubesched /path/to/venv-b/bin/kubesched

Each executable (a regular install: ``pip install .`` into a venv, then ``python -m
kubesched._code_cache`` as deploy/Containerfile does) is started under callgrind against one
local API server (200 nodes, 1000 pending pods, as ``kubesched bench --workload restart``);
callgrind dumps its counts the moment the server has the first ``pods/binding`` (callgrind_control
-d), then the process is killed. All the process's threads count; the API server, another process,
does not. Needs valgrind (Debian's package); a start takes ~30 s under it.
"""

from __future__ import annotations

import argparse
import glob
import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("executables", nargs="+", help="installed kubesched executables")
    ap.add_argument("--starts", type=int, default=2, help="starts of each (default 2)")
    ap.add_argument("--nodes", type=int, default=200)
    ap.add_argument("--pods", type=int, default=1000)
    args = ap.parse_args()

    from kubesched import bench_restart as br

    cluster = br._Cluster(args.nodes, args.pods)  # noqa: SLF001 - the bench's own cluster
    work = Path(tempfile.mkdtemp())
    kubeconfig = cluster.kubeconfig(work / "kubeconfig")
    # The installed package is what runs, not a checkout on PYTHONPATH.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE")}
    try:
        for n, exe in enumerate(args.executables):
            counts = []
            for i in range(args.starts):
                cluster.top_up()
                before = cluster.api.bound()
                out = work / f"callgrind.{n}.{i}"
                proc = subprocess.Popen(
                    ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}.%p", "--dump-instr=no", exe,
                     *br._run_args(kubeconfig, leader_elect=False)],  # noqa: SLF001
                    env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                deadline = time.monotonic() + 600
                while cluster.api.bound() == before and time.monotonic() < deadline and proc.poll() is None:
                    time.sleep(0.002)
                subprocess.run(["callgrind_control", "-d", str(proc.pid)], capture_output=True, check=False)
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                counts.append(_total(sorted(glob.glob(f"{out}.{proc.pid}.*"))))
            shown = " ".join("?" if c is None else f"{c / 1e6:.0f}" for c in counts)
            print(f"{exe}: {shown} M instructions by the first bind")
    finally:
        cluster.close()


def _total(dumps: list[str]) -> int | None:
    """The event total a callgrind dump file records (its ``summary:`` or ``totals:`` line)."""
    for dump in dumps:
        with open(dump) as f:
            for line in f:
                if line.startswith(("summary:", "totals:")):
                    return int(line.split()[1])
    return None


if __name__ == "__main__":
    main()
