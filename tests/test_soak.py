"""`kubesched bench --workload soak` / `soak-live` at tiny sizes: the accounting adds up, every
departed pod is forgotten, nodes churn, no step is retained, and an injected leak is caught by
the bookkeeping or by the RSS growth check (never timings)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner

from kubesched.cli import main
from kubesched.objects import Pod
from kubesched.soak import (
    ARRIVE,
    CORDON,
    DEPART,
    JOIN,
    REMOVE,
    Checkpoint,
    SoakStream,
    SoakTimeline,
    growth,
    in_forked_child,
    run_soak,
)
from kubesched.soak_live import FAULTS, run_soak_live


@pytest.fixture(scope="module")
def soak() -> Any:
    """2000 arrivals on 50 nodes (every node drained about once), invariant checker on."""
    sims: list[SoakTimeline] = []

    class Kept(SoakTimeline):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            sims.append(self)

    res = run_soak(50, 2000, seed=3, simulator=Kept)
    return res, sims[0]


def test_soak_accounts_for_every_arrival(soak: Any) -> None:
    res, sim = soak
    assert res.ok, res.problems
    c = res.counts
    pending = sum(res.pending.values()) + res.in_flight
    assert c.arrivals == res.arrivals == 2000
    assert c.arrivals == c.departed_bound + c.departed_pending + c.evicted + c.preempted + res.running + pending
    assert c.binds == c.departed_bound + c.evicted + c.preempted + res.running
    assert sum(c.attempts.values()) >= c.binds
    # Each kind of departure happened: lifetimes ended for bound and for pending (stuck) pods,
    # drains evicted bound ones.
    assert c.departed_bound > 0 and c.departed_pending > 0 and c.evicted > 0
    assert len(sim.current) == res.running + pending


def test_soak_churns_nodes(soak: Any) -> None:
    res, sim = soak
    c = res.counts
    assert c.nodes_drained > 10 and c.nodes_left > 10 and c.nodes_joined > 10
    assert res.nodes_at_end == 50 + c.nodes_joined - c.nodes_left == len(sim.cache.node_infos)
    names = set(sim.cache.node_infos)
    assert any(int(n.rsplit("-", 1)[1]) >= 50 for n in names)  # nodes that joined during the run


def test_soak_forgets_every_departed_pod(soak: Any) -> None:
    res, sim = soak
    alive = set(sim.current)
    assert set(sim.cache.pod_nodes) <= alive
    assert {p.uid for p in sim.queue.pending_pods()} <= alive
    assert {pi.pod.uid for n in sim.nominator.nominated_node_names() for pi in sim.nominator.nominated_pods_for_node(n)} <= alive
    assert set(sim._attempts) <= alive and set(sim._failed_at_change) <= alive  # noqa: SLF001
    assert sim.invariants is not None and set(sim.invariants.bindings) <= alive
    assert not sim.deleted - alive
    assert len(sim.objects.pods("default")) == len(alive)
    # No object anywhere still references a departed pod.
    assert [cp.departed_referenced for cp in res.checkpoints] == [0, 0, 0]


def test_soak_keeps_counters_not_steps(soak: Any) -> None:
    res, sim = soak
    assert sim._result.steps == [] and sim._result.events == []  # noqa: SLF001
    assert res.counts.events["Scheduled"] == res.counts.binds
    assert res.invariants and res.invariant_checks > 0 and res.global_checks > 0


def test_soak_reports_rss_at_10_50_and_100_percent(soak: Any) -> None:
    res, _ = soak
    assert [cp.fraction for cp in res.checkpoints] == [0.1, 0.5, 1.0]
    assert [cp.arrivals for cp in res.checkpoints][1:] == [1000, 2000]
    assert all(cp.rss > 0 for cp in res.checkpoints)
    data = res.as_dict()
    assert data["workload"] == "soak" and data["invariants"]["on"] is True
    assert {"attempts_per_second", "binds_per_second", "rss", "rss_growth", "simulated_seconds"} <= set(data)
    # The warm-up (one steady population: 473 pods) is not over at 10 % of 2000 arrivals: the
    # growth is measured from 50 %.
    assert res.warmup > 200 and res.baseline is res.checkpoints[1]


def test_soak_reports_where_the_rss_goes(soak: Any) -> None:
    res, _ = soak
    heaps = [cp.heap for cp in res.checkpoints]
    assert all(h is not None and h.python_blocks > 0 for h in heaps)
    data = res.as_dict()["rss"][-1]
    assert data["python_blocks"] == heaps[-1].python_blocks  # type: ignore[union-attr]
    assert "heap: Python blocks 10% " in res.summary()


@pytest.mark.parametrize("fn, want", [
    pytest.param(lambda: 41 + 1, 42, id="a result computed in the child comes back"),
    pytest.param(lambda: len([0] * 1_000_000), 1_000_000, id="a large transient allocation stays in the child"),
])
def test_the_reference_scan_runs_in_a_forked_child(fn: Any, want: int) -> None:
    assert in_forked_child(fn) == want


def test_what_the_child_changes_is_not_seen_by_the_parent() -> None:
    seen: list[int] = []

    def touch() -> int:
        seen.append(1)
        return len(seen)

    assert in_forked_child(touch) == 1
    assert seen == []  # the child's append happened in its copy only


def test_a_failing_child_falls_back_to_running_here() -> None:
    def fails() -> int:
        raise ValueError("scan failed")

    with pytest.raises(ValueError, match="scan failed"):
        in_forked_child(fails)


def test_growth_is_measured_after_the_warm_up() -> None:
    cps = [Checkpoint(0.1, 100, 1000, 1.0), Checkpoint(0.5, 500, 1500, 2.0), Checkpoint(1.0, 1000, 1600, 3.0)]
    assert growth(cps, warmup=50) == pytest.approx(0.6)
    assert growth(cps, warmup=300) == pytest.approx(1600 / 1500 - 1)
    assert growth(cps[-1:]) is None


def test_stream_is_deterministic_and_bounded() -> None:
    def play(seed: int) -> list[tuple[float, str, int]]:
        s = SoakStream(10, 3000, seed=seed)
        out, live, longest = [], 0, 0
        while s.next_time() is not None and not s.exhausted:
            ev = s.pop()
            out.append((ev.time, ev.kind, ev.index))
            live += {ARRIVE: 1, DEPART: -1}.get(ev.kind, 0)
            longest = max(longest, len(s) - live)
        # The heap holds one departure per pod alive, the next arrival and the churn in progress.
        assert longest <= 4
        return out

    a = play(5)
    assert a == play(5) and a != play(6)
    kinds = {k for _, k, _ in a}
    assert kinds == {ARRIVE, DEPART, CORDON, REMOVE, JOIN}
    assert [t for t, _, _ in a] == sorted(t for t, _, _ in a)


class _KeepsDepartedPods(SoakTimeline):
    """A leak: departed pods stay in the simulator's pod map."""

    def _forget(self, pod: Pod) -> None:
        super()._forget(pod)
        self.current[pod.uid] = pod


