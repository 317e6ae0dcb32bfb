"""A self-contained HTML report: one file, inline CSS and JS, no network at view time.

The page is rendered in the browser from compact JSON embedded in the file, so it stays
usable at 5000 nodes: every list is paged (50 rows at a time), a search box filters nodes
and pods everywhere, and the node x plugin table of an attempt is built only when its
``<details>`` is opened (then paged too).

Other commands add their own sections through the generic API::

    report = Report("kubesched capacity", subtitle="examples/whatif")
    report.add_summary("Capacity", [("copies that fit", 12), ("limited by", "cpu")])
    report.add_utilisation(utilisation_before(objs), Utilisation.from_pods(objs.nodes, placed))
    report.add_table("Per zone", ["zone", "copies"], [["zone-a", 4], ["zone-b", 8]])
    report.write("out.html")          # or html = report.render()

:func:`simulation_report` builds the report of ``kubesched simulate --report``;
:mod:`kubesched.whatif.whatif_report` those of ``kubesched capacity``, ``compare`` and ``pack``.

Size at scale: the node x plugin detail of an attempt costs one row per node it filtered or
scored. The report embeds full detail for attempts until ``detail_rows`` node rows
(:data:`DEFAULT_DETAIL_ROWS`) are spent: first the preempting attempts and the last attempt of
each pod left unscheduled, then the attempts that scheduled a pod, then earlier failed retries,
each group in scheduling order. Every other attempt keeps a summary: its failing nodes counted
per plugin and reason, and the chosen node with the :data:`SUMMARY_TOP_NODES` best-scored ones.
At most ``max_attempts`` (:data:`DEFAULT_MAX_ATTEMPTS`) attempts are listed: beyond, each pod's
last attempt and the preempting ones.
"""

from __future__ import annotations

import dataclasses
import html
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kubesched.errors import KubeschedError
from kubesched.framework import NodeInfo
from kubesched.objects import ClusterObjects, Node, Pod
from kubesched.objects.devices import ConsumerRef
from kubesched.plugins.dynamicresources.usage import NodeDeviceUse, device_use
from kubesched.scheduler import EXTENDER_NAME, EXTENDER_SCORE_PREFIX, Attempt
from kubesched.simulation import SimulationResult, Step, attempt_allocations
from kubesched.timeline import TimelineResult
from kubesched.whatif._report_assets import CSS, JS

# Node rows of node x plugin detail embedded in a report (see the module docstring): about
# 3-4 MB of JSON with the default plugins.
DEFAULT_DETAIL_ROWS = 100_000
# Best-scored nodes kept in the summary of an attempt without full detail (and the chosen one).
SUMMARY_TOP_NODES = 5
# Attempts listed at most; beyond, only each pod's last attempt and the preempting ones.
DEFAULT_MAX_ATTEMPTS = 20_000
# The resources always shown, in this order; scalar resources (extended, hugepages) and
# ephemeral-storage follow when some node has or some pod requests them.
CORE_RESOURCES = ("cpu", "memory", "pods")
# Utilisation histogram buckets: [0,10%), [10,20%), ..., [90,100%], over 100%.
HISTOGRAM_BUCKETS = 11


# ----------------------------------------------------------------------------- utilisation
@dataclass(frozen=True, slots=True)
class NodeUsage:
    """What the pods on one node request and what the node offers, in the scheduler's units
    (framework.Resource): cpu in millicores, memory and ephemeral-storage in bytes, scalar
    resources in their units; ``pods`` is the pod count against the node's allowed pods."""

    name: str
    allocatable: Mapping[str, int]
    requested: Mapping[str, int]

    def percent(self, resource: str) -> float | None:
        """requested / allocatable in percent; None when the node offers none of it."""
        alloc = self.allocatable.get(resource, 0)
        if alloc <= 0:
            return None
        return 100.0 * self.requested.get(resource, 0) / alloc


