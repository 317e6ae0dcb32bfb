"""The HTML report's data (kubesched.whatif.report), checked by hand on small clusters; no
browser (tests/test_report_browser.py loads the pages in Chromium)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kubesched.cli import main
from kubesched.objects import load_manifests
from kubesched.simulation import Simulator
from kubesched.timeline import TimelineSimulator
from kubesched.whatif.report import (
    Placement,
    Report,
    Utilisation,
    bucket_of,
    placements_of,
    preemptions_of,
    simulation_report,
    utilisation_after,
    utilisation_before,
)

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

# n1: 4 CPU, 8Gi, 10 pods; 1 CPU / 1Gi already used by `running`.
# n2: 2 CPU and 2 example.com/gpu, empty.
# `web` (1 CPU, 2Gi) can only go to n1, `gpu` (500m, 1 gpu) only to n2, `huge` (8 CPU) nowhere,
# `gated` waits for its scheduling gate.
SMALL = """
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {kubernetes.io/hostname: n1}}
status: {capacity: {cpu: "4", memory: 8Gi, pods: "10"}}
---
apiVersion: v1
kind: Node
metadata: {name: n2, labels: {kubernetes.io/hostname: n2}}
status: {capacity: {cpu: "2", memory: 8Gi, pods: "10", example.com/gpu: "2"}}
---
apiVersion: v1
kind: Pod
metadata: {name: running, namespace: default}
spec:
  nodeName: n1
  containers: [{name: c, image: i, resources: {requests: {cpu: "1", memory: 1Gi}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default}
spec:
  nodeSelector: {kubernetes.io/hostname: n1}
  containers: [{name: c, image: i, resources: {requests: {cpu: "1", memory: 2Gi}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: gpu, namespace: default}
spec:
  containers: [{name: c, image: i, resources: {requests: {cpu: 500m, example.com/gpu: "1"},
                                               limits: {example.com/gpu: "1"}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: huge, namespace: default}
spec:
  containers: [{name: c, image: i, resources: {requests: {cpu: "8"}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: gated, namespace: default}
spec:
  schedulingGates: [{name: example.com/wait}]
  containers: [{name: c, image: i}]
"""

# n1: 4 CPU with a low-priority pod taking 3; a high-priority pod of 2 CPU preempts it.
PREEMPT = """
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {capacity: {cpu: "4", memory: 8Gi, pods: "10"}}
---
apiVersion: v1
kind: Pod
metadata: {name: low, namespace: default}
spec:
  nodeName: n1
  terminationGracePeriodSeconds: 5
  containers: [{name: c, image: i, resources: {requests: {cpu: "3"}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: high, namespace: default}
spec:
  priorityClassName: high
  containers: [{name: c, image: i, resources: {requests: {cpu: "2"}}}]
"""


def _load(tmp_path: Path, text: str) -> Any:
    f = tmp_path / "cluster.yaml"
    f.write_text(text)
    return load_manifests([f])


def embedded(page: str) -> dict[str, Any]:
    m = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', page, re.S)
    assert m is not None
    data: dict[str, Any] = json.loads(m.group(1))
    return data


def section(data: dict[str, Any], kind: str) -> dict[str, Any]:
    found = [s for s in data["sections"] if s["k"] == kind]
    assert len(found) == 1, [s["k"] for s in data["sections"]]
    return found[0]


@pytest.mark.parametrize("timeline", [False, True], ids=["deterministic", "timeline"])
def test_utilisation_before_and_after_by_hand(tmp_path: Path, timeline: bool) -> None:
    objs = _load(tmp_path, SMALL)
    sim = TimelineSimulator(objs, seed=1) if timeline else Simulator(objs, deterministic=True)
    result = sim.run()
    assert result.final["default/web"] == "n1" and result.final["default/gpu"] == "n2"
    before, after = utilisation_before(objs), utilisation_after(objs, result)
    n1b, n1a = before.node("n1"), after.node("n1")
    # 1 of 4 CPU before, 2 of 4 after.
    assert (n1b.requested["cpu"], n1b.allocatable["cpu"]) == (1000, 4000)
    assert (n1a.requested["cpu"], n1a.allocatable["cpu"]) == (2000, 4000)
    assert n1b.percent("cpu") == 25.0 and n1a.percent("cpu") == 50.0
    assert n1b.percent("memory") == 12.5 and n1a.percent("memory") == 37.5  # 1Gi, then 3Gi of 8Gi
    assert (n1b.requested["pods"], n1a.requested["pods"], n1a.allocatable["pods"]) == (1, 2, 10)
    n2b, n2a = before.node("n2"), after.node("n2")
    assert n2b.percent("example.com/gpu") == 0.0 and n2a.percent("example.com/gpu") == 50.0
    assert n2a.percent("cpu") == 25.0  # 500m of 2
    assert n1a.percent("example.com/gpu") is None  # n1 offers none
    assert before.resources() == after.resources() == ["cpu", "memory", "pods", "example.com/gpu"]
    assert before.totals("cpu") == (1000, 6000) and after.totals("cpu") == (2500, 6000)
    # cpu: n1 at 25% (bucket 2), n2 at 0%; then 50% (bucket 5) and 25% (bucket 2).
    assert before.histogram("cpu") == [1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0]
    assert after.histogram("cpu") == [0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0]
    assert after.histogram("example.com/gpu") == [0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0]  # n1 not counted
    # The scheduler's own cache agrees, node by node.
    cache = Utilisation.from_node_infos(sim.cache.node_infos.values())
    assert {n.name: dict(n.requested) for n in cache.nodes} == {n.name: dict(n.requested) for n in after.nodes}


def test_histogram_buckets_are_exact() -> None:
    assert bucket_of(0, 4000) == 0
    assert bucket_of(399, 4000) == 0 and bucket_of(400, 4000) == 1
    assert bucket_of(3999, 4000) == 9 and bucket_of(4000, 4000) == 9  # 100% is full, not over
    assert bucket_of(4001, 4000) == 10
    assert bucket_of(1, 0) is None and bucket_of(0, 0) is None


def test_placements_give_each_pods_outcome_node_and_reason(tmp_path: Path) -> None:
    objs = _load(tmp_path, SMALL)
    result = TimelineSimulator(objs, seed=1).run()
    rows = {p.pod: p for p in placements_of(result, objs)}
    assert set(rows) == {"default/web", "default/gpu", "default/huge", "default/gated"}
    assert rows["default/web"] == Placement("default/web", "scheduled", "n1", "", 1)
    huge = rows["default/huge"]
    assert huge.outcome == "unschedulable" and huge.node is None
    # kube-scheduler's FailedScheduling message, as `simulate -o json` prints it.
    r = CliRunner().invoke(main, ["simulate", str(tmp_path / "cluster.yaml"), "--seed", "1", "-o", "json"])
    assert r.exit_code == 0, r.output
    assert huge.reason == json.loads(r.output)["unschedulable"]["default/huge"]
    assert huge.reason.startswith("0/2 nodes are available: 2 Insufficient cpu.")
    assert rows["default/gated"].outcome == "not attempted"
    assert rows["default/gated"].reason == "waiting for scheduling gates"


def test_preemption_victims_leave_the_after_state(tmp_path: Path) -> None:
    objs = _load(tmp_path, PREEMPT)
    sim = TimelineSimulator(objs, seed=1)
    result = sim.run()
    assert result.deleted == ["default/low"] and result.final["default/high"] == "n1"
    assert utilisation_before(objs).node("n1").percent("cpu") == 75.0
    after = utilisation_after(objs, result)
    assert after.node("n1").percent("cpu") == 50.0 and after.node("n1").requested["pods"] == 1
    assert dict(Utilisation.from_node_infos(sim.cache.node_infos.values()).node("n1").requested) == \
        dict(after.node("n1").requested)
    (pre,) = preemptions_of(result)
    assert (pre.preemptor, pre.node, pre.victims, pre.result) == ("default/high", "n1", ("default/low",),
                                                                  "scheduled on n1")
    rows = {p.pod: p for p in placements_of(result, objs)}
    assert rows["default/low"] == Placement("default/low", "preempted", "n1", "preempted by default/high on n1", 0)
    assert rows["default/high"].outcome == "scheduled" and rows["default/high"].reason == "preempted default/low"
    data = embedded(simulation_report(objs, result).render())
    s = data["strings"]
    rows_json = section(data, "preemptions")["rows"]
    assert [[s[r[0]], s[r[1]], [s[v] for v in r[2]]] for r in rows_json] == [["default/high", "n1", ["default/low"]]]
    util = section(data, "util")
    assert util["req"][0]["cpu"] == [3000] and util["req"][1]["cpu"] == [2000] and util["alloc"]["cpu"] == [4000]


@pytest.mark.parametrize("example", ["cluster", "dump", "whatif"])
def test_after_state_matches_the_schedulers_cache_on_the_examples(example: str) -> None:
    objs = load_manifests([EXAMPLES / example])
    sim = TimelineSimulator(objs, seed=3)
    result = sim.run()
    after = utilisation_after(objs, result)
    cache = Utilisation.from_node_infos(sim.cache.node_infos.values())
    assert {n.name: (dict(n.requested), dict(n.allocatable)) for n in cache.nodes} == \
        {n.name: (dict(n.requested), dict(n.allocatable)) for n in after.nodes}
    before = utilisation_before(objs)
    fresh = Simulator(objs, deterministic=True)  # its cache as loaded: the input's bound pods
    assert {n.name: dict(n.requested) for n in Utilisation.from_node_infos(fresh.cache.node_infos.values()).nodes} \
        == {n.name: dict(n.requested) for n in before.nodes}


def test_embedded_data_of_the_simulation_report(tmp_path: Path) -> None:
    objs = _load(tmp_path, SMALL)
    result = Simulator(objs, deterministic=True).run()
    data = embedded(simulation_report(objs, result, title="t").render())
    s = data["strings"]
    assert [x["k"] for x in data["sections"]] == ["summary", "util", "placements", "attempts"]
    summary = dict(section(data, "summary")["items"])
    assert summary["scheduled"] == 2 and summary["unschedulable"] == 1 and summary["not attempted"] == 1
    assert summary["cluster cpu requested"] == "16.7% → 41.7%"  # 1 of 6 CPU, then 2.5
    util = section(data, "util")
    assert [s[i] for i in util["nodes"]] == ["n1", "n2"]
    assert util["res"] == ["cpu", "memory", "pods", "example.com/gpu"]
    assert util["alloc"]["cpu"] == [4000, 2000] and util["alloc"]["example.com/gpu"] == [0, 2]
    assert util["req"][0]["cpu"] == [1000, 0] and util["req"][1]["cpu"] == [2000, 500]
    assert util["req"][1]["memory"] == [3 * 2**30, 0] and util["req"][1]["pods"] == [2, 1]
    assert util["totals"][1]["cpu"] == [2500, 6000]
    placements = {s[r[0]]: (s[r[1]], None if r[2] < 0 else s[r[2]]) for r in section(data, "placements")["rows"]}
    assert placements["default/web"] == ("scheduled", "n1") and placements["default/huge"] == ("unschedulable", None)
    attempts = section(data, "attempts")
    assert attempts["nodes"] == 2 and attempts["note"] == ""
    by_pod = {s[a["p"]]: a for a in attempts["items"]}
    gpu = by_pod["default/gpu"]  # n1 has no gpu: one feasible node, so no scores (as the trace)
    assert s[gpu["h"]] == "n2" and gpu["nf"] == 1 and gpu["sc"] == [] and [s[n] for n in gpu["fe"]] == ["n2"]
    assert [[s[x] for x in f] for f in gpu["fl"]] == [["n1", "NodeResourcesFit", "Insufficient example.com/gpu"]]
    huge = by_pod["default/huge"]
    assert s[huge["o"]] == "Unschedulable" and s[huge["m"]].startswith("0/2 nodes are available")
    assert sorted((s[f[0]], s[f[1]], s[f[2]]) for f in huge["fl"]) == [
        ("n1", "NodeResourcesFit", "Insufficient cpu"), ("n2", "NodeResourcesFit", "Insufficient cpu")]


def test_scores_in_the_report_are_the_traces(tmp_path: Path) -> None:
    """The node x plugin scores and totals are those of `--trace` / `--explain`."""
    objs = load_manifests([EXAMPLES / "cluster"])
    result = Simulator(objs, deterministic=True).run()
    trace = result.trace()
    data = embedded(simulation_report(objs, result).render())
    s = data["strings"]
    items = section(data, "attempts")["items"]
    assert len(items) == len(trace["steps"])
    for item, step in zip(items, trace["steps"], strict=True):
        plugins = [s[p] for p in item["pl"]]
        scores = {s[row[0]]: dict(zip(plugins, row[2:], strict=True)) for row in item["sc"]}
        totals = {s[row[0]]: row[1] for row in item["sc"]}
        assert (s[item["p"]], scores, totals) == (step["pod"], step["scores"], step["total"])
        failures = {s[f[0]]: (s[f[1]], s[f[2]]) for f in item["fl"]}
        assert failures == {n: (f["plugin"], ", ".join(f["reasons"])) for n, f in step["failures"].items()}


def test_detail_beyond_the_budget_is_summarised(tmp_path: Path) -> None:
    objs = _load(tmp_path, SMALL)
    result = Simulator(objs, deterministic=True).run()
    # 3 attempts of 2 node rows each; a budget of 3 rows buys the unschedulable one only.
    data = embedded(simulation_report(objs, result, detail_rows=3).render())
    s = data["strings"]
    attempts = section(data, "attempts")
    full = {s[a["p"]] for a in attempts["items"] if "sc" in a}
    assert full == {"default/huge"}
    assert "node-by-node detail for 1 of 3 attempts (up to 3 node rows" in attempts["note"]
    web = next(a for a in attempts["items"] if s[a["p"]] == "default/web")
    # web: n1 feasible only (nodeSelector): no scores; n2 filtered by NodeAffinity.
    assert web["top"] == [] and [[s[f[0]], s[f[1]], f[2]] for f in web["fc"]] == [
        ["NodeAffinity", "node(s) didn't match Pod's node affinity/selector", 1]]


def test_generic_sections_and_escaping() -> None:
    nasty = "</script><script>alert(1)</script><!--"
    report = Report("capacity <b>", subtitle="x")
    report.add_summary("Capacity", [("copies that fit", 12), ("limited by", nasty)])
    report.add_table("Per zone", ["zone", "copies"], [["zone-a", 4], [nasty, None]], note="n")
    u = Utilisation.from_pods([], [])
    report.add_utilisation(u)
    page = report.render()
    assert nasty not in page and "<title>capacity &lt;b&gt;</title>" in page
    assert page.count("</script>") == 2  # the data block and the script
    data = embedded(page)
    assert data["title"] == "capacity <b>"
    table = section(data, "table")
    assert table["columns"] == ["zone", "copies"] and table["rows"] == [["zone-a", 4], [nasty, None]]
    assert section(data, "util")["labels"] == ["requested"]
    with pytest.raises(ValueError):
        report.add_utilisation(u, Utilisation.from_pods(load_manifests([EXAMPLES / "whatif"]).nodes, []))


def test_the_page_is_self_contained(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    r = CliRunner().invoke(main, ["simulate", str(EXAMPLES / "cluster"), "--seed", "1", "-q", "--report", str(out)])
    assert r.exit_code == 0, r.output
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>")
    for fetch in ("http://", "https://", " src=", "href=", "@import", "url(", "fetch(", "XMLHttpRequest"):
        assert fetch not in page, fetch
    data = embedded(page)
    assert data["title"] == f"kubesched simulate {EXAMPLES / 'cluster'}"
    assert data["subtitle"] == "scheduling queue on a virtual clock, seed 1"


def test_simulate_report_to_an_unwritable_path_is_one_error_line(tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["simulate", str(EXAMPLES / "whatif"), "-q", "--report",
                                  str(tmp_path / "missing" / "r.html")])
    assert r.exit_code == 2
    assert "cannot write the report" in r.output and "Traceback" not in r.output


def test_detail_goes_first_to_the_last_attempt_of_an_unscheduled_pod() -> None:
    from simkit import cluster, node, pod

    # `huge` fails, `small` binds (a cluster change), so the 5-minute flush retries `huge`:
    # its second attempt is the one to explain, the first one is summarised.
    objs = cluster([node("n1"), node("n2")], [pod("huge", cpu="8"), pod("small", cpu="1", arrives=1)])
    result = TimelineSimulator(objs, seed=1).run()
    assert [(s.attempt.pod.name, s.number) for s in result.steps] == [("huge", 1), ("small", 1), ("huge", 2)]
    data = embedded(simulation_report(objs, result, detail_rows=2).render())
    s = data["strings"]
    items = {(s[a["p"]], a["n"]): a for a in section(data, "attempts")["items"]}
    assert "sc" in items[("default/huge", 2)]
    assert "fc" in items[("default/huge", 1)] and "fc" in items[("default/small", 1)]
    assert [[s[f[0]], s[f[1]], f[2]] for f in items[("default/huge", 1)]["fc"]] == [
        ["NodeResourcesFit", "Insufficient cpu", 2]]
    # The summary of the scheduling attempt keeps the chosen node and its scores.
    small = items[("default/small", 1)]
    assert s[small["h"]] in {s[row[0]] for row in small["top"]}
    assert small["pl"] and all(len(row) == 2 + len(small["pl"]) for row in small["top"])
