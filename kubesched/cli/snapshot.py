"""``kubesched snapshot`` and the ``--kubeconfig`` / ``--context`` options of the what-if
commands (simulate, explain, capacity, compare, pack): a read-only, consistent snapshot of a
live cluster (kubesched.cluster.snapshot) in place of, or besides, their PATHS."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click

from kubesched.cli import _fail, _guard, main
from kubesched.errors import KubeschedError

F = TypeVar("F", bound=Callable[..., Any])

_KUBECONFIG_HELP = ("Read the cluster of this kubeconfig: a read-only snapshot (LISTs only, consistent at one "
                    "resourceVersion) of every object the scheduler reads. PATHS then become optional; given too, "
                    "their objects are added to the snapshot (e.g. pending pods to try). RBAC: "
                    "deploy/snapshot/rbac.yaml.")
_CONTEXT_HELP = "The kubeconfig context to use (default: its current-context)."


def read_cluster(kubeconfig: str, context: str | None, *, features: Any = None, quiet: bool = False,
                 page_size: int | None = None, stream: Any = None) -> Any:
    """Take a snapshot of ``kubeconfig``'s cluster (the kinds ``features``' release reads; all
    of them without), with a progress bar on ``stream`` (stderr) when it is a terminal; a
    one-line summary and the notes go to ``stream``. Returns the Snapshot."""
    from kubesched.cluster.snapshot import (
        ALL_SNAPSHOT_RESOURCES,
        PAGE_SIZE,
        snapshot_client,
        snapshot_resources,
        take_snapshot,
    )

    out = stream if stream is not None else sys.stderr
    resources = snapshot_resources(features) if features is not None else ALL_SNAPSHOT_RESOURCES
    with snapshot_client(kubeconfig, context=context) as client, \
            snapshot_progress(quiet=quiet, stream=out) as progress:
        snap = take_snapshot(client, resources=resources, page_size=page_size or PAGE_SIZE, progress=progress)
    if not quiet:
        pages = sum(rl.pages for rl in snap.lists)
        again = f", started over {snap.attempts - 1} time(s) after the revision expired" if snap.attempts > 1 else ""
        click.echo(f"read {snap.count} objects of {len(snap.lists)} resources from {snap.server} at resourceVersion "
                   f"{snap.resource_version} ({pages} pages{again})", file=out)
        for note in snap.notes():
            click.echo(f"note: {note}", file=out)
    return snap


@contextmanager
def snapshot_progress(*, quiet: bool, stream: Any) -> Iterator[Callable[[str, int, int, int], None] | None]:
    """A rich progress bar (resources listed / all, objects read) on ``stream`` only when it is
    a terminal and not ``quiet``: never into pipes, files or ``-o json`` output."""
    if quiet or not stream.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    with Progress(TextColumn("snapshot"), BarColumn(), MofNCompleteColumn(), TextColumn("resources"),
                  TextColumn("{task.fields[objects]} objects"), TextColumn("{task.fields[kind]}"),
                  console=Console(file=stream), transient=True) as bar:
        task = bar.add_task("snapshot", total=None, objects=0, kind="")

        def progress(plural: str, done: int, total: int, objects: int) -> None:
            bar.update(task, total=total, completed=done, objects=objects, kind=plural)

        yield progress


def cluster_options(fn: F) -> F:
    """``--kubeconfig FILE [--context NAME]`` on a command taking PATHS: with ``--kubeconfig``
    the cluster's snapshot is read first and handed to the command ahead of PATHS (which become
    optional), as kubesched.objects.load_manifests reads it; without it, PATHS are required.
    The snapshot lists the kinds the command's ``--kube-version`` reads."""

    @functools.wraps(fn)
    def wrapper(*args: Any, kubeconfig: str | None = None, context: str | None = None, **kwargs: Any) -> Any:
        paths = tuple(kwargs.get("paths") or ())
        if not kubeconfig:
            if context:
                raise click.UsageError("--context names a context of --kubeconfig: give --kubeconfig too")
            if not paths:
                raise click.UsageError("give PATHS (manifests, directories, List dumps) or --kubeconfig FILE")
            return fn(*args, **kwargs)
        from kubesched.cli import features_option

        try:
            features = features_option(kwargs.get("kube_version"), tuple(kwargs.get("feature_gates") or ()))
            snap = read_cluster(kubeconfig, context, features=features, quiet=bool(kwargs.get("quiet")))
        except KubeschedError as e:
            _fail(str(e))
        kwargs["paths"] = (snap.inputs(), *paths)
        return fn(*args, **kwargs)

    wrapper = click.option("--context", "context", default=None, metavar="NAME", help=_CONTEXT_HELP)(wrapper)
    wrapper = click.option("--kubeconfig", "kubeconfig", default=None, type=click.Path(dir_okay=False),
                           metavar="FILE", help=_KUBECONFIG_HELP)(wrapper)
    return wrapper  # type: ignore[return-value]


@main.command("snapshot")
@click.option("--kubeconfig", "kubeconfig", required=True, type=click.Path(dir_okay=False), metavar="FILE",
              help="The cluster to read (read-only: LISTs only; RBAC: deploy/snapshot/rbac.yaml).")
@click.option("--context", "context", default=None, metavar="NAME", help=_CONTEXT_HELP)
@click.option("-o", "--output", "output", default="-", show_default=True, metavar="FILE",
              help="Where to write the dump: a `kubectl get -A -o yaml`-style List (JSON when FILE ends in .json; "
                   "- is stdout).")
@click.option("--chunk-size", "chunk_size", type=click.IntRange(min=1), default=500, show_default=True,
              help="Objects per LIST page (limit + continue), as kubectl's --chunk-size.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar and no summary on stderr.")
@_guard
def snapshot_command(kubeconfig: str, context: str | None, output: str, chunk_size: int, quiet: bool) -> None:
    """Save what the scheduler would read from the cluster of --kubeconfig: every node, pod,
    volume, storage class, CSI object, PDB, service, workload, PriorityClass, namespace and DRA
    object, consistent at one resourceVersion, as one List to run offline later
    (`kubesched simulate DUMP.yaml` decides as `kubesched simulate --kubeconfig F` would).
    Writes nothing to the cluster, ever."""
    from kubesched.cluster.snapshot import dump_yaml

    snap = read_cluster(kubeconfig, context, quiet=quiet, page_size=chunk_size)
    text = json.dumps(snap.as_list(), indent=1) + "\n" if output.endswith(".json") else dump_yaml(snap)
    if output == "-":
        click.echo(text, nl=False)
        return
    try:
        Path(output).write_text(text)
    except OSError as e:
        raise KubeschedError(f"{output}: cannot write the snapshot: {e}") from None
    if not quiet:
        click.echo(f"wrote {output}", err=True)
