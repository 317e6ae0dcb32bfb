"""The HTML reports of `kubesched capacity|compare|pack --report` (kubesched.whatif.whatif_report):
the page's embedded data against the command's own `-o json` numbers, and utilisation states
checked by hand on small clusters. No browser (tests/test_report_browser.py loads the pages)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from builders import make_node, make_pod
from click.testing import CliRunner, Result

from kubesched.cli import main
from kubesched.config import default_configuration
from kubesched.objects import ClusterObjects, load_manifests
from kubesched.whatif.capacity import run_capacity, without_preemption
from kubesched.whatif.compare import compare
from kubesched.whatif.pack import pack
from kubesched.whatif.whatif_report import (
    LEFT_PENDING,
    NOT_ATTEMPTED,
    capacity_report,
    compare_report,
    pack_report,
    share_text,
)

from ._manifests import node, pod, priority_class, write

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
GI = 2**30


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def embedded(page: str) -> dict[str, Any]:
    m = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', page, re.S)
    assert m is not None
    data: dict[str, Any] = json.loads(m.group(1))
    return data


def json_and_page(tmp_path: Path, *args: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The command's -o json and the data of the page its --report wrote, in one run."""
    out = tmp_path / "report.html"
    r = run(*args, "-o", "json", "--report", str(out))
    assert r.exit_code == 0, r.output
    return json.loads(r.output), embedded(out.read_text())


