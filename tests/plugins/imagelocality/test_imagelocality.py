"""ImageLocality (upstream image_locality_test.go TestImageLocalityPriority /
TestNormalizedImageName at v1.30, plus batch equivalence)."""

from __future__ import annotations

import hashlib
import random

import numpy as np
import pytest
from builders import make_node, make_pod

from kubesched._runtime.handle import FrameworkHandle
from kubesched.framework import MAX_NODE_SCORE, CycleState, ScorePlugin
from kubesched.objects import Node, Pod
from kubesched.plugins import imagelocality
from kubesched.plugins.imagelocality import NAME
from kubesched.plugins.imagelocality.plugin import calculate_priority, normalized_image_name

MB = 1024 * 1024
Image = tuple[int, tuple[str, ...]]


def image_node(name: str, *images: Image) -> Node:
    b = make_node().name(name).capacity(cpu="4", memory="4Gi", pods=110)
    for size, names in images:
        b = b.image(size, *names)
    return b.obj()


def image_pod(*images: str, init: tuple[str, ...] = ()) -> Pod:
    b = make_pod().name("p")
    for im in init:
        b = b.init_container(im)
    for im in images:
        b = b.container(im)
    return b.obj()


NODE_40_300_2000: tuple[Image, ...] = (
    (40 * MB, ("gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1")),
    (300 * MB, ("gcr.io/300:latest", "gcr.io/300:v1")),
    (2000 * MB, ("gcr.io/2000:latest",)),
)
NODE_250_10: tuple[Image, ...] = ((250 * MB, ("gcr.io/250:latest",)), (10 * MB, ("gcr.io/10:latest", "gcr.io/10:v1")))
NODE_600_40_900: tuple[Image, ...] = (
    (600 * MB, ("gcr.io/600:latest",)), (40 * MB, ("gcr.io/40:latest",)), (900 * MB, ("gcr.io/900:latest",)))
NODE_300_600_900: tuple[Image, ...] = (
    (300 * MB, ("gcr.io/300:latest",)), (600 * MB, ("gcr.io/600:latest",)), (900 * MB, ("gcr.io/900:latest",)))
NODE_4000_30: tuple[Image, ...] = ((4000 * MB, ("gcr.io/4000:latest",)), (30 * MB, ("gcr.io/30:latest",)))
NODE_20_30_40: tuple[Image, ...] = (
    (20 * MB, ("gcr.io/20:latest",)), (30 * MB, ("gcr.io/30:latest",)), (40 * MB, ("gcr.io/40:latest",)))


@pytest.mark.parametrize(
    ("pod", "nodes", "expected"),
    [
        (image_pod("gcr.io/40", "gcr.io/250"),
         [image_node("node1", *NODE_40_300_2000), image_node("node2", *NODE_250_10)], [0, 5]),
        (image_pod("gcr.io/40", "gcr.io/300"),
         [image_node("node1", *NODE_40_300_2000), image_node("node2", *NODE_250_10)], [7, 0]),
        (image_pod("gcr.io/10", "gcr.io/4000"),
         [image_node("node1", *NODE_4000_30), image_node("node2", *NODE_250_10)], [MAX_NODE_SCORE, 0]),
        (image_pod("gcr.io/10", "gcr.io/4000"),
         [image_node("node1", *NODE_4000_30), image_node("node2", *NODE_250_10), image_node("node3")], [66, 0, 0]),
        (image_pod("gcr.io/300", "gcr.io/600", "gcr.io/900"),
         [image_node("node1", *NODE_600_40_900), image_node("node2", *NODE_300_600_900), image_node("node3")],
         [32, 36, 0]),
        (image_pod("gcr.io/30", "gcr.io/40"),
         [image_node("node1", *NODE_20_30_40), image_node("node2", *NODE_4000_30)], [1, 0]),
        (image_pod("gcr.io/30", init=("gcr.io/300",)),
         [image_node("node1", *NODE_40_300_2000), image_node("node2", *NODE_20_30_40)], [6, 0]),
        # ---- beyond upstream
        (image_pod("gcr.io/300", "gcr.io/300"),
         [image_node("node1", *NODE_40_300_2000), image_node("node2")], [14, 0]),
        (image_pod("gcr.io/300:v1"),
         [image_node("node1", *NODE_40_300_2000), image_node("node2", *NODE_300_600_900)], [12, 0]),
        (image_pod("gcr.io/nowhere"), [image_node("node1", *NODE_40_300_2000)], [0]),
        (image_pod("gcr.io/2000"), [image_node("node1", *NODE_40_300_2000)], [MAX_NODE_SCORE]),
    ],
    ids=[
        "two images spread on two nodes prefer the larger image one",
        "two images on one node prefer this node",
        "a sum beyond the limit is clamped to the limit",
        "the limit applies with a node holding no images",
        "pod with multiple large images prefers node2",
        "pod with multiple small images",
        "init container images count too",
        "an image used by two containers counts twice",
        "a tagged image matches only that tag",
        "an image on no node scores zero",
        "a single image larger than the container threshold scores the maximum",
    ],
)
def test_score(pod: Pod, nodes: list[Node], expected: list[int]) -> None:
    handle = FrameworkHandle.for_nodes(nodes)
    pl = imagelocality.new(None, handle)
    infos = [handle.snapshot.get(n.name) for n in nodes]
    got = [pl.score(CycleState(), pod, ni) for ni in infos if ni is not None]
    assert got == expected
    rows = np.array([ni.index for ni in infos if ni is not None], np.int64)
    assert pl.score_batch(CycleState(), pod, handle.snapshot.table, rows).tolist() == expected


