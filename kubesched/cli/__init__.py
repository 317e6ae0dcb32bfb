"""The ``kubesched`` command line: simulate | explain | bench | run | config | extender, and the
what-if commands in this package's modules.

Every KubeschedError (bad manifest, bad config) ends as one line on stderr and exit code 2,
never a traceback.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar, cast

import click

from kubesched.errors import KubeschedError

F = TypeVar("F", bound=Callable[..., Any])


def _kube_scheduler_options(fn: F) -> F:
    """kube-scheduler's whole command line, for ``kubesched run`` (kubesched.live.kube_flags)."""
    from kubesched.live.kube_flags import kube_scheduler_options

    return kube_scheduler_options(fn)


def _run_command_class() -> type[click.Command]:
    from kubesched.live.kube_flags import KubeSchedulerCommand

    return KubeSchedulerCommand


def _cluster_options(fn: F) -> F:
    """``--kubeconfig`` / ``--context``: the what-if commands read a live cluster's snapshot."""
    from kubesched.cli.snapshot import cluster_options

    return cluster_options(fn)


def version_options(fn: F) -> F:
    """``--kube-version`` and ``--feature-gates``, as every deciding command takes them."""
    fn = click.option("--feature-gates", "feature_gates", multiple=True, metavar="NAME=BOOL,...",
                      help="kube-scheduler's --feature-gates: override the release's gate defaults (repeatable).")(fn)
    return click.option("--kube-version", "kube_version", default=None, metavar="1.30|1.36",
                        help="Which kube-scheduler release decides (its default profile, plugins, reasons, queue and "
                             "the API server's admission). Default: 1.36.")(fn)


def features_option(kube_version: str | None, feature_gates: tuple[str, ...] = ()) -> Any:
    """The Features of the command line's --kube-version and --feature-gates."""
    from kubesched.features import features_for

    return features_for(kube_version, feature_gates)


def semantics(features: Any) -> dict[str, Any]:
    """What ``-o json`` says about who decided: the oracle release and the gates set."""
    return {"oracle": features.oracle, **features.describe()}


def _fail(message: str) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(2)


def _guard(fn: F) -> F:
    """Turn expected errors into exit code 2 with a one-line message."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except KubeschedError as e:
            _fail(str(e))

    return wrapper  # type: ignore[return-value]


# click's path types, made once: each click.Path() looks its name up in gettext's catalogs
# (stat calls in every locale directory, on the way to a restarted `kubesched run`'s first bind).
PATH = click.Path()
FILE = click.Path(dir_okay=False)
EXISTING_FILE = click.Path(exists=True, dir_okay=False)

# Commands kept in their own modules (kubesched/cli/<name>.py), which register on ``main`` when
# imported (they import ``main`` and the helpers of this module).
_COMMAND_MODULES = {
    "autoscale": "kubesched.cli.autoscale",
    "capacity": "kubesched.cli.capacity",
    "compare": "kubesched.cli.compare",
    "pack": "kubesched.cli.pack",
    "shadow": "kubesched.cli.shadow",
    "snapshot": "kubesched.cli.snapshot",
}


class _Commands(click.Group):
    """The ``kubesched`` group: the commands of :data:`_COMMAND_MODULES` are imported when asked
    for (by name, or to list them in ``--help``), so that ``kubesched run`` -- a restarted
    scheduler's time to its first bind -- does not import the what-if and shadow commands (the
    shadow command alone imported the simulator's scheduler: ~0.2 s)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *_COMMAND_MODULES})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = _COMMAND_MODULES.get(cmd_name)
        if module is not None and cmd_name not in self.commands:
            import importlib

            importlib.import_module(module)
        return super().get_command(ctx, cmd_name)


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kubesched")
def main() -> None:
    """kubesched: kube-scheduler's decisions, in Python (v1.36; --kube-version 1.30 for v1.30)."""
    from kubesched._entry import startup_done

    # `run` resumes garbage collection itself, once its scheduling loop has made its first attempt
    # (kubesched.live.command: a restart's time to its first bind).
    if click.get_current_context().invoked_subcommand != "run":
        startup_done()


def _load_config(config: str | None, policy: str | None = None, features: Any = None) -> Any:
    from kubesched.config import default_configuration, load_config

    if config and policy:
        raise click.UsageError("--config and --policy are mutually exclusive: give one of them")
    if policy:
        from kubesched.config.policy import load_policy

        return load_policy(policy)
    return load_config(config, features=features) if config else default_configuration(features=features)


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


