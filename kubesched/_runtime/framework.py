"""A profile's framework: plugins per extension point and the runners
(framework/runtime/framework.go: frameworkImpl and its Run*Plugins methods).

The hot path (filtering and scoring many nodes) uses plugins' batch methods over the
NodeTable when every plugin involved has one; per-node methods remain the definition, and
are used to build the exact Status of each node a batch rejected.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

import numpy as np

from kubesched._runtime.batch import OpportunisticBatch
from kubesched._runtime.handle import FrameworkHandle
from kubesched._runtime.waiting_pods import MAX_PERMIT_TIMEOUT
from kubesched.errors import PluginError
from kubesched.framework import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    SKIP,
    Code,
    CycleState,
    NodeInfo,
    NodeScore,
    PodInfo,
    PostFilterResult,
    PreFilterResult,
    QueuedPodInfo,
    Status,
)
from kubesched.framework.cycle_state import StateKey
from kubesched.framework.interfaces import IntArray
from kubesched.framework.nodetable import RowNodes
from kubesched.framework.signers import SCHEDULER_NAME_SIGNER_NAME
from kubesched.objects import Pod

_INDEX = attrgetter("index")
# CycleState.SetSkipPreBindPlugins: the PreBind plugins whose preflight said Skip.
_SKIP_PRE_BIND_KEY: StateKey[frozenset[str]] = StateKey("kubesched.io/skip-pre-bind-plugins")


def _q(name: str) -> str:
    """Go's %q for the plugin names in error messages."""
    return json.dumps(name)


EXTENSION_POINT_ORDER = ("PreEnqueue", "QueueSort", "PreFilter", "Filter", "PostFilter", "PreScore", "Score",
                         "Reserve", "Permit", "PreBind", "Bind", "PostBind")


@dataclass(slots=True)
class PluginScores:
    """Scores of one plugin over the scored nodes (weighted, after normalization)."""

    name: str
    scores: IntArray


