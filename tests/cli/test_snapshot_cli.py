"""`kubesched snapshot` and `--kubeconfig` on the what-if commands, against the local API
server: the dump and the live read decide the same (simulate, explain, capacity, compare,
pack), PATHS add to the snapshot, errors are one line with exit code 2, nothing is written to
the cluster, and the progress bar is drawn on a terminal only."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from kubesched.cli import main
from kubesched.cli.snapshot import snapshot_progress
from kubesched.features import FEATURES_1_36
from kubesched.testing.apiserver import LocalApiServer

from ..cluster.snapshot_helpers import load_into, read_scenario

SCENARIO = Path(__file__).resolve().parents[3] / "shared" / "conformance" / "scenarios" / \
    "0000-preemption-walkthrough.yaml"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(scope="module")
def api() -> Iterator[LocalApiServer]:
    if not SCENARIO.exists():
        pytest.skip(f"no scenario at {SCENARIO}")
    with LocalApiServer() as server:
        load_into(server, read_scenario(SCENARIO), FEATURES_1_36)
        yield server


@pytest.fixture(scope="module")
def kubeconfig(api: LocalApiServer, tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("kube") / "config"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "local",
        "clusters": [{"name": "local", "cluster": {"server": api.url}}],
        "users": [{"name": "me", "user": {}}],
        "contexts": [{"name": "local", "context": {"cluster": "local", "user": "me"}}]}))
    return str(path)


@pytest.fixture(scope="module")
def dump(kubeconfig: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dump") / "dump.yaml"
    r = _run("snapshot", "--kubeconfig", kubeconfig, "-o", str(out))
    assert r.exit_code == 0, r.output
    return out


def _run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), env={"COLUMNS": "300"})


def _json(r: Result) -> Any:
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_the_dump_is_a_kubectl_list_of_everything_read(dump: Path, api: LocalApiServer) -> None:
    doc = yaml.safe_load(dump.read_text())
    assert doc["kind"] == "List" and doc["apiVersion"] == "v1"
    kinds = {i["kind"] for i in doc["items"]}
    assert {"Node", "Pod", "Namespace", "PriorityClass"} <= kinds
    assert len([i for i in doc["items"] if i["kind"] == "Pod"]) == len(api.objects("pods"))


def test_simulating_the_dump_is_simulating_the_cluster(kubeconfig: str, dump: Path, tmp_path: Path) -> None:
    offline = _run("simulate", str(dump), "--deterministic", "--trace", str(tmp_path / "a.json"), "-o", "json")
    live = _run("simulate", "--kubeconfig", kubeconfig, "--deterministic", "--trace", str(tmp_path / "b.json"),
                "-o", "json")
    assert _json(live) == _json(offline)
    assert json.loads((tmp_path / "b.json").read_text()) == json.loads((tmp_path / "a.json").read_text())
    assert _json(live)["preempted"], "the scenario preempts: the victims are deleted in memory only"


def test_a_json_dump_reads_the_same(kubeconfig: str, dump: Path, tmp_path: Path) -> None:
    out = tmp_path / "dump.json"
    assert _run("snapshot", "--kubeconfig", kubeconfig, "-o", str(out), "-q").exit_code == 0
    assert json.loads(out.read_text())["items"] == yaml.safe_load(dump.read_text())["items"]


def test_paths_add_to_the_snapshot(kubeconfig: str, tmp_path: Path) -> None:
    extra = tmp_path / "extra.yaml"
    extra.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Pod",
                                     "metadata": {"name": "extra", "namespace": "default"},
                                     "spec": {"containers": [{"name": "c", "image": "x"}]}}))
    out = _json(_run("simulate", "--kubeconfig", kubeconfig, str(extra), "--deterministic", "-o", "json"))
    assert "default/extra" in out["placements"]


@pytest.mark.parametrize("command", [
    ["explain", "default/critical", "--all-filters", "-o", "json"],
    ["capacity", "--pod", "TEMPLATE", "-o", "json"],
    ["compare", "--config", "default", "--config", "default", "-o", "json"],
    ["pack", "--time-limit", "10", "-o", "json"],
], ids=["explain", "capacity", "compare", "pack"])
def test_every_what_if_command_reads_the_cluster_as_its_dump(kubeconfig: str, dump: Path, tmp_path: Path,
                                                             command: list[str]) -> None:
    template = tmp_path / "template.yaml"
    template.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "copy"},
                                        "spec": {"containers": [{"name": "c", "image": "x",
                                                                 "resources": {"requests": {"cpu": "500m"}}}]}}))
    args = [str(template) if a == "TEMPLATE" else a for a in command]
    head, rest = (args[:2], args[2:]) if args[0] == "explain" else (args[:1], args[1:])
    live = _json(_run(*head, "--kubeconfig", kubeconfig, *rest))
    offline = _json(_run(*head, str(dump), *rest))
    for out in (live, offline):  # pack: times measured
        for key in ("seconds", "greedySeconds", "verifySeconds"):
            out.pop(key, None)
        if "solver" in out:
            out["solver"] = {k: out["solver"][k] for k in ("status", "objective", "bound", "variables")}
    assert live == offline


def test_the_snapshot_wrote_nothing(api: LocalApiServer, kubeconfig: str) -> None:
    assert _run("simulate", "--kubeconfig", kubeconfig, "--deterministic", "-q").exit_code == 0
    assert api.calls() and {c.verb for c in api.calls()} == {"list"}


# ------------------------------------------------------------------------------ errors
def test_a_forbidden_list_is_one_line_and_exit_2(api: LocalApiServer, kubeconfig: str) -> None:
    api.fail_next(1, 403, verbs=["list"], resources=["pods"])
    r = _run("simulate", "--kubeconfig", kubeconfig, "--deterministic")
    assert r.exit_code == 2
    assert r.stderr.startswith(f"error: {api.url}: forbidden to list pods at the cluster scope")
    assert "deploy/snapshot/rbac.yaml" in r.stderr and r.stderr.count("\n") == 1


@pytest.mark.parametrize(("args", "says"), [
    (["simulate", "--deterministic"], "give PATHS (manifests, directories, List dumps) or --kubeconfig FILE"),
    (["simulate", "x.yaml", "--context", "other"], "--context names a context of --kubeconfig"),
    (["simulate", "--kubeconfig", "KUBECONFIG", "--context", "nope"], "context 'nope' not found"),
    (["snapshot", "--kubeconfig", "KUBECONFIG", "--context", "nope"], "context 'nope' not found"),
], ids=["neither paths nor a kubeconfig", "a context without a kubeconfig", "an unknown context",
        "an unknown context for snapshot"])
def test_bad_flags_are_one_line_and_exit_2(kubeconfig: str, args: list[str], says: str) -> None:
    r = _run(*[kubeconfig if a == "KUBECONFIG" else a for a in args])
    assert r.exit_code == 2 and says in r.stderr


# ------------------------------------------------------------------------------ progress
def test_a_pipe_gets_the_summary_and_no_bar(api: LocalApiServer, kubeconfig: str) -> None:
    r = _run("snapshot", "--kubeconfig", kubeconfig, "-o", "-")
    assert r.exit_code == 0
    assert r.stderr.startswith(f"read {len(api.objects('pods')) + len(api.objects('nodes'))}"[:5])
    assert "\x1b[" not in r.stderr and f"from {api.url} at resourceVersion {api.store.rv}" in r.stderr
    assert yaml.safe_load(r.stdout)["kind"] == "List"


def test_a_terminal_gets_a_bar_and_quiet_gets_none() -> None:
    term = Terminal()
    with snapshot_progress(quiet=False, stream=term) as progress:
        assert progress is not None
        progress("pods", 1, 4, 120)
    assert "snapshot" in term.getvalue()
    with snapshot_progress(quiet=True, stream=Terminal()) as progress:
        assert progress is None
    with snapshot_progress(quiet=False, stream=io.StringIO()) as progress:
        assert progress is None
