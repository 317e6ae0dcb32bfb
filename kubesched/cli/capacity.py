"""``kubesched capacity``: how many more copies of a pod fit on the cluster as it is
(kubesched.whatif.capacity)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from kubesched.cli import _cluster_options as cluster_options
from kubesched.cli import _guard, _load_config, _plural, echo_data, features_option, main, semantics, version_options

if TYPE_CHECKING:  # the whatif engine is imported by the command itself: `kubesched run` starts without it
    from kubesched.whatif.capacity import CapacityResult

# Beyond this many nodes the table shows the first ones (by name) and sums up the rest.
TABLE_NODE_LIMIT = 50


@main.command("capacity")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--pod", "pods", multiple=True, required=True, metavar="TEMPLATE.yaml",
              help="A file holding one Pod, Deployment, ReplicaSet, ReplicationController or Job: the pod to copy. "
                   "Repeat for a mixed workload: copies of the templates are scheduled round-robin.")
@click.option("--max", "max_copies", type=click.IntRange(min=1), default=None,
              help="Stop after this many copies in all (cluster-capacity's --max-limit). [default: no limit]")
@click.option("--config", "config", type=click.Path(), help="KubeSchedulerConfiguration file.")
@click.option("--policy", "policy", type=click.Path(), help="Legacy scheduler Policy file.")
@click.option("--preempt", is_flag=True,
              help="Let copies preempt lower-priority pods as the profile's PostFilter (DefaultPreemption) would. "
                   "Without it, as cluster-capacity, PostFilter plugins are disabled: copies only fill free room.")
@click.option("--seed", type=int, default=None,
              help="Break ties between equally good nodes at random with this seed, as kube-scheduler does. "
                   "Without it: nodes in name order, ties to the lowest node name (repeatable).")
@click.option("--exclude-node", "exclude_nodes", multiple=True, metavar="NODE",
              help="Leave this node (and its pods) out of the cluster (repeatable).")
@click.option("--plugin", "plugins", multiple=True, metavar="MODULE:FACTORY", help="Out-of-tree plugin factory.")
@click.option("--ignore-unknown-kinds", "ignore_unknown_kinds", is_flag=True,
              help="Skip (and report) objects of kinds kubesched does not know instead of failing.")
@click.option("-o", "--output", type=click.Choice(["table", "json", "yaml"]), default="table", show_default=True)
@click.option("--report", "report", type=click.Path(), metavar="OUT.html",
              help="Also write a self-contained HTML report: the count and why the run stopped, node utilisation "
                   "before and with the copies, copies per node, the stopping copy's reasons per node.")
@version_options
@_guard
@cluster_options
def capacity_command(paths: tuple[str, ...], pods: tuple[str, ...], max_copies: int | None, config: str | None,
                     policy: str | None, preempt: bool, seed: int | None, exclude_nodes: tuple[str, ...],
                     plugins: tuple[str, ...], ignore_unknown_kinds: bool, output: str,
                     report: str | None = None, kube_version: str | None = None,
                     feature_gates: tuple[str, ...] = ()) -> None:
    """How many more copies of a pod fit on the cluster in PATHS as it is: the count, the copies
    per node, and kube-scheduler's FailedScheduling message for the copy that did not fit.

    The cluster is the nodes and the pods bound to them: pending pods take no room and the
    input's controllers create no pods, so a template file that is also under PATHS is not
    counted twice (its other documents, a Service say, are then applied). Copies are scheduled
    one by one by the configured profile (v1.30's default without --config), each bound before
    the next, until one does not fit."""
    from kubesched._runtime.registry import full_registry
    from kubesched.whatif.capacity import run_capacity

    if report:
        from kubesched.whatif.whatif_report import check_report_path

        check_report_path(report)
    features = features_option(kube_version, feature_gates)
    registry = full_registry(plugins, features=features)
    cfg = _load_config(config, policy, features)
    res, inp = run_capacity(paths, pods, cfg, max_copies=max_copies, preempt=preempt, seed=seed,
                            exclude_nodes=exclude_nodes, registry=registry, ignore_unknown_kinds=ignore_unknown_kinds,
                            features=features)
    if report:
        from kubesched.whatif.whatif_report import capacity_report

        preempts = "copies may preempt lower-priority pods" if res.preemption else "copies do not preempt"
        ties = "ties to the lowest node name" if res.deterministic else f"random ties, seed {res.seed}"
        capacity_report(inp, res, title=f"kubesched capacity {' '.join(map(str, paths))}",
                        subtitle=f"--pod {', '.join(pods)}; {preempts}; {ties}").write(report)
    if echo_data({"semantics": semantics(features), **res.as_dict()}, output):
        return
    click.echo(f"decided as {features.oracle}")
    _print_table(res)


def _print_table(res: CapacityResult) -> None:
    from rich.console import Console
    from rich.table import Table

    from kubesched.whatif.capacity import format_resource

    console = Console()

    def say(line: str = "") -> None:
        console.print(line, markup=False, highlight=False, soft_wrap=True)

    nodes = len(res.nodes)
    excluded = f", {len(res.excluded_nodes)} excluded" if res.excluded_nodes else ""
    takes = "takes" if res.pending_pods == 1 else "take"
    pending = f"; {_plural(res.pending_pods, 'pending pod')} {takes} no room" if res.pending_pods else ""
    preempt = "copies may preempt lower-priority pods" if res.preemption else \
        "copies do not preempt (--preempt lets them)"
    ties = "ties to the lowest node name" if res.deterministic else f"random ties, seed {res.seed}"
    say(f"kubesched capacity: {_plural(nodes, 'node')}{excluded} as they are ({_plural(res.bound_pods, 'bound pod')}"
        f"{pending}); {preempt}; {ties}")
    for t in res.templates:
        reqs = ", ".join(f"{name} {format_resource(name, v)}" for name, v in t.requests) or "no requests"
        extra = ""
        if t.node_selector:
            extra += "; nodeSelector " + ",".join(f"{k}={v}" for k, v in t.node_selector)
        if t.priority:
            extra += f"; priority {t.priority}"
        if t.claims:
            extra += "; claims " + ", ".join(t.claims)
        say(f"template {t.template} ({t.file}): {reqs}{extra}; copies {t.namespace}/{t.copy_names}")
    for note in res.notes:
        say(f"note: {note}")
    say()
    if len(res.templates) == 1:
        copies = "more copy" if res.total == 1 else "more copies"
        say(f"The cluster can schedule {res.total} {copies} of {res.templates[0].template}.")
    else:
        parts = ", ".join(f"{t.count} of {t.template}" for t in res.templates)
        say(f"The cluster can schedule {res.total} more copies, round-robin: {parts}.")
    table = Table(title="copies per node")
    table.add_column("node")
    several = len(res.templates) > 1
    if several:
        short = [t.template.rsplit("/", 1)[-1] for t in res.templates]
        for label in short if len(set(short)) == len(short) else [t.template for t in res.templates]:
            table.add_column(label, justify="right")
    table.add_column("copies", justify="right")
    devices = any(n.devices is not None for n in res.nodes)
    if devices:
        table.add_column("devices used", justify="right")
    table.add_column("why the next copy does not fit there", overflow="fold")
    for n in res.nodes[:TABLE_NODE_LIMIT]:
        per_template = [str(c) for c in n.copies] if several else []
        use = [f"{n.devices.used}/{n.devices.total}" if n.devices is not None else ""] if devices else []
        table.add_row(n.node, *per_template, str(n.total), *use, ", ".join(n.reasons))
    rest = res.nodes[TABLE_NODE_LIMIT:]
    if rest:
        cells = [str(sum(n.copies[k] for n in rest)) for k in range(len(res.templates))] if several else []
        used = [f"{sum(n.devices.used for n in rest if n.devices)}/{sum(n.devices.total for n in rest if n.devices)}"
                ] if devices else []
        table.add_row(f"... {_plural(len(rest), 'more node')}", *cells, str(sum(n.total for n in rest)), *used,
                      "(-o json lists every node)")
    console.print(table)
    stop = res.stop
    say(f"Termination reason: {stop.reason}: {stop.message}")
    if stop.pod:
        say(f"  stopping copy: {stop.pod} ({stop.template})")
    if stop.fail_summary:
        say("  fit failure summary on nodes: " + ", ".join(f"{r} ({n})" for r, n in stop.fail_summary))
    if res.preempted:
        shown = ", ".join(res.preempted[:10]) + (f", {len(res.preempted) - 10} more" if len(res.preempted) > 10 else "")
        say(f"preempted {_plural(len(res.preempted), 'pod')}: {shown}")