def echo_data(data: Any, output: str) -> bool:
    """``-o json`` / ``-o yaml``: print ``data`` and say so; False for the table output."""
    if output == "json":
        click.echo(json.dumps(data, indent=1))
        return True
    if output == "yaml":
        import yaml

        click.echo(yaml.safe_dump(data, sort_keys=False), nl=False)
        return True
    return False


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _counted(items: list[str], limit: int = 10) -> str:
    """"3 ConfigMap, 2 Secret": most frequent first, then by name; the tail summarized."""
    from collections import Counter

    counts = sorted(Counter(items).items(), key=lambda kv: (-kv[1], kv[0]))
    parts = [f"{n} {what}" for what, n in counts[:limit]]
    if len(counts) > limit:
        parts.append(f"{sum(n for _, n in counts[limit:])} more of {len(counts) - limit} other kinds")
    return ", ".join(parts)


def load_summary(objs: Any) -> list[str]:
    """The lines `simulate` prints about what it read: objects skipped, pods synthesized."""
    lines: list[str] = []
    if objs.ignored:
        kinds = [i.kind if i.known else f"{i.kind} (unknown kind)" for i in objs.ignored]
        lines.append(f"ignored {_plural(len(objs.ignored), 'object')}: {_counted(kinds)}")
    if objs.generated:
        n = sum(len(pods) for pods in objs.generated.values())
        lines.append(f"generated {_plural(n, 'pod')} from {_plural(len(objs.generated), 'controller')}, the pods "
                     f"their controllers would create next (--controllers none reads the input as written):")
        items = list(objs.generated.items())
        for key, pods in items[:10]:
            why = objs.generated_why.get(key, "")
            lines.append(f"  {key}: {_plural(len(pods), 'pod')}" + (f" ({why})" if why else ""))
        if len(items) > 10:
            lines.append(f"  {len(items) - 10} more controllers (-o json lists them)")
    if objs.not_expanded:
        more = f", {len(objs.not_expanded) - 5} more" if len(objs.not_expanded) > 5 else ""
        lines.append(f"read as written, without the pods their controller would create (--controllers all creates "
                     f"them): {', '.join(objs.not_expanded[:5])}{more}")
    lines.extend(f"note: {n}" for n in objs.notes)
    return lines


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


@main.command("run", cls=_run_command_class())
@click.option("--deterministic", is_flag=True, help="Lowest node name among equal scores (reproducible runs).")
@click.option("--plugin", "plugins", multiple=True, metavar="MODULE:FACTORY",
              help="Register an out-of-tree plugin factory (repeatable); entry points in group kubesched.plugins "
                   "are loaded too.")
@click.option("--kube-version", "kube_version", default=None, metavar="1.30|1.36",
              help="Which kube-scheduler release decides, and whose command line this is (a flag of the other "
                   "release only is an unknown flag). Default: 1.36.")
@_kube_scheduler_options
@_guard
def run_command(deterministic: bool, plugins: tuple[str, ...], kube_flags: Any, kube_version: str | None = None) -> None:
    """Schedule pods of this scheduler's profiles in a real cluster (a drop-in second scheduler).

    Takes kube-scheduler's whole command line (of the --kube-version release), with its meaning:
    see each flag's section. SIGTERM / SIGINT: stop scheduling, finish the binds in flight, release
    the lease, exit 0. A lost lease: exit 1 at once with "leaderelection lost", as kube-scheduler
    does (it restarts as a candidate). Exit 2 stays reserved for bad input."""
    from kubesched._entry import startup_done
    from kubesched._runtime.registry import full_registry
    from kubesched.live.command import configure_logging, effective_configuration, run, write_configuration

    # Garbage collection stays paused (kubesched._entry) until the scheduling loop has made its
    # first attempt: run() resumes it then (its on_running). Every other way out resumes it here.
    version = features_option(kube_version).version
    flags = kube_flags(version)
    if flags.value("version") != "false":  # verflag.PrintAndExitIfRequested
        from importlib.metadata import version as package_version

        startup_done()
        click.echo(f"kubesched {package_version('kubesched')} ({features_option(kube_version).oracle} semantics)")
        return
    flags.validate()  # Options.Validate, logsapi.ValidateAndApply
    configure_logging(flags.value("v"), flags.value("logging-format"))
    for warning in flags.warnings():
        click.echo(f"warning: {warning}", err=True)
    options = flags.run_options(deterministic=deterministic, kube_version=kube_version)
    features = features_option(kube_version, options.feature_gates)
    if flags.value("write-config-to"):
        startup_done()
        write_configuration(flags.value("write-config-to"),
                            effective_configuration(options, flags.leader_election(), features),
                            full_registry(plugins, features=features))
        return
    # The registry (every plugin's module) is made once the informers' first LISTs are sent.
    result = run(options, flags.serving(), flags.leader_election(), functools.partial(full_registry, plugins,
                                                                                      features=features))
    if result.reason == "lost-leadership":
        click.echo("error: leaderelection lost", err=True)
        sys.exit(1)


