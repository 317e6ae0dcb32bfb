"""A progress bar for long simulations: pods attempted / pending pods, rate and ETA, drawn by
rich on stderr only when stderr is a terminal (never into pipes, files or `-o json` output)
and not with --quiet."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn


def pending_count(objs: Any, profiles: Any) -> int:
    """The pods a run may attempt: unbound, not terminal, for one of the profiles."""
    return sum(1 for p in objs.pods if not p.node_name and not p.is_terminal and p.scheduler_name in profiles)


@contextmanager
def simulation_progress(sim: Any, *, quiet: bool, stream: Any = None) -> Iterator[None]:
    """Attach a progress bar to ``sim`` (a Simulator or TimelineSimulator) for the block."""
    stream = stream if stream is not None else sys.stderr
    total = pending_count(sim.objs, sim.profiles)
    if quiet or total == 0 or not stream.isatty():
        yield
        return
    console = Console(file=stream)
    seen: set[str] = set()
    with Progress(TextColumn("scheduling"), BarColumn(), MofNCompleteColumn(), TextColumn("pods"),
                  TextColumn("{task.fields[rate]:>8} pods/s"), TimeRemainingColumn(),
                  console=console, transient=True) as bar:
        task = bar.add_task("scheduling", total=total, rate="")

        def on_step(step: Any) -> None:
            uid = step.attempt.pod.uid
            if uid in seen:
                return
            seen.add(uid)
            t = bar.tasks[0]
            speed = t.speed
            bar.update(task, completed=len(seen), rate=f"{speed:.0f}" if speed else "")

        sim.on_step = on_step
        try:
            yield
        finally:
            sim.on_step = None
