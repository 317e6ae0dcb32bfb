"""``kubesched shadow``: a read-only fidelity monitor beside a cluster's real scheduler.

It watches the cluster with the informers of :class:`kubesched.cluster.live.LiveCluster` (list
and watch only: its client refuses any other verb) and keeps kube-scheduler's view of it: the
cache of bound pods and nodes (the informer handlers of eventhandlers.go: addPodToCache,
updatePodInCache, deletePodFromCache, the node handlers) and the nominator (status.
nominatedNodeName of the pending pods of the watched schedulerNames, as PriorityQueue.Add and
Update put them there). It never schedules. Whenever the real scheduler

- **binds** a pod it was responsible for (spec.nodeName goes from empty to X), kubesched's
  filter and score run for that pod against the view *before* the binding is applied (the pods
  bound before it, the nominations), with the cluster's configuration and the profile named by
  the pod's schedulerName. The decision is ``agreed`` when X is kubesched's one top-scored
  feasible node, ``tied`` when X is among two or more equally top-scored nodes (the pick among
  them is a tie-break the watcher cannot see), else ``disagreed``;
- **fails** a pod (a PodScheduled=False condition with reason Unschedulable appears, or its
  message changes), the pod is evaluated likewise, PostFilter (preemption) included, and the
  fit error messages are compared: ``agreed`` when kubesched finds no node either and writes the
  same message, else ``disagreed``.

Every node is filtered and scored (percentageOfNodesToScore is set aside): the tie set needs the
full score table. A real scheduler with 100 nodes or more scores a sample only; a disagreement
it explains says so.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import random
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from kubesched._queue import QueueNominator
from kubesched._runtime.framework import Framework
from kubesched._runtime.handle import FrameworkHandle
from kubesched._runtime.profile import build_framework
from kubesched.cluster.live import (
    ADD,
    API_CALLS,
    ASSIGNED_PODS,
    DELETE,
    DRA_INFORMED_RESOURCES,
    INFORMED_RESOURCES,
    PENDING_PODS,
    ApiCall,
    ApiClient,
    Change,
    LiveCluster,
    LiveOptions,
)
from kubesched.cluster.resources import ApiResource
from kubesched.config import KubeSchedulerConfiguration, default_configuration, load_config
from kubesched.errors import ConfigError, KubeschedError
from kubesched.extender import HTTPExtender, new_http_extenders, with_ignored_extended_resources
from kubesched.features import Features, features_for
from kubesched.framework import PodInfo
from kubesched.live.command import install_stop_signals
from kubesched.live.flags import ServingOptions
from kubesched.live.runner import LiveCache
from kubesched.live.serving import HealthChecks, build_app, exposed_without_created, start_serving
from kubesched.objects import Node, Pod
from kubesched.plugins.helpers.fiterror import fit_error_message
from kubesched.plugins.registry import Factory, registry_for
from kubesched.scheduler import NO_NODES_AVAILABLE, Attempt, ScheduleError, Scheduler

log = logging.getLogger("kubesched.shadow")
# Every comparison (info) and each disagreement with its explain table (warning).
decisions_log = logging.getLogger("kubesched.shadow.decisions")

AGREED, TIED, DISAGREED = "agreed", "tied", "disagreed"
RESULTS = (AGREED, TIED, DISAGREED)
BOUND, UNSCHEDULABLE = "bound", "unschedulable"
DECISIONS = (BOUND, UNSCHEDULABLE)
READ_VERBS = frozenset({"get", "list", "watch"})
SHADOW_API_CALLS: tuple[ApiCall, ...] = tuple(
    c for c in API_CALLS if c.verb in ("list", "watch") and c.resource in (*INFORMED_RESOURCES, *DRA_INFORMED_RESOURCES))
"""Every API call the shadow makes (deploy/shadow-rbac.yaml allows them): the informers' list
and watch. Besides them it reads /version, which every authenticated user may."""
MAX_RECORDED_DISAGREEMENTS = 10_000
POD_SCHEDULED = "PodScheduled"
REASON_UNSCHEDULABLE = "Unschedulable"
DEFAULT_SCHEDULER_NAME = "default-scheduler"
EVALUATION_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)

ExplainRenderer = Callable[[Attempt, Sequence[Node]], str]
"""Renders `kubesched explain`'s table for one evaluation (the CLI supplies it: the table is
drawn by the command layer, above this one)."""


# ================================================================ a client that cannot write
class ReadOnlyApiClient(ApiClient):
    """The API client with every verb but get / list / watch refused before it is sent: the
    shadow watches a production cluster and must never change it."""

    def _note(self, verb: str, r: ApiResource, subresource: str) -> ApiCall:
        if verb not in READ_VERBS:
            sub = f"/{subresource}" if subresource else ""
            raise KubeschedError(f"kubesched shadow is read-only: refused {verb} {r.plural}{sub}")
        return super()._note(verb, r, subresource)


# ================================================================ verdicts, tally, metrics
@dataclass(frozen=True, slots=True)
class Verdict:
    """One comparison: the real scheduler's decision for ``pod`` against kubesched's."""

    pod: str  # namespace/name
    decision: str  # bound | unschedulable (what the real scheduler did)
    result: str  # agreed | tied | disagreed
    node: str | None  # the real node (None: the real scheduler found none)
    predicted: str | None  # kubesched's pick (None: it finds no node)
    top: tuple[str, ...]  # kubesched's equally top-scored feasible nodes, sorted
    why: str
    real_message: str | None = None  # the real fit error (unschedulable)
    message: str | None = None  # kubesched's fit error, when it finds no node

    def as_dict(self) -> dict[str, Any]:
        """The summary's record of a disagreement."""
        out: dict[str, Any] = {"pod": self.pod, "node": self.node, "predicted": self.predicted, "why": self.why,
                               "decision": self.decision}
        if self.real_message is not None:
            out["realMessage"] = self.real_message
        if self.message is not None:
            out["message"] = self.message
        return out