def fake_digest(content: str) -> str:
    return "sha256:" + hashlib.sha256(content.encode()).hexdigest()


@pytest.mark.parametrize(
    ("image", "normalized"),
    [
        ("root", "root:latest"),
        ("gcr.io:5000/root", "gcr.io:5000/root:latest"),
        ("root:tag", "root:tag"),
        ("root@" + fake_digest("root"), "root@" + fake_digest("root")),
        ("", ":latest"),
    ],
    ids=[
        "a bare name gets :latest",
        "a registry port is not a tag",
        "a tagged name is kept",
        "a digest is kept",
        "an empty image name gets :latest",
    ],
)
def test_normalized_image_name(image: str, normalized: str) -> None:
    assert normalized_image_name(image) == normalized


@pytest.mark.parametrize(
    ("total", "containers", "expected"),
    [(0, 0, 0), (0, 1, 0), (23 * MB, 1, 0), (1000 * MB, 1, 100), (5000 * MB, 2, 100), (511 * MB, 1, 49)],
    ids=["no containers scores zero", "nothing present scores zero", "exactly the minimum scores zero",
         "exactly the maximum scores 100", "above the maximum is clamped", "in between scales linearly"],
)
def test_calculate_priority(total: int, containers: int, expected: int) -> None:
    assert calculate_priority(total, containers) == expected


IMAGES = ["gcr.io/a", "gcr.io/b:v1", "gcr.io/c", "docker.io/library/d", "e@" + fake_digest("e")]


