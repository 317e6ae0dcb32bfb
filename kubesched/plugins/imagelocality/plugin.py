"""ImageLocality: nodes that already hold the pod's container images score higher, scaled
by how widely each image is spread over the cluster (Score).

Mirrors framework/plugins/imagelocality/image_locality.go.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kubesched.features import DEFAULT_FEATURES
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
from kubesched.framework.nodetable import take_rows
from kubesched.framework.signers import IMAGE_NAMES_SIGNER_NAME, SignFragment
from kubesched.objects import Pod
from kubesched.plugins.helpers.gomath import go_div
from kubesched.plugins.helpers.rows import row_node_infos

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


def pod_image_names(pod: Pod, image_volumes: bool = False) -> list[str]:
    """Normalized images of the init containers, then of the regular containers, then (1.36,
    ImageVolume) of the image volumes' ``image.reference`` (sumImageScores)."""
    names = [normalized_image_name(c.image) for c in pod.init_containers] + [
        normalized_image_name(c.image) for c in pod.containers]
    if image_volumes:
        for v in pod.volumes:
            ref = v.source.get("reference") if v.kind == "image" else None
            if isinstance(ref, str):
                names.append(normalized_image_name(ref))
    return names


def num_containers(pod: Pod) -> int:
    """The threshold's container count: image volumes do not raise it."""
    return len(pod.init_containers) + len(pod.containers)


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
    """image name -> the table rows whose (listed) node's status lists it, kept in step with
    the table's change log: a node added, updated or removed moves only its own names, and a
    pod bound to a node (which logs the row too) costs an identity check. Node updates that
    leave the images alone (kubelet's periodic status reports) change nothing here.

    Scores are computed per pod image list from the holders' summaries (size, number of
    nodes: the cache's live counts) and kept until an image moves or the node count changes."""

    __slots__ = ("table", "position", "row_node", "row_names", "holders", "epoch", "scores", "scores_at")

    def __init__(self, table: NodeTable) -> None:
        self.table = table
        self.position = -1
        self.row_node: list[object] = []  # per row: the node object (or None) whose names are counted
        self.row_names: list[tuple[str, ...]] = []
        self.holders: dict[str, dict[int, None]] = {}
        self.epoch = 0  # bumped whenever a name's holders change
        # Per tuple of a pod's image names: the final score of every row; valid for one
        # (epoch, number of nodes, table size).
        self.scores: dict[tuple[tuple[str, ...], int], IntArray] = {}
        self.scores_at: tuple[int, int, int] = (-1, -1, -1)

    def refresh(self, by_row: Sequence[NodeInfo | None]) -> None:
        table = self.table
        size = table.size
        if len(self.row_node) < size:
            grow = size - len(self.row_node)
            self.row_node.extend([None] * grow)
            self.row_names.extend([()] * grow)
        changed = table.changed_since(self.position) if self.position >= 0 else None
        self.position = table.log_position
        rows: Sequence[int] = range(size) if changed is None else (
            list(dict.fromkeys(changed)) if len(changed) > 1 else changed)
        row_node, row_names, holders = self.row_node, self.row_names, self.holders
        for r in rows:
            ni = by_row[r] if r < len(by_row) else None
            node = ni.node if ni is not None else None
            if node is row_node[r]:  # the same node object (or still none): its names are counted
                continue
            names = tuple(ni.image_states) if ni is not None and node is not None else ()
            old = row_names[r]
            row_node[r] = node
            if names == old:
                continue
            row_names[r] = names
            for name in old:
                held = holders.get(name)
                if held is not None:
                    held.pop(r, None)
                    if not held:
                        del holders[name]
            for name in names:
                holders.setdefault(name, {})[r] = None
            self.epoch += 1

    def row_scores(self, by_row: Sequence[NodeInfo | None], total: int, names: Sequence[str],
                   containers: int) -> IntArray | None:
        """calculatePriority(sumImageScores) for every row, or None when no node holds any of
        ``names`` (every score is then 0); ``containers`` sets the threshold."""
        size = self.table.size
        at = (self.epoch, total, size)
        if self.scores_at != at:
            self.scores.clear()
            self.scores_at = at
        key = (tuple(names), containers)
        got = self.scores.get(key)
        if got is not None:
            return got
        present = [n for n in names if n in self.holders]
        if not present or not names:
            return None
        sums = np.zeros(size, np.int64)
        for name in present:
            held = list(self.holders[name])
            # Each holder's own summary (in the cache all holders share one).
            img_scores = [scaled_image_score(by_row[r].image_states[name], total)  # type: ignore[union-attr]
                          for r in held]
            # One entry per container: an image used twice counts twice, as upstream.
            np.add.at(sums, np.array(held, np.int64), np.array(img_scores, np.int64))
        max_threshold = MAX_CONTAINER_THRESHOLD * containers
        s = np.where(sums < MIN_THRESHOLD, MIN_THRESHOLD, np.where(sums > max_threshold, max_threshold, sums))
        # Operands are non-negative and max_threshold > MIN_THRESHOLD (>= 1 container), so
        # floor division equals Go's truncation.
        out: IntArray = (MAX_NODE_SCORE * (s - MIN_THRESHOLD)) // (max_threshold - MIN_THRESHOLD)
        if len(self.scores) >= 32:
            self.scores.clear()
        self.scores[key] = out
        return out


def _image_index(table: NodeTable, by_row: Sequence[NodeInfo | None]) -> _ImageIndex:
    idx = table.extras.get(_TABLE_KEY)
    if not isinstance(idx, _ImageIndex) or idx.table is not table:
        idx = _ImageIndex(table)
        table.extras[_TABLE_KEY] = idx
    idx.refresh(by_row)
    return idx


class ImageLocality:
    name = NAME

    def __init__(self, handle: Handle) -> None:
        self.handle = handle
        features = handle.features if handle is not None else DEFAULT_FEATURES
        self._image_volumes = features.enabled("ImageVolume")

    def sign_pod(self, pod: Pod) -> list[SignFragment]:
        """SignPod: the distinct normalized images of the containers and init containers, sorted
        (an image volume's image is in the volumes' fragment, not here)."""
        names = {normalized_image_name(c.image) for c in (*pod.containers, *pod.init_containers)}
        return [SignFragment(IMAGE_NAMES_SIGNER_NAME, sorted(names))]

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # Upstream ImageLocality is no EnqueueExtensions: a Score plugin rejects no pod.
        return []

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        """ImageLocality.Score."""
        total_num_nodes = len(self.handle.snapshot.list())
        names = pod_image_names(pod, self._image_volumes)
        return calculate_priority(sum_image_scores(node_info, names, total_num_nodes), num_containers(pod))

    def score_batch(self, state: CycleState, pod: Pod, table: NodeTable, rows: IntArray) -> IntArray:
        names = pod_image_names(pod, self._image_volumes)
        infos = self.handle.snapshot.list()
        by_row = row_node_infos(table, infos)
        scores = _image_index(table, by_row).row_scores(by_row, len(infos), names, num_containers(pod))
        if scores is None:
            # No image of the pod on any node: every sum is 0, below minThreshold -> 0.
            return np.zeros(len(rows), np.int64)
        out: IntArray = take_rows(scores, rows)
        return out


def new(args: object, handle: Handle) -> ImageLocality:
    """Plugin factory (registry entry). ImageLocality takes no args."""
    return ImageLocality(handle)
