"""Gang scheduling end to end: manifests -> the timeline simulator (the default `kubesched
simulate` mode, virtual clock and real queue), the conformance procedure, and the CLI.

kubesched schedules gang members pod by pod (upstream 1.36 also has a pod group scheduling
cycle, not in kubesched): members wait at Permit for the quorum, at most 5 minutes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from kubesched.cli import main
from kubesched.features import features_for
from kubesched.objects import ClusterObjects, load_manifests
from kubesched.simulation import Simulator
from kubesched.timeline import TimelineResult, TimelineSimulator

GATES = "GenericWorkload=true,GangScheduling=true"
GANG = features_for("1.36", [GATES])
EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "gang" / "cluster.yaml"
TIMEOUT_MESSAGE = "0/1 nodes are available: 1 rejected due to timeout after waiting 5m0s at plugin GangScheduling."


def node(name: str) -> str:
    return f"""apiVersion: v1
kind: Node
metadata: {{name: {name}, labels: {{kubernetes.io/hostname: {name}}}}}
status:
  capacity: {{cpu: "4", memory: 8Gi, pods: "110"}}
  allocatable: {{cpu: "4", memory: 8Gi, pods: "110"}}
"""


def pod_group(name: str = "training", min_count: int = 3, created: str = "2024-01-01T00:00:00Z") -> str:
    return f"""apiVersion: scheduling.k8s.io/v1alpha2
kind: PodGroup
metadata: {{name: {name}, namespace: default, creationTimestamp: "{created}"}}
spec: {{schedulingPolicy: {{gang: {{minCount: {min_count}}}}}}}
"""


def worker(name: str, created: str = "2024-01-01T00:00:01Z", group: str = "training") -> str:
    return f"""apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default, creationTimestamp: "{created}"}}
spec:
  schedulingGroup: {{podGroupName: {group}}}
  containers: [{{name: c, resources: {{requests: {{cpu: "3"}}}}}}]
