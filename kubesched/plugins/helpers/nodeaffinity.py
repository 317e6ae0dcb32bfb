"""Node affinity matching shared by NodeAffinity, PodTopologySpread, VolumeBinding and the
queue's pre-check (component-helpers/scheduling/corev1/nodeaffinity)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache

from kubesched.objects import Node, NodeSelector, NodeSelectorTerm, Pod, Requirement
from kubesched.objects.labels import parse_int64
from kubesched.plugins.helpers.gomath import go_quote

# validation.IsValidLabelValue / IsQualifiedName (apimachinery/pkg/util/validation).
_LABEL_VALUE_RE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_QUALIFIED_NAME_RE = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DNS1123_SUBDOMAIN_RE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_LABEL_VALUE_ERR = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
    "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


def _qualified_name_ok(key: str) -> bool:
    name = key
    if "/" in key:
        prefix, _, name = key.partition("/")
        if not prefix or len(prefix) > 253 or _DNS1123_SUBDOMAIN_RE.fullmatch(prefix) is None:
            return False
    return 0 < len(name) <= 63 and _QUALIFIED_NAME_RE.fullmatch(name) is not None


@lru_cache(maxsize=4096)
def requirement_errors(r: Requirement, path: str = "") -> tuple[str, ...]:
    """Why labels.NewRequirement would reject a node selector matchExpression (empty when
    valid). The API server validates only the key and the number of values, so a pod can
    carry an invalid value (or a non-integer Gt/Lt value); the scheduler then treats the
    whole term as matching nothing. Messages follow field.Error formatting (best effort)."""
    errs: list[str] = []
    if not _qualified_name_ok(r.key):
        errs.append(f"{path}.key: Invalid value: {go_quote(r.key)}: name part must consist of alphanumeric characters")
    if r.operator in ("Gt", "Lt"):
        for i, v in enumerate(r.values):
            if parse_int64(v) is None:
                errs.append(f"{path}.values[{i}]: Invalid value: {go_quote(v)}: "
                            "for 'Gt', 'Lt' operators, the value must be an integer")
    for i, v in enumerate(r.values):
        # validateLabelValue reports at values[i][<key>].
        problems: list[str] = []
        if len(v) > 63:
            problems.append("must be no more than 63 characters")
        if _LABEL_VALUE_RE.fullmatch(v) is None:
            problems.append(_LABEL_VALUE_ERR)
        if problems:
            errs.append(f"{path}.values[{i}][{r.key}]: Invalid value: {go_quote(v)}: {'; '.join(problems)}")
    return tuple(errs)


def term_parse_errors(term: NodeSelectorTerm, path: str = "") -> tuple[str, ...]:
    """newNodeSelectorTerm's parse errors for a term (matchFields are validated when the
    manifest is parsed, so only matchExpressions can fail here)."""
    errs: list[str] = []
    for j, r in enumerate(term.match_expressions):
        errs.extend(requirement_errors(r, f"{path}.matchExpressions[{j}]"))
    return tuple(errs)


def aggregate_error_message(errs: tuple[str, ...] | list[str]) -> str:
    """utilerrors.NewAggregate(...).Error(): one message alone, several as "[a, b]"."""
    if len(errs) == 1:
        return errs[0]
    return "[" + ", ".join(errs) + "]"


@lru_cache(maxsize=4096)
def _term_invalid(term: NodeSelectorTerm) -> bool:
    return bool(term_parse_errors(term))


def _fields_match(reqs: tuple[Requirement, ...], node_name: str) -> bool:
    # Only metadata.name is a valid field key (validated at parse time). extractNodeFields
    # yields no field for a node without a name, and then matchFields are not checked.
    if not reqs or not node_name:
        return True
    fields = {"metadata.name": node_name}
    for r in reqs:
        if not r.matches(fields):
            return False
    return True


def term_matches(term: NodeSelectorTerm, labels: Mapping[str, str], node_name: str) -> bool:
    """A non-empty term matches when all its expressions and fields match; a term with
    parse errors (nodeSelectorTerm.parseErrs) never matches."""
    if term.match_expressions and _term_invalid(term):
        return False
    for r in term.match_expressions:
        # labels.Requirement.Matches (Gt/Lt parse both sides with strconv.ParseInt).
        if not r.matches(labels):
            return False
    return _fields_match(term.match_fields, node_name)


def node_selector_matches_labels(selector: NodeSelector, labels: Mapping[str, str], node_name: str) -> bool:
    """node_selector_matches on a node given by its labels and name."""
    for term in selector.terms:
        if term.is_empty():
            continue
        if term_matches(term, labels, node_name):
            return True
    return False


def node_selector_matches(selector: NodeSelector, node: Node) -> bool:
    """nodeaffinity.NodeSelector.Match: OR of terms; empty terms are dropped, and a
    selector with no remaining term matches nothing."""
    return node_selector_matches_labels(selector, node.meta.labels, node.meta.name)


def selector_has_match_fields(selector: NodeSelector | None) -> bool:
    """True when the outcome may depend on the node's name (not only on its labels)."""
    return selector is not None and any(t.match_fields for t in selector.terms)


class RequiredNodeAffinity:
    """nodeaffinity.RequiredNodeAffinity: the pod's nodeSelector AND its required node
    affinity terms (GetRequiredNodeAffinity)."""

    __slots__ = ("label_selector", "node_selector")

    def __init__(self, pod: Pod) -> None:
        self.label_selector: Mapping[str, str] | None = pod.node_selector or None
        aff = pod.affinity
        na = aff.node_affinity if aff is not None else None
        self.node_selector: NodeSelector | None = na.required if na is not None else None

    def match_labels(self, labels: Mapping[str, str], node_name: str) -> bool:
        """match() on a node given by its labels and name."""
        if self.label_selector:
            for k, v in self.label_selector.items():
                if labels.get(k) != v:
                    return False
        if self.node_selector is not None:
            return node_selector_matches_labels(self.node_selector, labels, node_name)
        return True

    def match(self, node: Node) -> bool:
        return self.match_labels(node.meta.labels, node.meta.name)

    @property
    def uses_node_name(self) -> bool:
        """True when the result may depend on the node's name (matchFields present)."""
        return selector_has_match_fields(self.node_selector)
