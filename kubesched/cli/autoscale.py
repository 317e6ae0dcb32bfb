"""``kubesched autoscale``: what cluster-autoscaler would do with the cluster — the scale-up for
the pods that cannot be scheduled, the cheapest scale-up, and the nodes it would remove
(:mod:`kubesched.whatif.autoscale`)."""

from __future__ import annotations

import math
from typing import Any

import click

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

# Pods listed at most per table (-o json lists every one).
MAX_ROWS = 50


def _threshold(value: str) -> float:
    try:
        v = float(value)
    except ValueError:
        v = math.nan
    if not 0.0 <= v <= 1.0:
        raise KubeschedError(f"--scale-down-utilization-threshold {value}: expected a number between 0 and 1")
    return v


@main.command("autoscale")
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--node-groups", "node_groups", required=True, type=click.Path(), metavar="GROUPS.yaml",
              help="kubesched.io/v1alpha1 NodeGroup documents: minSize, maxSize, pricePerHour, members (a label "
                   "selector of the group's nodes), template (a Node), optional priority.")
@click.option("--expander", type=click.Choice(["random", "most-pods", "least-waste", "price", "priority"]),
              default="random", show_default=True, help="cluster-autoscaler's --expander: how it picks among the "
                                                         "scale-up options (ties broken at random).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random choices (the random "
                                                                     "expander and every tie).")
@click.option("--scale-down-utilization-threshold", "threshold", default="0.5", show_default=True, metavar="RATIO",
              help="A node is a scale-down candidate when its requests are under this share of its allocatable "
                   "(the larger of cpu and memory; GPUs on GPU nodes).")
@click.option("--time-limit", "time_limit", type=click.FloatRange(min=0.1), default=10.0, show_default=True,
              metavar="SECONDS", help="Seconds for HiGHS to find the cheapest scale-up.")
@click.option("--config", "config", type=click.Path(), help="KubeSchedulerConfiguration file (its profile's filters "
                                                            "decide where pods fit; default: the release's default).")
@click.option("-o", "--output", type=click.Choice(["table", "json", "yaml"]), default="table", show_default=True)
@click.option("--report", "report", type=click.Path(), metavar="OUT.html",
              help="Also write a self-contained HTML report: each node group before and after, the options, the "
                   "cheapest scale-up, the nodes that could go and why the others stay.")
@version_options
@_guard
def autoscale_command(paths: tuple[str, ...], node_groups: str, expander: str, seed: int, threshold: str,
                      time_limit: float, config: str | None, output: str, report: str | None = None,
                      kube_version: str | None = None, feature_gates: tuple[str, ...] = ()) -> None:
    """What cluster-autoscaler would do with the cluster in PATHS and the node groups of
    GROUPS.yaml: for the pods the scheduler cannot place, the scale-up its binpacking estimator
    and expander would make (and, per node group that would not help, its reason); the cheapest
    set of new nodes that makes every such pod schedulable (an integer program on HiGHS, each
    placement re-verified with the real filters); and the nodes its scale-down would remove,
    with the reason, in its words, for each node it keeps."""
    from kubesched._runtime.registry import full_registry
    from kubesched.objects import load_manifests
    from kubesched.whatif.autoscale import autoscale
    from kubesched.whatif.nodegroups import load_node_groups

    limit = _threshold(threshold)
    if report:
        from kubesched.whatif.whatif_report import check_report_path

        check_report_path(report)
    features = features_option(kube_version, feature_gates)
    cfg = _load_config(config, None, features)
    groups = load_node_groups(node_groups)
    objs = load_manifests(paths, features=features)
    result = autoscale(objs, groups, cfg, expander=expander, seed=seed, threshold=limit, time_limit=time_limit,
                       registry=full_registry((), features=features))
    if report:
        from kubesched.whatif.autoscale_report import autoscale_report

        autoscale_report(objs, result, title=f"kubesched autoscale {' '.join(paths)}",
                         subtitle=f"--node-groups {node_groups}; expander {expander}, seed {seed}; scale-down "
                                  f"threshold {limit:g}").write(report)
    if echo_data({"semantics": semantics(features), **result.as_dict(), "load": load_summary(objs)}, output):
        return
    click.echo(f"decided as {features.oracle}")
    _print_table(result, objs)


def _rows(items: list[Any]) -> list[Any]:
    return items[:MAX_ROWS]


def _print_table(result: Any, objs: Any) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()

    def say(text: str) -> None:
        console.print(text, markup=False, highlight=False, soft_wrap=True)

    for line in load_summary(objs):
        say(line)
    up, opt, down = result.scale_up, result.optimal, result.scale_down
    say(f"kubesched autoscale: {len(objs.nodes)} nodes, {len(result.groups)} node groups; the scheduler places "
        f"{len(result.scheduled)} pending pods, {len(up.unschedulable)} cannot be scheduled")
    groups = Table(title="node groups", box=None)
    for col in ("group", "min", "max", "$/h", "nodes", "scale-up", "cheapest", "scale-down"):
        groups.add_column(col, justify="left" if col == "group" else "right")
    for g in result.groups:
        def delta(after: int, size: int = g.size) -> str:
            return f"{after} ({after - size:+d})" if after != size else str(after)
        groups.add_row(g.name, str(g.min_size), str(g.max_size), f"{g.price_per_hour:g}", str(g.size),
                       delta(g.after_scale_up), delta(g.after_optimal), delta(g.after_scale_down))
    console.print(groups)
    say(f"scale-up ({up.expander} expander, seed {up.seed}):")
    if up.chosen is None:
        say("  no scale-up: no node group would help")
    else:
        c = up.chosen
        say(f"  {c.group}: +{c.nodes} node(s) ({up.current_size} -> {up.new_size}) for {len(c.pods)} pod(s)")
    options = Table(title="scale-up options", box=None)
    for col in ("group", "nodes", "pods", "expander's measure"):
        options.add_column(col)
    for o in up.options:
        options.add_row(o.group, str(o.nodes), str(len(o.pods)), o.measure or "-")
    for g, why in up.no_scale_up:
        options.add_row(g, "-", "-", why)
    if up.options or up.no_scale_up:
        console.print(options)
    for pod, message in _rows(list(up.not_triggered)):
        say(f"  {pod}: {message}")
    if len(up.not_triggered) > MAX_ROWS:
        say(f"  {len(up.not_triggered) - MAX_ROWS} more pods no group helps (-o json lists every one)")
    nodes = ", ".join(f"{n} x {g}" for g, n in opt.nodes.items()) or "none"
    say(f"cheapest scale-up: {nodes} at {opt.cost:g}/h for {len(opt.placements)} pod(s) "
        f"({opt.solver.get('solver')}: {opt.solver.get('status')}; {opt.verified} placements pass the real filters)")
    for pod, why in _rows(list(opt.left)):
        say(f"  left out: {pod}: {why}")
    say(f"scale-down (utilization threshold {down.threshold:g}): "
        f"{', '.join(down.removable) if down.removable else 'no node can go'}")
    table = Table(title="nodes kept", box=None)
    table.add_column("node")
    table.add_column("reason")
    table.add_column("detail", overflow="fold")
    for node, reason, message in down.blocked:
        table.add_row(node, reason, message)
    if down.blocked:
        console.print(table)
    for pod, node in _rows(list(down.moves)):
        say(f"  {pod} moves to {node}")
    for note in result.notes:
        say(f"note: {note}")
