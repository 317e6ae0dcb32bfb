"""``kubesched shadow``: watch a cluster read-only and compare every decision of its real
scheduler with kubesched's (:mod:`kubesched.live.shadow`); Prometheus metrics on /metrics, each
disagreement logged with `kubesched explain`'s table, a JSON summary on SIGTERM / SIGINT."""

from __future__ import annotations

import io
import logging
from collections.abc import Sequence
from typing import Any

import click

from kubesched.cli import _guard, features_option, main, version_options
from kubesched.errors import ConfigError
from kubesched.live.serving import DEFAULT_BIND_ADDRESS, DEFAULT_SECURE_PORT
from kubesched.objects import Node
from kubesched.scheduler import Attempt

EXPLAIN_WIDTH = 200  # columns of the logged explain table


def explain_table(attempt: Attempt, nodes: Sequence[Node], oracle: str) -> str:
    """What `kubesched explain` prints for one attempt (the same table, drawn by the same
    code), as plain text for the log."""
    from rich.console import Console

    from kubesched.cli.simulate import _explain
    from kubesched.simulation import SimulationResult, Step

    buf = io.StringIO()
    console = Console(file=buf, width=EXPLAIN_WIDTH, color_system=None, highlight=False, soft_wrap=False)
    result = SimulationResult(steps=[Step(attempt, 1)], oracle=oracle)
    _explain(result, attempt.pod.key, list(nodes), "table", console=console)
    return buf.getvalue().rstrip("\n")


@main.command("shadow")
@click.option("--kubeconfig", default="", help="Path to a kubeconfig. Without it: the configuration's "
              "clientConnection.kubeconfig, else $KUBECONFIG, else the in-cluster service account, else "
              "~/.kube/config.")
@click.option("--context", default=None, help="The kubeconfig context to use (default: its current-context).")
@click.option("--master", default="", help="The address of the API server (overrides the kubeconfig's server).")
@click.option("--config", "config", type=click.Path(), help="The cluster scheduler's KubeSchedulerConfiguration "
              "(its profiles decide; default: the release's default profile).")
@click.option("--scheduler-name", "scheduler_names", multiple=True, metavar="NAME",
              help="Compare the decisions for pods with this schedulerName (repeatable), each with the profile of "
                   "that name. [default: default-scheduler]")
@click.option("--output", "output", type=click.Path(dir_okay=False), default=None, metavar="FILE",
              help="On SIGTERM / SIGINT, write the summary here as JSON: observed, agreed, tied and each "
                   "disagreement (pod, real node, kubesched's node, why).")
@click.option("--bind-address", "bind_address", default=DEFAULT_BIND_ADDRESS, show_default=True,
              help="The IP address to serve /metrics, /healthz and /readyz on (0.0.0.0 for every IPv4 interface).")
@click.option("--metrics-port", "--secure-port", "metrics_port", type=click.IntRange(0, 65535),
              default=DEFAULT_SECURE_PORT, show_default=True,
              help="The port of /metrics, /healthz and /readyz (plain HTTP); 0 disables serving.")
@click.option("--plugin", "plugins", multiple=True, metavar="MODULE:FACTORY",
              help="An out-of-tree plugin factory the configuration uses (repeatable).")
@click.option("-v", "--v", "verbosity", type=int, default=0, show_default=True,
              help="Log verbosity: 0 logs disagreements and warnings, 2 every comparison, 4 and above debug.")
@version_options
@_guard
def shadow_command(kubeconfig: str, context: str | None, master: str, config: str | None,
                   scheduler_names: tuple[str, ...], output: str | None, bind_address: str, metrics_port: int,
                   plugins: tuple[str, ...], verbosity: int, kube_version: str | None = None,
                   feature_gates: tuple[str, ...] = ()) -> None:
    """Watch a cluster (list and watch only) and, for every pod its scheduler binds or fails,
    decide where kubesched would have put it in the cluster state the scheduler saw: agreed,
    tied (among kubesched's equally top-scored nodes) or disagreed.

    SIGTERM / SIGINT: write the --output summary and exit 0."""
    from kubesched._runtime.registry import full_registry
    from kubesched.live.command import redact_credentials_in_logs
    from kubesched.live.flags import ServingOptions
    from kubesched.live.shadow import ShadowOptions, run_shadow

    logging.basicConfig(level=logging.DEBUG if verbosity >= 4 else logging.INFO if verbosity >= 2
                        else logging.WARNING, format="%(asctime)s %(levelname).1s %(name)s] %(message)s")
    if verbosity < 2:
        logging.getLogger("kubesched.shadow").setLevel(logging.INFO)  # its start, stop and summary lines
        logging.getLogger("kubesched.shadow.decisions").setLevel(logging.WARNING)
    logging.getLogger("httpx").setLevel(logging.DEBUG if verbosity >= 6 else logging.WARNING)
    redact_credentials_in_logs()
    features = features_option(kube_version, feature_gates)
    try:
        serving = ServingOptions(bind_address=bind_address, secure_port=metrics_port)
    except ConfigError as e:
        raise click.UsageError(str(e)) from None

    def explain(attempt: Attempt, nodes: Sequence[Node]) -> str:
        return explain_table(attempt, nodes, features.oracle)

    options = ShadowOptions(config=config, kubeconfig=kubeconfig, context=context, master=master,
                            scheduler_names=scheduler_names or ("default-scheduler",), output=output,
                            kube_version=kube_version, feature_gates=feature_gates)
    summary: dict[str, Any] = run_shadow(options, serving, full_registry(plugins, features=features),
                                         explain=explain)
    click.echo(f"observed {summary['observed']}: {summary['agreed']} agreed, {summary['tied']} tied, "
               f"{len(summary['disagreed'])} disagreed", err=True)
