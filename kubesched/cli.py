"""The ``kubesched`` command line: simulate | bench | config.

Every KubeschedError (bad manifest, bad config) ends as one line on stderr and exit code 2,
never a traceback.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.table import Table

from kubesched.errors import KubeschedError

F = TypeVar("F", bound=Callable[..., Any])


def _fail(message: str) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(2)


def _guard(fn: F) -> F:
    """Turn expected errors into exit code 2 with a one-line message."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except KubeschedError as e:
            _fail(str(e))

    return wrapper  # type: ignore[return-value]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kubesched")
def main() -> None:
    """kubesched: kube-scheduler v1.30's decisions, in Python."""


def _load_config(config: str | None) -> Any:
    from kubesched.config import default_configuration, load_config

    return load_config(config) if config else default_configuration()


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--config", "config", type=click.Path(), help="KubeSchedulerConfiguration file.")
@click.option("--deterministic", is_flag=True, help="Break ties by the lowest node name; no randomness.")
@click.option("--seed", type=int, default=None, help="Seed for random tie-breaks.")
@click.option("--trace", "trace", type=click.Path(), help="Write the conformance trace (JSON) here.")
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.option("--explain", "explain", metavar="NAMESPACE/POD",
              help="Also print, for this pod, every node x plugin: filter verdict and reason, weighted scores, total.")
@_guard
def simulate(paths: tuple[str, ...], config: str | None, deterministic: bool, seed: int | None, trace: str | None,
             output: str, explain: str | None) -> None:
    """Schedule every pending pod found in PATHS (manifests, directories or List dumps)."""
    from kubesched.objects import load_manifests
    from kubesched.simulation import Simulator

    cfg = _load_config(config)
    objs = load_manifests(paths)
    sim = Simulator(objs, cfg, deterministic=deterministic, seed=seed)
    result = sim.run()
    if trace:
        try:
            Path(trace).write_text(json.dumps(result.trace(), indent=1) + "\n")
        except OSError as e:
            raise KubeschedError(f"{trace}: cannot write the trace: {e}") from None
    last: dict[str, Any] = {}
    for step in result.steps:
        last[step.attempt.pod.key] = step
    if explain is not None:
        _explain(result, explain, [n.name for n in objs.nodes], output)
        if output == "json":
            return
    if output == "json":
        out = {
            "placements": result.final,
            "unschedulable": {k: s.attempt.message for k, s in last.items() if s.attempt.outcome != "Scheduled"},
            "preempted": result.deleted,
            "skipped": result.skipped,
            "steps": [s for s in result.trace()["steps"]],
        }
        click.echo(json.dumps(out, indent=1))
        return
    console = Console()
    table = Table(title=f"kubesched simulate: {len(objs.nodes)} nodes, {len(last)} pods scheduled or attempted")
    table.add_column("pod")
    table.add_column("node")
    table.add_column("reason / note", overflow="fold")
    for key, step in last.items():
        a = step.attempt
        if a.outcome == "Scheduled":
            note = f"preempted {', '.join(v.key for v in a.victims)}" if a.victims else ""
            table.add_row(key, a.node or "", note)
        else:
            note = a.message or ""
            if a.nominated_node:
                note = f"nominated to {a.nominated_node}; {note}"
            table.add_row(key, "[red]-[/red]", note)
    for key, why in result.skipped.items():
        table.add_row(key, "[yellow]not attempted[/yellow]", why)
    for key in result.deleted:
        table.add_row(key, "[magenta]deleted[/magenta]", "preemption victim")
    console.print(table)
    bound = sum(1 for s in last.values() if s.attempt.outcome == "Scheduled")
    console.print(f"{bound} bound, {len(last) - bound} unschedulable, {len(result.skipped)} not attempted, "
                  f"{len(result.deleted)} preempted")


