"""The scheduler's view of the nominations addNominatedPods reads (kubesched._queue.nominated_rows),
kept in step with the nominator's change log: after any sequence of nominations, moves,
clears, deletions and node changes, it must hold exactly what reading the nominator afresh
gives — per node with pods of priority >= the asked one, its table row and those pods, and
their summed usage per plan layout."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest
from builders import make_node, make_pod

from kubesched._cache import Cache
from kubesched._queue import QueueNominator
from kubesched._queue.nominated_rows import NominatedRows
from kubesched.framework import PodInfo
from kubesched.objects import Pod

PRIORITIES = (0, 10, 100)


def _fresh(nominator: QueueNominator, priority: int, cache: Cache) -> dict[str, tuple[int, list[str]]]:
    out: dict[str, tuple[int, list[str]]] = {}
    for name, pis in nominator.nominated_items():
        ni = cache.node_infos.get(name)
        relevant = [pi.pod.uid for pi in pis if pi.pod.priority >= priority]
        if ni is not None and ni.node is not None and relevant:
            out[name] = (ni.index, relevant)
    return out


def _seen(view: NominatedRows) -> dict[str, tuple[int, list[str]]]:
    return {view.names[s]: (int(view.rows[s]), [pi.pod.uid for pi in view.pods[s]]) for s in view.live().tolist()}


def _usage(pods: Any) -> tuple[int, ...]:
    """A stand-in for a plan's usage vector: what matters is that each slot's is its pods' sum."""
    return (len(pods), sum(p.priority for p in pods))


@pytest.mark.parametrize("keep", [4096, 3], ids=["a long change log", "a change log shorter than the changes"])
@pytest.mark.parametrize("seed", range(8), ids=lambda s: f"random operations {s}")
def test_the_view_kept_in_step_equals_a_fresh_read(seed: int, keep: int, monkeypatch: Any) -> None:
    monkeypatch.setattr(QueueNominator, "LOG_KEEP", keep)
    rng = random.Random(seed)
    cache = Cache(8)
    names = [f"n{i}" for i in range(12)]
    cache.add_nodes([make_node().name(n).capacity(cpu="8").obj() for n in names[:10]])
    nominator = QueueNominator()
    view = NominatedRows()
    pods: list[Pod] = []
    for step in range(300):
        op = rng.random()
        if op < 0.45 or not pods:
            p = make_pod().name(f"p{step}").uid(f"p{step}").req(cpu=rng.choice(["100m", "1"])) \
                .priority(rng.choice(PRIORITIES)).obj()
            pods.append(p)
            nominator.add(PodInfo(p), rng.choice(names))  # n10, n11: not (yet) in the cache
        elif op < 0.7:
            nominator.add(PodInfo(rng.choice(pods)), rng.choice([*names, ""]))
        elif op < 0.85:
            nominator.delete(pods.pop(rng.randrange(len(pods))))
        elif op < 0.9:
            missing = [n for n in names if n not in cache.node_infos or cache.node_infos[n].node is None]
            if missing:
                cache.add_node(make_node().name(rng.choice(missing)).capacity(cpu="8").obj())
        elif op < 0.93:
            cache.remove_node(rng.choice(names[:10]))
        priority = rng.choice(PRIORITIES) if rng.random() < 0.2 else PRIORITIES[1]
        if rng.random() < 0.6:
            view.sync(nominator, priority, cache.node_infos, cache.table.node_version)
            assert _seen(view) == _fresh(nominator, priority, cache), f"step {step}"
            slots = view.live()
            got = view.usage(slots, ("count", "priority"), 2, _usage)
            want = np.array([_usage([pi.pod for pi in view.pods[s]]) for s in slots.tolist()], np.int64)
            assert np.array_equal(got, want.reshape(len(slots), 2)), f"step {step}"


def test_without_takes_the_pod_out_of_its_own_node() -> None:
    cache = Cache(2)
    cache.add_nodes([make_node().name("a").obj(), make_node().name("b").obj()])
    nominator = QueueNominator()
    me, other = (make_pod().name(n).uid(n).priority(5).obj() for n in ("me", "other"))
    nominator.add(PodInfo(me), "a")
    nominator.add(PodInfo(other), "a")
    view = NominatedRows()
    view.sync(nominator, 5, cache.node_infos, cache.table.node_version)
    slot, rest = view.without("me", "a") or (None, [])
    assert slot == view.slot_of["a"] and [pi.pod.uid for pi in rest] == ["other"]
    assert view.without("me", "b") is None and view.without("nobody", "a") is None
