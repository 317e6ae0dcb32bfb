"""The scheduler cache: node-tree order, zone keys, image states, assume/forget."""

from __future__ import annotations

import pytest
from builders import PodBuilder, make_node, make_pod

from kubesched._cache import Cache, node_tree_order
from kubesched._cache.cache import zone_key
from kubesched.framework import ImageStateSummary, NodeTable
from kubesched.framework.nodetable import RowNodes
from kubesched.objects import Node


def zoned(name: str, zone: str = "", region: str = "", beta: bool = False) -> Node:
    b = make_node().name(name)
    if zone:
        b = b.label("failure-domain.beta.kubernetes.io/zone" if beta else "topology.kubernetes.io/zone", zone)
    if region:
        b = b.label("failure-domain.beta.kubernetes.io/region" if beta else "topology.kubernetes.io/region", region)
    return b.obj()


@pytest.mark.parametrize(
    ("node", "key"),
    [
        (zoned("n"), ""),
        (zoned("n", zone="a"), ":\x00:a"),
        (zoned("n", zone="a", region="r"), "r:\x00:a"),
        (zoned("n", zone="a", beta=True), ":\x00:a"),
        (make_node().name("n").label("failure-domain.beta.kubernetes.io/zone", "")
         .label("topology.kubernetes.io/zone", "ga").obj(), ""),
    ],
    ids=["a node without topology labels has the empty key", "the zone alone makes the key",
         "region and zone are joined by colon-NUL-colon", "beta labels count",
         "a present but empty beta label wins over the GA label"],
)
def test_zone_key(node: Node, key: str) -> None:
    assert zone_key(node) == key


def test_node_tree_order_interleaves_zones_in_first_seen_order() -> None:
    nodes = [zoned("a1", "a"), zoned("a2", "a"), zoned("b1", "b"), zoned("a3", "a"), zoned("c1", "c"),
             zoned("b2", "b")]
    assert [n.name for n in node_tree_order(nodes)] == ["a1", "b1", "c1", "a2", "b2", "a3"]


def test_image_states_count_the_nodes_listing_each_name() -> None:
    cache = Cache()
    cache.add_nodes([make_node().name("n1").image(100, "img:1", "img:alias").obj(),
                     make_node().name("n2").image(100, "img:1").obj(),
                     make_node().name("n3").obj()])
    n1 = cache.node_infos["n1"]
    assert n1.image_states["img:1"].num_nodes == 2
    assert n1.image_states["img:alias"].num_nodes == 1
    assert cache.node_infos["n3"].image_states == {}
    cache.remove_node("n2")
    assert cache.node_infos["n1"].image_states["img:1"].num_nodes == 1


def test_assume_then_forget_leaves_the_node_as_it_was() -> None:
    cache = Cache()
    cache.add_node(make_node().name("n").capacity(cpu="2", memory="1Gi", pods=10).obj())
    pod = make_pod().name("p").req(cpu="500m").node("n").obj()
    cache.assume_pod(pod)
    ni = cache.node_infos["n"]
    assert ni.requested.milli_cpu == 500 and pod.uid in cache.assumed
    cache.forget_pod(pod)
    assert ni.requested.milli_cpu == 0 and not ni.pods and pod.uid not in cache.assumed
    assert cache.table.req_cpu[ni.index] == 0


def test_pods_on_a_node_added_later_are_counted_when_it_arrives() -> None:
    cache = Cache()
    cache.add_pod(make_pod().name("early").req(cpu="1").node("late").obj())
    ni = cache.add_node(make_node().name("late").capacity(cpu="4", memory="1Gi", pods=10).obj())
    assert ni.requested.milli_cpu == 1000 and len(ni.pods) == 1


# ---------------------------------------------------------------- rows, change log, affinity lists
def _with_anti_affinity(b: PodBuilder) -> PodBuilder:
    return b.affinity({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}]}})


def test_the_change_log_names_every_row_whose_pods_or_node_changed() -> None:
    cache = Cache()
    cache.add_nodes([zoned(f"n{i}", zone="a" if i % 2 else "b") for i in range(4)])
    table = cache.table
    rows = {ni.name: ni.index for ni in cache.snapshot.list()}
    start = table.log_position
    p = make_pod().name("p").uid("p").node("n1").obj()
    cache.add_pod(p)
    cache.update_node(zoned("n2", zone="c"))
    cache.remove_pod(p)
    cache.remove_node("n3")
    assert table.changed_since(start) == [rows["n1"], rows["n2"], rows["n1"], rows["n3"]]
    assert table.changed_since(table.log_position) == []


