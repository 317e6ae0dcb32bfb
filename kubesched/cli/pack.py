"""``kubesched pack``: the optimal packing of the pending pods (an integer program solved with
HiGHS, :mod:`kubesched.whatif.pack`) beside the scheduler's own greedy placement."""

from __future__ import annotations

import json
import math
import sys
from typing import Any

import click

from kubesched.cli import _cluster_options as cluster_options
from kubesched.cli import _guard, _load_config, features_option, load_summary, main, semantics, version_options
from kubesched.errors import KubeschedError

# Table rows printed at most; -o json lists every pod.
MAX_ROWS = 200


def _time_limit(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds <= 0:
        raise KubeschedError(f"--time-limit {value}: expected a positive number of seconds")
    return seconds


def _num(v: float | None) -> str:
    if v is None:
        return "-"
    return str(int(v)) if float(v).is_integer() else f"{v:.2f}"


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.2%}"


@main.command("pack")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--config", "config", type=click.Path(), help="KubeSchedulerConfiguration file (its profiles' "
              "filters are the constraints; default: v1.30's default profile).")
@click.option("--time-limit", "time_limit", default="30", show_default=True, metavar="SECONDS",
              help="Seconds for building and solving the integer program (the scheduler's simulation and the "
                   "verification come on top). Stopped at the limit, the best packing found so far is reported "
                   "with the solver's bound and gap.")
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.option("--report", "report", type=click.Path(), metavar="OUT.html",
              help="Also write a self-contained HTML report: the solver's figures, node utilisation after the "
                   "scheduler's placement and after the packing, the pods placed differently or not modelled.")
@version_options
@_guard
@cluster_options
def pack_command(paths: tuple[str, ...], config: str | None, time_limit: str, output: str,
                 report: str | None = None, kube_version: str | None = None,
                 feature_gates: tuple[str, ...] = ()) -> None:
    """The fewest nodes the pending pods in PATHS need (as many pods placed as possible first),
    solved as an integer program with HiGHS under the hard constraints of the profile's
    filters, beside the scheduler's own placement (the deterministic simulation).

    Modelled: resources (cpu, memory, ephemeral-storage, extended resources, pods), node
    selectors and required node affinity, taints and tolerations, unschedulable nodes, host
    ports, required pod anti-affinity (any topology key), DRA devices counted per node and
    device group. Pods with required pod affinity, hard topology spread, tracked volumes,
    claims whose devices cannot be counted exactly (shared claims, allocationMode All, ...)
    stay where the scheduler put them. Running
    pods are never evicted (no preemption). Every placement is checked against the real
    filters before it is reported (exit 1 if one fails: a bug)."""
    from kubesched._runtime.registry import full_registry
    from kubesched.objects import load_manifests
    from kubesched.whatif.pack import PackVerificationError, pack

    limit = _time_limit(time_limit)
    if report:
        from kubesched.whatif.whatif_report import check_report_path

        check_report_path(report)
    features = features_option(kube_version, feature_gates)
    cfg = _load_config(config, None, features)
    objs = load_manifests(paths, features=features)
    try:
        result = pack(objs, cfg, time_limit=limit, registry=full_registry((), features=features))
    except PackVerificationError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(1)
    if report:
        from kubesched.whatif.whatif_report import pack_report

        pack_report(objs, result, title=f"kubesched pack {' '.join(map(str, paths))}",
                    subtitle=f"{result.solver.solver}, time limit {limit:g} s" + (f", {config}" if config else "")
                    ).write(report)
    if output == "json":
        click.echo(json.dumps({"semantics": semantics(features), **result.as_dict(), "load": load_summary(objs)},
                              indent=1))
        return
    click.echo(f"decided as {features.oracle}")
    _print_table(result, objs)


def _print_table(result: Any, objs: Any) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    for line in load_summary(objs):
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    s = result.solver
    kept = len(result.pods) - result.modelled
    console.print(f"kubesched pack: {len(result.nodes)} nodes, {len(result.pods) + len(result.not_attempted)} pending "
                  f"pods ({result.modelled} in the model, {kept} kept where the scheduler put them, "
                  f"{len(result.not_attempted)} not attempted)", highlight=False, soft_wrap=True)
    console.print(f"solver: {s.solver}, {s.status} ({s.method} model, {s.variables} variables, {s.constraints} "
                  f"constraints) in {s.solve_seconds:.2f} s + {s.build_seconds:.2f} s to build; time limit "
                  f"{s.time_limit:g} s", highlight=False, soft_wrap=True)
    console.print(f"  objective {_num(s.objective)} = {_num(s.nodes_used)} nodes used + {s.weight:g} x "
                  f"{_num(s.pods_left)} pods left pending; bound {_num(s.bound)}; gap {_pct(s.gap)}", highlight=False, soft_wrap=True)
    if s.nodes_bound is not None:
        console.print(f"  most pods placed: proven; nodes used >= {_num(s.nodes_bound)} (gap {_pct(s.nodes_gap)})",
                      highlight=False, soft_wrap=True)
    elif s.pods_left:
        console.print("  most pods placed: not proven within the time limit", highlight=False, soft_wrap=True)
    for line in s.solves if s.method != "exact" else ():
        console.print(f"  {line}", highlight=False, soft_wrap=True)
    summary = Table(show_header=True, box=None)
    summary.add_column("")
    summary.add_column("scheduler", justify="right")
    summary.add_column("packing", justify="right")
    summary.add_row("pods placed", str(result.greedy_placed), str(result.packed_placed))
    summary.add_row("nodes used", str(len(result.greedy_nodes)), str(len(result.packed_nodes)))
    if result.greedy_devices and result.packed_devices:
        total = sum(u.total for u in result.packed_devices)
        summary.add_row("devices used", f"{sum(u.used for u in result.greedy_devices)}/{total}",
                        f"{sum(u.used for u in result.packed_devices)}/{total}")
    console.print(summary)
    if result.drainable:
        console.print(f"nodes that could be drained (used by the scheduler's placement, empty in the packing): "
                      f"{', '.join(result.drainable)}", highlight=False, soft_wrap=True)
    if result.relieved:
        console.print(f"nodes whose pending pods all move elsewhere (running pods keep them used): "
                      f"{', '.join(result.relieved)}", highlight=False, soft_wrap=True)
    rows = [p for p in result.pods if p.moved or not p.modelled or p.packed is None]
    table = Table(title="pods placed differently, left pending or not modelled")
    table.add_column("pod")
    table.add_column("scheduler")
    table.add_column("packing")
    table.add_column("note", overflow="fold")
    for p in rows[:MAX_ROWS]:
        table.add_row(p.pod, p.greedy or "[red]-[/red]", p.packed or "[red]-[/red]", p.note or p.greedy_message)
    for key, why in result.not_attempted[: max(0, MAX_ROWS - len(rows))]:
        table.add_row(key, "[yellow]not attempted[/yellow]", "[yellow]not attempted[/yellow]", why)
    if rows or result.not_attempted:
        console.print(table)
    more = len(rows) + len(result.not_attempted) - MAX_ROWS
    if more > 0:
        console.print(f"{more} more rows (-o json lists every pod)")
    same = len(result.pods) - len(rows)
    console.print(f"{same} pods keep the scheduler's node; {result.verified} placements pass the real filters "
                  f"(applied one at a time on a fresh copy of the cluster)", highlight=False, soft_wrap=True)
    for note in result.notes:
        console.print(f"note: {note}", highlight=False, soft_wrap=True)
