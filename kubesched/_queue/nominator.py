"""Pods nominated to run on nodes (internal/queue/scheduling_queue.go: nominator, v1.30).

It exists because a pod's status.nominatedNodeName (what the API says) may lag behind
what the scheduler decided: the in-memory nomination is what filtering with nominated
pods and preemption use.

Besides the upstream-named methods (add_nominated_pod, delete_nominated_pod_if_exists,
update_nominated_pod, nominated_pods_for_node) it implements the framework's PodNominator
(add, delete, nominated_node, nominated_node_names, bool()): it is the one nominator behind
every FrameworkHandle, the simulators, live mode and the benchmarks.
"""

from __future__ import annotations

from collections.abc import Callable

from kubesched.framework import NOMINATING_OVERRIDE, NominatingInfo, PodInfo
from kubesched.objects import Pod

PodLister = Callable[[str, str], Pod | None]
"""(namespace, name) -> the informer's current pod, or None if it no longer exists."""


class QueueNominator:
    """node name -> nominated PodInfos (in nomination order), and pod UID -> node name."""

    def __init__(self, pod_lister: PodLister | None = None) -> None:
        self._pod_lister = pod_lister
        self._by_node: dict[str, list[PodInfo]] = {}
        self._node_of: dict[str, str] = {}
        # The change log: the nodes whose list changed, oldest first (_changed[0] is change
        # number _changed_base), for readers that keep a derived view in step (the
        # scheduler's addNominatedPods view, kubesched._queue.nominated_rows) instead of
        # re-reading every list per cycle.
        self._changed: list[str] = []
        self._changed_base = 0

    # ---------------------------------------------------------------- upstream API
    def add_nominated_pod(self, pod_info: PodInfo, nominating_info: NominatingInfo | None = None) -> None:
        """AddNominatedPod: Override mode nominates the given node (even ""); Noop (or no
        info) uses status.nominatedNodeName and does nothing when it is empty. A pod the
        lister no longer has, or already bound there, is not nominated."""
        pod = pod_info.pod
        # Always delete first: a pod is never stored twice.
        self._remove(pod)
        if nominating_info is not None and nominating_info.mode == NOMINATING_OVERRIDE:
            node_name = nominating_info.nominated_node_name
        else:
            if not pod.nominated_node_name:
                return
            node_name = pod.nominated_node_name
        if self._pod_lister is not None:
            current = self._pod_lister(pod.namespace, pod.name)
            if current is None or current.node_name:
                return
        self._node_of[pod.uid] = node_name
        lst = self._by_node.setdefault(node_name, [])
        if any(pi.pod.uid == pod.uid for pi in lst):
            return
        lst.append(pod_info)
        self._touch(node_name)

    def delete_nominated_pod_if_exists(self, pod: Pod) -> None:
        """DeleteNominatedPodIfExists."""
        self._remove(pod)

    def update_nominated_pod(self, old_pod: Pod, new_pod_info: PodInfo) -> None:
        """UpdateNominatedPod: an update carrying no nominatedNodeName (old and new empty)
        keeps an in-memory nomination made since (the API may not have caught up)."""
        info: NominatingInfo | None = None
        if not old_pod.nominated_node_name and not new_pod_info.pod.nominated_node_name:
            node = self._node_of.get(old_pod.uid)
            if node is not None:
                info = NominatingInfo(node, NOMINATING_OVERRIDE)
        self._remove(old_pod)
        self.add_nominated_pod(new_pod_info, info)

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        """NominatedPodsForNode: a copy of the list (pods are immutable)."""
        return list(self._by_node.get(node_name, ()))

    # ---------------------------------------------------------------- the framework's PodNominator API
    def add(self, pod_info: PodInfo, node_name: str) -> None:
        """Nominate ``node_name`` (Override); an empty name clears the nomination."""
        if not node_name:
            self._remove(pod_info.pod)
            return
        self.add_nominated_pod(pod_info, NominatingInfo(node_name, NOMINATING_OVERRIDE))

    def delete(self, pod: Pod) -> None:
        self._remove(pod)

    def nominated_node(self, pod: Pod) -> str:
        return self._node_of.get(pod.uid, "")

    def nominated_node_names(self) -> list[str]:
        return [node for node, lst in self._by_node.items() if lst]

    def nominated_items(self) -> list[tuple[str, list[PodInfo]]]:
        """(node, its nominated pods) for every node with some (an emptied list is removed),
        the lists lent, not copied: callers must not change them."""
        return list(self._by_node.items())

    def change_position(self) -> int:
        """How many list changes so far: pass it to :meth:`nodes_changed_since` later."""
        return self._changed_base + len(self._changed)

    def nodes_changed_since(self, position: int) -> list[str] | None:
        """The nodes whose nominated list changed since ``position`` (a former
        :meth:`change_position`), possibly repeated; None when the log no longer reaches back
        that far (the reader must re-read everything)."""
        if position < self._changed_base:
            return None
        return self._changed[position - self._changed_base:]

    def __bool__(self) -> bool:
        """True when some real node has nominated pods (an Override to "" nominates none)."""
        return any(node for node in self._by_node)

    def __len__(self) -> int:
        return len(self._node_of)

    # ---------------------------------------------------------------- internals
    def _remove(self, pod: Pod) -> None:
        """nominator.delete (by UID)."""
        node = self._node_of.pop(pod.uid, None)
        if node is None:
            return
        lst = self._by_node.get(node)
        if lst is None:
            return
        for i, pi in enumerate(lst):
            if pi.pod.uid == pod.uid:
                del lst[i]
                self._touch(node)
                break
        if not lst:
            del self._by_node[node]

    # Entries the change log keeps at least; it holds up to twice as many.
    LOG_KEEP = 4096

    def _touch(self, node: str) -> None:
        log = self._changed
        log.append(node)
        if len(log) >= 2 * self.LOG_KEEP:
            half = len(log) // 2
            del log[:half]
            self._changed_base += half

    def snapshot(self) -> dict[str, list[str]]:
        """node -> nominated pod keys (tests, debugging)."""
        return {node: [pi.pod.key for pi in lst] for node, lst in self._by_node.items()}