def sections(data: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [s for s in data["sections"] if s["k"] == kind]


def table(data: dict[str, Any], title_start: str) -> dict[str, Any]:
    (found,) = [s for s in sections(data, "table") if s["title"].startswith(title_start)]
    return found


def summary(data: dict[str, Any]) -> dict[str, Any]:
    (sec,) = sections(data, "summary")
    return dict(sec["items"])


def state(data: dict[str, Any], util: dict[str, Any], k: int, resource: str) -> dict[str, tuple[int, int]]:
    """node -> (requested, allocatable) of one state of a utilisation section."""
    names = [data["strings"][i] for i in util["nodes"]]
    return {n: (util["req"][k][resource][i], util["alloc"][resource][i]) for i, n in enumerate(names)}


# ----------------------------------------------------------------------------- capacity
CAPACITY = ["capacity", str(EXAMPLES / "capacity" / "cluster.yaml"), "--pod", str(EXAMPLES / "capacity" / "web.yaml"),
            "--pod", str(EXAMPLES / "capacity" / "cache.yaml")]


def test_capacity_page_is_the_json_on_the_example(tmp_path: Path) -> None:
    out, data = json_and_page(tmp_path, *CAPACITY)
    assert [s["k"] for s in data["sections"]] == ["summary", "util", "table", "table", "table"]
    assert data["title"] == f"kubesched capacity {EXAMPLES / 'capacity' / 'cluster.yaml'}"
    items = summary(data)
    assert items["copies that fit"] == out["total"] == 5
    assert [items[f"copies of {t['name']}"] for t in out["templates"]] == [t["count"] for t in out["templates"]] == [3, 2]
    stop = out["stop"]
    assert (items["stop reason"], items["stop message"]) == (stop["reason"], stop["message"])
    assert items["stopping copy"] == f"{stop['pod']} ({stop['template']})" == "default/redis-5 (Pod default/redis)"
    assert (items["nodes"], items["bound pods"], items["pending pods (take no room)"], items["scheduling attempts"]) \
        == (len(out["nodes"]), out["boundPods"], out["pendingPods"], out["attempts"]) == (3, 2, 1, 6)
    per_node = table(data, "Copies per node")
    assert per_node["columns"] == ["node", "Deployment default/web", "Pod default/redis", "copies",
                                   "why the next copy does not fit there"]
    assert per_node["rows"] == [[n["name"], *n["perTemplate"], n["copies"], ", ".join(n["reasons"])]
                                for n in out["nodes"]]
    assert table(data, "Why the stopping copy")["rows"] == [[r, c] for r, c in stop["failSummary"].items()] == [
        ["node(s) didn't have free ports for the requested pod ports", 2],
        ["node(s) didn't match Pod's node affinity/selector", 1]]
    templates = table(data, "Templates")
    assert [[r[0], r[-1]] for r in templates["rows"]] == [[t["name"], t["count"]] for t in out["templates"]]
    assert templates["rows"][1][2:6] == ["cpu 1, memory 2Gi", "disktype=ssd", 0, "default/redis-<i>"]
    # Utilisation: the copies per node and template, at their templates' requests.
    (util,) = sections(data, "util")
    assert util["labels"] == ["before", "with the copies"]
    nodes = [n["name"] for n in out["nodes"]]
    for r in ("cpu", "memory"):
        before, after = state(data, util, 0, r), state(data, util, 1, r)
        for n in out["nodes"]:
            added = sum(c * t["requests"][r] for c, t in zip(n["perTemplate"], out["templates"], strict=True))
            assert after[n["name"]][0] - before[n["name"]][0] == added
    pods_before, pods_after = state(data, util, 0, "pods"), state(data, util, 1, "pods")
    assert {n: pods_after[n][0] - pods_before[n][0] for n in nodes} == {n["name"]: n["copies"] for n in out["nodes"]}
    # By hand: node-1 runs the ingress controller (1 cpu), takes a web (500m) and a redis (1);
    # node-2 two webs; node-3 runs the database (2 cpu) and takes a redis.
    assert state(data, util, 0, "cpu") == {"node-1": (1000, 8000), "node-2": (0, 8000), "node-3": (2000, 4000)}
    assert state(data, util, 1, "cpu") == {"node-1": (2500, 8000), "node-2": (1000, 8000), "node-3": (3000, 4000)}


def test_capacity_fills_three_nodes_by_hand(tmp_path: Path) -> None:
    """Three 4-cpu nodes, 1 cpu used on n2: 11 one-cpu copies, every node full after."""
    cluster = write(tmp_path / "c.yaml", node("n1"), node("n2"), node("n3"), pod("running", "1", "1Gi", node_name="n2"))
    template = write(tmp_path / "t.yaml", pod("web", "1", "1Gi"))
    out, data = json_and_page(tmp_path, "capacity", cluster, "--pod", template)
    assert out["total"] == 11 and summary(data)["copies that fit"] == 11
    (util,) = sections(data, "util")
    assert state(data, util, 0, "cpu") == {"n1": (0, 4000), "n2": (1000, 4000), "n3": (0, 4000)}
    assert state(data, util, 1, "cpu") == {"n1": (4000, 4000), "n2": (4000, 4000), "n3": (4000, 4000)}
    assert state(data, util, 1, "memory") == {"n1": (4 * GI, 16 * GI), "n2": (4 * GI, 16 * GI), "n3": (4 * GI, 16 * GI)}
    assert util["totals"][0]["cpu"] == [1000, 12000] and util["totals"][1]["cpu"] == [12000, 12000]
    # One template: the per-node table has no per-template columns.
    assert table(data, "Copies per node")["rows"] == [["n1", 4, "Insufficient cpu"], ["n2", 3, "Insufficient cpu"],
                                                       ["n3", 4, "Insufficient cpu"]]


def test_capacity_leaves_excluded_nodes_out_and_preempted_pods_out_of_the_after_state(tmp_path: Path) -> None:
    cluster = write(tmp_path / "c.yaml", node("n1"), node("n2"), priority_class("high", 1000),
                    pod("batch", "3", "1Gi", node_name="n1"), pod("other", "1", node_name="n2"))
    template = write(tmp_path / "t.yaml", pod("urgent", "2", "1Gi", priorityClassName="high"))
    # --preempt on n1 alone: the first copy evicts the batch pod, a second fits, the third finds no victim.
    out, data = json_and_page(tmp_path, "capacity", cluster, "--pod", template, "--preempt", "--exclude-node", "n2")
    assert (out["total"], out["preempted"], out["excludedNodes"]) == (2, ["default/batch"], ["n2"])
    items = summary(data)
    assert (items["pods preempted"], items["excluded nodes"]) == (1, "n2")
    (util,) = sections(data, "util")
    assert state(data, util, 0, "cpu") == {"n1": (3000, 4000)}
    assert state(data, util, 1, "cpu") == {"n1": (4000, 4000)}  # two copies of 2 cpu, the batch pod gone
    assert state(data, util, 1, "pods") == {"n1": (2, 110)}
    assert table(data, "Pods preempted")["rows"] == [["default/batch"]]


def test_capacity_report_from_the_api_has_no_fail_table_at_the_limit(tmp_path: Path) -> None:
    cluster = write(tmp_path / "c.yaml", node("n1"))
    template = write(tmp_path / "t.yaml", pod("web", "1", "1Gi"))
    res, inp = run_capacity([cluster], [template], max_copies=2)
    data = embedded(capacity_report(inp, res).render())
    assert [s["title"] for s in sections(data, "table")] == ["Templates", "Copies per node"]
    assert summary(data)["stop reason"] == "LimitReached" and "stopping copy" not in summary(data)


# ----------------------------------------------------------------------------- compare
COMPARE = ["compare", str(EXAMPLES / "compare" / "cluster.yaml"), "--config", str(EXAMPLES / "compare" / "leastallocated.yaml"),
           "--config", str(EXAMPLES / "compare" / "mostallocated.yaml")]


def shares_of(data: dict[str, Any], util: dict[str, Any]) -> dict[str, tuple[float, float, int]]:
    """Mean and population sd of requested / allocatable over the nodes offering each
    resource, from the page's numbers (compare's definition), rounded as the JSON."""
    out = {}
    for r in util["res"]:
        ratios = [q / a for q, a in state(data, util, 0, r).values() if a > 0]
        mean = math.fsum(ratios) / len(ratios)
        sd = math.sqrt(math.fsum((x - mean) ** 2 for x in ratios) / len(ratios))
        out[r] = (round(mean, 6), round(sd, 6), len(ratios))
    return out


def test_compare_page_is_the_json_on_the_example(tmp_path: Path) -> None:
    out, data = json_and_page(tmp_path, *COMPARE)
    configs = out["configurations"]
    names = [c["name"] for c in configs]
    assert [s["k"] for s in data["sections"]] == ["summary", "table", "util", "util", "util", "table"]
    items = summary(data)
    assert (items["nodes"], items["pending pods"], items["configurations"], items["pods placed differently"]) == \
        (out["nodes"], out["pendingPods"], 2, len(out["placedDifferently"]))
    t = table(data, "Configurations")
    assert t["columns"] == ["", "leastallocated.yaml", "mostallocated.yaml"]
    rows = {r[0]: r[1:] for r in t["rows"]}
    for label, key in (("bound", "bound"), ("unschedulable", "unschedulable"), ("preempted", "preempted"),
                       ("not attempted", "notAttempted")):
        assert rows[label] == [c[key] for c in configs]
    assert rows["nodes left empty"] == [len(c["emptyNodes"]) for c in configs] == [0, 2]
    assert rows["empty nodes"] == ["", "node-b, node-c"]
    for r, label in (("cpu", "cpu requested"), ("memory", "memory requested"), ("pods", "pods running")):
        assert rows[label] == [share_text(c["requestedShare"][r]["mean"], c["requestedShare"][r]["stddev"])
                               for c in configs]
    assert rows["cpu requested"] == ["33.3333% ± 11.7851%", "33.3333% ± 47.1405%"]
    # Before once, then one section per configuration, titled with its name.
    before, *after = sections(data, "util")
    assert before["title"] == "Before: the cluster as it is" and before["labels"] == ["before"]
    assert [u["title"] for u in after] == [f"After: {n}" for n in names]
    assert all(v == 0 for v in before["req"][0]["cpu"])
    for u, c in zip(after, configs, strict=True):
        assert shares_of(data, u) == {r: (s["mean"], s["stddev"], s["nodes"]) for r, s in c["requestedShare"].items()}
        bound = {o["node"] for o in c["outcomes"].values() if o["state"] == "bound"}
        empty = {n for n, (q, _) in state(data, u, 0, "pods").items() if q == 0}
        assert empty == set(c["emptyNodes"]) and not empty & bound
    # By hand: LeastAllocated 2/1/1 cpu, MostAllocated all four on node-a.
    assert state(data, after[0], 0, "cpu") == {"node-a": (2000, 4000), "node-b": (1000, 4000), "node-c": (1000, 4000)}
    assert state(data, after[1], 0, "cpu") == {"node-a": (4000, 4000), "node-b": (0, 4000), "node-c": (0, 4000)}
    diff = table(data, "Pods placed differently")
    assert diff["title"] == "Pods placed differently (2)"
    assert diff["columns"] == ["pod", "leastallocated.yaml", "mostallocated.yaml"]
    assert diff["rows"] == [[d["pod"], *(o["node"] for o in d["outcomes"])] for d in out["placedDifferently"]] == [
        ["default/api-2", "node-b", "node-a"], ["default/worker-1", "node-c", "node-a"]]


def test_compare_preemption_victims_leave_the_after_state_of_their_configuration(tmp_path: Path) -> None:
    """n1 (4 cpu) runs a 3-cpu batch pod; a pending 2-cpu pod of priority 1000 evicts it under the
    default configuration, and stays unschedulable without preemption."""
    f = write(tmp_path / "c.yaml", node("n1"), priority_class("high", 1000), pod("batch", "3", "1Gi", node_name="n1"),
              pod("urgent", "2", "1Gi", priorityClassName="high"))
    objs = load_manifests([f])
    res = compare(objs, [("default", default_configuration()),
                         ("no-preemption", without_preemption(default_configuration()))])
    out = res.as_dict()
    data = embedded(compare_report(objs, res).render())
    before, *after = sections(data, "util")
    assert state(data, before, 0, "cpu") == {"n1": (3000, 4000)}
    assert [state(data, u, 0, "cpu") for u in after] == [{"n1": (2000, 4000)}, {"n1": (3000, 4000)}]
    for u, c in zip(after, out["configurations"], strict=True):
        assert shares_of(data, u)["cpu"][:2] == (c["requestedShare"]["cpu"]["mean"], c["requestedShare"]["cpu"]["stddev"])
    rows = {r[0]: r[1:] for r in table(data, "Configurations")["rows"]}
    assert rows["preempted"] == [1, 0] and rows["unschedulable"] == [0, 1]
    assert table(data, "Pods placed differently")["rows"] == [["default/urgent", "n1", "(unschedulable)"],
                                                              ["default/batch", "(preempted)", "n1"]]


def test_compare_names_the_nodes_a_resource_is_averaged_over(tmp_path: Path) -> None:
    f = write(tmp_path / "c.yaml", node("cpu-1"), node("gpu-1", extra={"example.com/gpu": "2"}),
              pod("web", "1"))
    objs = load_manifests([f])
    res = compare(objs, [("a", default_configuration()), ("b", default_configuration())])
    rows = {r[0]: r[1:] for r in table(embedded(compare_report(objs, res).render()), "Configurations")["rows"]}
    share = res.configurations[0].share("example.com/gpu")
    assert share is not None and share.nodes == 1
    assert rows["example.com/gpu requested"] == ["0% ± 0% (over 1 node)"] * 2


# ----------------------------------------------------------------------------- pack
def test_pack_page_is_the_json_on_the_example(tmp_path: Path) -> None:
    out, data = json_and_page(tmp_path, "pack", str(EXAMPLES / "pack"), "--time-limit", "10")
    assert [s["k"] for s in data["sections"]] == ["summary", "util", "util", "table"]
    items = summary(data)
    s = out["solver"]
    assert (items["solver status"], items["objective"], items["bound"], items["gap"]) == \
        (s["status"], s["objective"], s["bound"], f"{s['gap']:.2%}") == ("Optimal", 3, 3, "0.00%")
    assert (items["pods placed: scheduler"], items["pods placed: packing"]) == \
        (out["greedy"]["placed"], out["packed"]["placed"]) == (10, 10)
    assert (items["nodes used: scheduler"], items["nodes used: packing"]) == \
        (out["greedy"]["nodesUsed"], out["packed"]["nodesUsed"]) == (5, 3)
    assert items["drainable nodes"] == ", ".join(out["drainable"]) == "node-c, node-e"
    assert items["placements verified"] == out["verified"] == 10
    assert (items["nodes"], items["pending pods"], items["in the model"], items["not attempted"]) == \
        (out["nodes"], out["pendingPods"], out["modelledPods"], len(out["notAttempted"]))
    greedy, packed = sections(data, "util")
    assert (greedy["title"], greedy["labels"]) == ("After the scheduler's placement", ["before", "scheduler"])
    assert (packed["title"], packed["labels"]) == ("After the packing", ["before", "packing"])
    assert greedy["req"][0] == packed["req"][0]  # the same before: the cluster as it is
    # The nodes with a pod after each are the JSON's.
    assert [n for n, (q, _) in state(data, greedy, 1, "pods").items() if q] == out["greedy"]["nodes"]
    assert [n for n, (q, _) in state(data, packed, 1, "pods").items() if q] == out["packed"]["nodes"]
    # Each pending pod's requests land on the node the JSON gives it.
    pods_on = {n: 0 for n in state(data, greedy, 0, "pods")}
    for p in out["pods"]:
        pods_on[p["packed"]] += 1
    assert {n: q - state(data, packed, 0, "pods")[n][0] for n, (q, _) in state(data, packed, 1, "pods").items()} == pods_on
    # By hand: the packing fills node-a's 4 cpu (the agent's 500m, an api, an ingress, a worker).
    assert state(data, packed, 1, "cpu")["node-a"] == (4000, 4000)
    assert state(data, packed, 0, "cpu")["node-a"] == (500, 4000)
    rows = table(data, "Pods placed differently")
    assert rows["columns"] == ["pod", "scheduler", "packing", "note"]
    assert rows["rows"] == [[p["pod"], p["greedy"], p["packed"], p["note"] or p["greedyMessage"]]
                            for p in out["pods"] if p["moved"] or not p["modelled"] or p["packed"] is None]
    assert {r[0] for r in rows["rows"]} == {p["pod"] for p in out["moved"]} | set(out["notModelled"])
    assert rows["title"] == "Pods placed differently, left pending or not modelled (6)"


def _cluster(nodes: list[Any], pods: list[Any]) -> ClusterObjects:
    return ClusterObjects(nodes=nodes, pods=pods, latest_timestamp=0)


def test_pack_after_states_by_hand_with_preemption_and_pods_left_pending() -> None:
    """n1 (4 cpu) runs `low` (3 cpu): the scheduler evicts it for `urgent` (2 cpu, priority
    1000); the packing evicts nothing, so `urgent` stays pending; `gated` is never attempted."""
    n1 = make_node().name("n1").capacity(cpu="4", memory="16Gi", pods=110).obj()
    low = make_pod().name("low").req(cpu="3", memory="256Mi").node("n1").obj()
    urgent = make_pod().name("urgent").req(cpu="2", memory="256Mi").priority(1000).obj()
    gated = make_pod().name("gated").req(cpu="1", memory="256Mi").scheduling_gate("wait").obj()
    objs = _cluster([n1], [low, urgent, gated])
    res = pack(objs)
    out = res.as_dict()
    data = embedded(pack_report(objs, res).render())
    greedy, packed = sections(data, "util")
    assert state(data, greedy, 0, "cpu") == {"n1": (3000, 4000)}
    assert state(data, greedy, 1, "cpu") == {"n1": (2000, 4000)}  # low evicted, urgent bound
    assert state(data, packed, 1, "cpu") == {"n1": (3000, 4000)}  # low kept, urgent pending
    assert out["greedy"]["preempted"] == ["default/low"]
    rows = table(data, "Pods placed differently")["rows"]
    assert rows == [["default/urgent", "n1", LEFT_PENDING, res.pods[0].note],
                    ["default/gated", NOT_ATTEMPTED, NOT_ATTEMPTED, out["notAttempted"]["default/gated"]]]
    items = summary(data)
    assert (items["pods placed: scheduler"], items["pods placed: packing"], items["not attempted"]) == (1, 0, 1)
    assert items["drainable nodes"] == "none"


# ----------------------------------------------------------------------------- errors
@pytest.mark.parametrize("command", ["capacity", "compare", "pack"])
@pytest.mark.parametrize("where", ["missing/r.html", "a-directory", "a-file/r.html"])
def test_an_unwritable_report_path_is_one_error_line_with_exit_code_2(command: str, where: str, tmp_path: Path) -> None:
    (tmp_path / "a-directory").mkdir()
    (tmp_path / "a-file").write_text("x")
    args = {"capacity": CAPACITY, "compare": COMPARE, "pack": ["pack", str(EXAMPLES / "pack")]}[command]
    r = run(*args, "--report", str(tmp_path / where))
    assert r.exit_code == 2, r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "cannot write the report" in lines[0]
    assert "Traceback" not in r.output


def test_a_write_failure_after_the_run_is_one_error_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the early check (say the disk filled up during the run): Report.write's error."""
    from kubesched.whatif import whatif_report

    monkeypatch.setattr(whatif_report, "check_report_path", lambda path: None)
    r = run(*COMPARE, "--report", str(tmp_path / "missing" / "r.html"))
    assert r.exit_code == 2 and r.output.count("\n") == 1 and "cannot write the report" in r.output