class ShadowTally:
    """The counts behind the summary (thread-safe): observed, agreed, tied and the
    disagreements (the first :data:`MAX_RECORDED_DISAGREEMENTS` kept in full)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.observed = 0
        self.counts: dict[str, int] = dict.fromkeys(RESULTS, 0)
        self.disagreements: list[Verdict] = []
        self.omitted = 0

    def add(self, v: Verdict) -> None:
        with self._lock:
            self.observed += 1
            self.counts[v.result] += 1
            if v.result == DISAGREED:
                if len(self.disagreements) < MAX_RECORDED_DISAGREEMENTS:
                    self.disagreements.append(v)
                else:
                    self.omitted += 1

    def summary(self) -> dict[str, Any]:
        """``{"observed", "agreed", "tied", "disagreed": [{"pod", "node", "predicted", "why"}...]}``."""
        with self._lock:
            out: dict[str, Any] = {"observed": self.observed, "agreed": self.counts[AGREED],
                                   "tied": self.counts[TIED],
                                   "disagreed": [v.as_dict() for v in self.disagreements]}
            if self.omitted:
                out["disagreedOmitted"] = self.omitted
            return out

    def write(self, path: str) -> None:
        """The summary as JSON at ``path`` (written whole, then renamed into place)."""
        target = Path(path)
        tmp = target.with_name(target.name + ".tmp")
        try:
            tmp.write_text(json.dumps(self.summary(), indent=1) + "\n")
            tmp.replace(target)
        except OSError as e:
            raise KubeschedError(f"{path}: cannot write the shadow summary: {e}") from None


class ShadowMetrics:
    """The shadow's Prometheus metrics, in a registry of their own (served on /metrics)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.decisions = Counter(
            "kubesched_shadow_decisions", "Decisions of the real scheduler compared with kubesched's, by result "
            "(agreed, tied: the real node is among kubesched's equally top-scored nodes, disagreed) and by what the "
            "real scheduler did (bound, unschedulable).", ("result", "decision"), registry=r)
        self.evaluation = Histogram(
            "kubesched_shadow_evaluation_duration_seconds", "Time kubesched took to evaluate one observed decision "
            "(filter, score, and PostFilter for an unschedulable pod).", buckets=EVALUATION_BUCKETS, registry=r)
        self.view_nodes = Gauge("kubesched_shadow_view_nodes", "Nodes in the shadow's view of the cluster.",
                                registry=r)
        self.view_pods = Gauge("kubesched_shadow_view_pods", "Bound pods in the shadow's view of the cluster.",
                               registry=r)
        self._exposed = exposed_without_created(r)
        for result in RESULTS:
            for decision in DECISIONS:
                if not (result == TIED and decision == UNSCHEDULABLE):
                    self.decisions.labels(result=result, decision=decision)

    def observe(self, v: Verdict, seconds: float) -> None:
        self.decisions.labels(result=v.result, decision=v.decision).inc()
        self.evaluation.observe(seconds)

    def set_view(self, nodes: int, pods: int) -> None:
        self.view_nodes.set(nodes)
        self.view_pods.set(pods)

    def render(self) -> bytes:
        """The Prometheus text exposition (without ``*_created`` samples, as the scheduler's)."""
        return generate_latest(self._exposed)