def _explain(result: Any, pod_key: str, node_names: list[str], output: str) -> None:
    """Every node x plugin for each attempt of one pod: the trace's data as a table."""
    from kubesched.simulation import step_to_json

    key = pod_key if "/" in pod_key else f"default/{pod_key}"
    steps = [s for s in result.steps if s.attempt.pod.key == key]
    if not steps:
        why = result.skipped.get(key, "it is not a pending pod of this simulation")
        raise KubeschedError(f"--explain {pod_key}: no scheduling attempt for {key}: {why}")
    if output == "json":
        click.echo(json.dumps({"explain": key, "attempts": [step_to_json(s) for s in steps]}, indent=1))
        return
    console = Console()
    for step in steps:
        data = step_to_json(step)
        plugins: list[str] = []
        for per_node in data["scores"].values():
            for name in per_node:
                if name not in plugins:
                    plugins.append(name)
        outcome = f"{data['outcome']} on {data['node']}" if data["node"] else data["outcome"]
        table = Table(title=f"{key}, attempt {data['attempt']}: {outcome}")
        table.add_column("node")
        table.add_column("filter", overflow="fold")
        for name in plugins:
            table.add_column(name, justify="right")
        table.add_column("total", justify="right")
        feasible = set(data["feasible"])
        for node in sorted(node_names):
            if node in data["failures"]:
                f = data["failures"][node]
                verdict = f"[red]{f['plugin'] or 'PreFilterResult'}[/red]: {', '.join(f['reasons'])}"
            elif node in feasible:
                verdict = "[green]feasible[/green]"
            else:
                verdict = "[dim]not evaluated[/dim]"
            scores = data["scores"].get(node, {})
            cells = [str(scores[name]) if name in scores else "" for name in plugins]
            total = data["total"].get(node)
            mark = " *" if node == data["node"] else ""
            table.add_row(node + mark, verdict, *cells, "" if total is None else str(total))
        console.print(table)
        if data["message"]:
            console.print(data["message"])
        if data["victims"]:
            console.print(f"preempted: {', '.join(data['victims'])} (nominated {data['nominatedNode']})")


@main.command()
@click.option("--nodes", type=int, default=5000, show_default=True)
@click.option("--pods", type=int, default=10000, show_default=True)
@click.option("--workload", type=click.Choice(["basic"]), default="basic", show_default=True)
@click.option("--seed", type=int, default=1, show_default=True)
@click.option("-o", "--output", type=click.Choice(["text", "json"]), default="text")
@_guard
def bench(nodes: int, pods: int, workload: str, seed: int, output: str) -> None:
    """Scheduling throughput on a scheduler_perf-shaped workload, in memory."""
    from kubesched.bench import run_bench

    res = run_bench(workload, nodes, pods, seed=seed)
    if output == "json":
        click.echo(json.dumps(res.as_dict(), indent=1))
    else:
        click.echo(res.summary())
    if not res.ok:
        _fail("benchmark result is invalid: " + "; ".join(res.problems))


@main.group()
def config() -> None:
    """Inspect and validate KubeSchedulerConfiguration files."""


@config.command("print-defaults")
@_guard
def print_defaults() -> None:
    """Print v1.30's default KubeSchedulerConfiguration."""
    import yaml

    from kubesched.config import default_configuration, dump_config

    click.echo(yaml.safe_dump(dump_config(default_configuration()), sort_keys=False), nl=False)


@config.command("validate")
@click.argument("file", type=click.Path())
@_guard
def validate(file: str) -> None:
    """Validate FILE; exit 2 with the field path of the first error."""
    from kubesched._runtime.handle import FrameworkHandle
    from kubesched._runtime.profile import build_framework
    from kubesched.config import load_config
    from kubesched.plugins.registry import REGISTRY

    cfg = load_config(file)
    for profile in cfg.profiles:
        build_framework(profile, REGISTRY, FrameworkHandle.for_nodes([]))
    click.echo(f"{file}: valid ({len(cfg.profiles)} profile(s))")


if __name__ == "__main__":  # pragma: no cover
    main()