class _HoardsMemory(SoakTimeline):
    """A leak the bookkeeping does not know of: each departure keeps 256 KiB (~170 MiB from the
    50 % checkpoint to the end: well over 10 % of any test process's RSS)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.hoard: list[tuple[Pod, bytes]] = []

    def _forget(self, pod: Pod) -> None:
        super()._forget(pod)
        self.hoard.append((pod, bytes([len(self.hoard) % 251]) * 262144))


def test_a_structure_keeping_departed_pods_is_caught_by_the_bookkeeping() -> None:
    res = run_soak(20, 600, seed=2, simulator=_KeepsDepartedPods, growth_limit=None, count_references=False)
    assert not res.ok
    assert any(p.startswith("arrivals ") for p in res.problems), res.problems
    assert any("cache holds" in p or "queue holds" in p for p in res.problems), res.problems


def test_a_hidden_leak_is_caught_by_the_growth_check() -> None:
    res = run_soak(20, 1500, seed=2, simulator=_HoardsMemory, check_invariants=False)
    assert not res.ok
    assert any("RSS grew" in p for p in res.problems), res.problems
    # ... and by the scan for departed pods still referenced.
    assert res.checkpoints[-1].departed_referenced > 1000


def test_cli_bench_soak_json() -> None:
    r = CliRunner().invoke(main, ["bench", "--workload", "soak", "--nodes", "20", "--pods", "300", "-o", "json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert (data["workload"], data["nodes"], data["arrivals"], data["problems"]) == ("soak", 20, 300, [])
    assert "soak: 300/300 arrivals" in r.stderr  # progress


def test_cli_bench_offers_the_soaks() -> None:
    r = CliRunner().invoke(main, ["bench", "--help"])
    assert r.exit_code == 0
    assert "soak-live" in r.output and "soak:" in r.output


def test_soak_live_loses_no_pod_and_binds_none_twice_under_faults() -> None:
    res = run_soak_live(20, 500, seed=4, growth_limit=None, faults=2 * len(FAULTS))
    assert res.ok, res.problems
    assert res.faults == dict.fromkeys(FAULTS, 2)
    assert res.bound_twice == 0
    departed = res.departed_bound + res.departed_pending + res.evicted + res.preempted + res.departed_unknown
    assert res.arrivals == 500 == departed + res.running + res.pending
    assert res.binds - res.departed_unknown <= res.departed_bound + res.evicted + res.preempted + res.running <= res.binds
    assert res.departed_bound > 0 and res.evicted > 0
    assert res.nodes_drained > 0 and res.nodes_joined > 0 and res.nodes_left > 0
    assert res.relists > 0  # the 410s and the restarts made the informers relist
    assert [c.fraction for c in res.checkpoints] == [0.1, 0.5, 1.0]