# ================================================================ the monitor
class _FullTableScheduler(Scheduler):
    """The scheduler's filter and score over every node: the tie set needs the full table,
    where kube-scheduler's findNodesThatPassFilters stops after numFeasibleNodesToFind."""

    def num_feasible_nodes_to_find(self, fwk: Framework, num_all_nodes: int) -> int:
        return num_all_nodes

    def sample_size(self, fwk: Framework, num_all_nodes: int) -> int:
        """How many feasible nodes the real scheduler looks for (numFeasibleNodesToFind)."""
        return Scheduler.num_feasible_nodes_to_find(self, fwk, num_all_nodes)


def _scheduled_condition_message(pod: Pod) -> str | None:
    """The message of a PodScheduled=False condition with reason Unschedulable (None without one)."""
    for c in pod.conditions:
        if c.type == POD_SCHEDULED and c.status == "False" and c.reason == REASON_UNSCHEDULABLE:
            return c.message
    return None


def _scheduled_condition(pod: Pod) -> tuple[str, str, str, str] | None:
    for c in pod.conditions:
        if c.type == POD_SCHEDULED:
            return (c.type, c.status, c.reason, c.message)
    return None


def top_nodes(attempt: Attempt) -> tuple[str, ...]:
    """kubesched's equally top-scored feasible nodes (sorted): every node at the highest total,
    or the one feasible node when scoring did not run (one node, or the nominated node fast
    path of findNodesThatFitPod)."""
    if attempt.scores is not None:
        totals = attempt.scores.totals
        best = int(totals.max())
        return tuple(sorted(ni.name for ni, t in zip(attempt.scores.nodes, totals, strict=True) if int(t) == best))
    return tuple(attempt.feasible)


