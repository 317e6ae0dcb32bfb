"""The HTML reports of the what-if commands (``kubesched capacity|compare|pack --report``),
built with the generic :class:`~kubesched.whatif.report.Report` API.

Every figure on a page is taken from the command's result (the data of its ``-o json``), never
recomputed: counts, stop reason, shares, solver figures. The utilisation sections show the
states the result describes, with the scheduler's own arithmetic
(:meth:`Utilisation.from_pods`, i.e. NodeInfo):

- **capacity**: before = the cluster as the run saw it (the nodes left after ``--exclude-node``
  and the pods bound to them); after = plus every copy on its node (minus the victims, with
  ``--preempt``). Copies of a template request what the template requests.
- **compare**: before = the input's bound pods; after, per configuration = the pods bound once
  its simulation ended (each pending pod's outcome; the input's bound pods but the preempted).
  Its requested share per resource is the ``requestedShare`` of the JSON.
- **pack**: before = the input's bound pods; after the scheduler's greedy schedule (its
  victims gone), and after the packing (which evicts nothing). The nodes with a pod are the
  JSON's ``greedy.nodes`` and ``packed.nodes``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kubesched.errors import KubeschedError
from kubesched.objects import ClusterObjects, Pod
from kubesched.whatif.capacity import CapacityInput, CapacityResult, format_resource
from kubesched.whatif.compare import BOUND, CompareResult, ConfigOutcome, Outcome
from kubesched.whatif.pack import PackResult
from kubesched.whatif.report import Report, Utilisation, devices_before, utilisation_before

# Empty nodes named at most in the compare summary table (every one is in -o json).
EMPTY_NODES_SHOWN = 20
# How a pod the scheduler or the packing leaves pending / never attempts shows in a table.
LEFT_PENDING = "left pending"
NOT_ATTEMPTED = "not attempted"


def check_report_path(path: str | os.PathLike[str]) -> None:
    """Fail early (before a long run) when the report obviously cannot be written: the path
    is a directory, or its directory is missing or not writable. Report.write still reports
    any other failure."""
    p = Path(path)
    parent = p.parent
    if p.is_dir():
        raise KubeschedError(f"{path}: cannot write the report: is a directory")
    if not parent.is_dir():
        raise KubeschedError(f"{path}: cannot write the report: no such directory {parent}")
    if not os.access(parent, os.W_OK | os.X_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise KubeschedError(f"{path}: cannot write the report: permission denied")


def _bound(pod: Pod) -> bool:
    return bool(pod.node_name) and not pod.is_terminal


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _names(items: Sequence[str], limit: int | None = None) -> str:
    if not items:
        return "none"
    if limit is None or len(items) <= limit:
        return ", ".join(items)
    return ", ".join(items[:limit]) + f", {len(items) - limit} more"


# ----------------------------------------------------------------------------- capacity
def capacity_states(inp: CapacityInput, res: CapacityResult) -> tuple[Utilisation, Utilisation]:
    """(before, after) of a capacity run: the cluster the run saw, then with the copies."""
    excluded = set(res.excluded_nodes)
    nodes = [n for n in inp.cluster.nodes if n.name not in excluded]
    gone = set(res.preempted)
    bound = [(p, p.node_name) for p in inp.cluster.pods if _bound(p)]
    before = Utilisation.from_pods(nodes, bound)
    templates = [t.pod for t in inp.templates]
    # Copy i is stamped from template i % len(templates), and the run places copies in order.
    copies = [(templates[i % len(templates)], node) for i, (key, node) in enumerate(res.placements)
              if key not in gone]
    after = Utilisation.from_pods(nodes, [*((p, n) for p, n in bound if p.key not in gone), *copies])
    return before, after


def capacity_report(inp: CapacityInput, res: CapacityResult, *, title: str = "kubesched capacity",
                    subtitle: str = "") -> Report:
    """The report of ``kubesched capacity --report``: summary, utilisation before and after the
    copies, the templates, copies per node (with why the stopping copy does not fit there),
    and the stopping copy's fail summary."""
    report = Report(title, subtitle=subtitle)
    stop = res.stop
    items: list[tuple[str, Any]] = [("copies that fit", res.total)]
    items += [(f"copies of {t.template}", t.count) for t in res.templates]
    items.append(("stop reason", stop.reason))
    if stop.pod:
        items.append(("stopping copy", f"{stop.pod} ({stop.template})"))
    items += [("nodes", len(res.nodes)), ("bound pods", res.bound_pods), ("pending pods (take no room)", res.pending_pods),
              ("scheduling attempts", res.attempts)]
    if res.excluded_nodes:
        items.append(("excluded nodes", _names(res.excluded_nodes, 10)))
    if res.preemption:
        items.append(("pods preempted", len(res.preempted)))
    items.append(("stop message", stop.message))
    report.add_summary("Summary", items, note=" ".join(f"note: {n}" for n in res.notes))

    before, after = capacity_states(inp, res)
    report.add_utilisation(before, after, labels=("before", "with the copies"),
                           note="requested / allocatable per node: before = the cluster as it is (the pods bound to "
                                "its nodes; pending pods take no room); then with every copy placed on its node"
                                + (", the preempted pods gone" if res.preempted else ""))
    after_devices = [n.devices for n in res.nodes if n.devices is not None]
    if after_devices:
        by_name = {n.name: n for n in inp.cluster.nodes}
        before_devices = devices_before(inp.cluster, [by_name[u.node] for u in after_devices])
        report.add_devices([before_devices, after_devices], labels=("before", "with the copies"),
                           note="DRA devices per node (those DynamicResources' allocator can use there): allocated "
                                "before = the cluster's allocated claims; then with every copy's claims allocated")
    claims = any(t.claims for t in res.templates)
    report.add_table("Templates", ["template", "file", "requests", "nodeSelector", "priority", "copies named", "copies",
                                   *(["resource claims"] if claims else [])],
                     [[t.template, t.file,
                       ", ".join(f"{name} {format_resource(name, v)}" for name, v in t.requests) or "none",
                       ", ".join(f"{k}={v}" for k, v in t.node_selector), t.priority,
                       f"{t.namespace}/{t.copy_names}", t.count, *([", ".join(t.claims)] if claims else [])]
                      for t in res.templates],
                     note="copies are scheduled round-robin over the templates, one at a time, each bound before "
                          "the next, until one does not fit")
    several = len(res.templates) > 1
    columns = ["node", *([t.template for t in res.templates] if several else []), "copies",
               "why the next copy does not fit there"]
    report.add_table("Copies per node", columns,
                     [[n.node, *(n.copies if several else ()), n.total, ", ".join(n.reasons)] for n in res.nodes],
                     note=f"the reasons are those of the stopping copy {stop.pod} on each node" if stop.pod else
                          f"the run stopped without a failing copy ({stop.reason})")
    if stop.fail_summary:
        report.add_table("Why the stopping copy does not fit: nodes per reason", ["reason", "nodes"],
                         [[r, n] for r, n in stop.fail_summary], note=f"{stop.reason}: {stop.message}")
    if res.preempted:
        report.add_table("Pods preempted by the copies", ["pod"], [[p] for p in res.preempted])
    return report


