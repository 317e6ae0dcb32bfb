"""The HTML report in a real headless Chromium (Debian package ``chromium``; the tests skip
without it): the page loads without JS errors, the utilisation bars are in the DOM and on
the screenshot, the search box filters nodes and pods, and an attempt's node x plugin table
is built when its <details> opens. Also the 5000-node page."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest
from builders import make_pod
from click.testing import CliRunner
from headless import CHROMIUM, MISSING, css_rgb, exercise, read_png, screenshot

from kubesched.bench import basic_nodes, basic_pods, bind_spread
from kubesched.cli import main
from kubesched.objects import ClusterObjects, load_manifests
from kubesched.timeline import TimelineSimulator
from kubesched.whatif.report import (
    Placement,
    Preemption,
    Report,
    Utilisation,
    simulation_report,
    utilisation_before,
)

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason=MISSING)

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "cluster"


@pytest.fixture(scope="module")
def example_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report") / "report.html"
    r = CliRunner().invoke(main, ["simulate", str(EXAMPLE), "--seed", "1", "-q", "--report", str(out)])
    assert r.exit_code == 0, r.output
    return out


def test_example_report_loads_filters_and_explains(example_report: Path, tmp_path: Path) -> None:
    seen, console = exercise(example_report.read_text(), tmp_path, search="node-b")
    assert seen["errors"] == [] and console == []
    assert seen["ready"] == "1"
    assert seen["sections"] == ["summary", "util", "placements", "attempts"]
    # 4 nodes x 4 resources (cpu, memory, pods, nvidia.com/gpu) x 2 bars, plus 4 x 2 cluster totals.
    assert seen["bars"] == 4 * 4 * 2 + 4 * 2
    assert sorted(seen["nodeRows"]) == ["gpu-c1", "node-a1", "node-b1", "node-c2"]
    # Six first attempts, then the leftover flush's tick at 330 s retries the three unschedulable
    # pods together (each has waited more than 5 minutes by then).
    assert len(seen["podRows"]) == 6 and len(seen["attemptItems"]) == 9
    # "node-b": the node, the pod placed there and its attempt; nothing else.
    assert seen["searched"]["nodeRows"] == ["node-b1"]
    assert seen["searched"]["podRows"] == ["shop/frontend-2"]
    assert seen["searched"]["attemptItems"] == ["shop/frontend-2"]
    assert "1–1 of 1 nodes (filtered from 4)" in seen["searched"]["pagerInfo"]
    assert seen["cleared"] == {"nodeRows": 4, "podRows": 6}
    # The first attempt: shop/frontend-1, on node-a1 among 2 feasible nodes; no table until opened.
    opened = seen["opened"]
    assert opened["pod"] == "shop/frontend-1" and opened["tablesBefore"] == 0 and opened["tablesAfter"] == 1
    headers = opened["headers"]
    assert headers[:2] == ["node", "filter"] and headers[-1] == "total"
    assert "NodeResourcesFit" in headers and "TaintToleration" in headers
    rows = {r[0]: r for r in opened["rows"]}
    assert set(rows) == {"node-a1 *", "node-b1", "gpu-c1", "node-c2"}
    assert rows["node-a1 *"][1] == "feasible" and rows["node-b1"][1] == "feasible"
    assert rows["gpu-c1"][1] == "TaintToleration: node(s) had untolerated taint(s)"
    assert rows["node-c2"][1] == "NodeUnschedulable: node(s) were unschedulable"
    assert int(rows["node-a1 *"][-1]) >= int(rows["node-b1"][-1])


def test_screenshot_shows_the_bars(example_report: Path, tmp_path: Path) -> None:
    window = (1280, 1800)  # the node table in view
    seen, _ = exercise(example_report.read_text(), tmp_path, search="", window=window)
    # Same width, hence the same layout (the --dump-dom window keeps some height for its frame).
    assert seen["viewport"][0] == window[0] and seen["viewport"][1] <= window[1]
    png = tmp_path / "report.png"
    assert screenshot(example_report, png, window=window) == []
    img = read_png(png)
    assert img.shape[:2] == (window[1], window[0])
    rgb = img[:, :, :3]
    colours = Counter(map(tuple, rgb.reshape(-1, 3)[::7].tolist()))
    assert len(colours) > 50, "the screenshot is (nearly) a single colour"
    # Every filled bar the page laid out in the first screen is on the screenshot, in its colour.
    bars = seen["filledBars"]
    assert len(bars) >= 10
    for bar in bars:
        left, top, width, height = bar["rect"]
        x, y = int(left + width / 2), int(top + height / 2)
        got = tuple(int(v) for v in rgb[y, x])
        want = css_rgb(bar["color"])
        assert max(abs(a - b) for a, b in zip(got, want, strict=True)) <= 6, (bar, got)
    # Both the before (grey) and the after (blue) bars are there.
    assert {css_rgb(b["color"]) for b in bars} >= {(156, 163, 175), (37, 99, 235)}


def test_generic_sections_render_without_errors(tmp_path: Path) -> None:
    """The API other commands use: summary, a generic table, a single-state utilisation,
    preemptions, and empty sections."""
    objs = load_manifests([EXAMPLE])
    nasty = "</script><b>x</b>"
    report = Report("capacity", subtitle="generic sections")
    report.add_summary("Capacity", [("copies that fit", 12), ("limited by", nasty)])
    report.add_table("Per zone", ["zone", "copies", "note"], [["zone-a", 4, nasty], ["zone-b", 8, None]])
    report.add_utilisation(utilisation_before(objs), title="Now")
    report.add_utilisation(Utilisation.from_pods([], []), title="No nodes")
    report.add_placements([Placement("ns/p", "scheduled", "node-a1")])
    report.add_preemptions([Preemption("ns/hi", "node-a1", ("ns/lo1", "ns/lo2"), 1, "scheduled on node-a1")])
    report.add_attempts([], [])
    seen, console = exercise(report.render(), tmp_path, search="zone-b")
    assert seen["errors"] == [] and console == []
    assert seen["sections"] == ["summary", "table", "util", "util", "placements", "preemptions", "attempts"]
    assert seen["tableRows"] == ["zone-a4" + nasty, "zone-b8"]
    assert seen["searched"]["tableRows"] == ["zone-b8"] and seen["searched"]["preemptionRows"] == []
    assert seen["preemptionRows"] == ["ns/hinode-a1ns/lo1, ns/lo21scheduled on node-a1"]
    # One bar per resource and node (cpu, memory, pods, nvidia.com/gpu), plus the totals.
    assert seen["bars"] == 4 * 4 + 4 + 3


def big_cluster(nodes: int = 5000, running: int = 10_000, pending: int = 500) -> ClusterObjects:
    """5000 nodes of 4 CPU (bench's basic nodes), 10000 running pods spread over them, 500
    pending pods of 100m and 5 that fit nowhere (5 CPU). (scripts/report_scale.py measures
    the page with 10000 pending pods.)"""
    ns = basic_nodes(nodes)
    pods = bind_spread(basic_pods(running, "running"), ns) + basic_pods(pending)
    huge = [make_pod().name(f"huge-{i}").uid(f"huge-uid-{i}").req(cpu="5").creation("2024-01-01T00:00:00Z").obj() for i in range(5)]
    pods += huge
    return ClusterObjects(nodes=ns, pods=pods, latest_timestamp=max(p.meta.creation_timestamp or 0 for p in pods))


def test_5000_node_report_loads_and_stays_small(tmp_path: Path) -> None:
    objs = big_cluster()
    t0 = time.perf_counter()
    result = TimelineSimulator(objs, seed=1).run()
    t1 = time.perf_counter()
    page = simulation_report(objs, result, title="5000 nodes").render()
    t2 = time.perf_counter()
    size = len(page.encode())
    print(f"\n5000 nodes, {len(result.steps)} attempts: simulate {t1 - t0:.1f} s, report {t2 - t1:.1f} s, "
          f"{size / 1e6:.2f} MB")
    assert size < 8_000_000
    start = time.perf_counter()
    seen, console = exercise(page, tmp_path, search="node-4999", open_search="default/huge-0", open_index=-1,
                             budget_ms=20_000)
    print(f"browser load + exercise: {time.perf_counter() - start:.1f} s")
    assert seen["errors"] == [] and console == []
    assert seen["ready"] == "1"
    # Paged: 50 node rows, 50 pods, 50 attempts in the DOM, not 5000 x plugins cells.
    assert len(seen["nodeRows"]) == 50 and len(seen["podRows"]) == 50 and len(seen["attemptItems"]) == 50
    assert seen["tableCellsTotal"] < 2000
    assert "1–50 of 5000 nodes · page 1/100" in seen["pagerInfo"]
    assert seen["searched"]["nodeRows"] == ["node-4999"]
    # The last attempt of a pod that fits nowhere has node-by-node detail: 5000 nodes filtered
    # out, shown 100 at a time.
    opened = seen["opened"]
    assert opened["pod"] == "default/huge-0" and opened["tablesAfter"] == 1
    assert len(opened["rows"]) == 100 and opened["pager"] == ["1–100 of 5000 nodes · page 1/50"]
    assert all(r[1] == "NodeResourcesFit: Insufficient cpu" for r in opened["rows"])


# ----------------------------------------------------------------------------- the what-if commands
WHATIF = {
    "capacity": ["capacity", str(EXAMPLE.parent / "capacity" / "cluster.yaml"),
                 "--pod", str(EXAMPLE.parent / "capacity" / "web.yaml"),
                 "--pod", str(EXAMPLE.parent / "capacity" / "cache.yaml")],
    "compare": ["compare", str(EXAMPLE.parent / "compare" / "cluster.yaml"),
                "--config", str(EXAMPLE.parent / "compare" / "leastallocated.yaml"),
                "--config", str(EXAMPLE.parent / "compare" / "mostallocated.yaml")],
    "pack": ["pack", str(EXAMPLE.parent / "pack"), "--time-limit", "10"],
}


@pytest.fixture(scope="module")
def whatif_reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = {}
    for name, args in WHATIF.items():
        path = tmp_path_factory.mktemp("whatif") / f"{name}.html"
        r = CliRunner().invoke(main, [*args, "--report", str(path)])
        assert r.exit_code == 0, r.output
        out[name] = path
    return out


def test_capacity_report_loads_and_filters(whatif_reports: dict[str, Path], tmp_path: Path) -> None:
    seen, console = exercise(whatif_reports["capacity"].read_text(), tmp_path, search="node-2")
    assert seen["errors"] == [] and console == []
    assert seen["ready"] == "1"
    assert seen["sections"] == ["summary", "util", "table", "table", "table"]
    # 3 nodes x 3 resources (cpu, memory, pods) x 2 states (before, with the copies), plus the totals.
    assert seen["bars"] == 3 * 3 * 2 + 3 * 2
    assert seen["nodeRows"] == ["node-1", "node-2", "node-3"]
    # Templates (2), copies per node (3), the stopping copy's reasons (2).
    assert len(seen["tableRows"]) == 7
    assert "node-1112node(s) didn't have free ports for the requested pod ports" in seen["tableRows"]
    assert seen["searched"]["nodeRows"] == ["node-2"]
    assert seen["searched"]["tableRows"] == ["node-2202node(s) didn't match Pod's node affinity/selector"]
    assert seen["cleared"]["nodeRows"] == 3


def test_compare_report_loads_and_filters(whatif_reports: dict[str, Path], tmp_path: Path) -> None:
    seen, console = exercise(whatif_reports["compare"].read_text(), tmp_path, search="worker")
    assert seen["errors"] == [] and console == []
    assert seen["ready"] == "1"
    assert seen["sections"] == ["summary", "table", "util", "util", "util", "table"]
    # Before once, then after each configuration: one bar per node and resource, plus the totals.
    assert seen["bars"] == 3 * (3 * 3 + 3)
    assert seen["nodeRows"] == ["node-a", "node-b", "node-c"] * 3
    assert "cpu requested33.3333% ± 11.7851%33.3333% ± 47.1405%" in seen["tableRows"]
    assert "default/worker-1node-cnode-a" in seen["tableRows"]
    assert seen["searched"]["tableRows"] == ["default/worker-1node-cnode-a"]
    assert seen["searched"]["nodeRows"] == []


def test_pack_report_loads_and_filters(whatif_reports: dict[str, Path], tmp_path: Path) -> None:
    seen, console = exercise(whatif_reports["pack"].read_text(), tmp_path, search="node-e")
    assert seen["errors"] == [] and console == []
    assert seen["ready"] == "1"
    assert seen["sections"] == ["summary", "util", "util", "table"]
    # After the scheduler's placement and after the packing, each beside the cluster as it is.
    assert seen["bars"] == 2 * (5 * 3 * 2 + 3 * 2)
    assert seen["nodeRows"] == ["node-a", "node-b", "node-c", "node-d", "node-e"] * 2
    assert len(seen["tableRows"]) == 6
    assert seen["searched"]["nodeRows"] == ["node-e", "node-e"]
    assert seen["searched"]["tableRows"] == ["default/report-0node-enode-d"]


@pytest.mark.parametrize("name", list(WHATIF))
def test_whatif_screenshots_show_the_bars(name: str, whatif_reports: dict[str, Path], tmp_path: Path) -> None:
    png = tmp_path / f"{name}.png"
    assert screenshot(whatif_reports[name], png, window=(1280, 1400)) == []
    rgb = read_png(png)[:, :, :3]
    colours = Counter(map(tuple, rgb.reshape(-1, 3)[::7].tolist()))
    assert len(colours) > 50, "the screenshot is (nearly) a single colour"
    assert colours[(37, 99, 235)] > 0  # the blue of the after bars
