"""TaintToleration: a node's NoSchedule/NoExecute taints must be tolerated (Filter); fewer
untolerated PreferNoSchedule taints score higher (PreScore/Score/NormalizeScore).

Mirrors framework/plugins/tainttoleration/taint_toleration.go.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kubesched.features import DEFAULT_FEATURES
from kubesched.framework import (
    GVK,
    MAX_NODE_SCORE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    Handle,
    NodeInfo,
    NodeScore,
    NodeTable,
    QueueingHint,
    StateKey,
    Status,
)
from kubesched.framework.interfaces import BoolArray, IntArray
from kubesched.framework.nodetable import read_rows
from kubesched.framework.signers import TOLERATIONS_SIGNER_NAME, SignFragment, tolerations_signer
from kubesched.objects import Node, Pod, Taint, Toleration, tolerations_tolerate_taint
from kubesched.objects.model import PREFER_NO_SCHEDULE
from kubesched.plugins.helpers.normalize import default_normalize_score, default_normalize_score_array
from kubesched.plugins.helpers.taints import find_untolerated_taint

NAME = "TaintToleration"
ERR_REASON_NOT_MATCH = "node(s) had taints that the pod didn't tolerate"
# 1.36 Filter: one reason for every untolerated taint (a single FailedScheduling bucket).
ERR_REASON_UNTOLERATED = "node(s) had untolerated taint(s)"
_PRE_SCORE_KEY: StateKey[tuple[Toleration, ...]] = StateKey("PreScore" + NAME)
_TABLE_KEY = NAME


def _count_intolerable_prefer_no_schedule(taints: Sequence[Taint], tolerations: tuple[Toleration, ...]) -> int:
    n = 0
    for t in taints:
        if t.effect != PREFER_NO_SCHEDULE:
            continue
        if not tolerations_tolerate_taint(tolerations, t):
            n += 1
    return n


class _TaintIndex:
    """Per-row taint signature ids, so a batch evaluates each distinct taint set once."""

    __slots__ = ("version", "sig_ids", "signatures")

    def __init__(self, table: NodeTable) -> None:
        self.version = table.node_version
        ids: dict[tuple[Taint, ...], int] = {}
        sig_ids = np.zeros(table.size, np.int64)
        for i, node in enumerate(table.nodes[: table.size]):
            taints = node.taints if node is not None else ()
            sig_ids[i] = ids.setdefault(taints, len(ids))
        self.sig_ids = sig_ids
        self.signatures: list[tuple[Taint, ...]] = list(ids)


def _taint_index(table: NodeTable) -> _TaintIndex:
    idx = table.extras.get(_TABLE_KEY)
    if not isinstance(idx, _TaintIndex) or idx.version != table.node_version:
        idx = _TaintIndex(table)
        table.extras[_TABLE_KEY] = idx
    return idx


class TaintToleration:
    name = NAME

    def __init__(self, handle: Handle | None = None) -> None:
        self.handle = handle
        features = handle.features if handle is not None else DEFAULT_FEATURES
        self._generic_reason = features.enabled("GenericTaintReason")
        self._queueing_hints = features.enabled("SchedulerQueueingHints")

    def sign_pod(self, pod: Pod) -> list[SignFragment]:
        """SignPod: the tolerations (TolerationsSigner)."""
        return [SignFragment(TOLERATIONS_SIGNER_NAME, tolerations_signer(pod))]

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """TaintToleration.EventsToRegister: any Node Add/Update without queueing hints
        (v1.30); with them (1.36) Node Add | UpdateNodeTaint and the pod's own
        UpdatePodToleration, both hinted."""
        if not self._queueing_hints:
            return [ClusterEventWithHint(ClusterEvent(GVK.NODE, ActionType.ADD | ActionType.UPDATE))]
        return [
            ClusterEventWithHint(ClusterEvent(GVK.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
                                 self.is_schedulable_after_node_change),
            ClusterEventWithHint(ClusterEvent(GVK.POD, ActionType.UPDATE_POD_TOLERATION),
                                 self.is_schedulable_after_pod_toleration_change),
        ]

    # ---- queueing hints
    def is_schedulable_after_node_change(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        """isSchedulableAfterNodeChange: Queue only when the node goes from having an
        untolerated NoSchedule/NoExecute taint (an added node counts as having had one) to
        having none."""
        if not isinstance(new, Node) or (old is not None and not isinstance(old, Node)):
            return QueueingHint.QUEUE
        was_untolerated = old is None or find_untolerated_taint(old.taints, pod.tolerations) is not None
        is_untolerated = find_untolerated_taint(new.taints, pod.tolerations) is not None
        if was_untolerated and not is_untolerated:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_pod_toleration_change(self, pod: Pod, old: object | None,
                                                   new: object | None) -> QueueingHint:
        """isSchedulableAfterPodTolerationChange: the rejected pod's own toleration update
        Queues; another pod's never helps."""
        if not isinstance(new, Pod) or (old is not None and not isinstance(old, Pod)):
            return QueueingHint.QUEUE
        if pod.uid == new.uid:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    # ---- Filter
    def preemption_fast_path(self, state: CycleState, pod: Pod) -> bool:
        """Filter reads only the node's taints: node-only for preemption's fast path."""
        return True

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        node = node_info.node
        assert node is not None
        taint = find_untolerated_taint(node.taints, pod.tolerations)
        if taint is None:
            return None
        return Status.unresolvable(self._reason(taint))

    def _reason(self, taint: Taint) -> str:
        if self._generic_reason:
            return ERR_REASON_UNTOLERATED
        return f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"

    def filter_batch_status(self, state: CycleState, pod: Pod, table: NodeTable,
                            rows: IntArray) -> tuple[IntArray, list[Status | None]]:
        """Filter's status for every row at once: per distinct taint set, its first
        untolerated taint's status (one Status per distinct reason; code 0 = tolerated). The
        scheduler needs the statuses of every rejected node for the diagnosis; this spares
        Filter on each of them (nodes of one pool share their taints)."""
        idx = _taint_index(table)
        statuses: list[Status | None] = [None]
        by_reason: dict[str, int] = {}
        sig_codes = np.zeros(len(idx.signatures), np.int64)
        for k, sig in enumerate(idx.signatures):
            taint = find_untolerated_taint(sig, pod.tolerations)
            if taint is None:
                continue
            reason = self._reason(taint)
            code = by_reason.get(reason)
            if code is None:
                code = by_reason[reason] = len(statuses)
                statuses.append(Status.unresolvable(reason))
            sig_codes[k] = code
        codes: IntArray = sig_codes[read_rows(idx.sig_ids, rows)]
        return codes, statuses

    def filter_batch(self, state: CycleState, pod: Pod, table: NodeTable, rows: IntArray) -> BoolArray:
        idx = _taint_index(table)
        ok = np.fromiter(
            (find_untolerated_taint(sig, pod.tolerations) is None for sig in idx.signatures),
            np.bool_, len(idx.signatures),
        )
        return ok[read_rows(idx.sig_ids, rows)]

    # ---- Score
    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        if not nodes:
            return None
        tolerations = tuple(t for t in pod.tolerations if t.effect in ("", PREFER_NO_SCHEDULE))
        state.write(_PRE_SCORE_KEY, tolerations)
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        node: Node | None = node_info.node
        assert node is not None
        return _count_intolerable_prefer_no_schedule(node.taints, state.read(_PRE_SCORE_KEY))

    def score_batch(self, state: CycleState, pod: Pod, table: NodeTable, rows: IntArray) -> IntArray:
        idx = _taint_index(table)
        tolerations = state.read(_PRE_SCORE_KEY)
        per_sig = np.fromiter(
            (_count_intolerable_prefer_no_schedule(sig, tolerations) for sig in idx.signatures),
            np.int64, len(idx.signatures),
        )
        return per_sig[read_rows(idx.sig_ids, rows)]

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status | None:
        default_normalize_score(MAX_NODE_SCORE, True, scores)
        return None

    def normalize_score_batch(self, state: CycleState, pod: Pod, scores: IntArray) -> IntArray:
        return default_normalize_score_array(MAX_NODE_SCORE, True, scores)


def new(args: object, handle: Handle) -> TaintToleration:
    """Plugin factory (registry entry). TaintToleration takes no args."""
    return TaintToleration(handle)