@dataclass(slots=True)
class ScoreResult:
    """The nodes scored, their totals and each plugin's scores."""

    nodes: Sequence[NodeInfo]
    totals: IntArray
    plugins: list[PluginScores] = field(default_factory=list)
    # 1.36 NodePluginScores.Randomizer: a random tie-break only for nodes an extender scored.
    randomizer: list[int] | None = None

    def as_dict(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for i, ni in enumerate(self.nodes):
            out[ni.name] = {ps.name: int(ps.scores[i]) for ps in self.plugins}
        return out


class Framework:
    """The plugins of one profile, in extension-point order, and their runners."""

    def __init__(self, profile_name: str, points: Mapping[str, Sequence[Any]], score_weights: Mapping[str, int],
                 handle: FrameworkHandle, *, percentage_of_nodes_to_score: int | None = None) -> None:
        self.profile_name = profile_name
        self.handle = handle
        handle.framework = self
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self.pre_enqueue = list(points.get("PreEnqueue", ()))
        queue_sort = list(points.get("QueueSort", ()))
        if len(queue_sort) != 1:
            raise PluginError(f"only one queue sort plugin required for profile with scheduler name {_q(profile_name)}, but got {len(queue_sort)}")
        self.queue_sort = queue_sort[0]
        self.pre_filter = list(points.get("PreFilter", ()))
        self.filter = list(points.get("Filter", ()))
        self.post_filter = list(points.get("PostFilter", ()))
        self.pre_score = list(points.get("PreScore", ()))
        self.score = list(points.get("Score", ()))
        self.reserve = list(points.get("Reserve", ()))
        self.permit = list(points.get("Permit", ()))
        self.pre_bind = list(points.get("PreBind", ()))
        self.bind = list(points.get("Bind", ()))
        if not self.bind:
            raise PluginError(f"at least one bind plugin is needed for profile with scheduler name {_q(profile_name)}")
        self.post_bind = list(points.get("PostBind", ()))
        self.score_weights = {p.name: int(score_weights.get(p.name, 1)) or 1 for p in self.score}
        total = 0
        for p in self.score:
            w = self.score_weights[p.name]
            if w * MAX_NODE_SCORE > (2**63 - 1) - total:
                raise PluginError("total score of Score plugins could overflow")
            total += w * MAX_NODE_SCORE
        # pre_filter_extensions is optional for a plugin written by a user (none = no AddPod/RemovePod).
        self._pre_filter_ext = {p.name: ext() if callable(ext := getattr(p, "pre_filter_extensions", None)) else None
                                for p in self.pre_filter}
        self._filter_batch = {p.name: getattr(p, "filter_batch", None) for p in self.filter}
        self._filter_batch_status = {p.name: getattr(p, "filter_batch_status", None) for p in self.filter}
        self._filter_batch_applies = {p.name: getattr(p, "filter_batch_applies", None) for p in self.filter}
        self._score_batch = {p.name: getattr(p, "score_batch", None) for p in self.score}
        self._normalize = {p.name: getattr(p, "normalize_score", None) for p in self.score}
        self._normalize_batch = {p.name: getattr(p, "normalize_score_batch", None) for p in self.score}
        self._scores_all_zero = [(p.name, f) for p in self.score if callable(f := getattr(p, "scores_all_zero", None))]
        # pre_bind_pre_flight is optional (a plugin without one counts as having work).
        self._pre_bind_flights = [(p, f if callable(f := getattr(p, "pre_bind_pre_flight", None)) else None)
                                  for p in self.pre_bind]
        self._skipped_pre_bind: dict[tuple[str, ...], frozenset[str]] = {}
        # OpportunisticBatching: the profile's batch, and the plugins that sign pods.
        self.batch: OpportunisticBatch | None = None
        self.signatures_enabled = False
        self.signs_no_pod = False
        self.unsigned_plugins: tuple[str, ...] = ()
        self._signers: list[Any] = []
        self._sign_order: list[int] = []  # the order sign_pod asks them (indices into _signers)
        if handle.features.enabled("OpportunisticBatching"):
            self.batch = OpportunisticBatch(self, lambda: handle.snapshot)
            self._compute_batchable_plugins()

    # ------------------------------------------------------------------ signatures
    def _compute_batchable_plugins(self) -> None:
        """computeBatchablePlugins: signatures are on only when every PreFilter, Filter,
        PreScore and Score plugin can sign pods (``sign_pod``: kubesched.framework.SignPlugin)
        and there are no extenders (they cannot). An out-of-tree plugin without ``sign_pod``
        turns batching off for its profile, as upstream."""
        enabled = not self.handle.extenders
        seen: set[str] = set()
        unsigned: list[str] = []
        for p in (*self.pre_filter, *self.filter, *self.pre_score, *self.score):
            if p.name in seen:
                continue
            if callable(getattr(p, "sign_pod", None)):
                seen.add(p.name)
                self._signers.append(p)
                self._sign_order.append(len(self._sign_order))
            else:
                enabled = False
                if p.name not in unsigned:
                    unsigned.append(p.name)
        self.signatures_enabled = enabled
        self.unsigned_plugins = tuple(unsigned)
        # A signer that refuses every pod (PodTopologySpread with default constraints, as the
        # default profile's System spreading): no pod of this profile is ever signed.
        self.signs_no_pod = enabled and any(getattr(p, "signs_no_pod", False) for p in self._signers)

    def sign_pod(self, pod: Pod) -> str | None:
        """SignPod: the pod's signature, the JSON object of its schedulerName and every
        signing plugin's fragments (a key written twice keeps the last value: plugins sharing
        a key give the same one); None when signatures are off for the profile or a plugin
        refuses (or fails) to sign this pod."""
        if not self.signatures_enabled:
            return None
        # Any refusal leaves the pod unsigned whichever plugin refuses first, so the plugins
        # are asked most recent refuser first (under System spreading PodTopologySpread refuses
        # every pod: one call); the fragments are merged in upstream's plugin order.
        signers = self._signers
        order = self._sign_order
        fragments: list[Sequence[Any]] = [()] * len(signers)
        for k, i in enumerate(order):
            r = signers[i].sign_pod(pod)
            if isinstance(r, Status):
                if not r.is_success():
                    if k:
                        order.insert(0, order.pop(k))
                    return None
                continue
            fragments[i] = r
        sig: dict[str, Any] = {SCHEDULER_NAME_SIGNER_NAME: pod.scheduler_name}
        for frs in fragments:
            for fragment in frs:
                sig[fragment.key] = fragment.value
        try:
            return json.dumps(sig, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        except (TypeError, ValueError):
            return None  # a fragment that does not marshal: upstream logs it, the pod is unsigned

    # ------------------------------------------------------------------ queue
    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return bool(self.queue_sort.less(a, b))

    def run_pre_enqueue_plugins(self, pod: Pod) -> Status | None:
        for p in self.pre_enqueue:
            s: Status | None = p.pre_enqueue(pod)
            if s is not None and not s.is_success():
                return s.with_plugin(p.name)
        return None

    def has_filter_plugins(self) -> bool:
        return bool(self.filter)

    def has_score_plugins(self) -> bool:
        return bool(self.score)

    def has_post_filter_plugins(self) -> bool:
        return bool(self.post_filter)

    # ------------------------------------------------------------------ PreFilter
    def run_pre_filter_plugins(self, state: CycleState, pod: Pod) -> tuple[PreFilterResult | None, Status | None, set[str]]:
        """RunPreFilterPlugins: Skip marks a plugin's Filter skipped; Unresolvable stops at
        once; Unschedulable is remembered and the others still run."""
        result: PreFilterResult | None = None
        plugins_with_nodes: set[str] = set()
        skip: set[str] = set()
        return_status: Status | None = None
        for p in self.pre_filter:
            r, s = p.pre_filter(state, pod)
            if s is not None and s.code == Code.SKIP:
                skip.add(p.name)
                continue
            if s is not None and s.code != Code.SUCCESS:
                s = s.with_plugin(p.name)
                if s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                    return None, s, set()
                if s.code == Code.UNSCHEDULABLE:
                    return_status = s
                    continue
                return None, Status(Code.ERROR, (f"running PreFilter plugin {_q(p.name)}: {s.message}",), p.name, s.error), set()
            if r is not None and not r.all_nodes():
                plugins_with_nodes.add(p.name)
            if r is not None:
                result = r if result is None else result.merge(r)
            if result is not None and not result.all_nodes() and not result.node_names:
                names = sorted(plugins_with_nodes)
                if len(names) == 1:
                    msg = f"node(s) didn't satisfy plugin {names[0]}"
                else:
                    msg = f"node(s) didn't satisfy plugin(s) [{' '.join(names)}] simultaneously"
                return result, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (msg,)), plugins_with_nodes
        state.skip_filter_plugins = skip
        return result, return_status, plugins_with_nodes

    def run_pre_filter_extension_add_pod(self, state: CycleState, pod: Pod, pod_info: PodInfo, node_info: NodeInfo) -> Status | None:
        for p in self.pre_filter:
            ext = self._pre_filter_ext.get(p.name)
            if ext is None or p.name in state.skip_filter_plugins:
                continue
            s = ext.add_pod(state, pod, pod_info, node_info)
            if s is not None and not s.is_success():
                return Status(Code.ERROR, (f"running AddPod on PreFilter plugin {_q(p.name)}: {s.message}",), p.name)
        return None

    def run_pre_filter_extension_remove_pod(self, state: CycleState, pod: Pod, pod_info: PodInfo, node_info: NodeInfo) -> Status | None:
        for p in self.pre_filter:
            ext = self._pre_filter_ext.get(p.name)
            if ext is None or p.name in state.skip_filter_plugins:
                continue
            s = ext.remove_pod(state, pod, pod_info, node_info)
            if s is not None and not s.is_success():
                return Status(Code.ERROR, (f"running RemovePod on PreFilter plugin {_q(p.name)}: {s.message}",), p.name)
        return None

    # ------------------------------------------------------------------ Filter
    def run_filter_plugins(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """RunFilterPlugins: the first failing plugin's status, with the plugin set."""
        skip = state.skip_filter_plugins
        for p in self.filter:
            if p.name in skip:
                continue
            s: Status | None = p.filter(state, pod, node_info)
            if s is not None and s.code != Code.SUCCESS:
                if not s.is_rejected():
                    s = Status(Code.ERROR, (f"running {_q(p.name)} filter plugin: {s.message}",), p.name, s.error)
                return s.with_plugin(p.name)
        return None

    def _add_nominated_pods(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[bool, CycleState, NodeInfo]:
        """addNominatedPods: nominated pods of >= priority (other than ``pod``) added to
        a clone of the node and of the state."""
        nominated = self.handle.nominator.nominated_pods_for_node(node_info.name)
        if not nominated:
            return False, state, node_info
        node_out: NodeInfo | None = None
        state_out: CycleState | None = None
        for pi in nominated:
            if pi.pod.priority >= pod.priority and pi.pod.uid != pod.uid:
                if node_out is None or state_out is None:
                    node_out = node_info.clone()
                    state_out = state.clone()
                node_out.add_pod_info(pi)
                s = self.run_pre_filter_extension_add_pod(state_out, pod, pi, node_out)
                if s is not None and not s.is_success():
                    raise PluginError(s.message)
        if node_out is None or state_out is None:
            return False, state, node_info
        return True, state_out, node_out

    def run_filter_plugins_with_nominated_pods(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """RunFilterPluginsWithNominatedPods: with nominated pods first, then (if that
        passed and pods were added) without them."""
        try:
            added, state_with, node_with = self._add_nominated_pods(state, pod, node_info)
        except PluginError as e:
            return Status.as_error(e)
        status = self.run_filter_plugins(state_with, pod, node_with)
        if status is not None and status.code != Code.SUCCESS and not status.is_rejected():
            return status
        if added and (status is None or status.code == Code.SUCCESS):
            status = self.run_filter_plugins(state, pod, node_info)
        return status

    def run_all_filter_plugins(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> list[Status]:
        """Every filter plugin's failing status on this node, instead of the first one only:
        the framework's former runAllFilters option (framework.WithRunAllFilters, used by
        simulators), for explaining a decision; it never takes part in one. As
        RunFilterPluginsWithNominatedPods, nominated pods of >= priority are added first, and
        a node that passes with them is filtered again without them."""
        try:
            added, state_with, node_with = self._add_nominated_pods(state, pod, node_info)
        except PluginError as e:
            return [Status.as_error(e)]
        out = self._all_failing(state_with, pod, node_with)
        if added and not out:
            out = self._all_failing(state, pod, node_info)
        return out

    def _all_failing(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> list[Status]:
        skip = state.skip_filter_plugins
        out: list[Status] = []
        for p in self.filter:
            if p.name not in skip:
                s = self.run_filter_plugin(p, state, pod, node_info)
                if s is not None:
                    out.append(s)
        return out

    def batch_filters(self, state: CycleState) -> tuple[list[tuple[Any, Any, Any]], list[Any]]:
        """The active filter plugins split into (batch-capable (plugin, filter_batch,
        filter_batch_status or None) triples, in order, and per-node-only plugins).

        ``filter_batch_status(state, pod, table, rows) -> (codes, statuses)`` is optional
        next to ``filter_batch``: per row an index into ``statuses``, the exact Status the
        per-node ``filter`` returns (``statuses[0]`` is None: the node fits). It lets the
        scheduler build the status of every rejected node without calling ``filter`` once
        per node. ``filter_batch_applies(state) -> bool``, also optional, says whether the
        batch methods hold for this cycle: False makes the plugin per-node for it."""
        skip = state.skip_filter_plugins
        batch: list[tuple[Any, Any, Any]] = []
        per_node: list[Any] = []
        for p in self.filter:
            if p.name in skip:
                continue
            fb = self._filter_batch.get(p.name)
            if fb is not None and ((applies := self._filter_batch_applies.get(p.name)) is None or applies(state)):
                batch.append((p, fb, self._filter_batch_status.get(p.name)))
            else:
                per_node.append(p)
        return batch, per_node

    @staticmethod
    def wrap_filter_status(plugin: Any, s: Status | None) -> Status | None:
        """A filter plugin's status as RunFilterPlugins reports it: None when the node
        fits, a non-rejecting code turned into an Error naming the plugin, the plugin set."""
        if s is not None and s.code != Code.SUCCESS:
            if not s.is_rejected():
                s = Status(Code.ERROR, (f"running {_q(plugin.name)} filter plugin: {s.message}",), plugin.name, s.error)
            return s.with_plugin(plugin.name)
        return None

    def run_filter_plugin(self, plugin: Any, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """One filter plugin, its status wrapped and attributed as RunFilterPlugins does."""
        return self.wrap_filter_status(plugin, plugin.filter(state, pod, node_info))

    def run_filter_plugins_subset(self, plugins: list[Any], state: CycleState, pod: Pod, node_info: NodeInfo) -> bool:
        for p in plugins:
            s = p.filter(state, pod, node_info)
            if s is not None and s.code != Code.SUCCESS:
                return False
        return True

    # ------------------------------------------------------------------ PostFilter
    def run_post_filter_plugins(self, state: CycleState, pod: Pod, statuses: dict[str, Status]) -> tuple[PostFilterResult | None, Status]:
        result: PostFilterResult | None = None
        reasons: list[str] = []
        rejector = ""
        for p in self.post_filter:
            r, s = p.post_filter(state, pod, statuses)
            if s is None or s.is_success():
                return r, s or Status()
            if s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return r, s.with_plugin(p.name)
            if not s.is_rejected():
                return None, Status(Code.ERROR, s.reasons, p.name, s.error)
            if r is not None and r.nominating_info is not None and r.nominating_info.mode != 0:
                result = r
            reasons.extend(s.reasons)
            if not rejector:
                rejector = p.name
        return result, Status(Code.UNSCHEDULABLE, tuple(reasons), rejector)

    # ------------------------------------------------------------------ Score
    def run_pre_score_plugins(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        skip: set[str] = set()
        for p in self.pre_score:
            s = p.pre_score(state, pod, nodes)
            if s is not None and s.code == Code.SKIP:
                skip.add(p.name)
                continue
            if s is not None and s.code != Code.SUCCESS:
                return Status(Code.ERROR, (f"running PreScore plugin {_q(p.name)}: {s.message}",), p.name, s.error)
        state.skip_score_plugins = skip
        return None

    def run_score_plugins(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> ScoreResult:
        """RunScorePlugins: score, normalize, validate range, weight. Raises PluginError on
        an Error status or an out-of-range score."""
        skip = state.skip_score_plugins
        rows: IntArray | None = None
        n = len(nodes)
        totals = np.zeros(n, np.int64)
        out = ScoreResult(nodes, totals)
        # Upstream's phases: every plugin's Score, then every NormalizeScore, then the range
        # check with the weights — so which error is reported does not depend on plugin order.
        plugins = [p for p in self.score if p.name not in skip]
        zero = {name for name, all_zero in self._scores_all_zero if name not in skip and all_zero(state)}
        if zero:
            every = plugins
            plugins = [p for p in plugins if p.name not in zero]
        raw: list[IntArray] = []
        for p in plugins:
            sb = self._score_batch[p.name]
            if sb is not None:
                table = self.handle.snapshot.table
                if rows is None:
                    # The scheduler's feasible nodes come with their rows.
                    rows = (nodes.rows if isinstance(nodes, RowNodes) and nodes.table is table
                            else np.fromiter(map(_INDEX, nodes), np.int64, n))
                raw.append(np.asarray(sb(state, pod, table, rows), dtype=np.int64))
            else:
                raw.append(np.fromiter((self._score_one(p, state, pod, ni) for ni in nodes), np.int64, n))
        normalized: list[IntArray] = []
        for p, scores in zip(plugins, raw, strict=True):
            nb = self._normalize_batch[p.name]
            norm = self._normalize[p.name]
            if nb is not None:
                scores = np.asarray(nb(state, pod, scores), dtype=np.int64)
            elif norm is not None:
                lst = [NodeScore(ni.name, int(s)) for ni, s in zip(nodes, scores, strict=True)]
                st = norm(state, pod, lst)
                if st is not None and not st.is_success():
                    raise PluginError(f"running Normalize on Score plugins: plugin {_q(p.name)} failed with: {st.message}")
                scores = np.fromiter((ns.score for ns in lst), np.int64, n)
            normalized.append(scores)
        if not plugins or not n:
            out.plugins.extend(PluginScores(p.name, scores * self.score_weights[p.name])
                               for p, scores in zip(plugins, normalized, strict=True))
            if zero:
                self._add_zero_scores(out, every, zero, n)
            return out
        # The range check and the weights over every plugin at once (one nodes x plugins
        # matrix): a handful of numpy calls per cycle instead of five per plugin.
        matrix = np.stack(normalized)
        out_of_range = (matrix.max(axis=1) > MAX_NODE_SCORE) | (matrix.min(axis=1) < MIN_NODE_SCORE)
        if out_of_range.any():
            i = int(np.flatnonzero(out_of_range)[0])  # the first plugin in order, as upstream's loop
            bad = next(int(s) for s in normalized[i] if s > MAX_NODE_SCORE or s < MIN_NODE_SCORE)
            raise PluginError(f"applying score defaultWeights on Score plugins: plugin {_q(plugins[i].name)} returns "
                              f"an invalid score {bad}, it should in the range of [{MIN_NODE_SCORE}, "
                              f"{MAX_NODE_SCORE}] after normalizing")
        weighted = matrix * np.array([self.score_weights[p.name] for p in plugins], np.int64)[:, None]
        out.plugins.extend(PluginScores(p.name, row) for p, row in zip(plugins, weighted, strict=True))
        out.totals = weighted.sum(axis=0)
        if zero:
            self._add_zero_scores(out, every, zero, n)
        return out

    @staticmethod
    def _add_zero_scores(out: ScoreResult, plugins: Sequence[Any], zero: set[str], n: int) -> None:
        """The plugins that scored 0 everywhere (scores_all_zero) among the others, in order."""
        for i, p in enumerate(plugins):
            if p.name in zero:
                out.plugins.insert(i, PluginScores(p.name, np.zeros(n, np.int64)))

    @staticmethod
    def _score_one(p: Any, state: CycleState, pod: Pod, ni: NodeInfo) -> int:
        r = p.score(state, pod, ni)
        if isinstance(r, tuple):
            score, status = r
            if status is not None and not status.is_success():
                raise PluginError(f"running Score plugins: plugin {_q(p.name)} failed with: {status.message}")
            return int(score)
        return int(r)

    # ------------------------------------------------------------------ Reserve .. PostBind
    def run_reserve_plugins_reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        for p in self.reserve:
            s: Status | None = p.reserve(state, pod, node_name)
            if s is not None and not s.is_success():
                if s.is_rejected():
                    return s.with_plugin(p.name)
                return Status(Code.ERROR, (f"running Reserve plugin {_q(p.name)}: {s.message}",), p.name, s.error)
        return None

    def run_reserve_plugins_unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        """RunReservePluginsUnreserve: every Reserve plugin, in the reverse order of Reserve
        (each must tolerate an Unreserve without a matching Reserve: it is idempotent)."""
        for p in reversed(self.reserve):
            p.unreserve(state, pod, node_name)

    def run_permit_plugins(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, dict[str, float]]:
        """RunPermitPlugins. Returns (status, {plugin: wait timeout in seconds}): the first
        rejection (or error) stops at once; otherwise a Wait status when some plugin waits,
        each timeout clamped to 15 minutes (maxTimeout)."""
        waits: dict[str, float] = {}
        for p in self.permit:
            r = p.permit(state, pod, node_name)
            # The contract is (Status | None, timeout); a bare Status / None means no wait.
            s, timeout = r if isinstance(r, tuple) else (r, 0.0)
            if s is None or s.is_success():
                continue
            if s.is_rejected():
                return s.with_plugin(p.name), {}
            if s.code == Code.WAIT:
                waits[p.name] = min(max(float(timeout), 0.0), MAX_PERMIT_TIMEOUT)
                continue
            return Status(Code.ERROR, (f"running Permit plugin {_q(p.name)}: {s.message}",), p.name, s.error), {}
        if waits:
            return Status(Code.WAIT, (f"one or more plugins asked to wait and no plugin rejected pod {_q(pod.name)}",)), waits
        return None, {}

    def run_pre_bind_pre_flights(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """RunPreBindPreFlights (1.36): Success (None) when some PreBind plugin has work, Skip
        when none has, an Error otherwise; the skipping plugins' PreBind is not run. A
        plugin without ``pre_bind_pre_flight`` counts as having work."""
        skipped: list[str] = []
        result: Status | None = SKIP
        for p, flight in self._pre_bind_flights:
            s: Status | None = flight(state, pod, node_name) if flight is not None else None
            if s is None or s.code == Code.SUCCESS:
                result = None
            elif s.code == Code.SKIP:
                skipped.append(p.name)
            elif s.code == Code.ERROR:
                return Status(Code.ERROR, (f"running PreBindPreFlight {_q(p.name)}: {s.message}",), p.name, s.error)
            else:
                return Status(Code.ERROR, (f"PreBindPreFlight {p.name} returned {_q(s.code.name.title())}, which is "
                                           "unsupported. It is supposed to return Success, Skip, or Error status",),
                              p.name)
        if skipped:
            key = tuple(skipped)
            names = self._skipped_pre_bind.get(key)
            if names is None:
                names = self._skipped_pre_bind[key] = frozenset(skipped)
            state.write(_SKIP_PRE_BIND_KEY, names)
        return result

    def run_pre_bind_plugins(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        skipped: frozenset[str] = state.get(_SKIP_PRE_BIND_KEY) or frozenset()
        for p in self.pre_bind:
            if p.name in skipped:
                continue
            s: Status | None = p.pre_bind(state, pod, node_name)
            if s is not None and not s.is_success():
                if s.is_rejected():
                    return s.with_plugin(p.name)
                return Status(Code.ERROR, (f"running PreBind plugin {_q(p.name)}: {s.message}",), p.name, s.error)
        return None

    def run_bind_plugins(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        status: Status | None = None
        for p in self.bind:
            status = p.bind(state, pod, node_name)
            if status is not None and status.code == Code.SKIP:
                continue
            if status is not None and not status.is_success():
                if status.is_rejected():
                    return status.with_plugin(p.name)
                return Status(Code.ERROR, (f"running Bind plugin {_q(p.name)}: {status.message}",), p.name, status.error)
            return status
        return status

    def run_post_bind_plugins(self, state: CycleState, pod: Pod, node_name: str) -> None:
        for p in self.post_bind:
            p.post_bind(state, pod, node_name)

    def plugins_at(self, point: str) -> list[Any]:
        attr = {"PreEnqueue": "pre_enqueue", "PreFilter": "pre_filter", "Filter": "filter", "PostFilter": "post_filter",
                "PreScore": "pre_score", "Score": "score", "Reserve": "reserve", "Permit": "permit",
                "PreBind": "pre_bind", "Bind": "bind", "PostBind": "post_bind"}
        if point == "QueueSort":
            return [self.queue_sort]
        return list(getattr(self, attr[point]))
