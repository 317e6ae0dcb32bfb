"""Real `kubectl get -A -o yaml` dumps, and what the conformance procedure reads.

- The conformance procedure (`simulate --deterministic`) reads the input as written: it never
  adds the pods workload controllers would create; that what-if belongs to the default mode.
- The default mode's rule for dumps: a ReplicaSet / StatefulSet whose pods are present with
  their ownerReference but fewer than spec.replicas is a controller mid-flight; the pods it
  would create next are added, and the output says which and why, offering --controllers none.
- Objects as a v1.30 cluster returns them: pods being deleted (pending: never attempted;
  running: still on their node), Succeeded/Failed pods, mirror pods, pods bound to nodes missing
  from the dump, generateName-only objects, managedFields and huge annotations, Lists in Lists.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kubesched.cli import main
from kubesched.objects import load_manifests
from kubesched.simulation import Simulator
from kubesched.timeline import TimelineSimulator
from tests.objects.test_workloads import ctrl, node, pod, write


def run(*args: str) -> Any:
    return CliRunner().invoke(main, list(args))


def cpu_pod(name: str, cpu: str, **kw: Any) -> dict[str, Any]:
    doc = pod(name, **kw)
    doc["spec"]["containers"] = [{"name": "c", "image": "img", "resources": {"requests": {"cpu": cpu}}}]
    return doc


def as_list(*items: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": list(items)}


# ------------------------------------------------------------------ rule 2: the conformance procedure
def test_deterministic_simulation_never_adds_a_controllers_pods(tmp_path: Path) -> None:
    f = write(tmp_path / "m.yaml", node("n1"), ctrl("Deployment", "web", replicas=2),
              ctrl("ReplicaSet", "rs", replicas=3), cpu_pod("rs-aaaaa", "100m", owner=("ReplicaSet", "rs")))
    out = json.loads(run("simulate", str(f), "--deterministic", "-o", "json").stdout)
    assert out["generated"] == {}
    assert sorted(out["placements"]) == ["default/rs-aaaaa"]


def test_deterministic_with_controllers_all_is_a_usage_error(tmp_path: Path) -> None:
    f = write(tmp_path / "m.yaml", node("n1"), ctrl("Deployment", "web", replicas=2))
    r = run("simulate", str(f), "--deterministic", "--controllers", "all")
    assert r.exit_code == 2
    assert "--deterministic reads the input as written" in r.stderr
    assert "drop --controllers all" in r.stderr


def test_explain_still_explains_a_pod_the_what_if_created(tmp_path: Path) -> None:
    f = write(tmp_path / "m.yaml", node("n1"), ctrl("Deployment", "web", replicas=1))
    pods = json.loads(run("simulate", str(f), "-o", "json", "--seed", "1").stdout)["generated"]["Deployment default/web"]
    r = run("explain", pods[0], str(f))
    assert r.exit_code == 0, r.output
    assert "n1" in r.stdout


MID_FLIGHT_CASES = [
    ("a ReplicaSet with 1 of its 3 pods present is a controller mid-flight",
     [ctrl("ReplicaSet", "rs", replicas=3, labels={"app": "rs"}),
      cpu_pod("rs-aaaaa", "100m", owner=("ReplicaSet", "rs"), labels={"app": "rs"}, node_name="n1")],
     "ReplicaSet default/rs", 2,
     "1 of 3 replicas present (pods with its ownerReference): its controller is mid-flight and creates the rest"),
    ("a StatefulSet with ordinal 0 of 3 present is a controller mid-flight",
     [ctrl("StatefulSet", "db", replicas=3, labels={"app": "db"}),
      cpu_pod("db-0", "100m", owner=("StatefulSet", "db"), labels={"app": "db"}, node_name="n1")],
     "StatefulSet default/db", 2,
     "1 of 3 replicas present (pods with its ownerReference): its controller is mid-flight and creates the rest"),
    ("a ReplicaSet owned by a Deployment is scaled by it",
     [{**ctrl("ReplicaSet", "web-abc", replicas=2, labels={"app": "web"}),
       "metadata": {"name": "web-abc", "ownerReferences": [
           {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "controller": True}]}}],
     "ReplicaSet default/web-abc", 2,
     "0 of 2 replicas present; it is owned by Deployment web, whose controller scales it"),
]


@pytest.mark.parametrize("docs, controller, added, why", [c[1:] for c in MID_FLIGHT_CASES],
                         ids=[c[0] for c in MID_FLIGHT_CASES])
def test_a_controller_mid_flight_gets_its_missing_pods_and_the_output_says_why(
        tmp_path: Path, docs: list[Any], controller: str, added: int, why: str) -> None:
    f = write(tmp_path / "m.yaml", node("n1"), *docs)
    objs = load_manifests([f])
    assert len(objs.generated[controller]) == added
    assert objs.generated_why[controller] == why
    r = run("simulate", str(f), "--seed", "1")
    assert r.exit_code == 0, r.output
    assert "(--controllers none reads the input as written)" in r.stdout
    assert f"  {controller}: {added} pods ({why})" in r.stdout
    out = json.loads(run("simulate", str(f), "--seed", "1", "-o", "json").stdout)
    assert out["generatedWhy"] == {controller: why}
    # --controllers none: exactly the pods of the dump.
    none = json.loads(run("simulate", str(f), "--controllers", "none", "-o", "json").stdout)
    assert none["generated"] == {}


def test_an_error_while_creating_a_controllers_pods_offers_controllers_none(tmp_path: Path) -> None:
    bad = ctrl("Deployment", "web", replicas=1, pod_spec={"containers": [{"name": "c", "image": "img",
                                                                          "resources": {"requests": {"cpu": "x"}}}]})
    f = write(tmp_path / "m.yaml", node("n1"), bad)
    r = run("simulate", str(f))
    assert r.exit_code == 2
    assert "spec.template.spec.containers[0].resources.requests" in r.stderr
    assert "--controllers none reads it as written" in r.stderr


# ------------------------------------------------------------------ rule 4: real dumps
def simulate_both(f: Path) -> list[tuple[dict[str, Any], dict[str, str]]]:
    """(final placements, skipped reasons) of the conformance procedure and of the timeline."""
    objs = load_manifests([f])
    det = Simulator(objs, deterministic=True).run()
    tl = TimelineSimulator(load_manifests([f]), seed=1).run()
    return [(det.final, det.skipped), (tl.final, tl.skipped)]


def test_a_pending_pod_being_deleted_is_never_attempted(tmp_path: Path) -> None:
    f = write(tmp_path / "m.yaml", node("n1"),
              cpu_pod("going", "1", meta={"deletionTimestamp": "2024-01-01T00:00:00Z"}))
    for final, skipped in simulate_both(f):
        assert final["default/going"] is None
        assert skipped["default/going"] == "skip schedule deleting pod: default/going"


@pytest.mark.parametrize("phase, meta, occupies", [
    ("Running", {"deletionTimestamp": "2024-01-01T00:00:00Z"}, True),
    ("Running", {"annotations": {"kubernetes.io/config.mirror": "abc", "kubernetes.io/config.source": "file"},
                 "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "n1", "controller": True}]}, True),
    ("Succeeded", {}, False),
    ("Failed", {}, False),
], ids=["a running pod being deleted still occupies its node", "a mirror pod occupies its node",
        "a Succeeded pod frees its node", "a Failed pod frees its node"])
def test_which_bound_pods_occupy_their_node(tmp_path: Path, phase: str, meta: dict[str, Any], occupies: bool) -> None:
    f = write(tmp_path / "m.yaml", node("n1", cpu="2"), cpu_pod("old", "1500m", node_name="n1", phase=phase, meta=meta),
              cpu_pod("new", "1"))
    for final, _ in simulate_both(f):
        assert (final["default/new"] is None) == occupies


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_a_terminal_pod_without_a_node_is_reported_not_dropped(tmp_path: Path, phase: str) -> None:
    f = write(tmp_path / "m.yaml", node("n1"), cpu_pod("done", "1", phase=phase))
    for final, skipped in simulate_both(f):
        assert final["default/done"] is None
        assert skipped["default/done"].startswith(f"status.phase is {phase}: a terminal pod is never scheduled")
    r = run("simulate", str(f), "--deterministic")
    assert "default/done" in r.stdout and "not attempted" in r.stdout


def test_pods_bound_to_a_node_missing_from_the_dump_take_no_room_and_are_noted(tmp_path: Path) -> None:
    f = write(tmp_path / "m.yaml", node("n1", cpu="2"), cpu_pod("ghost", "2", node_name="gone", phase="Running"),
              cpu_pod("new", "2"))
    objs = load_manifests([f])
    assert objs.notes == ["1 pod(s) bound to nodes missing from the input take no room on any node, as in "
                          "kube-scheduler's cache: default/ghost on gone"]
    for final, _ in simulate_both(f):
        assert final["default/new"] == "n1"
    assert "note: 1 pod(s) bound to nodes missing from the input" in run("simulate", str(f)).stdout


def test_generate_name_only_objects_get_a_name_as_the_api_server_would(tmp_path: Path) -> None:
    a = cpu_pod("x", "1")
    a["metadata"] = {"generateName": "web-"}
    b = cpu_pod("x", "1")
    b["metadata"] = {"generateName": "web-"}
    f = write(tmp_path / "m.yaml", node("n1"), a, b)
    objs = load_manifests([f])
    names = [p.name for p in objs.pods]
    assert len(set(names)) == 2 and all(n.startswith("web-") and len(n) == 9 for n in names)
    assert names == [p.name for p in load_manifests([f]).pods]  # stable from run to run
    assert objs.notes[0].startswith("named 2 object(s) that had only metadata.generateName")
    final = Simulator(objs, deterministic=True).run().final
    assert all(final[f"default/{n}"] == "n1" for n in names)


def test_lists_nested_in_lists_load_with_their_paths(tmp_path: Path) -> None:
    inner = {"apiVersion": "v1", "kind": "NodeList", "items": [{"metadata": node("n1")["metadata"],
                                                                "status": node("n1")["status"]}]}
    f = write(tmp_path / "m.yaml", as_list(inner, as_list(cpu_pod("p", "1"))))
    objs = load_manifests([f])
    assert [n.name for n in objs.nodes] == ["n1"] and [p.name for p in objs.pods] == ["p"]
    bad = write(tmp_path / "bad.yaml", as_list(as_list(cpu_pod("p", "lots"))))
    r = run("simulate", str(bad))
    assert r.exit_code == 2
    assert r.stderr.startswith(f"error: {bad}: document 0: items[0].items[0].spec.containers[0].resources.requests")


def test_managed_fields_and_huge_annotations_load_and_do_not_stay_in_memory(tmp_path: Path) -> None:
    last_applied = json.dumps({"spec": {"containers": [{"args": ["--x"] * 5000}]}})
    managed = [{"apiVersion": "v1", "fieldsType": "FieldsV1", "manager": "kubectl", "operation": "Update",
                "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}}}]
    # Brackets inside strings (a script, a regex) are not nesting: 3000 unclosed "[" in total.
    docs = [node("n1", cpu="64")]
    for i in range(30):
        p = cpu_pod(f"p{i}", "1", meta={"managedFields": managed, "annotations": {
            "kubectl.kubernetes.io/last-applied-configuration": last_applied, "regex": "[" * 100}})
        docs.append(p)
    f = tmp_path / "dump.yaml"
    f.write_text(yaml.safe_dump(as_list(*docs)))
    objs = load_manifests([f])
    assert len(objs.pods) == 30
    assert all("managedFields" not in p.raw["metadata"] for p in objs.pods)
    assert objs.pods[0].meta.annotations["kubectl.kubernetes.io/last-applied-configuration"] == last_applied
    assert all(v == "n1" for v in Simulator(objs, deterministic=True).run().final.values())