def test_a_consumer_too_far_behind_the_trimmed_change_log_must_rebuild(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(NodeTable, "_log_limit", lambda self: 3)
    cache = Cache()
    cache.add_nodes([zoned("n0")])
    start = cache.table.log_position
    for i in range(10):
        cache.add_pod(make_pod().name(f"p{i}").uid(f"p{i}").node("n0").obj())
    assert cache.table.changed_since(start) is None
    recent = cache.table.log_position - 2
    assert cache.table.changed_since(recent) == [0, 0]


def test_affinity_lists_come_from_the_table_in_list_order() -> None:
    cache = Cache()
    cache.add_nodes([zoned(f"n{i}", zone="ab"[i % 2]) for i in range(6)])
    anti = _with_anti_affinity(make_pod().name("anti").uid("anti").node("n4")).obj()
    preferred = make_pod().name("pref").uid("pref").node("n1").affinity({"podAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "podAffinityTerm": {
            "labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "zone"}}]}}).obj()
    for p in (anti, preferred, make_pod().name("plain").uid("plain").node("n0").obj()):
        cache.add_pod(p)
    snap = cache.snapshot
    listed = [ni.name for ni in snap.list()]
    assert [ni.name for ni in snap.have_pods_with_affinity_list()] == [n for n in listed if n in ("n1", "n4")]
    assert [ni.name for ni in snap.have_pods_with_required_anti_affinity_list()] == ["n4"]
    cache.remove_pod(anti)
    assert [ni.name for ni in snap.have_pods_with_affinity_list()] == ["n1"]
    assert snap.have_pods_with_required_anti_affinity_list() == []
    table = cache.table
    assert table.affinity_count[: table.size].tolist() == [int(ni.name == "n1") for ni in cache.by_row if ni]


def test_rows_and_positions_follow_the_node_list() -> None:
    cache = Cache()
    cache.add_nodes([zoned(f"n{i}", zone="abc"[i % 3]) for i in range(7)])
    cache.remove_node("n2")
    snap = cache.snapshot
    listed = snap.list()
    assert snap.rows().tolist() == [ni.index for ni in listed]
    positions = snap.positions()
    assert [int(positions[ni.index]) for ni in listed] == list(range(len(listed)))
    gone = cache.table.names.index("n2")
    assert positions[gone] == -1 and cache.by_row[gone] is None
    rows = snap.rows()[::-1].copy()
    nodes = RowNodes(cache.table, rows, cache.by_row)
    assert [ni.name for ni in nodes] == [ni.name for ni in reversed(listed)]
    assert nodes.names() == [ni.name for ni in reversed(listed)] and nodes[0] is listed[-1] and len(nodes) == 6
    # A node removed after the rows were taken (a report reading an old attempt) keeps its name.
    cache.remove_node(listed[-1].name)
    assert nodes[0].name == listed[-1].name and nodes.names()[0] == listed[-1].name
    assert [ni.name for ni in RowNodes(cache.table, rows, cache.by_row)] == [ni.name for ni in reversed(listed)]


def test_a_removed_node_is_forgotten_once_its_pods_are_deleted() -> None:
    # A node deleted before its pods (a drain): the pods stay counted under its name until
    # their delete events come; then nothing is kept for the name (a long run drains many).
    cache = Cache()
    cache.add_node(make_node().name("gone").obj())
    pods = [make_pod().name(f"p{i}").req(cpu="100m").node("gone").obj() for i in range(2)]
    for p in pods:
        cache.add_pod(p)
    cache.remove_node("gone")
    assert [p.name for _, p in cache.placements()] == ["p0", "p1"]
    for p in pods:
        cache.remove_pod(p)
    assert list(cache.placements()) == [] and not cache.pod_nodes
    assert cache._pending_pods == {}  # noqa: SLF001


def test_image_sizes_are_those_first_seen_while_any_node_lists_the_name() -> None:
    # addNodeImageStates: the first node listing a name sets its size; the state (and that
    # size) lasts while any node lists the name, and starts anew once none does.
    cache = Cache()
    cache.add_nodes([make_node().name("n1").image(100, "img:1").obj(),
                     make_node().name("n2").image(300, "img:1").obj()])
    assert cache.node_infos["n2"].image_states["img:1"].size == 100
    cache.remove_node("n1")
    assert cache.node_infos["n2"].image_states["img:1"] == ImageStateSummary(100, 1)
    cache.remove_node("n2")
    cache.add_node(make_node().name("n3").image(300, "img:1").obj())
    assert cache.node_infos["n3"].image_states["img:1"] == ImageStateSummary(300, 1)


def test_a_node_update_moves_only_its_own_images() -> None:
    cache = Cache()
    cache.add_nodes([make_node().name("n1").image(100, "img:1").obj(),
                     make_node().name("n2").image(100, "img:1").obj()])
    before = cache.node_infos["n1"].clone()
    cache.update_node(make_node().name("n1").image(50, "img:2").obj())
    assert dict(cache.node_infos["n1"].image_states) == {"img:2": ImageStateSummary(50, 1)}
    assert dict(cache.node_infos["n2"].image_states) == {"img:1": ImageStateSummary(100, 1)}
    # A clone taken before the update reads the summaries as they were.
    assert dict(before.image_states) == {"img:1": ImageStateSummary(100, 2)}


def test_a_removed_nodes_info_keeps_its_last_image_summaries() -> None:
    cache = Cache()
    cache.add_nodes([make_node().name("n1").image(100, "img:1").obj()])
    ni = cache.node_infos["n1"]
    cache.remove_node("n1")
    assert dict(ni.image_states) == {"img:1": ImageStateSummary(100, 1)}
    assert "img:1" not in cache._images  # noqa: SLF001 - no node lists it any more


def test_image_counts_follow_node_events_like_a_fresh_cache() -> None:
    # After any sequence of adds, updates and removes, every node's summaries equal those of a
    # cache built from the surviving nodes in the order they first came.
    import random

    rng = random.Random(7)
    cache, alive = Cache(), {}
    for step in range(300):
        name = f"n{rng.randrange(12)}"
        if name in alive and rng.random() < 0.3:
            cache.remove_node(name)
            del alive[name]
            continue
        b = make_node().name(name)
        for k in rng.sample(range(6), rng.randrange(4)):
            b = b.image(100 + k, f"img:{k}", f"alias:{k % 2}")
        node = b.obj()
        cache.add_node(node)
        alive.setdefault(name, node)
        alive[name] = node
        fresh = Cache()
        fresh.add_nodes(list(alive.values()))
        for n in alive:
            got = {k: v.num_nodes for k, v in cache.node_infos[n].image_states.items()}
            want = {k: v.num_nodes for k, v in fresh.node_infos[n].image_states.items()}
            assert got == want, (step, n)


def _relabel_state(cache: Cache) -> tuple[object, ...]:
    """Everything remove_pod + add_pod could change, by value."""
    infos = {}
    for name, ni in cache.node_infos.items():
        infos[name] = ([(pi.pod.name, dict(pi.pod.labels)) for pi in ni.pods],
                       [pi.pod.name for pi in ni.pods_with_affinity],
                       [pi.pod.name for pi in ni.pods_with_required_anti_affinity],
                       (ni.requested.milli_cpu, ni.requested.memory, dict(ni.requested.scalar)),
                       (ni.non_zero_requested.milli_cpu, ni.non_zero_requested.memory),
                       len(ni.used_ports), dict(ni.pvc_ref_counts))
    t = cache.table
    cols = tuple(tuple(getattr(t, c)[: t.size]) for c in NodeTable._COLUMNS)  # noqa: SLF001
    return (infos, cols, set(cache.assumed), dict(cache.pod_nodes),
            sorted((n, p.name) for n, p in cache.placements()))


def _anti(b: PodBuilder) -> PodBuilder:
    return b.affinity({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}]}})