@pytest.mark.parametrize("seed", range(30), ids=lambda s: f"random cluster {s} gives the same batch and per-node score")
def test_score_batch_equals_score(seed: int) -> None:
    rng = random.Random(seed)
    nodes = []
    for i in range(rng.randint(1, 12)):
        images: list[Image] = []
        for im in rng.sample(IMAGES, rng.randint(0, len(IMAGES))):
            name = normalized_image_name(im)
            aliases = (name, name + "-alias") if rng.random() < 0.3 else (name,)
            images.append((rng.choice([1, 5, 23, 200, 800, 1500, 3000]) * MB + rng.randrange(MB), aliases))
        nodes.append(image_node(f"node-{i}", *images))
    handle = FrameworkHandle.for_nodes(nodes)
    pl = imagelocality.new(None, handle)
    infos = list(handle.snapshot.list())
    by_row = {ni.index: ni for ni in infos}
    rows = np.array([ni.index for ni in infos], np.int64)
    for _ in range(6):
        pod = image_pod(*rng.choices(IMAGES + ["gcr.io/absent"], k=rng.randint(1, 4)),
                        init=tuple(rng.choices(IMAGES, k=rng.randint(0, 2))))
        order = np.array(rng.sample(rows.tolist(), len(rows)), np.int64)
        for sub in (order, order[: (len(order) + 1) // 2]):
            per_node = [pl.score(CycleState(), pod, by_row[r]) for r in sub.tolist()]
            got = pl.score_batch(CycleState(), pod, handle.snapshot.table, sub)
            assert got.dtype == np.int64
            assert got.tolist() == per_node


def test_score_batch_follows_node_changes() -> None:
    nodes = [image_node("node1", (500 * MB, ("gcr.io/a:latest",))), image_node("node2")]
    handle = FrameworkHandle.for_nodes(nodes)
    pl = imagelocality.new(None, handle)
    pod = image_pod("gcr.io/a")

    def check() -> list[int]:
        infos = list(handle.snapshot.list())
        rows = np.array([ni.index for ni in infos], np.int64)
        batch: list[int] = pl.score_batch(CycleState(), pod, handle.snapshot.table, rows).tolist()
        assert batch == [pl.score(CycleState(), pod, ni) for ni in infos]
        return batch

    before = check()
    handle.cache.update_node(image_node("node2", (500 * MB, ("gcr.io/a:latest",))))
    after = check()
    assert after != before
    handle.cache.add_node(image_node("node3"))
    check()
    handle.cache.remove_node("node1")
    check()


@pytest.mark.parametrize("seed", range(12), ids=lambda s: f"random node events {s} keep the batch score equal to the per-node one")
def test_score_batch_follows_random_node_events(seed: int) -> None:
    # Nodes join, leave, change images and report unchanged status, and pods are bound
    # between scorings (their rows enter the table's change log too): the index follows.
    rng = random.Random(seed)

    def random_node(name: str) -> Node:
        images = [(rng.choice([5, 200, 800]) * MB, (normalized_image_name(im),))
                  for im in rng.sample(IMAGES, rng.randint(0, 3))]
        return image_node(name, *images)

    handle = FrameworkHandle.for_nodes([random_node(f"node-{i}") for i in range(6)])
    cache = handle.cache
    pl = imagelocality.new(None, handle)
    for step in range(40):
        names = sorted(cache.node_infos)
        op = rng.random()
        if op < 0.2 or not names:
            cache.add_node(random_node(f"node-{6 + step}"))
        elif op < 0.35 and len(names) > 1:
            cache.remove_node(rng.choice(names))
        elif op < 0.6:
            cache.update_node(random_node(rng.choice(names)))
        elif op < 0.8:  # a status report that changes nothing the scheduler reads
            ni = cache.node_infos[rng.choice(names)]
            assert ni.node is not None
            cache.update_node(image_node(ni.name, *[(im.size_bytes, im.names) for im in ni.node.images]))
        else:
            cache.add_pod(make_pod().name(f"p{step}").node(rng.choice(names)).obj())
        infos = list(handle.snapshot.list())
        rows = np.array([ni.index for ni in infos], np.int64)
        pod = image_pod(*rng.choices(IMAGES, k=rng.randint(1, 3)))
        got = pl.score_batch(CycleState(), pod, handle.snapshot.table, rows).tolist()
        assert got == [pl.score(CycleState(), pod, ni) for ni in infos], step


def test_a_status_report_with_the_same_images_keeps_the_image_index() -> None:
    handle = FrameworkHandle.for_nodes([image_node("node1", (500 * MB, ("gcr.io/a:latest",))), image_node("node2")])
    pl = imagelocality.new(None, handle)
    pod = image_pod("gcr.io/a")
    table = handle.snapshot.table

    def score() -> list[int]:
        rows = np.array([ni.index for ni in handle.snapshot.list()], np.int64)
        out: list[int] = pl.score_batch(CycleState(), pod, table, rows).tolist()
        return out

    before = score()
    epoch = table.extras[NAME].epoch
    handle.cache.update_node(image_node("node1", (500 * MB, ("gcr.io/a:latest",))))
    assert score() == before
    assert table.extras[NAME].epoch == epoch  # nothing moved, nothing recomputed


def test_plugin_shape() -> None:
    pl = imagelocality.new(None, FrameworkHandle.for_nodes([]))
    assert pl.name == NAME == "ImageLocality"
    assert isinstance(pl, ScorePlugin)
    assert not hasattr(pl, "normalize_score")
    assert pl.events_to_register() == []