def bucket_of(requested: int, allocatable: int) -> int | None:
    """The histogram bucket of requested/allocatable, in exact integer arithmetic: 0..9 for
    [0,10%) .. [90,100%] (100% exactly is in the last), 10 for over 100%; None when nothing
    is allocatable."""
    if allocatable <= 0:
        return None
    if requested > allocatable:
        return HISTOGRAM_BUCKETS - 1
    return min(requested * 10 // allocatable, 9)


@dataclass(slots=True)
class Utilisation:
    """Per node requested / allocatable, computed with the scheduler's own arithmetic
    (:class:`~kubesched.framework.NodeInfo`: the pods' requests as NodeResourcesFit sees them)."""

    nodes: list[NodeUsage] = field(default_factory=list)

    @classmethod
    def from_node_infos(cls, infos: Iterable[NodeInfo]) -> Utilisation:
        out = []
        for ni in infos:
            if ni.node is None:
                continue
            a, r = ni.allocatable, ni.requested
            alloc = {"cpu": a.milli_cpu, "memory": a.memory, "pods": a.allowed_pod_number,
                     "ephemeral-storage": a.ephemeral_storage, **a.scalar}
            req = {"cpu": r.milli_cpu, "memory": r.memory, "pods": len(ni.pods),
                   "ephemeral-storage": r.ephemeral_storage, **r.scalar}
            out.append(NodeUsage(ni.name, alloc, req))
        return cls(out)

    @classmethod
    def from_pods(cls, nodes: Sequence[Node], pods: Iterable[tuple[Pod, str]]) -> Utilisation:
        """The nodes with these (pod, node name) placed on them, in ``nodes`` order. A pod on a
        node missing from ``nodes`` takes no room (as kube-scheduler's cache does)."""
        infos = {n.name: NodeInfo(n) for n in nodes}
        for pod, node in pods:
            ni = infos.get(node)
            if ni is not None:
                ni.add_pod(pod)
        return cls.from_node_infos(infos.values())

    def node(self, name: str) -> NodeUsage:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)

    def resources(self) -> list[str]:
        """cpu, memory, pods, then every other resource some node offers or some pod requests
        (ephemeral-storage only when requested: every node offers it)."""
        extra: set[str] = set()
        for n in self.nodes:
            for name, v in n.requested.items():
                if v:
                    extra.add(name)
            for name, v in n.allocatable.items():
                if v and name != "ephemeral-storage":
                    extra.add(name)
        extra.difference_update(CORE_RESOURCES)
        eph = ["ephemeral-storage"] if "ephemeral-storage" in extra else []
        extra.discard("ephemeral-storage")
        return [*CORE_RESOURCES, *eph, *sorted(extra)]

    def totals(self, resource: str) -> tuple[int, int]:
        """(requested, allocatable) summed over the nodes."""
        return (sum(n.requested.get(resource, 0) for n in self.nodes),
                sum(n.allocatable.get(resource, 0) for n in self.nodes))

    def histogram(self, resource: str) -> list[int]:
        """Node counts per bucket (:func:`bucket_of`); nodes offering none are not counted."""
        counts = [0] * HISTOGRAM_BUCKETS
        for n in self.nodes:
            b = bucket_of(n.requested.get(resource, 0), n.allocatable.get(resource, 0))
            if b is not None:
                counts[b] += 1
        return counts


def _bound(pod: Pod) -> bool:
    return bool(pod.node_name) and not pod.is_terminal


def utilisation_before(objs: ClusterObjects) -> Utilisation:
    """The input's bound pods (not Succeeded/Failed), as the simulator's cache starts."""
    return Utilisation.from_pods(objs.nodes, ((p, p.node_name) for p in objs.pods if _bound(p)))


def utilisation_after(objs: ClusterObjects, result: SimulationResult) -> Utilisation:
    """The bound pods once the simulation ended: the input's, plus the simulated bindings,
    minus the preemption victims."""
    deleted = set(result.deleted)
    placed = []
    for p in objs.pods:
        if p.key in deleted or p.is_terminal:
            continue
        node = result.final.get(p.key)
        if node:
            placed.append((p, node))
    return Utilisation.from_pods(objs.nodes, placed)