@pytest.mark.parametrize(
    ("which", "assumed", "node_known"),
    [(0, False, True), (2, False, True), (4, False, True), (1, True, True), (3, True, True), (0, False, False)],
    ids=["the first of several pods relabelled", "a pod in the middle relabelled",
         "the last pod relabelled", "an assumed pod with anti-affinity relabelled stays assumed",
         "a pod with anti-affinity in the middle relabelled", "a pod on a node the cache does not know"],
)
def test_update_pod_metadata_leaves_the_cache_as_remove_and_add_would(which: int, assumed: bool,
                                                                      node_known: bool) -> None:
    def build() -> tuple[Cache, list[PodBuilder]]:
        cache = Cache()
        if node_known:
            cache.add_nodes([make_node().name("n1").capacity(cpu="8", memory="8Gi", pods=20).obj(),
                             make_node().name("n2").capacity(cpu="8", memory="8Gi", pods=20).obj()])
        builders = []
        for i in range(5):
            b = make_pod().name(f"p{i}").uid(f"u{i}").node("n1").req(cpu="100m", memory="64Mi").label("app", "x")
            b = _anti(b) if i % 2 else b.host_port(8000 + i).pvc(f"c{i}")
            builders.append(b)
            if assumed and i == which:
                cache.assume_pod(b.obj())
            else:
                cache.add_pod(b.obj())
        return cache, builders

    relabelled = build()[1][which].label("topology.kubernetes.io/zone", "z1").obj()
    want, _ = build()
    was_assumed = relabelled.uid in want.assumed
    want.remove_pod(relabelled)
    want.add_pod(relabelled)
    if was_assumed:
        want.assumed.add(relabelled.uid)
    got, _ = build()
    before = got.table.log_position
    got.update_pod_metadata(relabelled)
    assert _relabel_state(got) == _relabel_state(want)
    if node_known:
        assert got.table.changed_since(before) == [got.node_infos["n1"].index]
