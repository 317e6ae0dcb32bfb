"""NodeAffinity's 1.36 queueing hint (node_affinity.go: EventsToRegister,
isSchedulableAfterNodeChange): the rows of upstream node_affinity_test.go
Test_isSchedulableAfterNodeChange, plus the nodeSelector and parse-error branches of the source."""

from __future__ import annotations

from typing import Any

import pytest
from builders import make_node, make_pod

from kubesched._runtime.handle import FrameworkHandle
from kubesched.config.args import NodeAffinityArgs
from kubesched.features import FEATURES_1_30, FEATURES_1_36
from kubesched.framework import GVK, ActionType, ClusterEventWithHint, QueueingHint
from kubesched.objects import Node, Pod
from kubesched.objects.parse import parse_node_affinity
from kubesched.plugins import nodeaffinity
from kubesched.plugins.nodeaffinity import NodeAffinity

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
FOO_BAR = {"matchExpressions": [{"key": "foo", "operator": "In", "values": ["bar"]}]}
# "a b" is no valid label value: labels.NewRequirement rejects the term (a parse error).
INVALID = {"matchExpressions": [{"key": "foo", "operator": "In", "values": ["a b"]}]}


def shape(events: list[ClusterEventWithHint]) -> list[tuple[str, ActionType, str | None]]:
    return [(e.event.resource, e.event.action_type, getattr(e.hint, "__name__", None)) for e in events]


def pod_with_terms(*terms: dict[str, Any], node_selector: dict[str, str] | None = None) -> Pod:
    b = make_pod().name("p")
    if terms:
        b = b.affinity({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": list(terms)}}})
    if node_selector is not None:
        b = b.node_selector(node_selector)
    return b.obj()


def node(**labels: str) -> Node:
    return make_node().name("n").labels(labels).capacity(cpu="1", pods=10).obj()


def added(term: dict[str, Any]) -> NodeAffinityArgs:
    return NodeAffinityArgs(added_affinity=parse_node_affinity(
        {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}, "addedAffinity"))


def test_v1_30_registration_is_unchanged() -> None:
    pl = nodeaffinity.new(None, FrameworkHandle.for_nodes([], features=FEATURES_1_30))
    assert shape(pl.events_to_register()) == [(GVK.NODE, ActionType.ADD | ActionType.UPDATE, None)]


def test_1_36_registration_is_upstreams() -> None:
    pl = nodeaffinity.new(None, FrameworkHandle.for_nodes([], features=FEATURES_1_36))
    [ev] = pl.events_to_register()
    assert shape([ev]) == [(GVK.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL, "is_schedulable_after_node_change")]
    assert getattr(ev.hint, "__self__", None) is pl


WITH_AFFINITY = pod_with_terms(FOO_BAR)
CASES = [
    ("a new object that is not a node queues", None, WITH_AFFINITY, None, "not-a-node", Q),
    ("an old object that is not a node queues", None, WITH_AFFINITY, "not-a-node", node(), Q),
    ("an added node that does not match is skipped", None, WITH_AFFINITY, None, node(), SKIP),
    ("an added matching node queues", None, WITH_AFFINITY, None, node(foo="bar"), Q),
    ("an unrelated change is skipped", None, WITH_AFFINITY, node(), make_node().name("n").obj(), SKIP),
    ("an unrelated label change is skipped", None, WITH_AFFINITY, node(), node(k="v"), SKIP),
    ("a label change on a node that already matched is skipped", None, WITH_AFFINITY, node(foo="bar"),
     node(foo="bar", k="v"), SKIP),
    ("a node that stops matching is skipped", None, WITH_AFFINITY, node(foo="bar"), node(k="v"), SKIP),
    ("a label change that makes the node match queues", None, WITH_AFFINITY, node(), node(foo="bar"), Q),
    ("an added node failing the scheduler-enforced affinity is skipped", added(FOO_BAR), WITH_AFFINITY, None,
     node(), SKIP),
    ("an added node matching the scheduler-enforced affinity queues", added(FOO_BAR), WITH_AFFINITY, None,
     node(foo="bar"), Q),
    ("a node that starts matching the nodeSelector queues", None, pod_with_terms(node_selector={"foo": "bar"}),
     node(), node(foo="bar"), Q),
    ("an added node failing the nodeSelector is skipped", None, pod_with_terms(node_selector={"foo": "bar"}),
     None, node(), SKIP),
    ("a pod without affinity queues for any added node", None, pod_with_terms(), None, node(), Q),
    ("a pod without affinity skips any update (it matched before)", None, pod_with_terms(), node(), node(k="v"),
     SKIP),
    ("a term that cannot be parsed queues (Match's error)", None, pod_with_terms(INVALID), None, node(), Q),
    ("a parse error is no error once another term matches: matching before and after is skipped", None,
     pod_with_terms(INVALID, FOO_BAR), node(foo="bar"), node(foo="bar", k="v"), SKIP),
    ("a node that matched no term, one unparsable, before queues", None, pod_with_terms(INVALID, FOO_BAR), node(),
     node(foo="bar"), Q),
]


@pytest.mark.parametrize(("args", "target", "old", "new", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_is_schedulable_after_node_change(args: NodeAffinityArgs | None, target: Pod, old: Any, new: Any,
                                          want: QueueingHint) -> None:
    pl = NodeAffinity(FrameworkHandle.for_nodes([]), args)
    assert pl.is_schedulable_after_node_change(target, old, new) == want

