"""kube-scheduler v1.30 (Go) against ``kubesched bench --kube-version 1.30``, on the same objects.

The Go side is bench/kube-scheduler/harness.go with v1.30/kube.go or v1.36/kube.go (see its
README.md for building it): the real
kube-scheduler in-process over a fake clientset. This script

- dumps a workload of kubesched/bench.py to the JSON that harness reads, built with the bench's
  own setup functions and the same default sizes as ``kubesched bench`` (``--dump FILE``);
- runs both sides alternately (Go, kubesched, Go, ...), ``--runs`` each per workload, with
  scripts/machine_speed.py before and after each workload, and prints every run, the medians
  and their ratio (``--go-binary PATH``);
- builds the Go harness in an exported microshift tree (``--build TREE --go PATH``).

kube-scheduler's figure is pods per second of wall time for basic, unschedulable and mixed (its
queue never waits), and pods per second of its busy time for preemption and preemption-pdb,
where its wall time waits on real backoff: the time its scheduling loop spent between taking a
pod from the queue and asking for the next one (its waits in the queue left out; see harness.go).
Its wall figure and the sum of its ``scheduler_scheduling_attempt_duration_seconds`` are
printed beside.

    python scripts/kube_scheduler_bench.py --dump /tmp/basic.json --workload basic
    python scripts/kube_scheduler_bench.py --go-binary /work/gobuild/kschedbench \\
        --workload basic --workload preemption --runs 3 [--json-out results.json]
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kubesched import bench
from kubesched.objects import Node, ObjectMeta, Pod, PodDisruptionBudget, Service
from kubesched.objects import Workload as WorkloadObject

ROOT = Path(__file__).resolve().parent.parent
HARNESS = ROOT / "bench" / "kube-scheduler"  # harness.go, shared, and v<release>/kube.go
WORKLOADS = ("basic", "preemption", "preemption-pdb", "unschedulable", "mixed")
PREEMPTION = ("preemption", "preemption-pdb")
GO_ENV = {"GOTOOLCHAIN": "local", "GOFLAGS": "-mod=vendor", "GOPROXY": "off"}


# ----------------------------------------------------------------------------- manifests
def _timestamp(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _metadata(meta: ObjectMeta, raw: Any) -> dict[str, Any]:
    """The object's metadata as the parsed object has it (bench helpers change labels, owners and
    creation times on the parsed object, not always in ``raw``), over what ``raw`` holds."""
    out: dict[str, Any] = copy.deepcopy(dict(raw)) if isinstance(raw, Mapping) else {}
    out["name"] = meta.name
    if meta.namespace:
        out["namespace"] = meta.namespace
    if meta.uid:
        out["uid"] = meta.uid
    out.pop("labels", None)
    if meta.labels:
        out["labels"] = dict(meta.labels)
    if meta.annotations:
        out["annotations"] = dict(meta.annotations)
    if meta.creation_timestamp is not None:
        out["creationTimestamp"] = _timestamp(meta.creation_timestamp)
    if meta.owner_references:
        out["ownerReferences"] = [{"apiVersion": r.api_version, "kind": r.kind, "name": r.name, "uid": r.uid,
                                   "controller": r.controller} for r in meta.owner_references]
    return out


def pod_manifest(p: Pod) -> dict[str, Any]:
    """The pod as the API server would store it: spec.nodeName for a running pod, spec.priority
    (Priority admission), spec.schedulerName (defaulting), status.phase."""
    spec: dict[str, Any] = copy.deepcopy(dict(p.raw.get("spec") or {}))
    if p.node_name:
        spec["nodeName"] = p.node_name
    spec["schedulerName"] = p.scheduler_name or "default-scheduler"
    spec["priority"] = p.priority
    return {"apiVersion": "v1", "kind": "Pod", "metadata": _metadata(p.meta, p.raw.get("metadata")), "spec": spec,
            "status": {"phase": p.phase}}


def node_manifest(n: Node) -> dict[str, Any]:
    """The node with status.allocatable defaulted to its capacity (SetDefaults_NodeStatus), as
    kubesched's parser does."""
    raw = n.raw
    status: dict[str, Any] = copy.deepcopy(dict(raw.get("status") or {}))
    if status.get("allocatable") is None and status.get("capacity") is not None:
        status["allocatable"] = dict(status["capacity"])
    return {"apiVersion": "v1", "kind": "Node", "metadata": _metadata(n.meta, raw.get("metadata")),
            "spec": copy.deepcopy(dict(raw.get("spec") or {})), "status": status}