def devices_before(objs: ClusterObjects, nodes: Sequence[Node] | None = None) -> list[NodeDeviceUse]:
    """The DRA devices of each node and who holds them in the input (its allocated claims);
    empty when the cluster publishes no device."""
    return device_use(objs.nodes if nodes is None else nodes, classes={c.name: c for c in objs.device_classes},
                      slices=objs.resource_slices, claims=objs.resource_claims)


def devices_after(objs: ClusterObjects, result: SimulationResult) -> list[NodeDeviceUse]:
    """The DRA devices of each node once the simulation ended: the input's allocated claims
    plus the allocation each scheduled pod's claims got (DynamicResources' PreBind: the
    allocation and the pod in ``reservedFor``). As in the simulation, a preemption victim's
    claims keep their devices (no resourceclaim controller deallocates them)."""
    claims = {c.key: c for c in objs.resource_claims}
    for step in result.steps:
        a = step.attempt
        for key, alloc in attempt_allocations(a):
            claim = claims.get(key)
            if claim is None:
                continue
            reserved = claim.reserved_for if any(r.uid == a.pod.uid for r in claim.reserved_for) else \
                (*claim.reserved_for, ConsumerRef("pods", a.pod.name, a.pod.uid))
            claims[key] = dataclasses.replace(claim, allocation=alloc, reserved_for=reserved)
    return device_use(objs.nodes, classes={c.name: c for c in objs.device_classes}, slices=objs.resource_slices,
                      claims=claims.values())


# ----------------------------------------------------------------------------- placements
@dataclass(frozen=True, slots=True)
class Placement:
    """One pod's row in the placement table. ``outcome`` is free text; the page colours
    scheduled, unschedulable, error, pending, not attempted and preempted."""

    pod: str
    outcome: str
    node: str | None = None
    reason: str = ""
    attempts: int = 0


@dataclass(frozen=True, slots=True)
class Preemption:
    """A preemption: the preemptor, the node it was nominated to, its victims."""

    preemptor: str
    node: str
    victims: tuple[str, ...]
    attempt: int = 1
    result: str = ""  # what became of the preemptor


def preemptions_of(result: SimulationResult) -> list[Preemption]:
    final = result.final
    out = []
    for step in result.steps:
        a = step.attempt
        if not a.victims:
            continue
        node = final.get(a.pod.key)
        res = f"scheduled on {node}" if node else "not scheduled"
        out.append(Preemption(a.pod.key, a.nominated_node or "", tuple(sorted(v.key for v in a.victims)),
                              step.number, res))
    return out


# TimelineResult.pending's word for a pod still held at Permit when the run ended.
_WAITING_AT_PERMIT = "waiting at Permit"


def placements_of(result: SimulationResult, objs: ClusterObjects | None = None) -> list[Placement]:
    """Every pod of the simulation: those attempted (in order of their first attempt), those
    never attempted, and the preemption victims. ``reason`` is kube-scheduler's
    FailedScheduling message, the skip reason, or who preempted the pod."""
    steps: dict[str, list[Attempt]] = {}
    for step in result.steps:
        steps.setdefault(step.attempt.pod.key, []).append(step.attempt)
    pending = result.pending if isinstance(result, TimelineResult) else {}
    victim_of: dict[str, tuple[str, str]] = {}
    for pre in preemptions_of(result):
        for v in pre.victims:
            victim_of.setdefault(v, (pre.preemptor, pre.node))
    deleted = set(result.deleted)
    out: list[Placement] = []
    listed: set[str] = set()
    for key, attempts in steps.items():
        listed.add(key)
        if key in deleted:
            continue  # listed with the victims
        last = attempts[-1]
        node = result.final.get(key)
        victims = sorted({v.key for a in attempts for v in a.victims})
        if node:
            note = f"preempted {', '.join(victims)}" if victims else ""
            out.append(Placement(key, "scheduled", node, note, len(attempts)))
            continue
        outcome = "error" if last.outcome == "Error" else "unschedulable"
        # The timeline's last word, when it says more: held at Permit, given up after N attempts.
        message = pending.get(key) or last.message or last.error or ""
        if message == _WAITING_AT_PERMIT:
            outcome = "pending"
        if last.nominated_node:
            message = f"nominated to {last.nominated_node}; {message}"
        out.append(Placement(key, outcome, None, message, len(attempts)))
    for key, why in result.skipped.items():
        if key not in listed:
            listed.add(key)
            out.append(Placement(key, "not attempted", None, why, 0))
    for key, why in pending.items():
        if key not in listed:
            listed.add(key)
            out.append(Placement(key, "pending" if why == _WAITING_AT_PERMIT else "not attempted", None, why, 0))
    nodes_before = {p.key: p.node_name for p in objs.pods} if objs is not None else {}
    for key in result.deleted:
        preemptor, node = victim_of.get(key, ("", ""))
        why = f"preempted by {preemptor} on {node}" if preemptor else "deleted"
        out.append(Placement(key, "preempted", node or nodes_before.get(key) or None, why,
                             len(steps.get(key, ()))))
    return out


