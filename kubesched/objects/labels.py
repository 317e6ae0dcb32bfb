"""Label selectors (metav1.LabelSelector) and node selector requirements.

A ``None`` selector and an empty selector differ in Kubernetes: callers decide what ``None``
means (for pod affinity it matches nothing); an empty :class:`LabelSelector` matches
everything (metav1.LabelSelectorAsSelector).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubesched.errors import FieldError

LABEL_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
NODE_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")

_GO_INT = re.compile(r"[+-]?[0-9]+")


def parse_int64(s: str) -> int | None:
    """strconv.ParseInt(s, 10, 64): an optional sign and ASCII digits, within int64 (Python's
    int() would also take "1_0", blanks, non-ASCII digits and unbounded values)."""
    if _GO_INT.fullmatch(s) is None:
        return None
    v = int(s)
    return v if -(2**63) <= v < 2**63 else None


@dataclass(frozen=True, slots=True)
class Requirement:
    """One ``key operator values`` requirement (labels.Requirement)."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op == "In":
            return self.key in labels and labels[self.key] in self.values
        if op == "NotIn":
            return self.key not in labels or labels[self.key] not in self.values
        if op == "Exists":
            return self.key in labels
        if op == "DoesNotExist":
            return self.key not in labels
        if op not in ("Gt", "Lt"):
            return False
        # Gt / Lt (node selectors only): exactly one value, and both sides must parse with
        # strconv.ParseInt(s, 10, 64) (labels.Requirement.Matches).
        if self.key not in labels or len(self.values) != 1:
            return False
        have = parse_int64(labels[self.key])
        want = parse_int64(self.values[0])
        if have is None or want is None:
            return False
        return have > want if op == "Gt" else have < want


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """metav1.LabelSelector: matchLabels AND every matchExpression."""

    match_labels: Mapping[str, str] = field(default_factory=dict)
    match_expressions: tuple[Requirement, ...] = ()

    def is_empty(self) -> bool:
        return not self.match_labels and not self.match_expressions

    def matches(self, labels: Mapping[str, str]) -> bool:
        for k, v in self.match_labels.items():
            if labels.get(k) != v:
                return False
        for r in self.match_expressions:
            if not r.matches(labels):
                return False
        return True

    def with_label_values(self, labels: Mapping[str, str], keys: tuple[str, ...], operator: str) -> LabelSelector:
        """Add ``key In/NotIn [pod's value]`` for each key the pod has (matchLabelKeys)."""
        extra = tuple(Requirement(k, operator, (labels[k],)) for k in keys if k in labels)
        if not extra:
            return self
        return LabelSelector(self.match_labels, self.match_expressions + extra)


def _str(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise FieldError(path, f"must be a string, got {type(value).__name__}")
    return value


def parse_string_map(raw: Any, path: str) -> dict[str, str]:
    """A map of string to string (labels, nodeSelector, annotations)."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise FieldError(path, f"must be a map of strings, got {type(raw).__name__}")
    if type(raw) is dict:
        # The usual map (JSON's, or YAML's without numbers): strings only, copied as it is.
        for k, v in raw.items():
            if type(k) is not str or type(v) is not str:
                break
        else:
            return dict(raw)
    out: dict[str, str] = {}
    for k, v in raw.items():
        if not isinstance(k, str):
            raise FieldError(path, f"keys must be strings, got {k!r}")
        if v is None:  # Go's encoding/json leaves a map element's zero value for null: ""
            v = ""
        if isinstance(v, bool):
            raise FieldError(f"{path}.{k}", "must be a string, got bool")
        if isinstance(v, (int, float)):
            v = str(v)
        out[k] = _str(v, f"{path}.{k}")
    return out


def parse_requirement(raw: Any, path: str, operators: tuple[str, ...]) -> Requirement:
    if not isinstance(raw, Mapping):
        raise FieldError(path, "must be an object with key, operator and values")
    key = raw.get("key")
    if not isinstance(key, str) or not key:
        raise FieldError(f"{path}.key", "Required value")
    op = raw.get("operator")
    if op not in operators:
        raise FieldError(f"{path}.operator", f"Unsupported value: {op!r}: supported values: {', '.join(operators)}")
    values_raw = raw.get("values") or []
    if not isinstance(values_raw, list):
        raise FieldError(f"{path}.values", "must be a list of strings")
    values = tuple(str(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else _str(v, f"{path}.values[{i}]")
                   for i, v in enumerate(values_raw))
    if op in ("In", "NotIn") and not values:
        raise FieldError(f"{path}.values", "must be specified when `operator` is 'In' or 'NotIn'")
    if op in ("Exists", "DoesNotExist") and values:
        raise FieldError(f"{path}.values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'")
    if op in ("Gt", "Lt"):
        if len(values) != 1:
            raise FieldError(f"{path}.values", "must be specified single value when `operator` is 'Lt' or 'Gt'")
    return Requirement(key, op, values)


def parse_label_selector(raw: Any, path: str) -> LabelSelector | None:
    """metav1.LabelSelector, or None when absent/null."""
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise FieldError(path, "must be a label selector object")
    labels = parse_string_map(raw.get("matchLabels"), f"{path}.matchLabels")
    exprs_raw = raw.get("matchExpressions") or []
    if not isinstance(exprs_raw, list):
        raise FieldError(f"{path}.matchExpressions", "must be a list")
    exprs = tuple(parse_requirement(e, f"{path}.matchExpressions[{i}]", LABEL_OPERATORS) for i, e in enumerate(exprs_raw))
    return LabelSelector(labels, exprs)
