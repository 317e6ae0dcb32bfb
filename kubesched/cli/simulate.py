"""``kubesched simulate`` and ``kubesched explain`` (``simulate --explain`` without the placement
table), and the node x plugin table they draw (:func:`_explain`, which ``kubesched shadow`` logs
for each disagreement)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import click

from kubesched.cli import (
    _cluster_options,
    _guard,
    _load_config,
    features_option,
    load_summary,
    main,
    path_type,
    semantics,
    version_options,
)
from kubesched.errors import KubeschedError

PATH = path_type()


@main.command()
@click.argument("paths", nargs=-1, type=PATH)
@click.option("--config", "config", type=PATH, help="KubeSchedulerConfiguration file.")
@click.option("--policy", "policy", type=PATH,
              help="Legacy scheduler Policy file (kind: Policy, JSON or YAML), translated as kube-scheduler v1.21 did.")
@click.option("--deterministic", is_flag=True,
              help="The conformance procedure: pods in queue order, each attempted once (retried at once after a "
                   "preemption), ties broken by the lowest node name, victims deleted at once. Without it, the "
                   "scheduling queue runs on a virtual clock (backoff, requeue on events, graceful termination).")
@click.option("--timeline", is_flag=True, help="Print the events (Scheduled, FailedScheduling, Preempted, "
                                              "Nominated) with their simulated times.")
@click.option("--seed", type=int, default=None, help="Seed for random tie-breaks.")
@click.option("--trace", "trace", type=PATH, help="Write the conformance trace (JSON) here.")
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.option("--plugin", "plugins", multiple=True, metavar="MODULE:FACTORY",
              help="Register an out-of-tree plugin factory (repeatable); entry points in group kubesched.plugins "
                   "are loaded too.")
@click.option("--explain", "explain", metavar="NAMESPACE/POD",
              help="Also print, for this pod, every node x plugin: filter verdict and reason, weighted scores, total.")
@click.option("--ignore-unknown-kinds", "ignore_unknown_kinds", is_flag=True,
              help="Skip (and report) objects of kinds kubesched does not know, such as custom resources, instead "
                   "of failing. Known kinds irrelevant to scheduling (ConfigMap, Secret, RBAC, Events, ...) are "
                   "always skipped and reported.")
@click.option("--controllers", "controllers", type=click.Choice(["auto", "all", "none"]), default=None,
              help="Which workload controllers lacking their pods get the pods their controller would create, as "
                   "pending pods (a what-if of the default mode). auto (default): Deployments, DaemonSets and Jobs "
                   "always; ReplicaSets, StatefulSets and ReplicationControllers only when the input shows "
                   "controllers at work (a Deployment, DaemonSet, Job or CronJob, or an object with a controller "
                   "ownerReference), e.g. a dump holding some of a ReplicaSet's pods but fewer than spec.replicas: "
                   "a controller mid-flight. all: every one. none: objects are read as written. With "
                   "--deterministic (the conformance procedure) it is always none.")
@click.option("-q", "--quiet", is_flag=True,
              help="No progress bar (it is drawn on stderr only when stderr is a terminal).")
@click.option("--report", "report", type=PATH, metavar="OUT.html",
              help="Also write a self-contained HTML report: node utilisation before and after, placements, "
                   "preemptions, and each attempt's node x plugin table.")
@version_options
@_guard
@_cluster_options
def simulate(paths: tuple[str, ...], config: str | None, deterministic: bool, seed: int | None, trace: str | None,
             output: str, explain: str | None, plugins: tuple[str, ...], policy: str | None = None,
             timeline: bool = False, ignore_unknown_kinds: bool = False, controllers: str | None = None,
             explain_only: bool = False, all_filters: bool = False, quiet: bool = False, report: str | None = None,
             kube_version: str | None = None, feature_gates: tuple[str, ...] = ()) -> None:
    """Schedule every pending pod found in PATHS (manifests, directories or List dumps) and/or
    the cluster of --kubeconfig, including the pods that workload controllers (Deployment,
    DaemonSet, Job, ...) would create."""
    from kubesched._runtime.registry import full_registry
    from kubesched.objects import load_manifests
    from kubesched.objects.manifests import Controllers
    from kubesched.simulation import Simulator, claim_allocations
    from kubesched.timeline import TimelineResult, TimelineSimulator

    # `explain` runs the deterministic procedure on the what-if input (controllers' pods
    # included), so a pod `simulate` created can be explained.
    if deterministic and not explain_only and controllers not in (None, "none"):
        raise click.UsageError(f"--deterministic reads the input as written (the conformance procedure), so it "
                               f"never creates controllers' pods: drop --controllers {controllers}, or drop "
                               f"--deterministic for the what-if")
    if controllers is None:
        controllers = "none" if deterministic and not explain_only else "auto"
    features = features_option(kube_version, feature_gates)
    registry = full_registry(plugins, features=features)
    cfg = _load_config(config, policy, features)
    objs = load_manifests(paths, ignore_unknown_kinds=ignore_unknown_kinds,
                          controllers=cast(Controllers, controllers), features=features)
    sim = (Simulator(objs, cfg, deterministic=True, seed=seed, registry=registry, features=features) if deterministic
           else TimelineSimulator(objs, cfg, seed=seed, registry=registry, features=features))
    if explain is not None and all_filters:
        explained = explain if "/" in explain else f"default/{explain}"
        sim.scheduler.all_filters_for = lambda p: p.key == explained
    from kubesched.cli._progress import simulation_progress

    with simulation_progress(sim, quiet=quiet or explain_only):
        result = sim.run()
    timed = result if isinstance(result, TimelineResult) else None
    if trace:
        try:
            Path(trace).write_text(json.dumps(result.trace(), indent=1) + "\n")
        except OSError as e:
            raise KubeschedError(f"{trace}: cannot write the trace: {e}") from None
    if report:
        from kubesched.whatif.report import simulation_report

        mode = "deterministic (the conformance procedure)" if deterministic else "scheduling queue on a virtual clock"
        simulation_report(objs, result, title=f"kubesched simulate {' '.join(map(str, paths))}",
                          subtitle=mode + ("" if seed is None else f", seed {seed}")).write(report)
    last: dict[str, Any] = {}
    for step in result.steps:
        last[step.attempt.pod.key] = step
    if explain is not None:
        _explain(result, explain, objs.nodes, output)
        if output == "json" or explain_only:
            return
    if output == "json":
        out: dict[str, Any] = {
            "semantics": semantics(features),
            "placements": result.final,
            "unschedulable": {k: s.attempt.message for k, s in last.items() if s.attempt.outcome != "Scheduled"},
            "preempted": result.deleted,
            "skipped": result.skipped,
            # One line per attempt; the full per-node data is in --trace (and --explain).
            "allocations": {k: a for k, s in last.items() if (a := claim_allocations(s.attempt))},
            "attempts": [{"pod": st.attempt.pod.key, "attempt": st.number, "outcome": st.attempt.outcome,
                          "node": st.attempt.node, "nominatedNode": st.attempt.nominated_node,
                          "victims": sorted(v.key for v in st.attempt.victims), "message": st.attempt.message
                          if st.attempt.outcome != "Scheduled" else None} for st in result.steps],
            "ignored": [{"file": i.file, "document": i.document, "kind": i.kind, "name": i.name,
                         "apiVersion": i.api_version, "known": i.known} for i in objs.ignored],
            "generated": objs.generated,
            "generatedWhy": objs.generated_why,
            "generatedObjects": objs.generated_objects,
            "notExpanded": objs.not_expanded,
            "notes": objs.notes,
        }
        if timed is not None:
            out["pending"] = timed.pending
            out["timeline"] = [{**e.as_dict(), "time": round(e.time - timed.start, 3)} for e in timed.events]
            out["simulatedSeconds"] = round(timed.end - timed.start, 3)
            profile = cfg.profiles[0].scheduler_name
            out["metrics"] = timed.metrics.as_dict(profile)
        click.echo(json.dumps(out, indent=1))
        return
    from rich.console import Console
    from rich.table import Table

    console = Console()
    for line in load_summary(objs):
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    table = Table(title=f"kubesched simulate: {len(objs.nodes)} nodes, {len(last)} pods scheduled or attempted "
                        f"(decided as {features.oracle})")
    table.add_column("pod")
    table.add_column("node")
    table.add_column("reason / note", overflow="fold")
    for key, step in last.items():
        a = step.attempt
        if a.outcome == "Scheduled":
            note = f"preempted {', '.join(v.key for v in a.victims)}" if a.victims else ""
            devices = [d for alloc in claim_allocations(a) for d in alloc["devices"]]
            if devices:
                note = "; ".join(x for x in (note, "devices: " + ", ".join(devices)) if x)
            table.add_row(key, a.node or "", note)
        else:
            note = a.message or ""
            if a.nominated_node:
                note = f"nominated to {a.nominated_node}; {note}"
            table.add_row(key, "[red]-[/red]", note)
    for key, why in result.skipped.items():
        table.add_row(key, "[yellow]not attempted[/yellow]", why)
    # Pods a PreEnqueue plugin held in the queue all along (schedulingGates, a gang short of
    # its minCount): never attempted either, with the plugin's reason.
    held = {k: why for k, why in timed.pending.items() if k not in last and k not in result.skipped} if timed else {}
    for key, why in held.items():
        table.add_row(key, "[yellow]not attempted[/yellow]", why)
    for key in result.deleted:
        table.add_row(key, "[magenta]deleted[/magenta]", "preemption victim")
    console.print(table)
    if timeline and timed is not None:
        tl = Table(title="timeline (simulated seconds from the first arrival)")
        tl.add_column("t", justify="right")
        tl.add_column("event")
        tl.add_column("pod")
        tl.add_column("message", overflow="fold")
        for ev in timed.events:
            tl.add_row(f"{ev.time - timed.start:.1f}", ev.reason, ev.pod, ev.message)
        console.print(tl)
    bound = sum(1 for s in last.values() if s.attempt.outcome == "Scheduled")
    console.print(f"{bound} bound, {len(last) - bound} unschedulable, {len(result.skipped) + len(held)} not attempted, "
                  f"{len(result.deleted)} preempted")


@main.command("explain")
@click.argument("pod", metavar="NAMESPACE/POD")
@click.argument("paths", nargs=-1, type=PATH)
@click.option("--config", "config", type=PATH, help="KubeSchedulerConfiguration file.")
@click.option("--policy", "policy", type=PATH, help="Legacy scheduler Policy file.")
@click.option("--plugin", "plugins", multiple=True, metavar="MODULE:FACTORY", help="Out-of-tree plugin factory.")
@click.option("--timeline", "timeline_mode", is_flag=True,
              help="Explain the attempts of the queue-driven simulation instead of the conformance procedure.")
@click.option("--all-filters", "all_filters", is_flag=True,
              help="Run every filter plugin on every node instead of stopping at the first failure (the "
                   "framework's former runAllFilters), so the table shows each reason a node is out. The decision "
                   "itself stays kube-scheduler's.")
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table", show_default=True)
@version_options
@click.pass_context
@_cluster_options
def explain_command(ctx: click.Context, pod: str, paths: tuple[str, ...], config: str | None, policy: str | None,
                    plugins: tuple[str, ...], timeline_mode: bool, output: str, all_filters: bool = False,
                    kube_version: str | None = None, feature_gates: tuple[str, ...] = ()) -> None:
    """Why POD goes where it goes: every node x plugin (filter verdict and reason, weighted
    scores, total) for each of its scheduling attempts in a simulation of PATHS.

    Same as `kubesched simulate PATHS --explain POD` (deterministic unless --timeline), without
    the placement table."""
    ctx.invoke(simulate, paths=paths, config=config, policy=policy, plugins=plugins, explain=pod,
               deterministic=not timeline_mode, seed=None, trace=None, output=output, timeline=False,
               explain_only=True, all_filters=all_filters, kube_version=kube_version, feature_gates=feature_gates)


def _device_cells(verdicts: dict[str, Any], node: str) -> list[str]:
    """explain's DynamicResources columns for a node: verdict, devices, device use."""
    v = verdicts.get(node)
    if v is None:
        return ["", "", ""]
    verdict = "[green]fits[/green]" if not v.status else f"[red]{v.status}[/red]"
    devices = ", ".join(d.describe() for _, d in v.devices)
    use = "" if v.total is None else f"{v.used}/{v.total}"
    return [verdict, devices, use]


