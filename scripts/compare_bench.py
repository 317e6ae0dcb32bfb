"""Time `kubesched compare` with one worker and with one per configuration (issue 12 item 6:
the configurations' simulations are independent, so each can have a core).

The cluster is kubesched.bench's scheduler_perf node shape (cpu 4, memory 32Gi, 110 pods, three
zones), empty, with --pods pending pods of cpu 100m / memory 500Mi (SchedulingBasic's pod);
the two configurations are examples/compare's LeastAllocated and MostAllocated. Each run is a
fresh interpreter (``python -m kubesched compare ... -o json``), alternating --jobs 1 and
--jobs 2; the script checks that both give the same JSON and prints the median wall times.

    python scripts/compare_bench.py [--nodes 2000] [--pods 4000] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from capacity_bench import node_items  # scripts/ is on sys.path when a script runs

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = [ROOT / "examples" / "compare" / "leastallocated.yaml", ROOT / "examples" / "compare" / "mostallocated.yaml"]


def cluster(num_nodes: int, num_pods: int) -> dict[str, Any]:
    items = node_items(num_nodes)
    for i in range(num_pods):
        items.append({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"pod-{i}", "namespace": "default", "uid": f"uid-{i}",
                         "creationTimestamp": "2024-01-01T00:00:00Z"},
            "spec": {"containers": [{"name": "app", "image": "registry.example.com/app:1.0",
                                     "resources": {"requests": {"cpu": "100m", "memory": "500Mi"}}}]},
        })
    return {"apiVersion": "v1", "kind": "List", "items": items}


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=2000)
    ap.add_argument("--pods", type=int, default=4000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    times: dict[int, list[float]] = {1: [], 2: []}
    outputs: dict[int, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cluster.json"
        path.write_text(json.dumps(cluster(args.nodes, args.pods)))
        print(f"`kubesched compare cluster.json --config least --config most -o json`: {args.nodes} nodes, "
              f"{args.pods} pending pods, {args.runs} runs per --jobs, alternating")
        for run in range(args.runs):
            for jobs in (1, 2):
                cmd = [sys.executable, "-m", "kubesched", "compare", str(path), *(f"--config={c}" for c in CONFIGS),
                       f"--jobs={jobs}", "-o", "json"]
                start = time.perf_counter()
                proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
                elapsed = time.perf_counter() - start
                if proc.returncode != 0:
                    print(proc.stderr, file=sys.stderr)
                    return 1
                outputs[jobs] = json.loads(proc.stdout)
                times[jobs].append(elapsed)
                print(f"run {run + 1}, --jobs {jobs}: {elapsed:.2f} s", flush=True)
            if outputs[1] != outputs[2]:
                print("--jobs 1 and --jobs 2 gave different results", file=sys.stderr)
                return 1
    one, two = statistics.median(times[1]), statistics.median(times[2])
    print(f"median: --jobs 1 {one:.2f} s, --jobs 2 {two:.2f} s ({one / two:.2f}x); same result")
    return 0


if __name__ == "__main__":
    sys.exit(main())
