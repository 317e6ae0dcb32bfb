"""The scheduler cache: node-tree order, zone keys, image states, assume/forget."""

from __future__ import annotations

import pytest
from builders import make_node, make_pod

from kubesched._cache import Cache, node_tree_order
from kubesched._cache.cache import zone_key
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
