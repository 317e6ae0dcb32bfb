"""Time `kubesched capacity` end to end on a generated 5000-node cluster.

The cluster is kubesched.bench's scheduler_perf node shape (cpu 4, memory 32Gi, 110 pods, three
zones, hostname labels), each node already running one pod of cpu 3 and memory 4Gi; the
template asks cpu 1 and memory 2Gi, so exactly one copy fits per node: the answer must be
--nodes copies, one on every node, stopped by "0/N nodes are available: N Insufficient cpu."

The cluster and the template are written as a List dump (JSON, which the loader reads as
YAML) to a temporary directory, and the command runs in a fresh interpreter
(``python -m kubesched.cli capacity ... -o json``): the figure includes start-up, reading and
admitting the dump, one scheduling cycle per copy plus the final failing one over every node.

    python scripts/capacity_bench.py [--nodes 5000] [--runs 1]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from kubesched.bench import basic_nodes

RUNNING_CPU, RUNNING_MEMORY = "3", "4Gi"
TEMPLATE = {
    "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
    "spec": {"containers": [{"name": "web", "image": "registry.example.com/web:1.0",
                             "resources": {"requests": {"cpu": "1", "memory": "2Gi"}}}]},
}


def node_items(num_nodes: int) -> list[dict[str, Any]]:
    """kubesched.bench's scheduler_perf nodes as the Node manifests of a dump."""
    return [{"apiVersion": "v1", "kind": "Node", **{k: v for k, v in node.raw.items() if k not in ("apiVersion", "kind")}}
            for node in basic_nodes(num_nodes)]


def cluster_dump(num_nodes: int) -> dict[str, Any]:
    """A `kubectl get -A -o yaml`-shaped List: the bench nodes and one running pod per node."""
    items = node_items(num_nodes)
    for i in range(num_nodes):
        items.append({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"running-{i}", "namespace": "default", "uid": f"running-uid-{i}",
                         "creationTimestamp": "2024-01-01T00:00:00Z"},
            "spec": {"nodeName": f"node-{i}", "containers": [
                {"name": "app", "image": "registry.example.com/app:1.0",
                 "resources": {"requests": {"cpu": RUNNING_CPU, "memory": RUNNING_MEMORY}}}]},
            "status": {"phase": "Running"},
        })
    return {"apiVersion": "v1", "kind": "List", "items": items}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--runs", type=int, default=1)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cluster = Path(tmp) / "cluster.json"
        template = Path(tmp) / "web.json"
        cluster.write_text(json.dumps(cluster_dump(args.nodes)))
        template.write_text(json.dumps(TEMPLATE))
        cmd = [sys.executable, "-m", "kubesched.cli", "capacity", str(cluster), "--pod", str(template), "-o", "json"]
        print(f"timing `kubesched capacity cluster.json --pod web.json -o json` in a fresh interpreter "
              f"({args.nodes} nodes, {args.nodes} running pods)")
        for run in range(args.runs):
            start = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
            elapsed = time.perf_counter() - start
            if proc.returncode != 0:
                print(proc.stderr, file=sys.stderr)
                return 1
            out = json.loads(proc.stdout)
            expected = f"0/{args.nodes} nodes are available: {args.nodes} Insufficient cpu."
            per_node = out["templates"][0]["replicasOnNodes"]
            ok = (out["total"] == args.nodes and out["stop"]["message"] == expected
                  and len(per_node) == args.nodes and set(per_node.values()) == {1})
            print(f"run {run + 1}: {out['total']} copies in {elapsed:.1f} s end to end "
                  f"({out['attempts']} scheduling cycles; stop: {out['stop']['message'][:60]})"
                  + ("" if ok else "  <-- WRONG ANSWER"))
            if not ok:
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
