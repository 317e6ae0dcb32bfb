"""The progress bar of long simulations: on a terminal's stderr only, never with --quiet, never
in `-o json` output."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from kubesched.cli import main
from kubesched.cli._progress import simulation_progress
from kubesched.objects import load_manifests
from kubesched.simulation import Simulator
from kubesched.timeline import TimelineSimulator


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def cluster(tmp_path: Path, pods: int = 5) -> Path:
    docs = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
             "status": {"allocatable": {"cpu": "64", "memory": "64Gi", "pods": "110"}}}]
    docs += [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", "namespace": "default"},
              "spec": {"containers": [{"name": "c", "image": "x"}]}} for i in range(pods)]
    f = tmp_path / "m.yaml"
    f.write_text(yaml.safe_dump_all(docs))
    return f


@pytest.mark.parametrize("timeline", [False, True], ids=["in the conformance procedure", "on the queue's clock"])
def test_a_terminal_gets_a_bar_counting_the_pods_attempted(tmp_path: Path, timeline: bool) -> None:
    objs = load_manifests([cluster(tmp_path)])
    sim = TimelineSimulator(objs, seed=1) if timeline else Simulator(objs, deterministic=True)
    term = Terminal()
    with simulation_progress(sim, quiet=False, stream=term):
        result = sim.run()
    assert len(result.steps) == 5
    assert "5/5" in term.getvalue()
    assert sim.on_step is None  # detached afterwards


@pytest.mark.parametrize(("stream", "quiet"), [(io.StringIO(), False), (Terminal(), True)],
                         ids=["a pipe gets nothing", "quiet silences a terminal"])
def test_no_bar_off_a_terminal_or_when_quiet(tmp_path: Path, stream: io.StringIO, quiet: bool) -> None:
    sim = Simulator(load_manifests([cluster(tmp_path)]), deterministic=True)
    with simulation_progress(sim, quiet=quiet, stream=stream):
        sim.run()
    assert stream.getvalue() == ""


def test_json_output_stays_clean(tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["simulate", str(cluster(tmp_path)), "-o", "json"])
    assert r.exit_code == 0, r.output
    assert len(json.loads(r.stdout)["placements"]) == 5
    assert r.stderr == ""