def device_verdicts_json(verdicts: dict[str, Any]) -> dict[str, Any]:
    """explain -o json's ``devices``: per node DynamicResources' verdict ("" when the claims fit),
    the devices they would hold there, the node's devices used / total when PreFilter ran."""
    return {node: {"verdict": v.status, "fits": not v.status,
                   "devices": [{"claim": claim, "device": f"{d.driver}/{d.pool}/{d.device}", "request": d.request}
                               for claim, d in v.devices],
                   "used": v.used, "total": v.total} for node, v in sorted(verdicts.items())}


def _explain(result: Any, pod_key: str, nodes: list[Any], output: str, console: Any = None) -> None:
    """Every node x plugin for each attempt of one pod: the trace's data as a table; for a pod
    with resource claims, DynamicResources' verdict, devices and device use per node too."""
    from kubesched.simulation import device_verdicts, step_to_json

    node_names = [n.name for n in nodes]
    key = pod_key if "/" in pod_key else f"default/{pod_key}"
    steps = [s for s in result.steps if s.attempt.pod.key == key]
    if not steps:
        why = result.skipped.get(key, "it is not a pending pod of this simulation")
        raise KubeschedError(f"--explain {pod_key}: no scheduling attempt for {key}: {why}")
    if output == "json":
        attempts = []
        for s in steps:
            data = step_to_json(s)
            if s.attempt.all_filters is not None:
                data["allFilters"] = {n: [{"plugin": st.plugin, "reasons": list(st.reasons)} for st in sts]
                                      for n, sts in sorted(s.attempt.all_filters.items())}
            verdicts = device_verdicts(s.attempt, nodes)
            if verdicts:
                data["devices"] = device_verdicts_json(verdicts)
            attempts.append(data)
        click.echo(json.dumps({"explain": key, "oracle": result.oracle, "attempts": attempts}, indent=1))
        return
    from rich.console import Console
    from rich.table import Table

    console = console if console is not None else Console()
    for step in steps:
        data = step_to_json(step)
        plugins: list[str] = []
        for per_node in data["scores"].values():
            for name in per_node:
                if name not in plugins:
                    plugins.append(name)
        outcome = f"{data['outcome']} on {data['node']}" if data["node"] else data["outcome"]
        table = Table(title=f"{key}, attempt {data['attempt']}: {outcome} (decided as {result.oracle})")
        table.add_column("node")
        table.add_column("filter", overflow="fold")
        every = step.attempt.all_filters
        if every is not None:
            table.add_column("all failing filters", overflow="fold")
        verdicts = device_verdicts(step.attempt, nodes)
        if verdicts:
            table.add_column("DynamicResources", overflow="fold")
            table.add_column("devices", overflow="fold")
            table.add_column("devices used", justify="right")
        for name in plugins:
            table.add_column(name, justify="right")
        table.add_column("total", justify="right")
        feasible = set(data["feasible"])
        for node in sorted(node_names):
            if node in data["failures"]:
                f = data["failures"][node]
                # Statuses without a plugin come from filter extenders or from a PreFilterResult.
                who = f["plugin"] or ("Extender" if node in step.attempt.extender_failed else "PreFilterResult")
                verdict = f"[red]{who}[/red]: {', '.join(f['reasons'])}"
            elif node in feasible:
                verdict = "[green]feasible[/green]"
            else:
                verdict = "[dim]not evaluated[/dim]"
            scores = data["scores"].get(node, {})
            cells = [str(scores[name]) if name in scores else "" for name in plugins]
            total = data["total"].get(node)
            mark = " *" if node == data["node"] else ""
            extra: list[str] = []
            if every is not None:
                extra.append("; ".join(f"{st.plugin}: {', '.join(st.reasons)}" for st in every.get(node, ())))
            if verdicts:
                extra.extend(_device_cells(verdicts, node))
            table.add_row(node + mark, verdict, *extra, *cells, "" if total is None else str(total))
        console.print(table)
        if data["message"]:
            console.print(data["message"])
        if data["victims"]:
            console.print(f"preempted: {', '.join(data['victims'])} (nominated {data['nominatedNode']})")
