"""ImageLocality: nodes that already hold the pod's container images score higher, scaled
by how widely each image is spread over the cluster (Score).

Mirrors framework/plugins/imagelocality/image_locality.go.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kubesched.framework import (
    MAX_NODE_SCORE,
    ClusterEventWithHint,
    CycleState,
    Handle,
    ImageStateSummary,
    NodeInfo,
    NodeTable,
)
from kubesched.framework.interfaces import IntArray
from kubesched.objects import Pod
from kubesched.plugins.helpers.gomath import go_div

NAME = "ImageLocality"
MB = 1024 * 1024
# Bounds of the image score: a reasonable range of compressed image sizes.
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB
DEFAULT_IMAGE_TAG = "latest"
_TABLE_KEY = NAME


def normalized_image_name(name: str) -> str:
    """normalizedImageName: append ``:latest`` when the name has no tag (the last ':' is not
    after the last '/'); digests (``@sha256:...``) are left alone."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":" + DEFAULT_IMAGE_TAG
    return name


def pod_image_names(pod: Pod) -> list[str]:
    """Normalized images of the init containers, then of the regular containers."""
    return [normalized_image_name(c.image) for c in pod.init_containers] + [
        normalized_image_name(c.image) for c in pod.containers]


def scaled_image_score(state: ImageStateSummary, total_num_nodes: int) -> int:
    """scaledImageScore: int64(float64(size) * (float64(numNodes) / float64(total)))."""
    if total_num_nodes <= 0:
        return 0
    spread = float(state.num_nodes) / float(total_num_nodes)
    return int(float(state.size) * spread)


def calculate_priority(sum_scores: int, num_containers: int) -> int:
    """calculatePriority: clamp the sum into [minThreshold, 1000MB x containers] and scale
    to [0, MaxNodeScore]."""
    max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
    if sum_scores < MIN_THRESHOLD:
        sum_scores = MIN_THRESHOLD
    elif sum_scores > max_threshold:
        sum_scores = max_threshold
    return go_div(MAX_NODE_SCORE * (sum_scores - MIN_THRESHOLD), max_threshold - MIN_THRESHOLD)


def sum_image_scores(node_info: NodeInfo, image_names: Sequence[str], total_num_nodes: int) -> int:
    """sumImageScores over already-normalized image names."""
    total = 0
    states = node_info.image_states
    for name in image_names:
        st = states.get(name)
        if st is not None:
            total += scaled_image_score(st, total_num_nodes)
    return total


class _ImageIndex:
    """image name -> (rows holding it, that row's scaled score), for one node version."""

    __slots__ = ("version", "source", "by_name", "scores")

    def __init__(self, table: NodeTable, node_infos: Sequence[NodeInfo]) -> None:
        self.version = table.node_version
        self.source = node_infos
        total = len(node_infos)
        acc: dict[str, tuple[list[int], list[int]]] = {}
        for ni in node_infos:
            if not 0 <= ni.index < table.size:
                continue
            for name, st in ni.image_states.items():
                rows, scores = acc.setdefault(name, ([], []))
                rows.append(ni.index)
                scores.append(scaled_image_score(st, total))
        self.by_name: dict[str, tuple[IntArray, IntArray]] = {
            name: (np.array(rows, np.int64), np.array(scores, np.int64)) for name, (rows, scores) in acc.items()}
        # Per tuple of a pod's image names: the final score of every row (a few kept).
        self.scores: dict[tuple[str, ...], IntArray] = {}

    def row_scores(self, size: int, names: Sequence[str]) -> IntArray | None:
        """calculatePriority(sumImageScores) for every row, or None when no node holds any of
        ``names`` (every score is then 0): computed once per image list and node version."""
        key = tuple(names)
        got = self.scores.get(key)
        if got is not None:
            return got
        present = [self.by_name[n] for n in names if n in self.by_name]
        if not present or not names:
            return None
        sums = np.zeros(size, np.int64)
        for img_rows, img_scores in present:
            # One entry per container: an image used twice counts twice, as upstream.
            np.add.at(sums, img_rows, img_scores)
        max_threshold = MAX_CONTAINER_THRESHOLD * len(names)
        s = np.where(sums < MIN_THRESHOLD, MIN_THRESHOLD, np.where(sums > max_threshold, max_threshold, sums))
        # Operands are non-negative and max_threshold > MIN_THRESHOLD (>= 1 container), so
        # floor division equals Go's truncation.
        out: IntArray = (MAX_NODE_SCORE * (s - MIN_THRESHOLD)) // (max_threshold - MIN_THRESHOLD)
        if len(self.scores) >= 32:
            self.scores.clear()
        self.scores[key] = out
        return out


def _image_index(table: NodeTable, node_infos: Sequence[NodeInfo]) -> _ImageIndex:
    idx = table.extras.get(_TABLE_KEY)
    if not isinstance(idx, _ImageIndex) or idx.version != table.node_version or idx.source is not node_infos:
        idx = _ImageIndex(table, node_infos)
        table.extras[_TABLE_KEY] = idx
    return idx


class ImageLocality:
    name = NAME

    def __init__(self, handle: Handle) -> None:
        self.handle = handle

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # Upstream ImageLocality is no EnqueueExtensions: a Score plugin rejects no pod.
        return []

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        """ImageLocality.Score."""
        total_num_nodes = len(self.handle.snapshot.list())
        names = pod_image_names(pod)
        return calculate_priority(sum_image_scores(node_info, names, total_num_nodes), len(names))

    def score_batch(self, state: CycleState, pod: Pod, table: NodeTable, rows: IntArray) -> IntArray:
        names = pod_image_names(pod)
        scores = _image_index(table, self.handle.snapshot.list()).row_scores(table.size, names)
        if scores is None:
            # No image of the pod on any node: every sum is 0, below minThreshold -> 0.
            return np.zeros(len(rows), np.int64)
        out: IntArray = scores[rows]
        return out


def new(args: object, handle: Handle) -> ImageLocality:
    """Plugin factory (registry entry). ImageLocality takes no args."""
    return ImageLocality(handle)
