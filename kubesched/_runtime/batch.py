"""OpportunisticBatching (KEP-5598, beta and on since 1.35): reuse one pod's scoring for the next
pod of the same signature (framework/runtime/batch.go, schedule_one.go's newSortedNodeScores).

After a pod is scheduled over several feasible nodes, the scheduler keeps the rest of its
priority list, in the order container/heap would pop it. The next scheduling cycle, if it is
the very next one, for a pod of the same signature (:mod:`kubesched.framework.signers`),
within 500 ms, and if the node the previous pod took no longer fits this pod (so the pods go
one per node and the other nodes' scores are unchanged), gets the next node of that list as a
hint: the scheduler checks it with the filters alone, like a nominated node, and takes it
without scoring when it passes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from kubesched._cache import Snapshot
from kubesched.framework import CycleState, NodeInfo, Status
from kubesched.framework.interfaces import IntArray
from kubesched.framework.nodetable import RowNodes
from kubesched.objects import Pod

# maxBatchAge: a batch older than this is dropped (seconds on the scheduler's clock).
MAX_BATCH_AGE = 0.5

# metrics.BatchAttempt* (scheduler_batch_attempts_total's result label).
BATCH_ATTEMPT_NO_HINT = "no_hint"
BATCH_ATTEMPT_HINT_USED = "hint_used"
BATCH_ATTEMPT_HINT_NOT_USED = "hint_not_used"
# metrics.BatchFlush* (scheduler_batch_cache_flushed_total's reason label).
BATCH_FLUSH_POD_FAILED = "pod_failed"
BATCH_FLUSH_POD_SKIPPED = "pod_skipped"
BATCH_FLUSH_NODE_MISSING = "node_missing"
BATCH_FLUSH_NODE_NOT_FULL = "node_not_full"
BATCH_FLUSH_EMPTY_LIST = "empty_list"
BATCH_FLUSH_EXPIRED = "expired"
BATCH_FLUSH_POD_INCOMPATIBLE = "pod_incompatible"
BATCH_FLUSH_POD_NOT_BATCHABLE = "pod_not_batchable"

# A pod's signature, computed only when the batch needs it (None: not signable).
Signature = Callable[[], "str | None"]


class SortedNodeScores:
    """sortedNodeScores after selectHost's Pop: the scored nodes in the order Go's
    container/heap pops them (heap.Init over the list in the order the nodes were scored, then
    Pop; Less = a higher total, then a higher Randomizer), the first one (the chosen node)
    already gone.

    Built lazily: the scheduler only keeps references to the cycle's nodes and totals; the heap
    is made on the first :meth:`pop`, which most batches never reach (the next pod is another
    kind, or fits where the previous one went)."""

    __slots__ = ("_nodes", "_totals", "_randomizer", "_keys", "_names", "_len")

    def __init__(self, nodes: Sequence[NodeInfo], totals: IntArray, randomizer: Sequence[int] | None) -> None:
        self._nodes = nodes
        self._totals = totals
        self._randomizer = randomizer
        self._keys: list[int] | None = None
        self._names: list[str] = []
        self._len = len(nodes) - 1

    def __len__(self) -> int:
        return self._len

    def pop(self) -> str:
        """heap.Pop: the next node's name."""
        if self._keys is None:
            self._build()
        keys, names = self._keys, self._names
        assert keys is not None
        if not keys:
            raise IndexError("pop from an empty SortedNodeScores")
        name = _heap_pop(keys, names)
        self._len = len(keys)
        return name

    def _build(self) -> None:
        nodes = self._nodes
        names = nodes.names() if isinstance(nodes, RowNodes) else [ni.name for ni in nodes]
        totals: list[int] = self._totals.tolist()
        if self._randomizer is not None:
            # Less compares the total, then the Randomizer (a non-negative 63-bit int): one key.
            keys = [(t << 64) + r for t, r in zip(totals, self._randomizer, strict=True)]
        else:
            keys = totals
        _heap_init(keys, names)
        _heap_pop(keys, names)  # selectHost's Pop: the chosen node
        self._keys, self._names = keys, names


def _down(keys: list[int], names: list[str], i0: int, n: int) -> None:
    """container/heap's down with Less(i, j) = keys[i] > keys[j]: the larger child, the left
    one unless the right is strictly larger; stop unless that child is strictly larger."""
    i = i0
    while True:
        j = 2 * i + 1
        if j >= n:
            return
        j2 = j + 1
        if j2 < n and keys[j2] > keys[j]:
            j = j2
        if not keys[j] > keys[i]:
            return
        keys[i], keys[j] = keys[j], keys[i]
        names[i], names[j] = names[j], names[i]
        i = j


