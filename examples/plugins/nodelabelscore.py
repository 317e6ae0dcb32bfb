"""NodeLabelScore: prefer nodes by a numeric node label (Score + NormalizeScore).

Each node scores the integer value of its label ``args.label`` (default
``example.com/score``); NormalizeScore maps the values of the feasible nodes linearly onto
0..100 — the best value gets 100, the worst 0 (all equal: 100) — so the plugin's weight
decides how much the label counts against the default scorers. ``prefer: Lower`` inverts
it. A node without the label, or with a non-integer value, always gets 0.

    profiles:
    - plugins:
        score:
          enabled: [{name: NodeLabelScore, weight: 5}]
      pluginConfig:
      - name: NodeLabelScore
        args: {label: example.com/generation, prefer: Higher}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kubesched.framework import MAX_NODE_SCORE, CycleState, Handle, NodeInfo, NodeScore, Status
from kubesched.objects import Pod

NAME = "NodeLabelScore"
# The raw score of a node without a usable label: below any label value.
UNLABELLED = -(2**62)


@dataclass(frozen=True)
class NodeLabelScoreArgs:
    label: str = "example.com/score"
    prefer: Literal["Higher", "Lower"] = "Higher"


class NodeLabelScore:
    name = NAME

    def __init__(self, args: NodeLabelScoreArgs) -> None:
        self.label = args.label
        self.higher = args.prefer == "Higher"

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        node = node_info.node
        value = node.meta.labels.get(self.label) if node is not None else None
        try:
            return int(value) if value is not None else UNLABELLED
        except ValueError:
            return UNLABELLED

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status | None:
        values = [s.score for s in scores if s.score != UNLABELLED]
        lo, hi = (min(values), max(values)) if values else (0, 0)
        for s in scores:
            if s.score == UNLABELLED:
                s.score = 0
            elif hi == lo:
                s.score = MAX_NODE_SCORE
            elif self.higher:
                s.score = (s.score - lo) * MAX_NODE_SCORE // (hi - lo)
            else:
                s.score = (hi - s.score) * MAX_NODE_SCORE // (hi - lo)
        return None


def new(args: NodeLabelScoreArgs, handle: Handle) -> NodeLabelScore:
    return NodeLabelScore(args)