"""


def cluster(tmp_path: Path, nodes: int, *docs: str) -> ClusterObjects:
    f = tmp_path / "cluster.yaml"
    f.write_text("---\n".join([*(node(f"node-{i}") for i in range(nodes)), *docs]))
    return load_manifests([f], features=GANG)


def gang_of_three(tmp_path: Path, nodes: int) -> ClusterObjects:
    return cluster(tmp_path, nodes, pod_group(), *(worker(f"worker-{i}") for i in range(3)))


def timeline(objs: ClusterObjects, max_attempts: int = 1000) -> TimelineResult:
    return TimelineSimulator(objs, features=GANG, max_attempts=max_attempts).run()


def events(r: TimelineResult) -> list[tuple[float, str, str, str]]:
    return [(e.time - r.start, e.reason, e.pod.split("/")[1], e.message) for e in r.events]


# ---------------------------------------------------------------- the timeline
def test_a_gang_with_room_for_all_binds_all_together(tmp_path: Path) -> None:
    r = timeline(gang_of_three(tmp_path, nodes=3))
    assert sorted(map(str, r.final.values())) == ["node-0", "node-1", "node-2"]
    got = events(r)
    # The first two wait at Permit; the third completes the quorum and binds first, the
    # waiting ones right after, at the same instant.
    assert [(t, reason, pod) for t, reason, pod, _ in got] == [
        (0.0, "Scheduled", "worker-2"), (0.0, "Scheduled", "worker-0"), (0.0, "Scheduled", "worker-1")]
    assert r.pending == {}


def test_a_gang_with_room_for_two_of_three_binds_none(tmp_path: Path) -> None:
    r = timeline(gang_of_three(tmp_path, nodes=2), max_attempts=1)
    assert set(r.final.values()) == {None}
    got = events(r)
    # worker-2 finds no room; worker-0 and worker-1 wait at Permit for 5 minutes, then the
    # framework rejects each with the Permit timeout, and none of them was ever bound.
    assert got[0][1:3] == ("FailedScheduling", "worker-2") and "2 Insufficient cpu" in got[0][3]
    assert got[1:] == [(300.0, "FailedScheduling", "worker-0", TIMEOUT_MESSAGE),
                       (300.0, "FailedScheduling", "worker-1", TIMEOUT_MESSAGE)]
    assert r.pending["default/worker-0"].endswith(TIMEOUT_MESSAGE)
    assert r.pending["default/worker-1"].endswith(TIMEOUT_MESSAGE)
    assert "2 Insufficient cpu" in r.pending["default/worker-2"]


def test_members_freed_by_a_timeout_keep_being_retried_without_ever_binding(tmp_path: Path) -> None:
    """Pod by pod, the released nodes let another member wait at Permit in turn: upstream
    retries for ever; the timeline gives up after max_attempts."""
    r = timeline(gang_of_three(tmp_path, nodes=2), max_attempts=4)
    assert set(r.final.values()) == {None}
    timeouts = [t for t, _, _, message in events(r) if message == TIMEOUT_MESSAGE]
    assert len(timeouts) > 2 and {t % 300.0 for t in timeouts} == {0.0}
    assert all(why.startswith("given up after 4 scheduling attempts") for why in r.pending.values())


def test_pre_enqueue_holds_a_gang_until_min_count_members_exist(tmp_path: Path) -> None:
    objs = cluster(tmp_path, 3, pod_group(), worker("worker-0"), worker("worker-1"),
                   worker("worker-2", created="2024-01-01T00:01:01Z"))
    r = timeline(objs)
    assert sorted(map(str, r.final.values())) == ["node-0", "node-1", "node-2"]
    # Nothing is attempted before the third member arrives a minute later.
    assert {t for t, *_ in events(r)} == {60.0}
    assert r.metrics.schedule_attempts == {"scheduled": 3}


def test_a_gang_short_of_members_is_never_attempted(tmp_path: Path) -> None:
    r = timeline(cluster(tmp_path, 3, pod_group(), worker("worker-0"), worker("worker-1")))
    assert r.events == [] and r.steps == []
    assert r.pending == {f"default/worker-{i}": "waiting for minCount pods from a gang to appear in scheduling queue"
                         for i in range(2)}


def test_members_wait_for_their_pod_group_to_be_created(tmp_path: Path) -> None:
    objs = cluster(tmp_path, 3, pod_group(created="2024-01-01T00:02:01Z"), *(worker(f"worker-{i}") for i in range(3)))
    r = timeline(objs)
    assert sorted(map(str, r.final.values())) == ["node-0", "node-1", "node-2"]
    assert {t for t, *_ in events(r)} == {120.0}  # the PodGroupAdd event let them in


def test_members_of_a_pod_group_never_created_wait_for_it(tmp_path: Path) -> None:
    r = timeline(cluster(tmp_path, 3, worker("worker-0", group="missing")))
    assert r.pending == {"default/worker-0": 'waiting for pods\'s pod group "missing" to appear in scheduling queue'}


# ---------------------------------------------------------------- the conformance procedure
@pytest.mark.parametrize(("nodes", "bound"), [
    pytest.param(3, ["node-0", "node-1", "node-2"], id="room for the gang binds all of it"),
    pytest.param(2, [None, None, None], id="room for two of three binds none"),
])
def test_the_procedure_decides_a_gang_as_the_timeline(tmp_path: Path, nodes: int, bound: list[str | None]) -> None:
    r = Simulator(gang_of_three(tmp_path, nodes), features=GANG, deterministic=True).run()
    assert sorted(r.final.values(), key=str) == bound


# ---------------------------------------------------------------- the CLI
def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def test_the_example_binds_its_gang_and_holds_the_short_one() -> None:
    result = run("simulate", str(EXAMPLE), "--feature-gates", GATES, "-o", "json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    placements = out["placements"]
    assert placements.pop("default/eval-0") is None
    assert sorted(placements) == ["default/worker-0", "default/worker-1", "default/worker-2"]
    assert sorted(placements.values()) == ["node-a", "node-b", "node-c"]  # one 3-CPU worker per 4-CPU node
    assert out["pending"] == {"default/eval-0": "waiting for minCount pods from a gang to appear in scheduling queue"}


def test_the_example_table_lists_the_held_pod_as_not_attempted() -> None:
    result = run("simulate", str(EXAMPLE), "--feature-gates", GATES)
    assert result.exit_code == 0, result.output
    assert re.search(r"default/eval-0 .*not attempted", result.stdout)
    assert "3 bound, 0 unschedulable, 1 not attempted" in result.stdout


@pytest.mark.parametrize(("args", "message"), [
    pytest.param([], f"error: {EXAMPLE}: document 3: kind: unsupported kind 'Workload'",
                 id="without the gates the workload API is refused naming file, document and kind"),
    pytest.param(["--feature-gates", "GangScheduling=true"],
                 "error: --feature-gates: GangScheduling is enabled, but depends on features that are disabled: "
                 "[GenericWorkload]", id="GangScheduling alone is refused as kube-scheduler refuses it"),
    pytest.param(["--kube-version", "1.30", "--feature-gates", "GangScheduling=true"],
                 "error: --feature-gates: unrecognized feature gate: GangScheduling",
                 id="1.30 has no GangScheduling gate"),
])
def test_the_cli_refuses_gang_scheduling_it_cannot_run(args: list[str], message: str) -> None:
    result = run("simulate", str(EXAMPLE), *args)
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(message), lines


def test_an_invalid_pod_group_is_one_line_naming_file_document_and_field(tmp_path: Path) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text("---\n".join([node("node-0"), pod_group(min_count=0), worker("worker-0")]))
    result = run("simulate", str(f), "--feature-gates", GATES)
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        f"error: {f}: document 1: spec.schedulingPolicy.gang.minCount: Required value"]