# ----------------------------------------------------------------------------- compare
def compare_state(objs: ClusterObjects, config: ConfigOutcome) -> Utilisation:
    """The pods bound once ``config``'s simulation ended: each pending pod where its outcome
    says, the input's bound pods but those preempted."""
    outcomes = dict(config.outcomes)
    placed: list[tuple[Pod, str]] = []
    for p in objs.pods:
        if p.is_terminal:
            continue
        o = outcomes.get(p.key)
        node = (o.node if o.state == BOUND else None) if o is not None else p.node_name
        if node:
            placed.append((p, node))
    return Utilisation.from_pods(objs.nodes, placed)


def _headers(names: Sequence[str]) -> list[str]:
    """The files' base names when they tell the configurations apart (as the table output)."""
    short = [Path(n).name for n in names]
    return short if len(set(short)) == len(short) else list(names)


def share_text(mean: float, stddev: float) -> str:
    """A requested share as ``mean% ± sd%``: the JSON's fractions (6 decimals) in percent,
    all their digits kept."""
    return f"{_pct(mean)} ± {_pct(stddev)}"


def _pct(x: float) -> str:
    s = f"{100 * x:.4f}".rstrip("0").rstrip(".")
    return f"{s}%"


def _where(o: Outcome) -> str:
    return (o.node or "") if o.state == BOUND else f"({o.state})"