def _raw_manifest(obj: PodDisruptionBudget | Service | WorkloadObject, api_version: str,
                  kind: str) -> dict[str, Any]:
    out: dict[str, Any] = copy.deepcopy(dict(obj.raw))
    out.update(apiVersion=api_version, kind=kind, metadata=_metadata(obj.meta, obj.raw.get("metadata")))
    return out


def _namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


# ----------------------------------------------------------------------------- workloads
def _preemption_objects(num_nodes: int | None, num_pods: int | None, num_init: int | None,
                        pdbs: bool) -> tuple[bench.Setup, list[PodDisruptionBudget]]:
    """run_preemption_bench's objects, its default sizes."""
    num_nodes = bench.PREEMPTION_NODES if num_nodes is None else num_nodes
    num_pods = bench.PREEMPTION_PODS if num_pods is None else num_pods
    num_init = bench.PREEMPTION_INIT_PODS if num_init is None else num_init
    return bench.preemption_setup(num_nodes, num_pods, num_init, pdbs=pdbs)


def workload_objects(workload: str, num_nodes: int | None = None, num_pods: int | None = None,
                     init_pods: int | None = None) -> dict[str, Any]:
    """The workload's objects as the Go harness reads them, sizes defaulting as in ``kubesched bench``."""
    budgets: list[PodDisruptionBudget] = []
    if workload in PREEMPTION:
        setup, budgets = _preemption_objects(num_nodes, num_pods, init_pods, workload == "preemption-pdb")
    else:
        w = bench.WORKLOADS.get(workload)
        if w is None:
            raise SystemExit(f"unknown workload {workload!r}: want one of {', '.join(WORKLOADS)}")
        setup = w.setup(w.nodes if num_nodes is None else num_nodes, w.pods if num_pods is None else num_pods,
                        w.init_pods if init_pods is None else init_pods)
    expect: dict[str, int] = {}
    nodes, running, measured = len(setup.nodes), len(setup.running), len(setup.measured)
    if workload in PREEMPTION and running == 4 * nodes and measured <= nodes:
        # Every node holds 4 low-priority pods of 900m; a preemptor (3 cpu) evicts 3 of them.
        expect["victims"] = 3 * measured
        if workload == "preemption-pdb":
            unprotected = nodes // 2
            expect["protected_victims"] = 3 * max(0, measured - unprotected)
    return {
        "workload": workload,
        "namespaces": [_namespace(ns) for ns in dict.fromkeys(("default", *setup.namespaces))],
        "nodes": [node_manifest(n) for n in setup.nodes],
        "running": [pod_manifest(p) for p in setup.running],
        "pending": [pod_manifest(p) for p in setup.measured],
        "unschedulable": sorted(setup.unschedulable),
        "pdbs": [_raw_manifest(b, "policy/v1", "PodDisruptionBudget") for b in budgets],
        "services": [_raw_manifest(s, "v1", "Service") for s in setup.services],
        "replicasets": [_raw_manifest(w, "apps/v1", "ReplicaSet") for w in setup.workloads if w.kind == "ReplicaSet"],
        "priorityClasses": [],
        "expect": expect,
    }


def dump(workload: str, path: Path, num_nodes: int | None = None, num_pods: int | None = None,
         init_pods: int | None = None) -> dict[str, Any]:
    doc = workload_objects(workload, num_nodes, num_pods, init_pods)
    path.write_text(json.dumps(doc, separators=(",", ":")))
    return doc


