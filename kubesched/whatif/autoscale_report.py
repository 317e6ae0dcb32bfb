"""The HTML report of ``kubesched autoscale --report``: every figure taken from the result (the
data of its ``-o json``).

- summary cards: the unschedulable pods, the chosen scale-up, the cheapest one, the nodes
  that could go;
- each node group before and after: its size now, after the expander's scale-up, after the
  cheapest scale-up, after the scale-down;
- the scale-up options with the expander's measure, the groups that would not help and the
  pods no group helps (cluster-autoscaler's event text);
- the cheapest scale-up's placements and the pods it leaves out;
- the nodes kept, with cluster-autoscaler's reason, and the moves of the scale-down;
- node utilisation now (the bound pods and the scheduler's placements of the pending pods)
  and after the scale-down (the removable nodes' pods on their new nodes).
"""

from __future__ import annotations

import dataclasses

from kubesched.objects import ClusterObjects, Pod
from kubesched.whatif.autoscale import AutoscaleResult, is_daemonset_pod, is_mirror_pod
from kubesched.whatif.report import Report, Utilisation


def autoscale_states(objs: ClusterObjects, res: AutoscaleResult) -> tuple[Utilisation, Utilisation]:
    """(now, after the scale-down) over the input's nodes."""
    deleted = set(res.preempted)
    scheduled = dict(res.scheduled)
    now: list[tuple[Pod, str]] = []
    for p in objs.pods:
        if p.key in deleted or p.is_terminal:
            continue
        node = p.node_name or scheduled.get(p.key)
        if node:
            now.append((p, node))
    moves = dict(res.scale_down.moves)
    removed = set(res.scale_down.removable)
    after: list[tuple[Pod, str]] = []
    for p, node in now:
        if node in removed and not (is_daemonset_pod(p) or is_mirror_pod(p)):
            target = moves.get(p.key)
            if target is None:
                continue  # a skipped pod (terminal, long terminating) goes with its node
            after.append((dataclasses.replace(p, node_name=target), target))
        else:
            after.append((p, node))
    return Utilisation.from_pods(objs.nodes, now), Utilisation.from_pods(objs.nodes, after)


def autoscale_report(objs: ClusterObjects, res: AutoscaleResult, *, title: str = "kubesched autoscale",
                     subtitle: str = "") -> Report:
    up, opt, down = res.scale_up, res.optimal, res.scale_down
    r = Report(title, subtitle=subtitle)
    chosen = f"+{up.chosen.nodes} {up.chosen.group}" if up.chosen is not None else "none"
    cheapest = ", ".join(f"+{n} {g}" for g, n in opt.nodes.items()) or "none"
    r.add_summary("Autoscaling", [
        ("pods the scheduler cannot place", len(up.unschedulable)),
        (f"scale-up ({up.expander})", chosen),
        ("cheapest scale-up", cheapest),
        ("cheapest price per hour", round(opt.cost, 6)),
        ("nodes that could go", len(down.removable)),
    ], note="cluster-autoscaler's decisions, with the scheduler's own filters; -o json has every figure")
    r.add_table("Node groups, before and after",
                ["group", "minSize", "maxSize", "price/h", "nodes now", "after scale-up", "after cheapest scale-up",
                 "after scale-down"],
                [[g.name, g.min_size, g.max_size, g.price_per_hour, g.size, g.after_scale_up, g.after_optimal,
                  g.after_scale_down] for g in res.groups])
    r.add_table("Scale-up options",
                ["group", "new nodes", "pods", "expander's measure", "chosen"],
                [*([o.group, o.nodes, len(o.pods), o.measure, "yes" if up.chosen and o.group == up.chosen.group
                    else ""] for o in up.options),
                 *([g, "", "", why, ""] for g, why in up.no_scale_up)],
                note="groups without new nodes: cluster-autoscaler's reason")
    if up.not_triggered:
        r.add_table("Pods no node group helps", ["pod", "event"], [list(t) for t in up.not_triggered])
    r.add_table("Cheapest scale-up: placements", ["pod", "new node"], [list(p) for p in opt.placements],
                note=f"{opt.solver.get('solver')}: {opt.solver.get('status')}; every placement passed the real "
                     f"filters ({opt.verified})")
    if opt.left:
        r.add_table("Cheapest scale-up: pods left out", ["pod", "why"], [list(p) for p in opt.left])
    r.add_table("Scale-down: nodes kept", ["node", "reason", "detail"], [list(b) for b in down.blocked],
                note=f"removable: {', '.join(down.removable) or 'none'}")
    if down.moves:
        r.add_table("Scale-down: pods moved", ["pod", "to node"], [list(m) for m in down.moves])
    before, after = autoscale_states(objs, res)
    r.add_utilisation(before, after, labels=("now", "after scale-down"),
                      note="now: bound pods and the scheduler's placements of the pending pods")
    return r
