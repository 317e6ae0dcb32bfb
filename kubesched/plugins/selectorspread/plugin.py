"""SelectorSpread: spread the pods of a Service / ReplicationController / ReplicaSet /
StatefulSet across nodes and, when nodes carry zone labels, across zones
(PreScore/Score/NormalizeScore).

Mirrors framework/plugins/selectorspread/selector_spread.go as of v1.21/v1.22 (the plugin
behind the legacy Policy's SelectorSpreadPriority when the DefaultPodTopologySpread gate
is off). Score is the number of matching pods on the node; NormalizeScore turns it into
"fewer is better" on both the node and the zone scale, the zone part weighing 2/3.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from kubesched.errors import PluginError
from kubesched.framework import (
    MAX_NODE_SCORE,
    ClusterEventWithHint,
    CycleState,
    Handle,
    NodeInfo,
    NodeScore,
    StateKey,
    Status,
)
from kubesched.objects import Node, Pod
from kubesched.plugins.helpers.spread import Selector, count_matching_pods, default_selector

NAME = "SelectorSpread"
_PRE_SCORE_KEY_NAME = "PreScore" + NAME
# When zone information is present, 2/3 of the weighting goes to zone spreading and 1/3 to
# node spreading (zoneWeighting, a float64 constant).
ZONE_WEIGHTING = 2.0 / 3.0

# utilnode.GetZoneKey's labels: the beta (failure-domain) label wins when present, even empty.
_BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
_ZONE = "topology.kubernetes.io/zone"
_BETA_REGION = "failure-domain.beta.kubernetes.io/region"
_REGION = "topology.kubernetes.io/region"


@dataclass(frozen=True, slots=True)
class PreScoreState:
    """preScoreState: the pod's default selector. Immutable, so clone() shares it."""

    selector: Selector

    def clone(self) -> PreScoreState:
        return self


_PRE_SCORE_KEY: StateKey[PreScoreState] = StateKey(_PRE_SCORE_KEY_NAME)


def skip_selector_spread(pod: Pod) -> bool:
    """skipSelectorSpread: pods with their own topologySpreadConstraints are left to
    PodTopologySpread (PodTopologySpread's default constraints do not count)."""
    return len(pod.topology_spread_constraints) != 0


def zone_key(node: Node) -> str:
    """utilnode.GetZoneKey: ``region + ":\\x00:" + zone``, "" when both are empty. A label
    that is present wins even with an empty value (Go's comma-ok lookup)."""
    labels = node.meta.labels
    zone = labels[_BETA_ZONE] if _BETA_ZONE in labels else labels.get(_ZONE, "")
    region = labels[_BETA_REGION] if _BETA_REGION in labels else labels.get(_REGION, "")
    if not region and not zone:
        return ""
    return region + ":\x00:" + zone


def _go_quote(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


class SelectorSpread:
    name = NAME

    def __init__(self, handle: Handle) -> None:
        self.handle = handle

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # Score-only plugin: nothing it does can make a pod unschedulable.
        return []

    # ---- PreScore
    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        """PreScore: compute the pod's DefaultSelector once per cycle (nothing is written for
        pods with topologySpreadConstraints; Score then returns 0 and Normalize keeps it)."""
        if skip_selector_spread(pod):
            return None
        state.write(_PRE_SCORE_KEY, PreScoreState(default_selector(pod, self.handle.objects)))
        return None

    # ---- Score
    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        """Score: the number of pods on the node matching the pod's selector."""
        if skip_selector_spread(pod):
            return 0
        s = state.get(_PRE_SCORE_KEY)
        if s is None:
            raise PluginError(f'reading "{_PRE_SCORE_KEY_NAME}" from cycleState: not found')
        return count_matching_pods(pod.namespace, s.selector, node_info.pods)

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status | None:
        """NormalizeScore: MaxNodeScore × (maxNode − count) / maxNode, blended with the same
        ratio over zone totals (zones of the scored nodes only) at 2/3 weight; float64
        arithmetic truncated to int64, exactly as upstream orders it."""
        if skip_selector_spread(pod):
            return None
        snapshot = self.handle.snapshot
        zones: list[str] = []
        counts_by_zone: dict[str, int] = {}
        max_count_by_node = 0
        for s in scores:
            if s.score > max_count_by_node:
                max_count_by_node = s.score
            ni = snapshot.get(s.name)
            if ni is None or ni.node is None:
                return Status.as_error(f"getting node {_go_quote(s.name)} from Snapshot: "
                                       f"nodeinfo not found for node name {_go_quote(s.name)}")
            z = zone_key(ni.node)
            zones.append(z)
            if z:
                counts_by_zone[z] = counts_by_zone.get(z, 0) + s.score
        max_count_by_zone = 0
        for c in counts_by_zone.values():
            if c > max_count_by_zone:
                max_count_by_zone = c
        have_zones = len(counts_by_zone) != 0
        max_node_f = float(max_count_by_node)
        max_zone_f = float(max_count_by_zone)
        max_score_f = float(MAX_NODE_SCORE)
        for i, s in enumerate(scores):
            f_score = max_score_f
            if max_count_by_node > 0:
                f_score = max_score_f * (float(max_count_by_node - s.score) / max_node_f)
            z = zones[i]
            if have_zones and z:
                zone_score = max_score_f
                if max_count_by_zone > 0:
                    zone_score = max_score_f * (float(max_count_by_zone - counts_by_zone[z]) / max_zone_f)
                f_score = (f_score * (1.0 - ZONE_WEIGHTING)) + (ZONE_WEIGHTING * zone_score)
            s.score = int(f_score)
        return None


def new(args: object, handle: Handle) -> SelectorSpread:
    """Plugin factory (registry entry). SelectorSpread takes no args."""
    return SelectorSpread(handle)