# ----------------------------------------------------------------------------- the report
class _Strings:
    """The string table shared by the sections: each distinct string once."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self._index: dict[str, int] = {}

    def __call__(self, s: str) -> int:
        i = self._index.get(s)
        if i is None:
            i = self._index[s] = len(self.items)
            self.items.append(s)
        return i


def _scalar(v: Any) -> Any:
    if v is None or isinstance(v, bool | int | float | str):
        return v
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating):
        return float(v)
    return str(v)


class Report:
    """A report page made of sections, rendered in the browser from embedded JSON."""

    def __init__(self, title: str, *, subtitle: str = "") -> None:
        self.title = title
        self.subtitle = subtitle
        self.sections: list[dict[str, Any]] = []
        self._s = _Strings()

    # ---- sections
    def add_summary(self, title: str, items: Sequence[tuple[str, Any]], *, note: str = "") -> None:
        """Key figures, shown as cards: (label, value)."""
        self.sections.append({"k": "summary", "title": title, "note": note,
                              "items": [[str(label), _scalar(v)] for label, v in items]})

    def add_utilisation(self, before: Utilisation, after: Utilisation | None = None, *,
                        title: str = "Node utilisation", labels: Sequence[str] | None = None,
                        note: str = "") -> None:
        """Per node requested / allocatable bars, cluster totals and histograms; with ``after``,
        two bars per resource (``before`` grey). Both must list the same nodes. ``labels``
        name the states (default "before", "after"; "requested" for one state)."""
        names = [n.name for n in before.nodes]
        states = [before] if after is None else [before, after]
        if labels is None:
            labels = ("requested",) if after is None else ("before", "after")
        if len(labels) != len(states):
            raise ValueError(f"add_utilisation: {len(states)} state(s), {len(labels)} label(s)")
        if after is not None and [n.name for n in after.nodes] != names:
            raise ValueError("add_utilisation: before and after must list the same nodes in the same order")
        resources = before.resources()
        if after is not None:
            resources += [r for r in after.resources() if r not in resources]
        s = self._s
        self.sections.append({
            "k": "util", "title": title, "note": note,
            "labels": list(labels),
            "res": resources,
            "nodes": [s(n) for n in names],
            "alloc": {r: [n.allocatable.get(r, 0) for n in before.nodes] for r in resources},
            "req": [{r: [n.requested.get(r, 0) for n in u.nodes] for r in resources} for u in states],
            "totals": [{r: list(u.totals(r)) for r in resources} for u in states],
            "hist": [{r: u.histogram(r) for r in resources} for u in states],
        })

    def add_table(self, title: str, columns: Sequence[str], rows: Iterable[Sequence[Any]], *,
                  note: str = "") -> None:
        """A generic table, paged and filtered by the search box (any cell)."""
        self.sections.append({"k": "table", "title": title, "note": note, "columns": list(columns),
                              "rows": [[_scalar(c) for c in row] for row in rows]})

    def add_devices(self, states: Sequence[Sequence[NodeDeviceUse]], *, labels: Sequence[str] = ("used",),
                    title: str = "Devices per node", note: str = "") -> None:
        """DRA devices: a table of each node's devices used / total in each state (``labels``
        name them; every state lists the same nodes in the same order), then one row per
        allocated device of the last state: node, device, claim, request, the pods holding it.
        Nothing when the cluster publishes no device."""
        if not states or not states[-1]:
            return
        if len(labels) != len(states):
            raise ValueError(f"add_devices: {len(states)} state(s), {len(labels)} label(s)")
        last = states[-1]
        columns = ["node", "devices", *(f"used: {label}" for label in labels), "pods holding devices"]
        rows = []
        for i, use in enumerate(last):
            pods = sorted({p for h in use.held for p in h.pods})
            rows.append([use.node, use.total, *(state[i].used for state in states), ", ".join(pods)])
        shared = sum(u.shared for u in last)
        self.add_table(title, columns, rows,
                       note=" ".join(x for x in (note, f"{shared} device(s) are reachable from several nodes and count "
                                                       f"on each of them" if shared else "") if x))
        self.add_table(f"{title}: which pod holds which device ({labels[-1]})",
                       ["node", "device", "claim", "request", "pods"],
                       [[use.node, h.name, h.claim, h.request, ", ".join(h.pods)] for use in last for h in use.held],
                       note="every allocated device (allocated claims' results without admin access)")

    def add_placements(self, placements: Sequence[Placement], *, title: str = "Placements",
                       note: str = "") -> None:
        """One row per pod: outcome, node, reason, attempts; counts per outcome on top."""
        s = self._s
        self.sections.append({
            "k": "placements", "title": title, "note": note,
            "rows": [[s(p.pod), s(p.outcome), -1 if p.node is None else s(p.node), s(p.reason), p.attempts]
                     for p in placements],
        })

    def add_preemptions(self, preemptions: Sequence[Preemption], *, title: str = "Preemptions",
                        note: str = "") -> None:
        s = self._s
        self.sections.append({
            "k": "preemptions", "title": title, "note": note,
            "rows": [[s(p.preemptor), s(p.node), [s(v) for v in p.victims], p.attempt, s(p.result)]
                     for p in preemptions],
        })

    def add_attempts(self, steps: Sequence[Step], node_names: Sequence[str], *,
                     title: str = "Scheduling attempts: node x plugin",
                     detail_rows: int = DEFAULT_DETAIL_ROWS, max_attempts: int = DEFAULT_MAX_ATTEMPTS,
                     note: str = "") -> None:
        """Per attempt, the node x plugin table of ``--explain`` (filter verdict and reason per
        node, weighted score per plugin, total), collapsed; full per-node detail within the
        ``detail_rows`` budget, a summary beyond (see the module docstring)."""
        kept = _keep_attempts(steps, max_attempts)
        dropped = len(steps) - len(kept)
        ranks = _detail_ranks(kept)
        order = sorted(range(len(kept)), key=lambda i: (ranks[i], i))
        budget = detail_rows
        full: set[int] = set()
        for i in order:
            rows = _rows_of(kept[i].attempt)
            if rows <= budget:
                full.add(i)
                budget -= rows
        items = [self._attempt(step, i in full) for i, step in enumerate(kept)]
        notes = [note] if note else []
        if dropped:
            notes.append(f"{dropped} earlier retries of pods are left out (over {max_attempts} attempts): each pod's "
                         f"last attempt and every preempting attempt are listed")
        if len(full) < len(kept):
            notes.append(f"node-by-node detail for {len(full)} of {len(kept)} attempts (up to {detail_rows} node rows: "
                         f"preempting attempts and the last attempt of each unscheduled pod first, then those that "
                         f"scheduled a pod, in order); the others show the failing nodes counted per plugin and reason, "
                         f"and the chosen node with the {SUMMARY_TOP_NODES} best-scored ones")
        self.sections.append({"k": "attempts", "title": title, "note": " ".join(notes), "nodes": len(node_names),
                              "items": items})

    def _attempt(self, step: Step, full: bool) -> dict[str, Any]:
        s = self._s
        a = step.attempt
        item: dict[str, Any] = {
            "p": s(a.pod.key), "n": step.number, "o": s(a.outcome),
            "h": -1 if a.node is None else s(a.node),
            "m": -1 if not (a.message or a.error) or a.outcome == "Scheduled" else s(a.message or a.error or ""),
            "nn": -1 if not a.nominated_node else s(a.nominated_node),
            "v": [s(v.key) for v in sorted(a.victims, key=lambda v: v.key)],
            "nf": len(a.feasible), "nx": len(a.failures),
        }
        plugins, columns, nodes, totals = _score_columns(a)
        item["pl"] = [s(p) for p in plugins]
        if full:
            item["sc"] = [[s(nodes[i]), int(totals[i]), *(int(c[i]) for c in columns)] for i in range(len(nodes))]
            scored = set(nodes)
            item["fe"] = [s(n) for n in a.feasible if n not in scored]
            item["fl"] = [[s(n), s(_who(a, n, st.plugin)), s(", ".join(st.reasons))]
                          for n, st in sorted(a.failures.items())]
        else:
            top = [int(i) for i in np.argsort(-totals, kind="stable")[:SUMMARY_TOP_NODES]] if len(nodes) else []
            if a.node in nodes and nodes.index(a.node) not in top:
                top.insert(0, nodes.index(a.node))
            item["top"] = [[s(nodes[i]), int(totals[i]), *(int(c[i]) for c in columns)] for i in top]
            counts = Counter((_who(a, n, st.plugin), ", ".join(st.reasons)) for n, st in a.failures.items())
            item["fc"] = [[s(w), s(r), c] for (w, r), c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
        return item

    # ---- output
    def data(self) -> dict[str, Any]:
        """What the page is rendered from."""
        return {"title": self.title, "subtitle": self.subtitle, "strings": self._s.items, "sections": self.sections}

    def render(self) -> str:
        payload = json.dumps(self.data(), separators=(",", ":"), ensure_ascii=False)
        # Inside <script>: no "</script>", "<!--" or "]]>" can be formed.
        payload = payload.replace("<", "\\u003c").replace(">", "\\u003e")
        return _PAGE.format(title=html.escape(self.title), css=CSS, js=JS, data=payload)

    def write(self, path: str | Path) -> None:
        try:
            Path(path).write_text(self.render(), encoding="utf-8")
        except OSError as e:
            raise KubeschedError(f"{path}: cannot write the report: {e}") from None


_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>{css}</style>
</head>
<body>
<header id="top"><h1 id="title"></h1><div id="subtitle"></div>
<input id="search" type="search" placeholder="Filter nodes and pods (substring)" autocomplete="off"
 aria-label="Filter nodes and pods"></header>
<main id="main"><noscript>This report is rendered with JavaScript.</noscript></main>
<script type="application/json" id="report-data">{data}</script>
<script>{js}</script>
</body>
</html>
"""