class ShadowMonitor:
    """kube-scheduler's view of a live cluster, and the comparison of each decision the real
    scheduler makes with kubesched's in that view. :meth:`start` (informers, sync), then the
    informer threads do the work; :meth:`stop`. ``explain`` renders the explain table logged
    with each disagreement; ``on_verdict`` is called with every verdict (tests)."""

    def __init__(self, config: KubeSchedulerConfiguration | None, cluster: LiveCluster, *,
                 scheduler_names: Collection[str] = (DEFAULT_SCHEDULER_NAME,),
                 registry: Mapping[str, Factory] | None = None, features: Features | None = None,
                 metrics: ShadowMetrics | None = None, explain: ExplainRenderer | None = None,
                 on_verdict: Callable[[Verdict], None] | None = None, seed: int | None = None) -> None:
        self.features = (features if features is not None else config.features if config is not None
                         else features_for(None))
        self.config = config if config is not None else default_configuration(features=self.features)
        self.cluster = cluster
        self.scheduler_names = frozenset(scheduler_names)
        self.metrics = metrics
        self.explain = explain
        self.on_verdict = on_verdict
        self.tally = ShadowTally()
        self.lock = threading.RLock()
        self.objects = cluster.objects
        self.rng = random.Random(seed)
        self.cache = LiveCache(64)
        self.nominator = QueueNominator(pod_lister=self.objects.pod)
        profiles = with_ignored_extended_resources(self.config.profiles, self.config.extenders)
        known = {p.scheduler_name for p in profiles}
        missing = sorted(self.scheduler_names - known)
        if missing:
            raise ConfigError(f"--scheduler-name {', '.join(missing)}: no profile of the configuration has this "
                              f"schedulerName (profiles: {', '.join(sorted(known))})")
        self.extenders: list[HTTPExtender] = new_http_extenders(self.config.extenders)
        self.profiles: dict[str, Framework] = {}
        reg = registry if registry is not None else registry_for(self.features)
        for index, profile in enumerate(profiles):
            if profile.scheduler_name not in self.scheduler_names:
                continue
            # A handle that changes nothing: PostFilter's preemption runs as a dry run (its
            # victims are not deleted, no nomination is cleared or written, no claim updated);
            # only its verdict and message are wanted.
            handle = FrameworkHandle(
                self.cache, self.objects, self.nominator, profile_name=profile.scheduler_name,
                binder=_refuse_bind, deleter=_no_change, clear_nomination=_no_nomination_change,
                claim_writer=_no_claim_write, rng=self.rng, extenders=self.extenders, features=self.features)
            self.profiles[profile.scheduler_name] = build_framework(profile, reg, handle, index=index)
        self.scheduler = _FullTableScheduler(
            self.profiles, self.cache, self.nominator, rng=self.rng, percentage_of_nodes_to_score=100,
            clock=time.time, extenders=self.extenders, features=self.features)
        self._pending: dict[str, Pod] = {}  # uid -> the pending pod as last seen
        # uid -> the nominatedNodeName a pod had before the NominatedNodeNameForExpectation patch
        # (the binding cycle's, written after the scheduling cycle decided).
        self._before_expectation: dict[str, str] = {}
        self._expectation = self.features.enabled("NominatedNodeNameForExpectation")
        self._synced = False

    # ---------------------------------------------------------------- lifecycle
    def start(self, *, sync_timeout: float | None = 60.0, stop: threading.Event | None = None) -> bool:
        """Start the informers and wait for their first list. False if ``stop`` came first."""
        self.cluster.start(self._on_change, self.lock)
        deadline = None if sync_timeout is None else time.monotonic() + sync_timeout
        while not self.cluster.wait_for_sync(0.2):
            if stop is not None and stop.is_set():
                return False
            if deadline is not None and time.monotonic() > deadline:
                raise KubeschedError("the informers did not sync in time")
        with self.lock:
            self._synced = True
            self._publish_view()
        return True

    def stop(self) -> None:
        self.cluster.stop()
        for ext in self.extenders:
            ext.close()

    # ---------------------------------------------------------------- informer events
    def _on_change(self, ch: Change) -> None:
        """addAllEventHandlers' cache and nominator parts, with the comparisons first: a
        binding or a failure is evaluated against the view before the change is applied."""
        if ch.resource == ASSIGNED_PODS:
            self._assigned(ch)
        elif ch.resource == PENDING_PODS:
            self._pending_change(ch)
        elif ch.resource == "nodes":
            if ch.action == ADD:
                self.cache.add_node(ch.new)
            elif ch.action == DELETE:
                self.cache.remove_node(ch.old.meta.name)
            elif ch.new.meta.name in self.cache.node_infos:
                self.cache.update_node(ch.new)
            else:
                self.cache.add_node(ch.new)
        else:
            return  # the plugins read the other informers' stores directly
        if self._synced:
            self._publish_view()

    def _assigned(self, ch: Change) -> None:
        cache = self.cache
        if ch.action == ADD:
            pending = self._pending.get(ch.new.uid)
            if pending is not None and self._synced:
                # The binding: the pod was pending for a watched scheduler, and is now bound.
                self._observe_binding(pending, ch.new.node_name)
            cache.add_or_replace_pod(ch.new)  # addPodToCache
        elif ch.action == DELETE:
            cache.remove_pod(ch.old)  # deletePodFromCache
        else:
            cache.remove_pod(ch.old)  # updatePodInCache (a recreated pod too: delete + add)
            cache.add_or_replace_pod(ch.new)

    def _pending_change(self, ch: Change) -> None:
        nominator = self.nominator
        if ch.action == ADD:
            self._pending[ch.new.uid] = ch.new
            self._nominate(ch.new)
        elif ch.action == DELETE:
            self._pending.pop(ch.old.uid, None)
            self._before_expectation.pop(ch.old.uid, None)
            nominator.delete_nominated_pod_if_exists(ch.old)
        else:
            old, new = ch.old, ch.new
            if old.uid != new.uid:  # recreated under the same name
                self._pending.pop(old.uid, None)
                self._before_expectation.pop(old.uid, None)
                nominator.delete_nominated_pod_if_exists(old)
                self._pending[new.uid] = new
                self._nominate(new)
                return
            message = _scheduled_condition_message(new)
            if (self._synced and message is not None and old.meta.resource_version != new.meta.resource_version
                    and message != _scheduled_condition_message(old)):
                # handleSchedulingFailure's status patch: the attempt ran on the view before it.
                self._observe_failure(old, message)
            if (self._expectation and new.nominated_node_name and new.nominated_node_name != old.nominated_node_name
                    and _scheduled_condition(new) == _scheduled_condition(old)):
                # A nomination without a failure: NominatedNodeNameForExpectation's patch from
                # the binding cycle (a preemption's nomination comes with the failure's condition).
                self._before_expectation.setdefault(new.uid, old.nominated_node_name)
            self._pending[new.uid] = new
            if self._pre_enqueue_passes(new):
                nominator.update_nominated_pod(old, PodInfo(new))
            else:
                nominator.delete_nominated_pod_if_exists(old)

    def _nominate(self, pod: Pod) -> None:
        """PriorityQueue.Add: a pod past PreEnqueue enters activeQ and the nominator (with its
        status.nominatedNodeName); a gated pod does neither."""
        if self._pre_enqueue_passes(pod):
            self.nominator.add_nominated_pod(PodInfo(pod), None)

    def _pre_enqueue_passes(self, pod: Pod) -> bool:
        fwk = self.profiles.get(pod.scheduler_name)
        return fwk is not None and fwk.run_pre_enqueue_plugins(pod) is None

    def _publish_view(self) -> None:
        if self.metrics is not None:
            infos = self.cache.node_infos
            self.metrics.set_view(len(infos), sum(len(ni.pods) for ni in infos.values()))

    # ---------------------------------------------------------------- evaluation
    def evaluate(self, pod: Pod) -> Attempt:
        """schedulingCycle's schedulePod for ``pod`` on the current view, and on a FitError
        its PostFilter (a dry run) and the FitError message the condition would carry (whole,
        not truncated as the event's). Nothing is assumed, reserved or bound. Under the lock."""
        attempt = self.scheduler.start_attempt(pod)
        fwk, state = attempt.framework, attempt.state
        if fwk is None or state is None:
            return attempt
        try:
            chosen = self.scheduler.schedule_pod(fwk, state, pod, attempt)
        except (ScheduleError, KubeschedError) as e:
            attempt.outcome = "Error"
            attempt.error = attempt.message = str(e)
            return attempt
        if chosen is not None:
            attempt.outcome, attempt.node = "Scheduled", chosen.name
            return attempt
        d = attempt.diagnosis
        if attempt.num_all_nodes == 0:
            attempt.message = NO_NODES_AVAILABLE
            return attempt
        if fwk.has_post_filter_plugins():
            result, status = fwk.run_post_filter_plugins(state, pod, dict(d.node_to_status))
            d.post_filter_msg = status.message
            nominating = result.nominating_info if result is not None else None
            if nominating is not None and nominating.nominated_node_name:
                attempt.nominated_node = nominating.nominated_node_name
        attempt.message = fit_error_message(attempt.num_all_nodes, d.node_to_status, d.pre_filter_msg,
                                            d.post_filter_msg)
        return attempt

    def _observe_binding(self, pending: Pod, node: str) -> None:
        before = self._before_expectation.pop(pending.uid, None)
        if before is not None and pending.nominated_node_name == node:
            # The nomination was written by the binding cycle, after the decision.
            pending = dataclasses.replace(pending, nominated_node_name=before)
        start = time.perf_counter()
        try:
            attempt = self.evaluate(pending)
            verdict = self._binding_verdict(attempt, node)
        except Exception:  # noqa: BLE001 - a plugin's bug must not stop the informer (nor its cache update)
            log.exception("evaluating the binding of %s to %s", pending.key, node)
            return
        self._record(verdict, attempt, time.perf_counter() - start)

    def _observe_failure(self, pod: Pod, real_message: str) -> None:
        start = time.perf_counter()
        try:
            attempt = self.evaluate(pod)
        except Exception:  # noqa: BLE001 - as for a binding
            log.exception("evaluating the failed attempt of %s", pod.key)
            return
        ours = attempt.message if attempt.outcome == "Unschedulable" else None
        if ours is not None and ours == real_message:
            verdict = Verdict(pod.key, UNSCHEDULABLE, AGREED, None, None, (), "same fit error", real_message, ours)
        elif attempt.outcome == "Scheduled":
            verdict = Verdict(pod.key, UNSCHEDULABLE, DISAGREED, None, attempt.node, top_nodes(attempt),
                              f"kubesched would bind it to {attempt.node}, where the real scheduler found no node: "
                              f"{real_message}", real_message, None)
        elif attempt.outcome == "Error":
            verdict = Verdict(pod.key, UNSCHEDULABLE, DISAGREED, None, None, (),
                              f"kubesched's attempt fails with an error: {attempt.error}", real_message,
                              attempt.message)
        else:
            verdict = Verdict(pod.key, UNSCHEDULABLE, DISAGREED, None, None, (),
                              f"a different fit error: kubesched says {ours!r}, the real scheduler "
                              f"{real_message!r}", real_message, ours)
        self._record(verdict, attempt, time.perf_counter() - start)

    def _binding_verdict(self, attempt: Attempt, node: str) -> Verdict:
        key = attempt.pod.key
        if attempt.outcome != "Scheduled":
            why = (f"kubesched finds no node: {attempt.message}" if attempt.outcome == "Unschedulable"
                   else f"kubesched's attempt fails with an error: {attempt.error}")
            return Verdict(key, BOUND, DISAGREED, node, None, (), why, None, attempt.message)
        top = top_nodes(attempt)
        predicted = attempt.node
        if node in top:
            result = AGREED if len(top) == 1 else TIED
            why = "the one top-scored node" if result == AGREED else f"one of {len(top)} equally top-scored nodes"
            return Verdict(key, BOUND, result, node, predicted, top, why)
        return Verdict(key, BOUND, DISAGREED, node, predicted, top, self._why(attempt, node, top))

    def _why(self, attempt: Attempt, node: str, top: tuple[str, ...]) -> str:
        """Why kubesched would not have put the pod on ``node``, in one sentence."""
        predicted = attempt.node
        if node not in self.cache.node_infos:
            return f"node {node} is not in kubesched's view of the cluster"
        status = attempt.failures.get(node)
        if status is not None:
            who = status.plugin or "an extender or the PreFilterResult"
            return (f"kubesched filters {node} out ({who}: {', '.join(status.reasons)}) and would pick "
                    f"{predicted}")
        scores = attempt.scores
        if scores is not None:
            totals = {ni.name: int(t) for ni, t in zip(scores.nodes, scores.totals, strict=True)}
            if node in totals:
                best = totals[top[0]]
                why = (f"kubesched scores {node} {totals[node]}, below {', '.join(top)} at {best}, and would "
                       f"pick {predicted}")
                fwk = attempt.framework
                n = attempt.num_all_nodes
                if fwk is not None and self.scheduler.sample_size(fwk, n) < len(totals):
                    why += (f" (the real scheduler scores only the first {self.scheduler.sample_size(fwk, n)} "
                            f"feasible nodes it finds of {n}: percentageOfNodesToScore)")
                return why
        if attempt.pod.nominated_node_name and list(attempt.feasible) == [predicted]:
            return (f"the pod's nominated node {predicted} fits, so kubesched takes it without scoring; the real "
                    f"scheduler chose {node}")
        return f"kubesched did not evaluate {node} and would pick {predicted}"

    def _record(self, verdict: Verdict, attempt: Attempt, seconds: float) -> None:
        self.tally.add(verdict)
        if self.metrics is not None:
            self.metrics.observe(verdict, seconds)
        if verdict.result == DISAGREED:
            table = ""
            if self.explain is not None:
                try:
                    table = "\n" + self.explain(attempt, self._explain_nodes(attempt, verdict))
                except Exception:  # noqa: BLE001 - a rendering problem must not stop the monitor
                    log.exception("rendering the explain table of %s", verdict.pod)
            decisions_log.warning("disagreed: %s %s (real node %s, kubesched %s): %s%s", verdict.pod, verdict.decision,
                        verdict.node or "-", verdict.predicted or "-", verdict.why, table)
        else:
            decisions_log.info("%s: %s %s on %s", verdict.result, verdict.pod, verdict.decision, verdict.node or "-")
        if self.on_verdict is not None:
            self.on_verdict(verdict)

    EXPLAIN_ALL_NODES_UP_TO = 30
    EXPLAIN_TOP = 10

    def _explain_nodes(self, attempt: Attempt, verdict: Verdict) -> list[Node]:
        """The rows of the logged explain table: every node of a small cluster; else the real
        node, kubesched's pick and the best-scored ones."""
        nodes = {name: ni.node for name, ni in self.cache.node_infos.items() if ni.node is not None}
        if len(nodes) <= self.EXPLAIN_ALL_NODES_UP_TO:
            return list(nodes.values())
        wanted = [n for n in (verdict.node, verdict.predicted) if n]
        if attempt.scores is not None:
            ranked = sorted(zip(attempt.scores.nodes, attempt.scores.totals, strict=True), key=lambda x: -int(x[1]))
            wanted.extend(ni.name for ni, _ in ranked[:self.EXPLAIN_TOP])
        return [nodes[n] for n in dict.fromkeys(wanted) if n in nodes]