@main.group()
def config() -> None:
    """Inspect and validate KubeSchedulerConfiguration files."""


@config.command("print-defaults")
@version_options
@_guard
def print_defaults(kube_version: str | None = None, feature_gates: tuple[str, ...] = ()) -> None:
    """Print the release's default KubeSchedulerConfiguration (--kube-version, default 1.36)."""
    import yaml

    from kubesched.config import default_configuration, dump_config

    features = features_option(kube_version, feature_gates)
    click.echo(yaml.safe_dump(dump_config(default_configuration(features=features)), sort_keys=False), nl=False)


@config.command("convert-policy")
@click.argument("file", type=PATH)
@_guard
def convert_policy(file: str) -> None:
    """Print the KubeSchedulerConfiguration equivalent to the legacy scheduler Policy FILE."""
    import yaml

    from kubesched.config import dump_config
    from kubesched.config.policy import load_policy_translation

    translation = load_policy_translation(file)
    for note in translation.notes:
        click.echo(f"note: {note}", err=True)
    click.echo(yaml.safe_dump(dump_config(translation.config), sort_keys=False), nl=False)


@config.command("validate")
@click.argument("file", type=PATH)
@click.option("--plugin", "plugins", multiple=True, metavar="MODULE:FACTORY",
              help="An out-of-tree plugin the configuration uses (repeatable); entry points in group "
                   "kubesched.plugins are loaded too. Their args are validated as simulate does.")
@version_options
@_guard
def validate(file: str, plugins: tuple[str, ...] = (), kube_version: str | None = None,
             feature_gates: tuple[str, ...] = ()) -> None:
    """Validate FILE; exit 2 with the field path of the first error."""
    from kubesched._runtime.handle import FrameworkHandle
    from kubesched._runtime.profile import build_framework
    from kubesched._runtime.registry import full_registry
    from kubesched.config import load_config

    features = features_option(kube_version, feature_gates)
    registry = full_registry(plugins, features=features)
    cfg = load_config(file, features=features)
    for index, profile in enumerate(cfg.profiles):
        build_framework(profile, registry, FrameworkHandle.for_nodes([], features=features), index=index)
    click.echo(f"{file}: valid ({len(cfg.profiles)} profile(s))")


@main.group()
def extender() -> None:
    """Run HTTP scheduler extenders written with kubesched.extender.server."""


@extender.command("serve")
@click.argument("target", metavar="MODULE:APP")
@click.option("--port", type=int, required=True, help="Port to listen on.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--certfile", type=EXISTING_FILE, help="Serve HTTPS with this certificate.")
@click.option("--keyfile", type=EXISTING_FILE, help="Private key of --certfile.")
@click.option("--client-ca", type=EXISTING_FILE,
              help="Require client certificates signed by this CA.")
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]), default="info",
              show_default=True)
@click.option("--kubeconfig", type=FILE, default="",
              help="Feed the ExtenderApp's node cache from this cluster: a list+watch of its nodes, before serving "
                   "(what a nodeCacheCapable extender needs).")
@click.option("--master", default="", help="The API server's URL (overrides --kubeconfig's server; alone, a cluster "
                                           "without authentication). Implies the node watch.")
@_guard
def extender_serve(target: str, port: int, host: str, certfile: str | None, keyfile: str | None,
                   client_ca: str | None, log_level: str, kubeconfig: str, master: str) -> None:
    """Serve the extender app MODULE:APP (or path/to/file.py:APP) with uvicorn."""
    from kubesched.extender.server import load_app, serve

    app = load_app(target)
    if kubeconfig or master:
        from kubesched.extender.watch import serve_with_node_watch

        serve_with_node_watch(app, kubeconfig=kubeconfig, master=master, host=host, port=port, certfile=certfile,
                              keyfile=keyfile, client_ca=client_ca, log_level=log_level)
        return
    serve(app, host=host, port=port, certfile=certfile, keyfile=keyfile, client_ca=client_ca, log_level=log_level)