def _who(a: Attempt, node: str, plugin: str) -> str:
    """The filter that rejected the node, as --explain names it: statuses without a plugin come
    from filter extenders or from a PreFilterResult."""
    return plugin or (EXTENDER_NAME if node in a.extender_failed else "PreFilterResult")


def _detail_ranks(steps: Sequence[Step]) -> list[int]:
    """Which attempts get node-by-node detail first: 0 for a preempting attempt or the last
    attempt of a pod left unscheduled, 1 for an attempt that scheduled its pod, 2 for the
    others (failed attempts the pod retried after)."""
    last = {st.attempt.pod.key: i for i, st in enumerate(steps)}
    ranks = []
    for i, st in enumerate(steps):
        a = st.attempt
        if a.victims or (a.outcome != "Scheduled" and last[a.pod.key] == i):
            ranks.append(0)
        else:
            ranks.append(1 if a.outcome == "Scheduled" else 2)
    return ranks


def _rows_of(a: Attempt) -> int:
    return len(a.feasible) + len(a.failures)


def _keep_attempts(steps: Sequence[Step], max_attempts: int) -> list[Step]:
    if len(steps) <= max_attempts:
        return list(steps)
    last = {step.attempt.pod.key: i for i, step in enumerate(steps)}
    keep = set(last.values())
    return [st for i, st in enumerate(steps) if i in keep or st.attempt.victims]


