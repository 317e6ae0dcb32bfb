"""The ``kubesched`` command line: the ``kubesched`` group, its ``run`` command and the helpers
every command shares. The other commands (simulate, explain, bench, config, extender, the what-if
and shadow commands) are in this package's modules, imported when asked for (:class:`_Commands`):
a restarted scheduler's time to its first bind counts every module ``kubesched run`` imports.

Every KubeschedError (bad manifest, bad config) ends as one line on stderr and exit code 2,
never a traceback.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, TypeVar

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


@functools.cache
def path_type(*, exists: bool = False, dir_okay: bool = True) -> click.Path:
    """click's path type, made once per kind and only by the modules of the commands that take a
    path: each click.Path() looks its name up in gettext's catalogs (stat calls in every locale
    directory), which `kubesched run` does not need."""
    return click.Path(exists=exists, dir_okay=dir_okay)


# Commands kept in their own modules (kubesched/cli/<module>.py), which register on ``main`` when
# imported (they import ``main`` and the helpers of this module).
_COMMAND_MODULES = {
    "autoscale": "kubesched.cli.autoscale",
    "bench": "kubesched.cli.bench",
    "capacity": "kubesched.cli.capacity",
    "compare": "kubesched.cli.compare",
    "config": "kubesched.cli.config",
    "explain": "kubesched.cli.simulate",
    "extender": "kubesched.cli.extender",
    "pack": "kubesched.cli.pack",
    "shadow": "kubesched.cli.shadow",
    "simulate": "kubesched.cli.simulate",
    "snapshot": "kubesched.cli.snapshot",
}


class _Commands(click.Group):
    """The ``kubesched`` group: the commands of :data:`_COMMAND_MODULES` are imported when asked
    for (by name, or to list them in ``--help``), so that ``kubesched run`` -- a restarted
    scheduler's time to its first bind -- imports none of the others (the shadow command alone
    imported the simulator's scheduler: ~0.2 s; simulate, explain and bench built some 60 click
    options)."""

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


def echo_data(data: Any, output: str) -> bool:
    """``-o json`` / ``-o yaml``: print ``data`` and say so; False for the table output."""
    if output == "json":
        import json

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