# ----------------------------------------------------------------------------- runs
@dataclasses.dataclass
class Run:
    side: str  # "kube-scheduler" or "kubesched"
    at: str  # UTC time the run started
    figure: float  # pods/s (kube-scheduler on preemption: per busy second)
    detail: dict[str, Any]

    def line(self) -> str:
        d = self.detail
        if self.side == "kubesched":
            extra = f"bound {d.get('bound')}, {d.get('seconds')} s"
            if "victims" in d:
                extra += f", victims {d['victims']}, attempts {d.get('attempts')}"
        else:
            extra = (f"bound {d.get('bound')}, wall {d.get('wall_seconds', 0):.2f} s = {d.get('pods_per_second', 0):.0f}"
                     f" pods/s, busy {d.get('busy_seconds', 0):.2f} s = {d.get('pods_per_busy_second', 0):.0f}, attempt "
                     f"sum {d.get('attempt_seconds_sum', 0):.2f} s = {d.get('pods_per_attempt_second', 0):.0f}, "
                     f"attempts {d.get('attempts')}, victims {d.get('victims_deleted')}")
            if d.get("timed_out"):
                extra += ", TIMED OUT"
        problems = d.get("problems") or []
        return f"{self.at}  {self.side:<14} {self.figure:8.1f} pods/s  ({extra}){'  PROBLEMS: ' + '; '.join(problems) if problems else ''}"


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _last_json(text: str) -> dict[str, Any]:
    for line in reversed(text.strip().splitlines()):
        if line.startswith("{"):
            value = json.loads(line)
            if isinstance(value, dict):
                return value
    raise ValueError("no JSON line in the output")


def run_go(binary: Path, workload: str, dump_path: Path, timeout: float) -> Run:
    at = _now()
    cmd = [str(binary), "-input", str(dump_path), "-timeout", f"{int(timeout)}s"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout + 120)
    except subprocess.TimeoutExpired:
        return Run("kube-scheduler", at, 0.0, {"problems": [f"no answer within {timeout + 120:.0f} s"],
                                               "timed_out": True})
    if proc.returncode != 0:
        return Run("kube-scheduler", at, 0.0, {"problems": [f"exit {proc.returncode}: {proc.stderr[-2000:]}"]})
    d = _last_json(proc.stdout)
    figure = d["pods_per_busy_second"] if workload in PREEMPTION else d["pods_per_second"]
    if d.get("timed_out"):
        figure = 0.0
    return Run("kube-scheduler", at, float(figure), d)


def run_kubesched(workload: str, kube_version: str) -> Run:
    at = _now()
    proc = subprocess.run([sys.executable, "-m", "kubesched", "bench", "--workload", workload, "--kube-version",
                           kube_version, "-o", "json"], capture_output=True, text=True, cwd=ROOT)
    try:
        d = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return Run("kubesched", at, 0.0, {"problems": [f"exit {proc.returncode}: {proc.stderr[-2000:]}"]})
    return Run("kubesched", at, float(d["pods_per_second"]), d)


def machine_speed() -> str:
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "machine_speed.py")], capture_output=True,
                          text=True, check=True)
    return proc.stdout.strip()


def _cross_check(workload: str, go: list[Run], ks: list[Run]) -> list[str]:
    """Differences between what the two sides did (bound pods, victims)."""
    notes = []
    go_bound = {r.detail.get("bound") for r in go}
    ks_bound = {r.detail.get("bound") for r in ks}
    if go_bound != ks_bound:
        notes.append(f"bound pods differ: kube-scheduler {sorted(map(str, go_bound))}, kubesched {sorted(map(str, ks_bound))}")
    if workload in PREEMPTION:
        go_victims = {r.detail.get("victims_deleted") for r in go}
        ks_victims = {r.detail.get("victims") for r in ks}
        if go_victims != ks_victims:
            notes.append(f"victims differ: kube-scheduler {sorted(map(str, go_victims))}, "
                         f"kubesched {sorted(map(str, ks_victims))}")
    return notes


def compare(binary: Path, workloads: list[str], runs: int, kube_version: str, timeout: float) -> dict[str, Any]:
    report: dict[str, Any] = {}
    for workload in workloads:
        with tempfile.TemporaryDirectory() as tmp:
            dump_path = Path(tmp) / f"{workload}.json"
            dump(workload, dump_path)
            before = machine_speed()
            print(f"== {workload}  (machine_speed before: {before})", flush=True)
            go: list[Run] = []
            ks: list[Run] = []
            for _ in range(runs):
                go.append(run_go(binary, workload, dump_path, timeout))
                print(go[-1].line(), flush=True)
                ks.append(run_kubesched(workload, kube_version))
                print(ks[-1].line(), flush=True)
            after = machine_speed()
        counted = [r.figure for r in go if r.figure > 0 and not r.detail.get("problems")]
        go_median = statistics.median(counted) if counted else 0.0
        ks_counted = [r.figure for r in ks if r.figure > 0 and not r.detail.get("problems")]
        ks_median = statistics.median(ks_counted) if ks_counted else 0.0
        ratio = ks_median / go_median if go_median else 0.0
        what = "busy" if workload in PREEMPTION else "wall"
        print(f"   machine_speed after: {after}")
        print(f"   median: kube-scheduler {go_median:.1f} pods/s ({what}; {len(counted)} of {runs} runs counted), "
              f"kubesched {ks_median:.1f} pods/s ({len(ks_counted)} counted); kubesched / kube-scheduler = {ratio:.2f}")
        notes = _cross_check(workload, go, ks)
        for note in notes:
            print(f"   NOTE: {note}")
        report[workload] = {"machine_speed_before": before, "machine_speed_after": after,
                            "kube_scheduler": [dataclasses.asdict(r) for r in go],
                            "kubesched": [dataclasses.asdict(r) for r in ks], "kube_scheduler_median": go_median,
                            "kubesched_median": ks_median, "ratio": ratio, "notes": notes}
    return report


