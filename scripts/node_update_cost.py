"""What node status reports cost the scheduler: 5000 nodes each listing 40 images (80 names,
an image and its digest, as kubelet reports up to 50), basic pods scheduled one by one with one
node update applied to the cache before every cycle (a far denser stream than kubelet's
5-minute reports at 5000 nodes: ~17 updates/s against hundreds of cycles/s).

    python scripts/node_update_cost.py [--nodes 5000] [--pods 300] [--mode none|heartbeat|images]

- none: no node update (the baseline);
- heartbeat: the same node content again (a new object and resourceVersion: kubelet's
  periodic status report);
- images: the node's image list changes every other update (an image pulled or removed).

Prints pods/s over the scheduling and the average cost of Cache.update_node.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kubesched._cache import Cache  # noqa: E402
from kubesched._queue import QueueNominator  # noqa: E402
from kubesched.bench import basic_pods, default_scheduler  # noqa: E402
from kubesched.cluster.memory import MemoryObjects  # noqa: E402
from kubesched.objects import Node  # noqa: E402
from kubesched.objects.parse import parse_namespace, parse_node  # noqa: E402

IMAGES_PER_NODE = 40
DISTINCT_IMAGES = 400


def node(i: int, rv: int = 1, extra: int = 0) -> Node:
    images: list[dict[str, Any]] = [
        {"names": [f"registry.example/app{(i * 7 + k) % DISTINCT_IMAGES}:v1",
                   f"registry.example/app{(i * 7 + k) % DISTINCT_IMAGES}@sha256:{k:064d}"],
         "sizeBytes": 100_000_000 + k}
        for k in range(IMAGES_PER_NODE + extra)]
    cap = {"cpu": "32", "memory": "128Gi", "pods": "110"}
    return parse_node({"apiVersion": "v1", "kind": "Node",
                       "metadata": {"name": f"n{i}", "resourceVersion": str(rv),
                                    "labels": {"kubernetes.io/hostname": f"n{i}",
                                               "topology.kubernetes.io/zone": f"z{i % 3}"}},
                       "status": {"capacity": cap, "allocatable": cap, "images": images}})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=300)
    ap.add_argument("--mode", choices=("none", "heartbeat", "images"), default="heartbeat")
    args = ap.parse_args()
    n = args.nodes
    cache = Cache(n)
    cache.add_nodes([node(i) for i in range(n)])
    pods = basic_pods(args.pods)
    rng = random.Random(1)
    objects = MemoryObjects(pods=pods, namespaces=[
        parse_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})])
    sched = default_scheduler(cache, objects, QueueNominator(), rng)
    updates = [node(rng.randrange(n), rv=j + 2, extra=(j % 2 if args.mode == "images" else 0))
               for j in range(len(pods))] if args.mode != "none" else []
    spent = 0.0
    start = time.perf_counter()
    for j, pod in enumerate(pods):
        if updates:
            t = time.perf_counter()
            cache.update_node(updates[j])
            spent += time.perf_counter() - t
        a = sched.schedule_one(pod)
        if a.outcome != "Scheduled":
            raise SystemExit(f"{pod.key}: {a.message}")
    elapsed = time.perf_counter() - start
    print(f"mode={args.mode} nodes={n} images/node={IMAGES_PER_NODE} pods={len(pods)}: "
          f"{len(pods) / elapsed:.0f} pods/s, Cache.update_node {spent / max(len(pods), 1) * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