def compare_report(objs: ClusterObjects, res: CompareResult, *, title: str = "kubesched compare",
                   subtitle: str = "") -> Report:
    """The report of ``kubesched compare --report``: the configurations side by side, the
    utilisation before (once) and after each configuration, the pods placed differently."""
    report = Report(title, subtitle=subtitle)
    configs = res.configurations
    procedure = ("the conformance procedure (queue order, ties to the lowest node name)"
                 if res.procedure == "deterministic" else
                 f"the scheduling queue on a virtual clock (random ties, seed {res.seed})")
    report.add_summary("Summary", [("nodes", res.nodes), ("pending pods", res.pending_pods),
                                   ("configurations", len(configs)),
                                   ("pods placed differently", len(res.placed_differently))],
                       note=f"each configuration simulated by {procedure}")
    headers = _headers([c.name for c in configs])
    rows: list[list[Any]] = [
        ["bound", *(c.bound for c in configs)],
        ["unschedulable", *(c.unschedulable for c in configs)],
        ["preempted", *(c.preempted for c in configs)],
        ["not attempted", *(c.not_attempted for c in configs)],
        ["nodes left empty", *(len(c.empty_nodes) for c in configs)],
        ["empty nodes", *(", ".join(c.empty_nodes[:EMPTY_NODES_SHOWN])
                          + (f", {len(c.empty_nodes) - EMPTY_NODES_SHOWN} more" if len(c.empty_nodes) > EMPTY_NODES_SHOWN
                             else "") for c in configs)],
    ]
    resources: list[str] = []
    for c in configs:
        resources.extend(s.resource for s in c.shares if s.resource not in resources)
    for r in resources:
        cells = []
        for c in configs:
            s = c.share(r)
            if s is None:
                cells.append("")
                continue
            # The JSON's figures: fractions rounded to 6 decimals.
            text = share_text(round(s.mean, 6), round(s.stddev, 6))
            cells.append(text if s.nodes == res.nodes else f"{text} (over {_plural(s.nodes, 'node')})")
        rows.append(["pods running" if r == "pods" else f"{r} requested", *cells])
    report.add_table("Configurations", ["", *headers], rows,
                     note="requested: share of allocatable, mean ± standard deviation over the nodes that have the "
                          "resource; empty: nodes left with DaemonSet or mirror pods only"
                          + ("" if headers == [c.name for c in configs] else
                             "; configurations: " + ", ".join(c.name for c in configs)))
    report.add_utilisation(utilisation_before(objs), title="Before: the cluster as it is", labels=("before",),
                           note="requested / allocatable per node: the input's bound pods")
    for c in configs:
        report.add_utilisation(compare_state(objs, c), title=f"After: {c.name}", labels=("after",),
                               note=f"requested / allocatable per node once the pending pods are scheduled under "
                                    f"{c.name} (preemption victims gone)")
    report.add_table(f"Pods placed differently ({len(res.placed_differently)})", ["pod", *headers],
                     [[d.pod, *(_where(o) for o in d.outcomes)] for d in res.placed_differently],
                     note="every pod whose node or outcome is not the same under every configuration")
    return report


# ----------------------------------------------------------------------------- pack
def pack_states(objs: ClusterObjects, res: PackResult) -> tuple[Utilisation, Utilisation, Utilisation]:
    """(before, after the scheduler's greedy schedule, after the packing)."""
    greedy = {p.pod: p.greedy for p in res.pods}
    packed = {p.pod: p.packed for p in res.pods}
    preempted = set(res.greedy_preempted)
    live = [p for p in objs.pods if not p.is_terminal]

    def state(where: dict[str, str | None], gone: set[str]) -> Utilisation:
        placed: list[tuple[Pod, str]] = []
        for p in live:
            if p.key in gone:
                continue
            node = p.node_name or where.get(p.key)
            if node:
                placed.append((p, node))
        return Utilisation.from_pods(objs.nodes, placed)

    return state({}, set()), state(greedy, preempted), state(packed, set())


def _num(v: float | None) -> Any:
    if v is None:
        return "-"
    return int(v) if float(v).is_integer() else v


