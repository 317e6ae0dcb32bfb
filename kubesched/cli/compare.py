"""``kubesched compare``: the same cluster and pending pods under two or more scheduler
configurations (kubesched.whatif.compare)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, cast

import click

from kubesched.cli import _cluster_options as cluster_options
from kubesched.cli import (
    _guard,
    _load_config,
    echo_data,
    features_option,
    load_summary,
    main,
    semantics,
    version_options,
)
from kubesched.errors import KubeschedError

if TYPE_CHECKING:  # the whatif engine is imported by the command itself: `kubesched run` starts without it
    from kubesched.whatif.compare import CompareResult, Outcome

DEFAULT = "default"


@main.command("compare")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--config", "configs", multiple=True, required=True, metavar="FILE|default",
              help="A KubeSchedulerConfiguration file, or `default` for v1.30's default configuration; give two "
                   "or more (a file named default: ./default).")
@click.option("--timeline", is_flag=True,
              help="Run the queue-driven simulation on a virtual clock (random tie-breaks, from --seed) instead of "
                   "the conformance procedure (ties to the lowest node name), the default so that differences come "
                   "from the configurations alone.")
@click.option("--seed", type=int, default=None, help="Seed of --timeline's random tie-breaks (the same for every "
                                                     "configuration).")
@click.option("--controllers", "controllers", type=click.Choice(["auto", "all", "none"]), default="auto",
              show_default=True,
              help="Which workload controllers lacking their pods get them as pending pods, as `simulate` does "
                   "(none: the input as written).")
@click.option("--plugin", "plugins", multiple=True, metavar="MODULE:FACTORY", help="Out-of-tree plugin factory.")
@click.option("--ignore-unknown-kinds", "ignore_unknown_kinds", is_flag=True,
              help="Skip (and report) objects of kinds kubesched does not know instead of failing.")
@click.option("--jobs", "jobs", type=click.IntRange(min=0), default=0, show_default=True, metavar="N",
              help="Run N configurations' simulations at once, in forked processes (0: one per configuration, at "
                   "most one per CPU core). The results do not depend on it.")
@click.option("-o", "--output", type=click.Choice(["table", "json", "yaml"]), default="table", show_default=True)
@click.option("--report", "report", type=click.Path(), metavar="OUT.html",
              help="Also write a self-contained HTML report: the configurations side by side, node utilisation "
                   "before and after each configuration, the pods placed differently.")
@version_options
@_guard
@cluster_options
def compare_command(paths: tuple[str, ...], configs: tuple[str, ...], timeline: bool, seed: int | None,
                    controllers: str, plugins: tuple[str, ...], ignore_unknown_kinds: bool, output: str,
                    report: str | None = None, jobs: int = 0, kube_version: str | None = None,
                    feature_gates: tuple[str, ...] = ()) -> None:
    """Simulate the pending pods of PATHS under each --config and compare: pods bound,
    unschedulable and preempted, nodes left empty, the requested share of each resource over
    the nodes (mean and standard deviation), and every pod placed differently."""
    from kubesched._runtime.registry import full_registry
    from kubesched.objects import load_manifests
    from kubesched.objects.manifests import Controllers
    from kubesched.whatif.compare import compare

    if len(configs) < 2:
        raise KubeschedError(f"compare needs two or more --config (a file, or `{DEFAULT}`), got {len(configs)}")
    if seed is not None and not timeline:
        raise KubeschedError("--seed draws --timeline's random tie-breaks: add --timeline (the default procedure "
                             "breaks ties by node name)")
    if report:
        from kubesched.whatif.whatif_report import check_report_path

        check_report_path(report)
    features = features_option(kube_version, feature_gates)
    registry = full_registry(plugins, features=features)
    named = [(name, _load_config(None if value == DEFAULT else value, None, features))
             for name, value in zip(_labels(configs), configs, strict=True)]
    objs = load_manifests(paths, ignore_unknown_kinds=ignore_unknown_kinds,
                          controllers=cast(Controllers, controllers), features=features)
    if jobs == 0:
        jobs = min(len(named), len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
    res = compare(objs, named, timeline=timeline, seed=seed, registry=registry, jobs=jobs)
    if report:
        from kubesched.whatif.whatif_report import compare_report

        procedure = "conformance procedure" if res.procedure == "deterministic" else \
            f"scheduling queue on a virtual clock, seed {res.seed}"
        compare_report(objs, res, title=f"kubesched compare {' '.join(map(str, paths))}",
                       subtitle=f"{' vs '.join(c.name for c in res.configurations)}; {procedure}").write(report)
    if echo_data({"semantics": semantics(features), **res.as_dict()}, output):
        return
    click.echo(f"decided as {features.oracle}")
    _print(res, load_summary(objs))


def _labels(configs: tuple[str, ...]) -> list[str]:
    """Each configuration's name as given; a repeated one gets ``#2``, ``#3``."""
    out: list[str] = []
    for c in configs:
        name, n = c, 1
        while name in out:
            n += 1
            name = f"{c}#{n}"
        out.append(name)
    return out


def _headers(names: list[str]) -> list[str]:
    """Column headers: the files' base names when they tell the configurations apart."""
    short = [Path(n).name for n in names]
    return short if len(set(short)) == len(short) else names


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _where(o: Outcome) -> str:
    from kubesched.whatif.compare import BOUND

    return o.node or "" if o.state == BOUND else f"({o.state})"


def _print(res: CompareResult, summary: list[str]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()

    def say(line: str = "") -> None:
        console.print(line, markup=False, highlight=False, soft_wrap=True)

    for line in summary:
        say(line)
    procedure = ("the conformance procedure (queue order, ties to the lowest node name)" if res.procedure ==
                 "deterministic" else f"the scheduling queue on a virtual clock (random ties, seed {res.seed})")
    say(f"kubesched compare: {res.nodes} nodes, {res.pending_pods} pending pods, {len(res.configurations)} "
        f"configurations, each simulated by {procedure}")
    headers = _headers([c.name for c in res.configurations])
    table = Table(caption="requested: share of allocatable, mean ± sd over the nodes")
    table.add_column("")
    for h in headers:
        table.add_column(h, overflow="fold")
    rows: list[tuple[str, list[str]]] = [
        ("bound", [str(c.bound) for c in res.configurations]),
        ("unschedulable", [str(c.unschedulable) for c in res.configurations]),
        ("preempted", [str(c.preempted) for c in res.configurations]),
        ("not attempted", [str(c.not_attempted) for c in res.configurations]),
        ("nodes left empty", [f"{len(c.empty_nodes)}" + (f" ({', '.join(c.empty_nodes[:5])}"
                                                         f"{', ...' if len(c.empty_nodes) > 5 else ''})"
                                                         if c.empty_nodes else "")
                              for c in res.configurations]),
    ]
    resources: list[str] = []
    for c in res.configurations:
        resources.extend(s.resource for s in c.shares if s.resource not in resources)
    for r in resources:
        cells = []
        for c in res.configurations:
            s = c.share(r)
            cells.append(f"{_pct(s.mean)} ± {_pct(s.stddev)}" if s is not None else "")
        rows.append(("pods running" if r == "pods" else f"{r} requested", cells))
    for label, cells in rows:
        table.add_row(label, *cells)
    console.print(table)
    if not res.placed_differently:
        say("Every pod is placed the same way under every configuration.")
        return
    diff = Table(title=f"pods placed differently ({len(res.placed_differently)})")
    diff.add_column("pod")
    for h in headers:
        diff.add_column(h, overflow="fold")
    for d in res.placed_differently:
        diff.add_row(d.pod, *(_where(o) for o in d.outcomes))
    console.print(diff)