def _score_columns(a: Attempt) -> tuple[list[str], list[Any], list[str], Any]:
    """(plugin names, one score array per plugin, scored node names, totals), as the trace
    reports them: scores only when more than one node was feasible; extenders' contribution
    as one column per extender."""
    sr = a.scores
    if sr is None or len(a.feasible) <= 1:
        return [], [], [], np.zeros(0, dtype=np.int64)
    nodes = [ni.name for ni in sr.nodes]
    plugins = [ps.name for ps in sr.plugins]
    columns: list[Any] = [ps.scores for ps in sr.plugins]
    if a.extender_scores is not None:
        names: list[str] = []
        for per in a.extender_scores.by_node.values():
            for name, _ in per:
                if name not in names:
                    names.append(name)
        for name in names:
            plugins.append(EXTENDER_SCORE_PREFIX + name)
            columns.append(a.extender_scores.scores_of(name, nodes))
    return plugins, columns, nodes, np.asarray(sr.totals, dtype=np.int64)


# ----------------------------------------------------------------------------- simulate
def simulation_report(objs: ClusterObjects, result: SimulationResult, *, title: str = "kubesched simulate",
                      subtitle: str = "", detail_rows: int = DEFAULT_DETAIL_ROWS,
                      max_attempts: int = DEFAULT_MAX_ATTEMPTS) -> Report:
    """The report of ``kubesched simulate --report``: summary, utilisation before (the input's
    bound pods) and after (plus the simulated bindings, minus the victims), placements,
    preemptions, and each attempt's node x plugin table."""
    report = Report(title, subtitle=subtitle)
    placements = placements_of(result, objs)
    outcomes = Counter(p.outcome for p in placements)
    preemptions = preemptions_of(result)
    before, after = utilisation_before(objs), utilisation_after(objs, result)
    items: list[tuple[str, Any]] = [("nodes", len(objs.nodes)), ("pods in the simulation", len(placements))]
    items += [(o, outcomes[o]) for o in ("scheduled", "unschedulable", "error", "pending", "not attempted")
              if outcomes[o] or o in ("scheduled", "unschedulable")]
    items += [("preemptions", len(preemptions)), ("pods preempted", outcomes["preempted"]),
              ("scheduling attempts", len(result.steps))]
    if isinstance(result, TimelineResult):
        items.append(("simulated time", f"{result.end - result.start:.1f} s"))
    for r in ("cpu", "memory"):
        (rb, ab), (ra, aa) = before.totals(r), after.totals(r)
        if ab:
            items.append((f"cluster {r} requested", f"{100 * rb / ab:.1f}% → {100 * ra / aa:.1f}%"))
    report.add_summary("Summary", items)
    report.add_utilisation(before, after, labels=("before", "after"),
                           note="requested / allocatable per node: before = the input's bound pods; after = once "
                                "the simulated pods are bound and the preemption victims gone")
    report.add_devices([devices_before(objs), devices_after(objs, result)], labels=("before", "after"),
                       note="DRA devices per node (those DynamicResources' allocator can use there): allocated "
                            "before = the input's allocated claims; after = once the simulated pods' claims are "
                            "allocated")
    report.add_placements(placements)
    if preemptions:
        report.add_preemptions(preemptions)
    report.add_attempts(result.steps, [n.name for n in objs.nodes], detail_rows=detail_rows,
                        max_attempts=max_attempts)
    return report