def _gap(v: float | None) -> str:
    return "-" if v is None else f"{v:.2%}"


def pack_rows(res: PackResult) -> list[list[Any]]:
    """The pods placed differently, left pending, not modelled or not attempted: pod,
    scheduler's node, packing's node, note."""
    rows: list[list[Any]] = [[p.pod, p.greedy or LEFT_PENDING, p.packed or LEFT_PENDING, p.note or p.greedy_message]
                             for p in res.pods if p.moved or not p.modelled or p.packed is None]
    rows += [[key, NOT_ATTEMPTED, NOT_ATTEMPTED, why] for key, why in res.not_attempted]
    return rows


def pack_report(objs: ClusterObjects, res: PackResult, *, title: str = "kubesched pack",
                subtitle: str = "") -> Report:
    """The report of ``kubesched pack --report``: the solver's figures, the scheduler's
    placement beside the packing, utilisation after each, the pods that differ."""
    report = Report(title, subtitle=subtitle)
    s = res.solver
    items: list[tuple[str, Any]] = [
        ("solver status", s.status), ("objective", _num(s.objective)), ("bound", _num(s.bound)), ("gap", _gap(s.gap)),
        ("pods placed: scheduler", res.greedy_placed), ("pods placed: packing", res.packed_placed),
        ("nodes used: scheduler", len(res.greedy_nodes)), ("nodes used: packing", len(res.packed_nodes)),
        ("drainable nodes", _names(res.drainable, 20)),
        ("placements verified", res.verified),
    ]
    if res.relieved:
        items.append(("nodes relieved of their pending pods", _names(res.relieved, 20)))
    kept = len(res.pods) - res.modelled
    items += [("nodes", len(res.nodes)), ("pending pods", len(res.pods) + len(res.not_attempted)),
              ("in the model", res.modelled), ("kept where the scheduler put them", kept),
              ("not attempted", len(res.not_attempted))]
    proven = (f"most pods placed: proven; nodes used ≥ {_num(s.nodes_bound)} (gap {_gap(s.nodes_gap)})"
              if s.nodes_bound is not None else
              "most pods placed: not proven within the time limit" if s.pods_left else "")
    note = (f"{s.solver}, {s.method} model ({s.variables} variables, {s.constraints} constraints), solved in "
            f"{s.solve_seconds:.2f} s + {s.build_seconds:.2f} s to build, time limit {s.time_limit:g} s; objective = "
            f"nodes used + {s.weight:g} x pods left pending" + (f"; {proven}" if proven else "") + ". "
            "Drainable: nodes the scheduler's placement uses and the packing leaves empty. Verified: placements "
            "applied one at a time through the real filters on a fresh copy of the cluster.")
    report.add_summary("Summary", items, note=note)
    before, greedy, packed = pack_states(objs, res)
    report.add_utilisation(before, greedy, title="After the scheduler's placement",
                           labels=("before", "scheduler"),
                           note="requested / allocatable per node: before = the cluster as it is (its bound pods); "
                                "then the pending pods where the scheduler (the deterministic simulation) puts them"
                                + (", its preemption victims gone" if res.greedy_preempted else ""))
    report.add_utilisation(before, packed, title="After the packing", labels=("before", "packing"),
                           note="requested / allocatable per node: before = the cluster as it is; then the pending "
                                "pods where the packing puts them (it evicts no running pod)")
    if res.greedy_devices and res.packed_devices:
        report.add_devices([devices_before(objs), list(res.greedy_devices), list(res.packed_devices)],
                           labels=("before", "scheduler", "packing"),
                           note="DRA devices per node (those DynamicResources' allocator can use there): allocated "
                                "before = the input's allocated claims; then with the pending pods' claims allocated "
                                "where the scheduler puts them, and where the packing puts them")
    rows = pack_rows(res)
    same = len(res.pods) - (len(rows) - len(res.not_attempted))
    report.add_table(f"Pods placed differently, left pending or not modelled ({len(rows)})",
                     ["pod", "scheduler", "packing", "note"], rows,
                     note=f"{_plural(same, 'pod')} keep the scheduler's node; {res.verified} placements pass the real "
                          f"filters. " + " ".join(f"note: {n}" for n in res.notes))
    return report
