"""Measure the HTML report of `kubesched simulate --report` at scale.

    python scripts/report_scale.py [--nodes 5000] [--running 10000] [--pending 10000] [--out /tmp/report-5000.html]
                                   [--browser]

The cluster is bench's basic shape (nodes of 4 CPU / 32Gi / 110 pods in 3 zones), with
``--running`` pods (100m, 500Mi) bound evenly over the nodes, ``--pending`` such pods to
schedule and 5 pods of 5 CPU that fit nowhere. Prints the simulation and report times, the
page size and its split per section, and with ``--browser`` the time headless Chromium takes
to load and render the page (``--dump-dom`` after the load; Debian package ``chromium``).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kubesched.bench import basic_nodes, basic_pods, bind_spread
from kubesched.objects import ClusterObjects
from kubesched.objects.parse import parse_pod
from kubesched.timeline import TimelineSimulator
from kubesched.whatif.report import simulation_report


def cluster(nodes: int, running: int, pending: int) -> ClusterObjects:
    ns = basic_nodes(nodes)
    pods = bind_spread(basic_pods(running, "running"), ns) + basic_pods(pending)
    pods += [parse_pod({"apiVersion": "v1", "kind": "Pod",
                        "metadata": {"name": f"huge-{i}", "namespace": "default", "uid": f"huge-uid-{i}",
                                     "creationTimestamp": "2024-01-01T00:00:00Z"},
                        "spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "5"}}}]}})
             for i in range(5)]
    latest = max((p.meta.creation_timestamp or 0.0) for p in pods)
    return ClusterObjects(nodes=ns, pods=pods, latest_timestamp=latest)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--running", type=int, default=10_000)
    ap.add_argument("--pending", type=int, default=10_000)
    ap.add_argument("--out", default="/tmp/report-scale.html")
    ap.add_argument("--browser", action="store_true", help="also time headless Chromium loading the page")
    args = ap.parse_args()

    objs = cluster(args.nodes, args.running, args.pending)
    t0 = time.perf_counter()
    result = TimelineSimulator(objs, seed=1).run()
    t1 = time.perf_counter()
    report = simulation_report(objs, result, title=f"{args.nodes} nodes", subtitle="scripts/report_scale.py")
    page = report.render()
    t2 = time.perf_counter()
    Path(args.out).write_text(page, encoding="utf-8")
    data = report.data()
    attempts = next(s for s in data["sections"] if s["k"] == "attempts")
    full = sum(1 for a in attempts["items"] if "sc" in a)
    print(f"{args.nodes} nodes, {args.running} running pods, {args.pending + 5} pending pods: "
          f"{len(result.steps)} scheduling attempts")
    print(f"simulate {t1 - t0:.1f} s; report built and rendered in {t2 - t1:.1f} s")
    print(f"page: {len(page.encode()) / 1e6:.2f} MB ({args.out}); node x plugin detail for {full} of "
          f"{len(attempts['items'])} attempts")
    sizes = {"strings": len(json.dumps(data["strings"], separators=(",", ":")))}
    for s in data["sections"]:
        sizes[s["k"]] = len(json.dumps(s, separators=(",", ":")))
    print("JSON per part (MB): " + ", ".join(f"{k} {v / 1e6:.2f}" for k, v in sizes.items()))
    if args.browser:
        chromium = shutil.which("chromium") or shutil.which("chromium-browser")
        if chromium is None:
            print("no chromium: apt-get install -y chromium", file=sys.stderr)
            return 1
        with tempfile.TemporaryDirectory() as user_dir:
            t3 = time.perf_counter()
            proc = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                   "--disable-background-networking", "--disable-component-update",
                                   f"--user-data-dir={user_dir}", "--window-size=1400,2000", "--enable-logging=stderr",
                                   "--v=0", "--dump-dom", Path(args.out).resolve().as_uri()],
                                  capture_output=True, text=True, timeout=300, check=False)
            t4 = time.perf_counter()
        ready = 'data-ready="1"' in proc.stdout
        console = [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]
        print(f"chromium: loaded and rendered in {t4 - t3:.1f} s (process start included); rendered: {ready}; "
              f"console lines: {len(console)}")
        for line in console[:5]:
            print("  " + line)
        if not ready or console:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