# ----------------------------------------------------------------------------- build
def build(tree: Path, go: str, output: Path, kube_version: str) -> None:
    """Copy the harness (harness.go and the release's v<release>/kube.go) into an exported
    microshift tree (cmd/kschedbench: release-4.17 for 1.30, release-4.23 for 1.36) and build it
    against the tree's vendor directory."""
    release = HARNESS / f"v{kube_version}" / "kube.go"
    if not release.is_file():
        raise SystemExit(f"no harness for kube-scheduler {kube_version}: want one of "
                         f"{', '.join(sorted(p.parent.name[1:] for p in HARNESS.glob('v*/kube.go')))}")
    target = tree / "cmd" / "kschedbench"
    target.mkdir(parents=True, exist_ok=True)
    for old in target.glob("*.go"):
        old.unlink()
    shutil.copy(HARNESS / "harness.go", target / "harness.go")
    shutil.copy(release, target / "kube.go")
    env = {**os.environ, **GO_ENV}
    start = time.perf_counter()
    subprocess.run([go, "build", "-o", str(output.resolve()), "./cmd/kschedbench"], cwd=tree, env=env, check=True)
    print(f"built {output} (kube-scheduler {kube_version}) in {time.perf_counter() - start:.0f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workload", action="append", choices=WORKLOADS,
                    help="repeatable; default for --go-binary: all five")
    ap.add_argument("--dump", type=Path, metavar="FILE", help="write the workload's objects to FILE and stop")
    ap.add_argument("--nodes", type=int)
    ap.add_argument("--pods", type=int)
    ap.add_argument("--init-pods", type=int)
    ap.add_argument("--go-binary", type=Path, help="the built harness: run the comparison")
    ap.add_argument("--runs", type=int, default=3, help="runs per side and workload")
    ap.add_argument("--kube-version", default="1.30", help="kubesched's --kube-version, and the harness --build makes")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds a Go run may wait for its pods")
    ap.add_argument("--json-out", type=Path, help="also write every run's figures as JSON")
    ap.add_argument("--build", type=Path, metavar="TREE", help="build the harness in an exported microshift tree")
    ap.add_argument("--go", default="go", help="the go binary for --build")
    ap.add_argument("--output", type=Path, default=Path("kschedbench"), help="the binary --build writes")
    args = ap.parse_args()
    if args.build:
        build(args.build, args.go, args.output, args.kube_version)
        return
    if args.dump:
        if not args.workload or len(args.workload) != 1:
            ap.error("--dump wants exactly one --workload")
        doc = dump(args.workload[0], args.dump, args.nodes, args.pods, args.init_pods)
        print(f"{args.dump}: {len(doc['nodes'])} nodes, {len(doc['running'])} running pods, "
              f"{len(doc['pending'])} pending pods ({len(doc['unschedulable'])} fit nowhere), {len(doc['pdbs'])} PDBs")
        return
    if not args.go_binary:
        ap.error("want --dump, --go-binary or --build")
    if not os.access(args.go_binary, os.X_OK) or not args.go_binary.is_file():
        ap.error(f"--go-binary {args.go_binary}: no executable there (build it: bench/kube-scheduler/README.md)")
    if args.nodes is not None or args.pods is not None or args.init_pods is not None:
        ap.error("the comparison runs the default sizes (kubesched bench's); --nodes/--pods/--init-pods are for --dump")
    report = compare(args.go_binary, args.workload or list(WORKLOADS), args.runs, args.kube_version, args.timeout)
    if args.json_out:
        args.json_out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