def _refuse_bind(pod: Pod, node: str) -> None:
    raise KubeschedError(f"kubesched shadow never binds ({pod.key} to {node})")


def _no_change(*args: Any) -> None:
    """A preemption victim in the dry run: left alone."""


def _no_nomination_change(pod: Pod) -> None:
    """A nomination preemption would clear in the dry run: left alone."""


def _no_claim_write(claim: Any) -> None:
    """A claim write in the dry run (PostFilter's deallocation): not made."""


# ================================================================ the command
@dataclass(frozen=True, slots=True)
class ShadowOptions:
    config: str | None = None
    kubeconfig: str = ""
    context: str | None = None
    master: str = ""
    scheduler_names: tuple[str, ...] = (DEFAULT_SCHEDULER_NAME,)
    output: str | None = None
    kube_version: str | None = None
    feature_gates: tuple[str, ...] = ()




def run_shadow(options: ShadowOptions, serving: ServingOptions, registry: Mapping[str, Factory] | None = None, *,
               stop: threading.Event | None = None, api: ApiClient | None = None,
               explain: ExplainRenderer | None = None, sync_timeout: float | None = 60.0,
               live_options: LiveOptions | None = None,
               on_started: Callable[[ShadowMonitor, str | None], None] | None = None) -> dict[str, Any]:
    """Watch until ``stop`` is set (SIGTERM / SIGINT set it), then write the summary to
    ``options.output`` and return it. ``api`` replaces the read-only client the configuration
    and flags would give (closed on return). ``on_started`` gets the monitor and the serving
    URL once the informers synced."""
    from kubesched.live.command import warn_on_version_skew

    features = features_for(options.kube_version, options.feature_gates)
    cfg = (load_config(options.config, features=features) if options.config
           else default_configuration(features=features))
    stop = stop if stop is not None else threading.Event()
    if api is None:
        cc = cfg.client_connection
        api = ReadOnlyApiClient.for_client_connection(cc, kubeconfig=options.kubeconfig, master=options.master,
                                                      context=options.context, user_agent="kubesched-shadow")
    metrics = ShadowMetrics()
    checks = HealthChecks()
    server = None
    monitor: ShadowMonitor | None = None
    restore_signals = install_stop_signals(stop)
    try:
        lo = dataclasses.replace(live_options or LiveOptions(), features=features)
        cluster = LiveCluster(api, scheduler_names=options.scheduler_names, options=lo)
        monitor = ShadowMonitor(cfg, cluster, scheduler_names=options.scheduler_names, registry=registry,
                                features=features, metrics=metrics, explain=explain)
        warn_on_version_skew(api, features)
        if serving.enabled:
            server = start_serving(build_app(metrics, checks), bind_address=serving.bind_address,
                                   secure_port=serving.secure_port, cert_file=serving.cert_file,
                                   key_file=serving.key_file)
            if server is not None:
                log.info("serving health and metrics on %s", server.url)
        if monitor.start(sync_timeout=sync_timeout, stop=stop):
            checks.mark_synced()
            log.info("watching the decisions of %s (deciding as %s)", ", ".join(options.scheduler_names),
                     features.oracle)
            if on_started is not None:
                on_started(monitor, server.url if server is not None else None)
            stop.wait()
        summary = monitor.tally.summary()
        if options.output:
            monitor.tally.write(options.output)
            log.info("summary written to %s: %d observed, %d agreed, %d tied, %d disagreed", options.output,
                     summary["observed"], summary["agreed"], summary["tied"], len(summary["disagreed"]))
        return summary
    finally:
        checks.mark_shutting_down()
        if monitor is not None:
            monitor.stop()
        if server is not None:
            server.stop()
        api.close()
        restore_signals()


__all__ = ["AGREED", "DISAGREED", "RESULTS", "SHADOW_API_CALLS", "TIED", "ReadOnlyApiClient", "ShadowMetrics", "ShadowMonitor",
           "ShadowOptions", "ShadowTally", "Verdict", "run_shadow", "top_nodes"]
