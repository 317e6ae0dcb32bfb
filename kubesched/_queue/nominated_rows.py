"""The nominated pods addNominatedPods adds for one priority, as NodeTable rows, kept in step
with the nominator instead of re-read for every scheduling cycle.

RunFilterPluginsWithNominatedPods (framework/runtime/framework.go) adds to a node the pods
nominated there with a priority >= the pod's, other than the pod itself (addNominatedPods).
In a preemption wave hundreds of pods are nominated at once and each cycle changes one
nomination: re-reading every nominated node's list, finding its row and summing its pods'
usage per cycle cost a quarter of the preemption benchmark. :class:`NominatedRows` keeps,
for the last priority asked about, one *slot* per node with relevant nominated pods (its
name, row, pods, and a version bumped when they change), updated from the nominator's change
log (:meth:`QueueNominator.nodes_changed_since`); per filter-plan layout it keeps the summed
usage of each slot, recomputed only for the slots whose version moved. The pod being
scheduled is taken out by the caller (:meth:`NominatedRows.without`).

Rebuilt from scratch when the priority, the nominator, or any node (NodeTable.node_version:
a node added, updated or removed moves rows) changed, or when the change log no longer
reaches back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from kubesched.framework import NodeInfo, PodInfo
from kubesched.framework.interfaces import IntArray
from kubesched.objects import Pod

Usage = Callable[[Sequence[Pod]], tuple[int, ...]]
"""Pods -> their summed usage vector in one plan layout."""


class NominatedRows:
    """See the module docstring. Slots are never reordered; a node whose relevant pods are
    gone keeps its slot with row -1 until the next rebuild (when dead slots outnumber the
    live ones)."""

    __slots__ = ("_source", "priority", "_position", "_node_version", "slot_of", "names", "pods", "rows",
                 "versions", "_next_version", "_dead", "_layout", "_matrix", "_matrix_versions")

    def __init__(self) -> None:
        self._source: Any = None
        self.priority: int | None = None
        self._position = -1
        self._node_version = -1
        self.slot_of: dict[str, int] = {}
        self.names: list[str] = []
        self.pods: list[list[PodInfo]] = []
        self.rows: IntArray = np.empty(0, np.int64)
        self.versions: IntArray = np.empty(0, np.int64)
        self._next_version = 1
        self._dead = 0
        self._layout: object = None
        self._matrix: IntArray = np.empty((0, 0), np.int64)
        self._matrix_versions: IntArray = np.empty(0, np.int64)

    def __len__(self) -> int:
        return len(self.names)

    # ------------------------------------------------------------------ keeping in step
    def sync(self, nominator: Any, priority: int, infos: Mapping[str, NodeInfo], node_version: int) -> None:
        """Bring the slots up to date with ``nominator`` (a PodNominator; with a change log,
        as QueueNominator has, only the nodes changed since the last sync are read again) for
        pods of ``priority``; ``infos``: the cache's NodeInfos by name."""
        changed = None
        logged = callable(getattr(nominator, "nodes_changed_since", None))
        if logged and nominator is self._source and priority == self.priority \
                and node_version == self._node_version:
            changed = nominator.nodes_changed_since(self._position)
        position = nominator.change_position() if logged else -1
        if changed is None:
            self._rebuild(nominator, priority, infos)
        elif changed:
            # Only the changed nodes' lists are read (copying every list per cycle was the
            # work this view exists to avoid).
            for name in dict.fromkeys(changed):
                self._set(name, nominator.nominated_pods_for_node(name), infos)
            if self._dead > 64 and self._dead * 2 > len(self.names):
                self._rebuild(nominator, priority, infos)
        self._source, self.priority, self._position, self._node_version = nominator, priority, position, node_version

    def _rebuild(self, nominator: Any, priority: int, infos: Mapping[str, NodeInfo]) -> None:
        self.priority = priority
        self.slot_of, self.names, self.pods = {}, [], []
        self.rows = np.empty(0, np.int64)
        self.versions = np.empty(0, np.int64)
        self._dead = 0
        self._layout = None  # slots renumbered: every usage row is stale
        for name, lst in nominator.nominated_items():
            self._set(name, lst, infos)

    def _set(self, name: str, lst: Sequence[PodInfo], infos: Mapping[str, NodeInfo]) -> None:
        priority = self.priority
        assert priority is not None
        relevant = [pi for pi in lst if pi.pod.priority >= priority]
        ni = infos.get(name) if relevant else None
        row = ni.index if ni is not None and ni.node is not None else -1
        slot = self.slot_of.get(name)
        if slot is None:
            if row < 0:
                return
            slot = self.slot_of[name] = len(self.names)
            self.names.append(name)
            self.pods.append(relevant)
            if slot >= len(self.rows):
                grown = max(16, 2 * len(self.rows))
                self.rows = np.resize(self.rows, grown)
                self.versions = np.resize(self.versions, grown)
            self.rows[slot] = row
        else:
            was_dead = self.rows[slot] < 0
            self.pods[slot] = relevant if row >= 0 else []
            self.rows[slot] = row
            self._dead += int(row < 0) - int(was_dead)
        self.versions[slot] = self._next_version
        self._next_version += 1

    # ------------------------------------------------------------------ reading
    def live(self) -> IntArray:
        """The slots with relevant nominated pods on an existing node."""
        return np.flatnonzero(self.rows[:len(self.names)] >= 0)

    def usage(self, slots: IntArray, layout: object, width: int, total: Usage) -> IntArray:
        """The summed usage of each slot's pods in one plan layout (``width`` resources,
        ``total`` sums a list of pods): an array of shape (len(slots), width). Kept per
        layout; a slot is recomputed when its version moved."""
        m = len(self.names)
        if layout != self._layout or self._matrix.shape[1] != width:
            self._layout = layout
            self._matrix = np.zeros((max(m, 16), width), np.int64)
            self._matrix_versions = np.zeros(max(m, 16), np.int64)
        elif len(self._matrix) < m:
            grown = max(m, 2 * len(self._matrix))
            matrix = np.zeros((grown, width), np.int64)
            matrix[:len(self._matrix)] = self._matrix
            self._matrix = matrix
            versions = np.zeros(grown, np.int64)
            versions[:len(self._matrix_versions)] = self._matrix_versions
            self._matrix_versions = versions
        stale = slots[self._matrix_versions[slots] != self.versions[slots]]
        if stale.size:
            matrix, pods = self._matrix, self.pods
            for slot in stale.tolist():
                matrix[slot] = total([pi.pod for pi in pods[slot]])
            self._matrix_versions[stale] = self.versions[stale]
        return self._matrix[slots]

    def without(self, uid: str, name: str) -> tuple[int, list[PodInfo]] | None:
        """The slot of node ``name`` and its pods other than ``uid``, if ``uid`` is one of
        them (the pod being scheduled is never added to its own filtering); else None."""
        slot = self.slot_of.get(name)
        if slot is None or self.rows[slot] < 0:
            return None
        pods = self.pods[slot]
        if not any(pi.pod.uid == uid for pi in pods):
            return None
        return slot, [pi for pi in pods if pi.pod.uid != uid]
