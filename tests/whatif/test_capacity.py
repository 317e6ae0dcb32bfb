"""`kubesched capacity`: how many more copies of a pod fit, on small clusters checked by hand
(node order by name, ties to the lowest node name: the default procedure)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from kubesched.cli import main
from kubesched.whatif.capacity import LIMIT_REACHED, SCHEDULING_GATED, UNSCHEDULABLE, format_resource, run_capacity

from ._manifests import node, pod, priority_class, write

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
THREE_NODES = [node("n1"), node("n2"), node("n3")]


def three_nodes_one_cpu_used() -> list[dict[str, Any]]:
    """Three 4-cpu nodes; n2 already runs a pod of 1 cpu."""
    return [*THREE_NODES, pod("running", "1", "1Gi", node_name="n2")]


@dataclass
class Case:
    id: str
    cluster: list[dict[str, Any]]
    templates: list[dict[str, Any]]
    total: int
    counts: list[int]  # per template
    per_node: dict[str, int]  # node -> copies (all templates)
    reason: str
    message: str
    stop_pod: str | None
    kwargs: dict[str, Any] = field(default_factory=dict)
    preempted: list[str] = field(default_factory=list)
    replicas_on_nodes: list[dict[str, int]] | None = None


CASES = [
    Case("three 4-cpu nodes with 1 cpu used on one fit exactly 11 one-cpu copies, 4/3/4",
         three_nodes_one_cpu_used(), [pod("web", "1", "1Gi")], 11, [11], {"n1": 4, "n2": 3, "n3": 4},
         UNSCHEDULABLE, "0/3 nodes are available: 3 Insufficient cpu.", "default/web-11"),
    Case("pending pods of the input take no room: still 11 copies",
         [*three_nodes_one_cpu_used(), pod("waiting", "3", "1Gi")], [pod("web", "1", "1Gi")], 11, [11],
         {"n1": 4, "n2": 3, "n3": 4}, UNSCHEDULABLE, "0/3 nodes are available: 3 Insufficient cpu.", "default/web-11"),
    Case("a nodeSelector puts copies on the two matching nodes only and names the third in the message",
         [node("n1", labels={"disk": "ssd"}), node("n2"), node("n3", labels={"disk": "ssd"})],
         [pod("db", "1", "1Gi", nodeSelector={"disk": "ssd"})], 8, [8], {"n1": 4, "n2": 0, "n3": 4},
         UNSCHEDULABLE, "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
                        "2 Insufficient cpu.", "default/db-8"),
    Case("a hostPort lets one copy on each node",
         THREE_NODES, [pod("proxy", "100m", "128Mi", ports=[{"containerPort": 8080, "hostPort": 8080}])], 3, [3],
         {"n1": 1, "n2": 1, "n3": 1}, UNSCHEDULABLE,
         "0/3 nodes are available: 3 node(s) didn't have free ports for the requested pod ports.", "default/proxy-3"),
    Case("two templates alternate and stop together at the first copy that does not fit",
         [node("n1", memory="4Gi"), node("n2", memory="4Gi")], [pod("a", "1", "1Gi"), pod("b", "2", "2Gi")],
         5, [3, 2], {"n1": 3, "n2": 2}, UNSCHEDULABLE, "0/2 nodes are available: 2 Insufficient cpu, "
                                                         "2 Insufficient memory.", "default/b-5",
         replicas_on_nodes=[{"n1": 2, "n2": 1}, {"n1": 1, "n2": 1}]),
    Case("--max stops at the limit with LimitReached, before any copy fails",
         three_nodes_one_cpu_used(), [pod("web", "1", "1Gi")], 5, [5], {"n1": 2, "n2": 1, "n3": 2},
         LIMIT_REACHED, "Maximum number of pods simulated: 5", None, kwargs={"max_copies": 5}),
    Case("a template with schedulingGates stops at its first copy, which never leaves the queue",
         THREE_NODES, [pod("gated", "1", schedulingGates=[{"name": "example.com/wait"}])], 0, [0],
         {"n1": 0, "n2": 0, "n3": 0}, SCHEDULING_GATED, "waiting for scheduling gates: [example.com/wait]",
         "default/gated-0"),
    Case("no node at all: kube-scheduler's no-nodes message, nothing placed",
         [], [pod("web", "1", "1Gi")], 0, [0], {}, UNSCHEDULABLE, "no nodes available to schedule pods",
         "default/web-0"),
    Case("an excluded node takes no copy and its pods are gone with it",
         three_nodes_one_cpu_used(), [pod("web", "1", "1Gi")], 8, [8], {"n1": 4, "n3": 4}, UNSCHEDULABLE,
         "0/2 nodes are available: 2 Insufficient cpu.", "default/web-8", kwargs={"exclude_nodes": ["n2"]}),
    Case("a high-priority copy does not preempt by default",
         [node("n1"), priority_class("high", 1000), pod("batch", "3", "1Gi", node_name="n1")],
         [pod("urgent", "2", "1Gi", priorityClassName="high")], 0, [0], {"n1": 0}, UNSCHEDULABLE,
         "0/1 nodes are available: 1 Insufficient cpu.", "default/urgent-0"),
    Case("with --preempt the first copy evicts the batch pod, a second fits, the third finds no victim",
         [node("n1"), priority_class("high", 1000), pod("batch", "3", "1Gi", node_name="n1")],
         [pod("urgent", "2", "1Gi", priorityClassName="high")], 2, [2], {"n1": 2}, UNSCHEDULABLE,
         "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, preemption: 0/1 nodes are available: "
         "1 No preemption victims found for incoming pod.", "default/urgent-2",
         kwargs={"preempt": True}, preempted=["default/batch"]),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_capacity_counts_copies_until_one_does_not_fit(case: Case, tmp_path: Path) -> None:
    cluster = write(tmp_path / "cluster.yaml", *case.cluster)
    templates = [write(tmp_path / f"template-{i}.yaml", t) for i, t in enumerate(case.templates)]
    res, _ = run_capacity([cluster], templates, **case.kwargs)
    assert res.total == case.total
    assert [t.count for t in res.templates] == case.counts
    assert {n.node: n.total for n in res.nodes} == case.per_node
    assert (res.stop.reason, res.stop.message, res.stop.pod) == (case.reason, case.message, case.stop_pod)
    assert list(res.preempted) == case.preempted
    assert len(res.placements) == res.total
    if case.replicas_on_nodes is not None:
        assert [dict(t.replicas_on_nodes) for t in res.templates] == case.replicas_on_nodes


def test_the_stopping_copy_gives_each_node_its_reason_and_a_summary(tmp_path: Path) -> None:
    cluster = write(tmp_path / "c.yaml", node("n1", labels={"disk": "ssd"}), node("n2"), node("n3"))
    template = write(tmp_path / "t.yaml", pod("db", "3", "1Gi", nodeSelector={"disk": "ssd"}))
    res, _ = run_capacity([cluster], [template])
    assert res.total == 1
    assert {n.node: n.reasons for n in res.nodes} == {
        "n1": ("Insufficient cpu",),
        "n2": ("node(s) didn't match Pod's node affinity/selector",),
        "n3": ("node(s) didn't match Pod's node affinity/selector",)}
    assert res.stop.fail_summary == (("node(s) didn't match Pod's node affinity/selector", 2),
                                     ("Insufficient cpu", 1))


def test_the_whatif_example_fits_nine_more_checkout_replicas_named_as_its_replicaset_would() -> None:
    res, _ = run_capacity([EXAMPLES / "whatif" / "cluster.yaml"], [EXAMPLES / "whatif" / "deployment.yaml"])
    assert res.total == 9
    assert dict(res.templates[0].replicas_on_nodes) == {"node-a": 4, "node-b": 4, "node-c": 1}
    assert res.templates[0].copy_names == "checkout-9bcffd666-<i>"
    assert res.stop.message == "0/3 nodes are available: 3 Insufficient cpu."
    assert res.stop.pod == "default/checkout-9bcffd666-9"


def test_a_template_file_also_under_path_is_not_counted_twice() -> None:
    """examples/whatif holds the Deployment's file too: read as written, it creates no pods
    there, so the answer is the same 9 (its Service is applied, which does not change it)."""
    alone, _ = run_capacity([EXAMPLES / "whatif" / "cluster.yaml"], [EXAMPLES / "whatif" / "deployment.yaml"])
    both, _ = run_capacity([EXAMPLES / "whatif"], [EXAMPLES / "whatif" / "deployment.yaml"])
    assert (both.total, both.pending_pods, both.bound_pods) == (alone.total, 0, 1) == (9, 0, 1)
    assert dict(both.placements) == dict(alone.placements)
    assert any("also under PATH" in n and "counted once" in n for n in both.notes)
    assert any("not applied: Service checkout" in n for n in alone.notes)


def test_a_pod_template_that_is_also_a_bound_pod_under_path_takes_its_room(tmp_path: Path) -> None:
    """The bound pod occupies n1 (3 of 4 cpu); its copies drop spec.nodeName and are scheduled."""
    cluster = write(tmp_path / "c.yaml", node("n1"), node("n2"))
    template = write(tmp_path / "t.yaml", pod("web", "3", "1Gi", node_name="n1"))
    res, _ = run_capacity([cluster, template], [template])
    assert res.total == 1
    assert dict(res.placements) == {"default/web-0": "n2"}
    assert any("bound to n1 and takes room there" in n for n in res.notes)


def test_a_job_template_is_copied_as_the_pods_its_controller_creates(tmp_path: Path) -> None:
    cluster = write(tmp_path / "c.yaml", node("n1", cpu="2"))
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "etl"},
           "spec": {"parallelism": 5, "template": {"spec": {"restartPolicy": "Never", "containers": [
               {"name": "etl", "image": "etl:1", "resources": {"requests": {"cpu": "1"}}}]}}}}
    res, inp = run_capacity([cluster], [write(tmp_path / "job.yaml", job)])
    assert res.total == 2
    assert [k for k, _ in res.placements] == ["default/etl-0", "default/etl-1"]
    ref = inp.templates[0].pod.meta.controller_ref()
    assert ref is not None and (ref.kind, ref.name) == ("Job", "etl")


def test_copies_named_like_existing_pods_get_a_copy_infix(tmp_path: Path) -> None:
    cluster = write(tmp_path / "c.yaml", node("n1", cpu="2"), pod("web-0", "100m", node_name="n1"))
    res, _ = run_capacity([cluster], [write(tmp_path / "t.yaml", pod("web", "1"))])
    assert [k for k, _ in res.placements] == ["default/web-copy-0"]
    assert res.templates[0].copy_names == "web-copy-<i>"


@pytest.mark.parametrize(("resource", "value", "text"), [
    ("cpu", 1000, "1"), ("cpu", 1500, "1500m"), ("memory", 2 * 2**30, "2Gi"), ("memory", 3 * 10**9, "3G"),
    ("memory", 1001, "1001"), ("pods", 3, "3"), ("example.com/gpu", 2, "2"), ("hugepages-2Mi", 2**21, "2Mi"),
], ids=lambda v: str(v))
def test_requests_are_printed_as_quantities(resource: str, value: int, text: str) -> None:
    assert format_resource(resource, value) == text


# ----------------------------------------------------------------------------- the command
def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def test_the_command_prints_count_distribution_and_reason_on_the_whatif_example() -> None:
    r = CliRunner().invoke(main, ["capacity", str(EXAMPLES / "whatif"), "--pod",
                                  str(EXAMPLES / "whatif" / "deployment.yaml")], env={"COLUMNS": "160"})
    assert r.exit_code == 0, r.output
    assert "The cluster can schedule 9 more copies of Deployment default/checkout." in r.output
    for row in ("node-a │      4 │ Insufficient cpu", "node-b │      4 │ Insufficient cpu",
                "node-c │      1 │ Insufficient cpu"):
        assert row in r.output
    assert "Termination reason: Unschedulable: 0/3 nodes are available: 3 Insufficient cpu." in r.output


def test_json_output_has_the_documented_shape(tmp_path: Path) -> None:
    cluster = write(tmp_path / "c.yaml", *three_nodes_one_cpu_used())
    template = write(tmp_path / "t.yaml", pod("web", "1", "1Gi"))
    r = run("capacity", cluster, "--pod", template, "-o", "json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["semantics"] == {"oracle": "kube-scheduler v1.36.2", "kubeVersion": "1.36", "featureGates": {}}
    assert set(out) == {"semantics", "kind", "total", "templates", "nodes", "stop", "preemption", "deterministic", "seed",
                        "attempts", "placements", "preempted", "boundPods", "pendingPods", "excludedNodes", "notes"}
    assert (out["kind"], out["total"], out["attempts"], out["preemption"]) == ("CapacityReview", 11, 12, False)
    assert out["templates"] == [{"name": "Pod default/web", "file": template, "namespace": "default",
                                 "copyNames": "web-<i>", "count": 11, "requests": {"cpu": 1000, "memory": 2**30},
                                 "nodeSelector": {}, "priority": 0,
                                 "replicasOnNodes": {"n1": 4, "n2": 3, "n3": 4}}]
    assert out["nodes"][1] == {"name": "n2", "copies": 3, "perTemplate": [3], "reasons": ["Insufficient cpu"]}
    assert out["stop"] == {"reason": "Unschedulable", "message": "0/3 nodes are available: 3 Insufficient cpu.",
                           "pod": "default/web-11", "template": "Pod default/web",
                           "failSummary": {"Insufficient cpu": 3}}
    assert list(out["placements"])[:2] == ["default/web-0", "default/web-1"]


def test_yaml_output_is_the_same_data(tmp_path: Path) -> None:
    import yaml

    cluster = write(tmp_path / "c.yaml", *three_nodes_one_cpu_used())
    template = write(tmp_path / "t.yaml", pod("web", "1", "1Gi"))
    as_json = json.loads(run("capacity", cluster, "--pod", template, "-o", "json").output)
    assert yaml.safe_load(run("capacity", cluster, "--pod", template, "-o", "yaml").output) == as_json


def test_a_seed_breaks_ties_at_random_but_repeatably(tmp_path: Path) -> None:
    cluster = write(tmp_path / "c.yaml", *[node(f"n{i}") for i in range(6)])
    template = write(tmp_path / "t.yaml", pod("web", "1", "1Gi"))
    a, _ = run_capacity([cluster], [template], seed=7)
    b, _ = run_capacity([cluster], [template], seed=7)
    assert a.total == b.total == 24 and a.placements == b.placements
    assert not a.deterministic and a.seed == 7


def assert_one_line_error(result: Result, expected: str) -> None:
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: " + expected), lines[0]


def _write_bad_inputs(tmp: Path) -> None:
    write(tmp / "c.yaml", node("n1"))
    write(tmp / "svc.yaml", {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
                             "spec": {"selector": {"a": "b"}}})
    write(tmp / "deploy.yaml", {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                                "spec": {"selector": {"matchLabels": {"a": "b"}}}})
    write(tmp / "nospec.yaml", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}})
    write(tmp / "two.yaml", pod("a", "1"), pod("b", "1"))
    write(tmp / "ds.yaml", {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"}, "spec": {}})
    write(tmp / "prio.yaml", pod("p", "1", priorityClassName="gold"))
    write(tmp / "web.yaml", pod("web", "1"))
    write(tmp / "rs.yaml", {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "rs"},
                            "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
                                "metadata": {"labels": {"a": "b"}},
                                "spec": {"schedulerName": "batch", "containers": [{"name": "c", "image": "x"}]}}}})


# (id, arguments after `capacity`, expected error line after "error: "); {t} is the test's tmp_path.
BAD_INPUTS = [
    ("a missing template file is named", ["{t}/c.yaml", "--pod", "{t}/missing.yaml"],
     "{t}/missing.yaml: no such file or directory (the --pod template)"),
    ("a template file without a pod template says what it may hold", ["{t}/c.yaml", "--pod", "{t}/svc.yaml"],
     "{t}/svc.yaml: no pod template in it: a --pod file holds one of Pod, Deployment, ReplicaSet, "
     "ReplicationController, Job"),
    ("a Deployment without spec.template names the field", ["{t}/c.yaml", "--pod", "{t}/deploy.yaml"],
     "{t}/deploy.yaml: document 0: spec.template: Required value"),
    ("a Pod without a spec names the missing containers", ["{t}/c.yaml", "--pod", "{t}/nospec.yaml"],
     "{t}/nospec.yaml: document 0: spec.containers: Required value"),
    ("two templates in one file name the second document", ["{t}/c.yaml", "--pod", "{t}/two.yaml"],
     "{t}/two.yaml: document 1: a second pod template (Pod default/b; the first is Pod default/a in document 0): "
     "give each template its own --pod"),
    ("a DaemonSet is refused as a template", ["{t}/c.yaml", "--pod", "{t}/ds.yaml"],
     "{t}/ds.yaml: document 0: kind: DaemonSet cannot be a --pod template: a DaemonSet runs one pod per node"),
    ("a PriorityClass missing from the cluster fails admission as the API server would",
     ["{t}/c.yaml", "--pod", "{t}/prio.yaml"],
     "{t}/prio.yaml: document 0: spec.priorityClassName: no PriorityClass with name gold was found"),
    ("an unknown config file is named", ["{t}/c.yaml", "--pod", "{t}/web.yaml", "--config", "{t}/nope.yaml"],
     "{t}/nope.yaml: cannot read configuration: No such file or directory"),
    ("the same template twice is refused", ["{t}/c.yaml", "--pod", "{t}/web.yaml", "--pod", "{t}/web.yaml"],
     "{t}/web.yaml: given twice as --pod: each template file once"),
    ("an excluded node that does not exist is named", ["{t}/c.yaml", "--pod", "{t}/web.yaml", "--exclude-node", "n9"],
     "excluded node(s) not in the input: n9"),
    ("another scheduler's template is refused, naming the field inside the controller",
     ["{t}/c.yaml", "--pod", "{t}/rs.yaml"],
     "{t}/rs.yaml: document 0: spec.template.spec.schedulerName: 'batch' is not a profile of the configuration "
     "(default-scheduler): its copies would wait for another scheduler"),
    ("a missing cluster path is named", ["{t}/nowhere", "--pod", "{t}/web.yaml"],
     "{t}/nowhere: no such file or directory"),
]


@pytest.mark.parametrize(("args", "expected"), [(a, e) for _, a, e in BAD_INPUTS], ids=[i for i, _, _ in BAD_INPUTS])
def test_bad_input_is_one_line_with_exit_code_2(args: list[str], expected: str, tmp_path: Path) -> None:
    _write_bad_inputs(tmp_path)
    result = run("capacity", *(a.format(t=tmp_path) for a in args))
    assert_one_line_error(result, expected.format(t=tmp_path))


def _deployment(cpu: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "uid": "d-uid"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [
                         {"name": "web", "image": "web:1", "resources": {"requests": {"cpu": cpu}}}]}}}}


def _dumped_replica_set(cpu: str) -> dict[str, Any]:
    """The ReplicaSet the Deployment controller made (pod-template-hash h4sh), as in a dump."""
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": "web-h4sh", "labels": {"app": "web", "pod-template-hash": "h4sh"},
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                                              "uid": "d-uid", "controller": True}]},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web", "pod-template-hash": "h4sh"}},
                     "template": {"metadata": {"labels": {"app": "web", "pod-template-hash": "h4sh"}},
                                  "spec": {"containers": [
                                      {"name": "web", "image": "web:1", "resources": {"requests": {"cpu": cpu}}}]}}}}


@pytest.mark.parametrize(("template_cpu", "owner", "count"), [
    ("1", "web-h4sh", 4),
    ("2", None, 2),
], ids=["an unchanged Deployment's copies are more pods of the ReplicaSet it already controls",
        "a changed pod template rolls out: copies belong to the new ReplicaSet its controller would create"])
def test_deployment_copies_follow_find_new_replica_set(template_cpu: str, owner: str | None, count: int,
                                                       tmp_path: Path) -> None:
    cluster = write(tmp_path / "c.yaml", node("n1"), _deployment("1"), _dumped_replica_set("1"))
    res, inp = run_capacity([cluster], [write(tmp_path / "web.yaml", _deployment(template_cpu))])
    ref = inp.templates[0].pod.meta.controller_ref()
    assert ref is not None and ref.kind == "ReplicaSet"
    if owner is not None:
        assert ref.name == owner and inp.templates[0].replica_set is None
        assert res.templates[0].copy_names == "web-h4sh-<i>"
    else:
        rs = inp.templates[0].replica_set
        assert rs is not None and ref.name == rs.name != "web-h4sh"
    assert res.total == count


def test_the_table_shows_fifty_nodes_and_sums_up_the_rest(tmp_path: Path) -> None:
    cluster = write(tmp_path / "c.yaml", *[node(f"n{i:02d}", cpu="1") for i in range(60)])
    template = write(tmp_path / "t.yaml", pod("web", "1"))
    r = CliRunner().invoke(main, ["capacity", cluster, "--pod", template], env={"COLUMNS": "160"})
    assert r.exit_code == 0, r.output
    assert "The cluster can schedule 60 more copies of Pod default/web." in r.output
    assert re.search(r"│ n49 +│      1 │", r.output) and "n50" not in r.output
    assert "... 10 more nodes │     10 │ (-o json lists every node)" in r.output
