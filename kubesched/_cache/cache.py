"""The scheduler cache and its snapshot (internal/cache/cache.go, snapshot.go, node_tree.go).

kubesched schedules one pod at a time against the cache's own NodeInfos, so the "snapshot"
handed to plugins is a view of the cache that is only mutated between scheduling cycles
(assume / forget / informer events). Lists that upstream rebuilds on every snapshot update
(nodes with affinity pods) are recomputed lazily when the cache changed; image states are kept
per image name as nodes come and go (addNodeImageStates / removeNodeImageStates), so a node
event costs the node's own images, not every node's.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence

import numpy as np

from kubesched._cache.podgroups import PodGroupStates
from kubesched.framework import ImageStateSummary, NodeInfo, NodeTable, PodInfo
from kubesched.framework.interfaces import IntArray
from kubesched.framework.nodetable import identity_rows
from kubesched.objects import Node, Pod

_ZONE_LABELS = ("failure-domain.beta.kubernetes.io/zone", "topology.kubernetes.io/zone")
_REGION_LABELS = ("failure-domain.beta.kubernetes.io/region", "topology.kubernetes.io/region")


def zone_key(node: Node) -> str:
    """utilnode.GetZoneKey: region + ":\\x00:" + zone, beta labels first; "" if neither."""
    labels = node.meta.labels
    # A present beta label wins even when empty (the GA label is read only when it is absent).
    zone = labels[_ZONE_LABELS[0]] if _ZONE_LABELS[0] in labels else labels.get(_ZONE_LABELS[1], "")
    region = labels[_REGION_LABELS[0]] if _REGION_LABELS[0] in labels else labels.get(_REGION_LABELS[1], "")
    if not zone and not region:
        return ""
    return f"{region}:\x00:{zone}"


def node_tree_order(nodes: Iterable[Node]) -> list[Node]:
    """nodeTree.list: zones in first-seen order, one node per zone per round."""
    zones: dict[str, list[Node]] = {}
    for n in nodes:
        zones.setdefault(zone_key(n), []).append(n)
    out: list[Node] = []
    lists = list(zones.values())
    i = 0
    while True:
        added = False
        for lst in lists:
            if i < len(lst):
                out.append(lst[i])
                added = True
        if not added:
            return out
        i += 1


class _ImageState:
    """cache.go's imageState: the size first seen for an image name (kept while any node
    lists the name) and the nodes listing it."""

    __slots__ = ("size", "nodes")

    def __init__(self, size: int, node: str) -> None:
        self.size = size
        self.nodes = {node}


class NodeImages(Mapping[str, ImageStateSummary]):
    """A node's ImageStates: for each image name its status lists, the summary (size, number
    of nodes listing the name) read from the cache's image states when asked, so a node
    joining or leaving with an image updates every other holder's count at no cost. Once its
    node is updated or removed, the summaries are frozen as they were (a clone taken before
    still reads them)."""

    __slots__ = ("_names", "_states", "_frozen")

    def __init__(self, names: dict[str, None], states: dict[str, _ImageState]) -> None:
        self._names = names
        self._states = states
        self._frozen: dict[str, ImageStateSummary] | None = None

    def __getitem__(self, name: str) -> ImageStateSummary:
        if self._frozen is not None:
            return self._frozen[name]
        if name not in self._names:
            raise KeyError(name)
        st = self._states[name]
        return ImageStateSummary(st.size, len(st.nodes))

    def freeze(self) -> None:
        """Keep the summaries as they are now (the node is about to leave the counts)."""
        if self._frozen is None:
            self._frozen = {name: self[name] for name in self._names}

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __repr__(self) -> str:
        return f"NodeImages({dict(self.items())!r})"


class Snapshot:
    """NodeInfoLister over the cache (framework.SharedLister)."""

    __slots__ = ("_cache",)

    def __init__(self, cache: Cache) -> None:
        self._cache = cache

    def list(self) -> Sequence[NodeInfo]:
        return self._cache.ordered()

    def get(self, name: str) -> NodeInfo | None:
        return self._cache.node_infos.get(name)

    def have_pods_with_affinity_list(self) -> Sequence[NodeInfo]:
        """HavePodsWithAffinityNodeInfoList: the listed nodes having a pod with (anti-)affinity,
        in list order (found from the table's per-row counts, not by visiting every node)."""
        return self._cache.listed_with(self._cache.table.affinity_count)

    def have_pods_with_required_anti_affinity_list(self) -> Sequence[NodeInfo]:
        """HavePodsWithRequiredAntiAffinityNodeInfoList, likewise."""
        return self._cache.listed_with(self._cache.table.anti_affinity_count)

    def rows(self) -> IntArray:
        """The table rows of :meth:`list`, in its order (do not modify)."""
        return self._cache.ordered_rows()[0]

    def positions(self) -> IntArray:
        """Per table row, the position of its node in :meth:`list` (-1: not listed)."""
        return self._cache.ordered_rows()[1]

    @property
    def table(self) -> NodeTable:
        return self._cache.table

    def __len__(self) -> int:
        return len(self._cache.node_infos)


class Cache:
    """Nodes and the pods on them, including assumed (bound-in-cycle) pods."""

    def __init__(self, capacity: int = 64, *, by_name: bool = False) -> None:
        """``by_name``: list nodes in node-name order instead of the node tree's zone
        round-robin (the conformance procedure: one canonical order, independent of the
        order the nodes were added in)."""
        self.by_name = by_name
        self.table = NodeTable(capacity)
        self.node_infos: dict[str, NodeInfo] = {}
        self._order: list[NodeInfo] | None = None
        self._order_rows: tuple[IntArray, IntArray] | None = None
        # Per table row, its NodeInfo (None once the node is removed; rows are not reused).
        self.by_row: list[NodeInfo | None] = []
        self._pod_node: dict[str, str] = {}  # uid -> node name
        self._pending_pods: dict[str, list[Pod]] = {}  # pods on nodes not (yet) known
        self.assumed: set[str] = set()
        # cache.go's imageStates: image name -> its size and the nodes listing it.
        self._images: dict[str, _ImageState] = {}
        # cache.go's podGroupStates: the runtime state of every pod group with a known pod.
        self.pod_groups = PodGroupStates()
        self.snapshot = Snapshot(self)

    # ---- nodes
    def add_nodes(self, nodes: Iterable[Node]) -> None:
        """Add many nodes (and compute the node list, which the next scheduling cycle needs)."""
        for node in nodes:
            self.add_node(node)
        self.ordered_rows()

    def add_node(self, node: Node) -> NodeInfo:
        ni = self.node_infos.get(node.meta.name)
        if ni is not None:
            return self.update_node(node)
        ni = NodeInfo(node)
        ni.index = self.table.add_node(node)
        ni.table = self.table
        self.node_infos[node.meta.name] = ni
        self.by_row.append(ni)
        assert len(self.by_row) == self.table.size
        for pod in self._pending_pods.pop(node.meta.name, []):
            ni.add_pod(pod)
        self._order = None
        self._add_node_images(node, ni)
        return ni

    def update_node(self, node: Node) -> NodeInfo:
        ni = self.node_infos[node.meta.name]
        old = ni.node
        if old is not None:
            self._remove_node_images(old, ni)
        ni.set_node(node)
        self.table.set_node(ni.index, node)
        # nodeTree.updateNode: the node list changes only when the node changes zone.
        if old is None or zone_key(old) != zone_key(node):
            self._order = None
        self._add_node_images(node, ni)
        return ni

    def remove_node(self, name: str) -> None:
        """Cache.RemoveNode: the node goes, its pods stay (their delete events come on another
        watch, maybe later): upstream keeps them on a node-less NodeInfo, here with the pods of
        unknown nodes, so they count again if a node of that name comes back."""
        ni = self.node_infos.pop(name, None)
        if ni is None:
            return
        if ni.pods:
            self._pending_pods.setdefault(name, []).extend(pi.pod for pi in ni.pods)
        self.table.clear_row(ni.index)
        self.by_row[ni.index] = None
        self._order = None
        if ni.node is not None:
            self._remove_node_images(ni.node, ni)

    def ordered(self) -> list[NodeInfo]:
        if self._order is None:
            infos = self.node_infos
            if self.by_name:
                self._order = [infos[name] for name in sorted(infos) if infos[name].node is not None]
            else:
                self._order = [infos[n.meta.name] for n in node_tree_order(
                    ni.node for ni in infos.values() if ni.node is not None)]
            self._order_rows = None
        return self._order

    def ordered_rows(self) -> tuple[IntArray, IntArray]:
        """(the table rows of :meth:`ordered`, in order; per table row its position there or
        -1), kept with the order."""
        order = self.ordered()
        cached = self._order_rows
        if cached is None:
            rows = np.fromiter((ni.index for ni in order), np.int64, len(order))
            if len(rows) and int(rows[-1]) == len(rows) - 1 and bool((rows == identity_rows(len(rows))).all()):
                # The list is the table's own order: its slices are runs batch methods read as
                # column slices (framework.nodetable.row_span).
                rows = identity_rows(len(rows))
            positions = np.full(self.table.size, -1, np.int64)
            positions[rows] = np.arange(len(order), dtype=np.int64)
            cached = self._order_rows = (rows, positions)
        return cached

    def listed_with(self, counts: IntArray) -> list[NodeInfo]:
        """The listed NodeInfos whose row has a non-zero entry in ``counts`` (a table
        column), in list order."""
        positions = self.ordered_rows()[1]
        found = np.flatnonzero(counts[: self.table.size])
        pos = positions[found]
        pos = np.sort(pos[pos >= 0])
        order = self.ordered()
        return [order[p] for p in pos.tolist()]

    def _add_node_images(self, node: Node, ni: NodeInfo) -> None:
        """addNodeImageStates: count the node under each image name its status lists (the
        first node listing a name sets its size), and give the NodeInfo its summaries."""
        states, name_of = self._images, node.meta.name
        names: dict[str, None] = {}
        for image in node.images:
            for name in image.names:
                st = states.get(name)
                if st is None:
                    states[name] = _ImageState(image.size_bytes, name_of)
                else:
                    st.nodes.add(name_of)
                names[name] = None
        ni.image_states = NodeImages(names, states)

    def _remove_node_images(self, node: Node, ni: NodeInfo) -> None:
        """removeNodeImageStates: an image name no node lists any more is forgotten. The
        NodeInfo's summaries are frozen first."""
        if isinstance(ni.image_states, NodeImages):
            ni.image_states.freeze()
        states, name_of = self._images, node.meta.name
        for image in node.images:
            for name in image.names:
                st = states.get(name)
                if st is not None:
                    st.nodes.discard(name_of)
                    if not st.nodes:
                        del states[name]

    # ---- pods
    def add_pod(self, pod: Pod) -> None:
        """A pod bound to ``pod.node_name`` (informer add): on its node and, as assigned, in
        its pod group (addPod -> addPodGroupMember)."""
        self._place(pod)
        self.pod_groups.add(pod)

    def _place(self, pod: Pod) -> None:
        ni = self.node_infos.get(pod.node_name)
        self._pod_node[pod.uid] = pod.node_name
        if ni is None:
            self._pending_pods.setdefault(pod.node_name, []).append(pod)
            return
        ni.add_pod_info(PodInfo(pod))

    def remove_pod(self, pod: Pod) -> None:
        """The pod leaves its node and its pod group (removePod -> removePodGroupMember)."""
        self._unplace(pod)
        self.pod_groups.remove(pod)

    def _unplace(self, pod: Pod) -> None:
        node_name = self._pod_node.pop(pod.uid, pod.node_name)
        self.assumed.discard(pod.uid)
        ni = self.node_infos.get(node_name)
        if ni is not None:
            ni.remove_pod(pod)
        else:
            lst = self._pending_pods.get(node_name)
            if lst is not None:
                lst[:] = [p for p in lst if p.uid != pod.uid]
                if not lst:  # the node is gone and so are its pods: nothing to keep for its name
                    del self._pending_pods[node_name]

    def update_pod_metadata(self, pod: Pod) -> None:
        """updatePod (removePod + addPod) for a pod whose metadata alone changed, on the node
        the cache holds it on (the 1.36 binding's zone labels): NodeInfo.replace_pod, the pod
        staying assumed if it was."""
        ni = self.node_infos.get(self._pod_node.get(pod.uid, pod.node_name))
        if ni is None or not ni.replace_pod(pod):
            was_assumed = pod.uid in self.assumed
            self.remove_pod(pod)
            self.add_pod(pod)
            if was_assumed:
                self.assumed.add(pod.uid)
            return
        self.pod_groups.remove(pod)
        self.pod_groups.add(pod)

    def assume_pod(self, pod: Pod) -> None:
        """Cache.AssumePod: the pod counts on its node before the bind completes, and as
        assumed in its pod group (assumePodGroupMember)."""
        self._place(pod)
        self.assumed.add(pod.uid)
        self.pod_groups.assume(pod)

    def finish_binding(self, pod: Pod) -> None:
        """The bind went through: the pod is no longer assumed. Upstream's informer then adds
        the bound pod (AddPod of an assumed pod: updatePod), which makes it assigned in its
        pod group."""
        self.assumed.discard(pod.uid)
        self.pod_groups.remove(pod)
        self.pod_groups.add(pod)

    def forget_pod(self, pod: Pod) -> None:
        """Cache.ForgetPod: undo an assume after a failed bind; in its pod group the pod is
        unscheduled again (forgetPodGroupMember)."""
        self._unplace(pod)
        self.assumed.discard(pod.uid)
        self.pod_groups.forget(pod)

    # ---- pod group members (cache.go: AddPodGroupMember / UpdatePodGroupMember /
    # RemovePodGroupMember, called by the event handlers for unscheduled pods)
    def add_pod_group_member(self, pod: Pod) -> None:
        """An unscheduled pod reached the queue (addPodToSchedulingQueue)."""
        self.pod_groups.add(pod)

    def update_pod_group_member(self, old: Pod, new: Pod) -> None:
        self.pod_groups.update(old, new)

    def remove_pod_group_member(self, pod: Pod) -> None:
        """An unscheduled pod was deleted (deletePodFromSchedulingQueue, not by a bind)."""
        self.pod_groups.remove(pod)

    def node_of(self, pod: Pod) -> str | None:
        return self._pod_node.get(pod.uid)

    def pods(self) -> list[Pod]:
        return [pi.pod for ni in self.node_infos.values() for pi in ni.pods]

    def placements(self) -> Iterator[tuple[str, Pod]]:
        """(node name, pod) for every pod the cache holds, pods on nodes it does not know
        (yet) included; a pod listed twice would appear twice (the invariant checker)."""
        for name, ni in self.node_infos.items():
            for pi in ni.pods:
                yield name, pi.pod
        for name, pods in self._pending_pods.items():
            for pod in pods:
                yield name, pod

    @property
    def pod_nodes(self) -> Mapping[str, str]:
        """The index: pod uid -> the node name the cache holds it on."""
        return self._pod_node
