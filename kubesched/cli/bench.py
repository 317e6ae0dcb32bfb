"""``kubesched bench``: scheduling throughput on scheduler_perf-shaped workloads
(:mod:`kubesched.bench`), in memory or through a local API server, and the soak and restart
runs."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import click

from kubesched.cli import _fail, _guard, features_option, main, semantics, version_options


@main.command()
@click.option("--nodes", type=int, default=None,
              help="Nodes. [default: 5000; preemption: 500; daemonset: 15000; extender: runs at 100 and at 1000 "
                   "nodes]")
@click.option("--pods", type=int, default=None,
              help="Measured pods (scheduled and timed). [default: basic 10000, affinity 1000, antiaffinity 1000, "
                   "spread 2000, preemption 500, daemonset 15000 (one per node), unschedulable 5200 (200 fit "
                   "nowhere), mixed 5000, extender 100 per run]")
@click.option("--init-pods", "init_pods", type=int, default=None,
              help="Running pods, bound before the clock starts. [default: basic 0, affinity 5000, "
                   "antiaffinity 1000, spread 5000, preemption 2000, daemonset 0, unschedulable 0, mixed 10000 "
                   "(plus a DaemonSet pod per node)]")
@click.option("--workload",
              type=click.Choice(["basic", "affinity", "antiaffinity", "spread", "preemption", "preemption-pdb",
                                 "daemonset", "unschedulable", "mixed", "dra", "extender", "live", "soak", "soak-live",
                                 "autoscale", "restart"]),
              default="basic", show_default=True,
              help="Shapes of kube-scheduler's scheduler_perf (test/integration/scheduler_perf/config/"
                   "performance-config.yaml). basic: SchedulingBasic; affinity: SchedulingNodeAffinity; antiaffinity: "
                   "SchedulingPodAntiAffinity; spread: TopologySpreading; preemption: PreemptionBasic, "
                   "run by the scheduling queue on a virtual clock; preemption-pdb: PreemptionBasic with a PDB "
                   "(no disruption allowed) over the pods of every other node; daemonset: SchedulingDaemonset "
                   "(templates/daemonset-pod.yaml: one pod per node pinned by matchFields metadata.name); "
                   "unschedulable: Unschedulable (templates/pod-large-cpu.yaml pods that fit nowhere among "
                   "pod-default.yaml pods); mixed: the realistic profile of examples/dump scaled up (general, "
                   "high-memory and tainted GPU nodes, DaemonSet and Deployment pods, services, anti-affinity, "
                   "zone spreading, nodeSelectors, GPU tolerations); autoscale: one `kubesched autoscale` run on a "
                   "2000-node dump with 5 node groups and 1000 pending pods (default); extender: the "
                   "latency one local HTTP extender (filter + prioritize) adds per scheduling attempt, with "
                   "nodeCacheCapable false and true, against the same run without it; live: the live "
                   "scheduler end to end through a local API server (nodes and pods created over HTTP, "
                   "pods/s until all are bound; default 500 nodes, 1000 pods); soak: --pods arrivals and "
                   "departures (pods with lifetimes, a mix of shapes, nodes drained and joining) on the scheduling "
                   "queue's virtual clock, invariant checker on: RSS at 10/50/100% of the arrivals must grow under "
                   "10% after warm-up, every departed pod must be forgotten (default 5000 nodes, 1000000 "
                   "arrivals); soak-live: the same stream against the live scheduler through a local API server "
                   "with injected faults (API errors, lost replies, cut watches, restarts): no pod lost or bound "
                   "twice, scheduler RSS flat (default 200 nodes, 100000 arrivals); restart: `kubesched run` as a "
                   "process against a local API server with --pods pending pods, SIGKILLed once it binds and "
                   "started again: seconds from its spawn to its first bind, cold start apart, median of 5 "
                   "restarts, then leader election's cold start and restart (default 200 nodes, 1000 pods).")
@click.option("--live", "live", is_flag=True, help="Same as --workload live.")
@click.option("--seed", type=int, default=1, show_default=True)
@click.option("--versus", "versus", metavar="VERSION", default=None,
              help="Also run the workload as kube-scheduler VERSION decides (e.g. 1.30), set up side by side and "
                   "scheduled in alternating chunks of 50 pods, so that the machine's drifting speed weighs on "
                   "both alike; prints both and their ratio. In-memory workloads (basic, affinity, antiaffinity, "
                   "spread, daemonset, unschedulable, mixed, dra); preemption and preemption-pdb run on the "
                   "queue's timeline and are compared as whole runs, --rounds of each, the order turning every "
                   "round (ratio of the medians).")
@click.option("--rounds", "rounds", type=click.IntRange(min=1), default=6, show_default=True,
              help="Whole runs per release for --versus on preemption and preemption-pdb.")
@click.option("-o", "--output", type=click.Choice(["text", "json"]), default="text")
@version_options
@_guard
def bench(nodes: int | None, pods: int | None, init_pods: int | None, workload: str, seed: int, output: str,
          live: bool = False, kube_version: str | None = None, feature_gates: tuple[str, ...] = (),
          versus: str | None = None, rounds: int = 6) -> None:
    """Scheduling throughput on a scheduler_perf-shaped workload, in memory (or, with --live,
    through a local API server); exits 2 when a pod was not bound or placed against the
    workload's rule."""
    from kubesched.bench import (
        EXTENDER_NODE_COUNTS,
        PREEMPTION_NODES,
        ExtenderBenchResult,
        run_bench,
        run_extender_bench,
        run_preemption_bench,
    )

    features = features_option(kube_version, feature_gates)
    res: Any
    if versus is not None:
        from kubesched.bench import WORKLOADS, BenchResult, median_run, run_bench_versus, run_preemption_versus
        whole_runs = workload in ("preemption", "preemption-pdb")
        if live or (workload not in WORKLOADS and not whole_runs):
            raise click.UsageError(f"--versus compares in-memory workloads ({', '.join(WORKLOADS)}, preemption, "
                                   f"preemption-pdb), not {'live' if live else workload}")
        other = features_option(versus, feature_gates)
        # Every run of each release (whole runs: --rounds of them; interleaved: one each).
        all_runs: Sequence[Sequence[BenchResult]]
        if whole_runs:
            all_runs = run_preemption_versus(
                (features, other), PREEMPTION_NODES if nodes is None else nodes, pods, init_pods=init_pods,
                seed=seed, pdbs=workload == "preemption-pdb", rounds=rounds)
            mine, theirs = (median_run(runs) for runs in all_runs)
            how = f"medians of {rounds} whole runs each, the order turning every round"
        else:
            mine, theirs = run_bench_versus(workload, (features, other), nodes, pods, init_pods=init_pods, seed=seed)
            all_runs = [[mine], [theirs]]
            how = "pods/s, interleaved"

        def listed(runs: Sequence[BenchResult]) -> list[float]:
            return [round(r.pods_per_second, 1) for r in runs]

        ratio = mine.pods_per_second / theirs.pods_per_second if theirs.pods_per_second else 0.0
        if output == "json":
            extra = [{"runs_pods_per_second": listed(runs)} if whole_runs else {} for runs in all_runs]
            click.echo(json.dumps({"semantics": semantics(features), **mine.as_dict(), **extra[0],
                                   "versus": {"semantics": semantics(other), **theirs.as_dict(), **extra[1]},
                                   "ratio": round(ratio, 3)}, indent=1))
        else:
            click.echo(f"decided as {features.oracle}: {mine.summary()}")
            click.echo(f"decided as {other.oracle}: {theirs.summary()}")
            if whole_runs:
                for f, runs in zip((features, other), all_runs, strict=True):
                    click.echo(f"runs as {f.oracle}: {', '.join(f'{x:.1f}' for x in listed(runs))} pods/s")
            click.echo(f"ratio {features.version} / {other.version}: {ratio:.3f} ({how})")
        problems = [p for runs in all_runs for r in runs for p in r.problems]
        if problems:
            _fail("benchmark result is invalid: " + "; ".join(problems))
        return
    if live or workload == "live":
        from kubesched.bench_live import DEFAULT_NODES, DEFAULT_PODS, run_live_bench

        res = run_live_bench(DEFAULT_NODES if nodes is None else nodes, DEFAULT_PODS if pods is None else pods,
                             seed=seed)
    elif workload == "restart":
        from kubesched.bench_restart import DEFAULT_NODES as RESTART_NODES
        from kubesched.bench_restart import DEFAULT_PODS as RESTART_PODS
        from kubesched.bench_restart import run_restart_bench

        res = run_restart_bench(RESTART_NODES if nodes is None else nodes, RESTART_PODS if pods is None else pods)
    elif workload == "soak":
        from kubesched.soak import SOAK_ARRIVALS, SOAK_NODES, run_soak

        res = run_soak(SOAK_NODES if nodes is None else nodes, SOAK_ARRIVALS if pods is None else pods, seed=seed,
                       progress=lambda line: click.echo(line, err=True))
    elif workload == "soak-live":
        from kubesched.soak_live import DEFAULT_ARRIVALS, run_soak_live
        from kubesched.soak_live import DEFAULT_NODES as SOAK_LIVE_NODES

        res = run_soak_live(SOAK_LIVE_NODES if nodes is None else nodes, DEFAULT_ARRIVALS if pods is None else pods,
                            seed=seed, progress=lambda line: click.echo(line, err=True))
    elif workload == "extender":
        counts = EXTENDER_NODE_COUNTS if nodes is None else (nodes,)
        res = run_extender_bench(counts, pods, seed=seed)
        assert isinstance(res, ExtenderBenchResult)
    elif workload in ("preemption", "preemption-pdb"):
        res = run_preemption_bench(PREEMPTION_NODES if nodes is None else nodes, pods, init_pods=init_pods, seed=seed,
                                   pdbs=workload == "preemption-pdb", features=features)
    else:
        res = run_bench(workload, nodes, pods, init_pods=init_pods, seed=seed, features=features)
    if output == "json":
        click.echo(json.dumps({"semantics": semantics(features), **res.as_dict()}, indent=1))
    else:
        click.echo(f"decided as {features.oracle}")
        click.echo(res.summary())
    if not res.ok:
        _fail("benchmark result is invalid: " + "; ".join(res.problems))