def _heap_init(keys: list[int], names: list[str]) -> None:
    """heap.Init: down over every internal node, the last first."""
    n = len(keys)
    for i in range(n // 2 - 1, -1, -1):
        _down(keys, names, i, n)


def _heap_pop(keys: list[int], names: list[str]) -> str:
    """heap.Pop: swap the root with the last element, sift the new root down over the others,
    remove the last."""
    n = len(keys) - 1
    keys[0], keys[n] = keys[n], keys[0]
    names[0], names[n] = names[n], names[0]
    _down(keys, names, 0, n)
    keys.pop()
    return names.pop()


class BatchFramework(Protocol):
    """What the batch needs of its profile's framework."""

    def run_filter_plugins(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None: ...


@dataclass(slots=True)
class _BatchState:
    """The node scores kept from a pod's cycle for the next pods of the same signature."""

    signature: str
    sorted_nodes: SortedNodeScores
    creation_time: float


@dataclass(frozen=True, slots=True)
class _SchedulingCycle:
    """What the last scheduling cycle decided (the batch's bookkeeping)."""

    cycle_count: int = 0
    chosen_node: str = ""
    succeeded: bool = False


class OpportunisticBatch:
    """One profile's batch (OpportunisticBatch): the rest of the last batchable cycle's
    priority list, and what that cycle chose."""

    def __init__(self, framework: BatchFramework, snapshot: Callable[[], Snapshot]) -> None:
        self._framework = framework
        self._snapshot = snapshot
        self.state: _BatchState | None = None
        self.last_cycle = _SchedulingCycle()
        # batchedPods, and the counters of scheduler_batch_attempts_total{result} and
        # scheduler_batch_cache_flushed_total{reason} for this profile.
        self.batched_pods = 0
        self.attempts: Counter[str] = Counter()
        self.flushes: Counter[str] = Counter()

    def get_node_hint(self, pod: Pod, signature: Signature, state: CycleState, cycle: int, now: float) -> str:
        """GetNodeHint: the next node of the batch when it may serve ``pod`` (else "")."""
        if not self._compatible(pod, signature, state, cycle, now):
            self.attempts[BATCH_ATTEMPT_NO_HINT] += 1
            return ""
        assert self.state is not None
        return self.state.sorted_nodes.pop()

    def store_schedule_results(self, signature: Signature, hinted: str, chosen: str,
                               others: SortedNodeScores | None, cycle: int, now: float) -> None:
        """StoreScheduleResults, after a cycle chose ``chosen`` (``others``: the rest of its
        priority list; None when there was a single feasible node)."""
        self.last_cycle = _SchedulingCycle(cycle, chosen, True)
        if hinted == chosen:
            # The hint was taken: the batch goes on with what remains of its list.
            self.attempts[BATCH_ATTEMPT_HINT_USED] += 1
            self.batched_pods += 1
            return
        if hinted:
            self.attempts[BATCH_ATTEMPT_HINT_NOT_USED] += 1
        sig = signature() if others is not None and len(others) > 0 else None
        if sig is not None and others is not None:
            self.state = _BatchState(sig, others, now)
            return
        # Upstream signs the pod when it is queued: an unsignable pod with a non-empty list
        # counts as not batchable, any pod with an empty list as such.
        self.flushes[BATCH_FLUSH_EMPTY_LIST if others is None or len(others) == 0
                     else BATCH_FLUSH_POD_NOT_BATCHABLE] += 1
        self.state = None

    def count_unsigned(self, *, hinted: bool = False, chosen_among: int = 0) -> None:
        """The metrics of a profile that signs no pod (Framework.signs_no_pod), without the
        bookkeeping: GetNodeHint found no batch (``hinted``), or StoreScheduleResults had a
        pod chosen among ``chosen_among`` feasible nodes to store and no signature."""
        if hinted:
            self.attempts[BATCH_ATTEMPT_NO_HINT] += 1
        elif chosen_among:
            self.flushes[BATCH_FLUSH_EMPTY_LIST if chosen_among == 1 else BATCH_FLUSH_POD_NOT_BATCHABLE] += 1
            self.state = None

    def _compatible(self, pod: Pod, signature: Signature, state: CycleState, cycle: int, now: float) -> bool:
        """batchStateCompatible. A failed check flushes its reason (the state itself stays;
        the next successful cycle replaces it)."""
        batch = self.state
        if batch is None or len(batch.sorted_nodes) == 0:
            return False
        if cycle != self.last_cycle.cycle_count + 1:
            # Another cycle ran in between (a pod of another profile, a pod that failed, one
            # skipped): the cluster may have changed in ways the list does not know.
            return self._flush(BATCH_FLUSH_POD_SKIPPED)
        if not self.last_cycle.succeeded:
            return self._flush(BATCH_FLUSH_POD_FAILED)
        if signature() != batch.signature:
            return self._flush(BATCH_FLUSH_POD_INCOMPATIBLE)
        if now > batch.creation_time + MAX_BATCH_AGE:
            return self._flush(BATCH_FLUSH_EXPIRED)
        # Only if this pod does not fit where the last one went are the other nodes' scores
        # still right (pods one per node); if it fits there, that node may still be the best.
        last = self._snapshot().get(self.last_cycle.chosen_node)
        if last is None:
            return self._flush(BATCH_FLUSH_NODE_MISSING)
        status = self._framework.run_filter_plugins(state, pod, last)
        if status is None or not status.is_rejected():
            return self._flush(BATCH_FLUSH_NODE_NOT_FULL)
        return True

    def _flush(self, reason: str) -> bool:
        self.flushes[reason] += 1
        return False
