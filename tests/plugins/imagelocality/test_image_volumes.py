"""ImageLocality in 1.36 (ImageVolume GA): the images of the pod's image volumes
(``volumes[].image.reference``) count in the sum, but not in the threshold, which stays
maxContainerThreshold x (containers + init containers) (image_locality.go sumImageScores)."""

from __future__ import annotations

import numpy as np
import pytest
from builders import make_pod

from kubesched._runtime.handle import FrameworkHandle
from kubesched.features import FEATURES_1_30, FEATURES_1_36, Features
from kubesched.framework import CycleState
from kubesched.plugins import imagelocality
from tests.plugins.imagelocality.test_imagelocality import NODE_40_300_2000, NODE_250_10, image_node


@pytest.mark.parametrize(("features", "want"), [
    # node1: 40 MB and 300 MB images, each on 1 of 2 nodes: 20 + 150 = 170 MB; one container:
    # 100 * (170 - 23) / (1000 - 23) = 15.
    pytest.param(FEATURES_1_36, [15, 0], id="1.36: the image volume's image counts on node1"),
    # v1.30 has no image volumes: only the container's 40 MB image (20 MB < 23 MB): 0.
    pytest.param(FEATURES_1_30, [0, 0], id="v1.30: only the container's image counts"),
])
def test_an_image_volumes_image_counts_in_the_score(features: Features, want: list[int]) -> None:
    nodes = [image_node("node1", *NODE_40_300_2000), image_node("node2", *NODE_250_10)]
    pod = (make_pod().name("p").container("gcr.io/40")
           .volume("models", "image", {"reference": "gcr.io/300", "pullPolicy": "IfNotPresent"}).obj())
    handle = FrameworkHandle.for_nodes(nodes, features=features)
    pl = imagelocality.new(None, handle)
    infos = sorted(handle.snapshot.list(), key=lambda ni: ni.name)
    assert [pl.score(CycleState(), pod, ni) for ni in infos] == want
    rows = np.array([ni.index for ni in infos], np.int64)
    assert pl.score_batch(CycleState(), pod, handle.snapshot.table, rows).tolist() == want


def test_image_volumes_do_not_raise_the_threshold() -> None:
    # Two image volumes of 2000 MB on every node would give 2 x 2000 MB against one container's
    # 1000 MB threshold: clamped to the maximum score.
    big = ((2000 * 1024 * 1024, ("gcr.io/a:latest", "gcr.io/b:latest")),)
    nodes = [image_node("node1", *big)]
    pod = (make_pod().name("p").container("gcr.io/c")
           .volume("a", "image", {"reference": "gcr.io/a"}).volume("b", "image", {"reference": "gcr.io/b"}).obj())
    handle = FrameworkHandle.for_nodes(nodes, features=FEATURES_1_36)
    pl = imagelocality.new(None, handle)
    (ni,) = handle.snapshot.list()
    assert pl.score(CycleState(), pod, ni) == 100
