"""Label selectors (metav1.LabelSelector), requirements (labels.Requirement.Matches, including
the node-selector-only Gt/Lt operators) and their validation errors."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.errors import FieldError
from kubesched.objects import LabelSelector, Requirement
from kubesched.objects.labels import (
    LABEL_OPERATORS,
    NODE_SELECTOR_OPERATORS,
    parse_label_selector,
    parse_requirement,
    parse_string_map,
)
from kubesched.objects.parse import parse_node_selector, parse_node_selector_term

LABELS = {"app": "web", "tier": "front", "gen": "3", "empty": ""}


# ------------------------------------------------------------------ requirements
@pytest.mark.parametrize(
    "req, labels, expected",
    [
        pytest.param(Requirement("app", "In", ("web", "db")), LABELS, True, id="In matches one of the values"),
        pytest.param(Requirement("app", "In", ("db",)), LABELS, False, id="In fails for another value"),
        pytest.param(Requirement("zone", "In", ("a",)), LABELS, False, id="In fails when the key is missing"),
        pytest.param(Requirement("empty", "In", ("",)), LABELS, True, id="In matches an empty value"),
        pytest.param(Requirement("app", "NotIn", ("db",)), LABELS, True, id="NotIn matches another value"),
        pytest.param(Requirement("app", "NotIn", ("web",)), LABELS, False, id="NotIn fails for a listed value"),
        pytest.param(Requirement("zone", "NotIn", ("a",)), LABELS, True, id="NotIn matches when the key is missing"),
        pytest.param(Requirement("app", "Exists"), LABELS, True, id="Exists matches a present key"),
        pytest.param(Requirement("empty", "Exists"), LABELS, True, id="Exists matches a key with an empty value"),
        pytest.param(Requirement("zone", "Exists"), LABELS, False, id="Exists fails for a missing key"),
        pytest.param(Requirement("zone", "DoesNotExist"), LABELS, True, id="DoesNotExist matches a missing key"),
        pytest.param(Requirement("app", "DoesNotExist"), LABELS, False, id="DoesNotExist fails for a present key"),
        pytest.param(Requirement("app", "Unknown", ("web",)), LABELS, False, id="an unknown operator matches nothing"),
    ],
)
def test_requirement_matches(req: Requirement, labels: dict[str, str], expected: bool) -> None:
    assert req.matches(labels) is expected


# labels.Requirement.Matches for Gt/Lt: both sides through strconv.ParseInt(s, 10, 64).
@pytest.mark.parametrize(
    "op, value, label, expected",
    [
        pytest.param("Gt", "1", "2", True, id="2 is greater than 1"),
        pytest.param("Gt", "1", "1", False, id="1 is not greater than 1"),
        pytest.param("Gt", "1", "0", False, id="0 is not greater than 1"),
        pytest.param("Lt", "1", "0", True, id="0 is less than 1"),
        pytest.param("Lt", "1", "1", False, id="1 is not less than 1"),
        pytest.param("Lt", "1", "2", False, id="2 is not less than 1"),
        pytest.param("Gt", "-5", "-4", True, id="negative numbers compare as numbers"),
        pytest.param("Lt", "10", "9", True, id="numbers compare numerically, not as strings"),
        pytest.param("Gt", "9", "10", True, id="10 is greater than 9 although it sorts first as text"),
        pytest.param("Gt", "1", "+2", True, id="a plus sign is accepted as ParseInt accepts it"),
        pytest.param("Gt", "+1", "2", True, id="a plus sign in the value is accepted too"),
        pytest.param("Gt", "1", "007", True, id="leading zeros are decimal, not octal"),
        pytest.param("Gt", "1", "1_0", False, id="an underscore is not a digit for ParseInt (Python int() takes it)"),
        pytest.param("Gt", "1_0", "20", False, id="an underscore in the value makes the requirement match nothing"),
        pytest.param("Gt", "1", " 5", False, id="a label with a leading blank is not an integer"),
        pytest.param("Gt", "1", "5 ", False, id="a label with a trailing blank is not an integer"),
        pytest.param("Gt", "1", "\u0663", False, id="a non-ASCII digit is not an integer"),
        pytest.param("Gt", "1", "0x10", False, id="a hexadecimal label is not an integer"),
        pytest.param("Gt", "1", "1.5", False, id="a decimal label is not an integer"),
        pytest.param("Gt", "1", "abc", False, id="a non-numeric label matches neither Gt"),
        pytest.param("Lt", "1", "abc", False, id="nor Lt"),
        pytest.param("Gt", "1", "", False, id="an empty label is not an integer"),
        pytest.param("Gt", "0", "9223372036854775807", True, id="the largest int64 is accepted"),
        pytest.param("Gt", "0", "9223372036854775808", False, id="a label beyond int64 is out of range"),
        pytest.param("Lt", "0", "-9223372036854775808", True, id="the smallest int64 is accepted"),
        pytest.param("Lt", "0", "-9223372036854775809", False, id="a label below int64 is out of range"),
        pytest.param(
            "Lt", "99999999999999999999", "1", False, id="a value beyond int64 makes the requirement match nothing"
        ),
    ],
)
def test_gt_lt(op: str, value: str, label: str, expected: bool) -> None:
    assert Requirement("gen", op, (value,)).matches({"gen": label}) is expected


@pytest.mark.parametrize(
    "req",
    [
        pytest.param(Requirement("missing", "Gt", ("1",)), id="Gt fails when the key is missing"),
        pytest.param(Requirement("missing", "Lt", ("1",)), id="Lt fails when the key is missing"),
        pytest.param(Requirement("gen", "Gt", ()), id="Gt with no value matches nothing"),
        pytest.param(Requirement("gen", "Gt", ("1", "2")), id="Gt with two values matches nothing"),
    ],
)
def test_gt_lt_without_a_single_value_or_key(req: Requirement) -> None:
    assert not req.matches(LABELS)


# ------------------------------------------------------------------ selectors
@pytest.mark.parametrize(
    "selector, expected",
    [
        pytest.param(LabelSelector(), True, id="an empty selector matches everything"),
        pytest.param(LabelSelector({"app": "web"}), True, id="matchLabels matches an equal label"),
        pytest.param(LabelSelector({"app": "db"}), False, id="matchLabels fails for another value"),
        pytest.param(LabelSelector({"zone": ""}), False, id="matchLabels with an empty value needs the key"),
        pytest.param(LabelSelector({"empty": ""}), True, id="matchLabels matches an empty value that is set"),
        pytest.param(LabelSelector({"app": "web", "tier": "front"}), True, id="all matchLabels must match"),
        pytest.param(
            LabelSelector({"app": "web", "tier": "back"}), False, id="one failing matchLabel fails the selector"
        ),
        pytest.param(
            LabelSelector({}, (Requirement("app", "In", ("web",)), Requirement("gen", "Exists"))),
            True,
            id="all matchExpressions must match",
        ),
        pytest.param(
            LabelSelector({}, (Requirement("app", "In", ("web",)), Requirement("gen", "DoesNotExist"))),
            False,
            id="one failing matchExpression fails the selector",
        ),
        pytest.param(
            LabelSelector({"app": "web"}, (Requirement("tier", "NotIn", ("front",)),)),
            False,
            id="matchLabels and matchExpressions are ANDed",
        ),
    ],
)
def test_selector_matches(selector: LabelSelector, expected: bool) -> None:
    assert selector.matches(LABELS) is expected


def test_is_empty() -> None:
    assert LabelSelector().is_empty()
    assert not LabelSelector({"a": "b"}).is_empty()
    assert not LabelSelector({}, (Requirement("a", "Exists"),)).is_empty()


@pytest.mark.parametrize(
    "keys, operator, expected",
    [
        pytest.param(
            ("app",), "In", (Requirement("app", "In", ("web",)),), id="matchLabelKeys adds key In [pod value]"
        ),
        pytest.param(
            ("app",),
            "NotIn",
            (Requirement("app", "NotIn", ("web",)),),
            id="mismatchLabelKeys adds key NotIn [pod value]",
        ),
        pytest.param(("zone",), "In", (), id="a key the pod does not have adds nothing"),
        pytest.param(
            ("app", "zone", "tier"),
            "In",
            (Requirement("app", "In", ("web",)), Requirement("tier", "In", ("front",))),
            id="only the keys the pod has are added, in order",
        ),
    ],
)
def test_with_label_values(keys: tuple[str, ...], operator: str, expected: tuple[Requirement, ...]) -> None:
    base = LabelSelector({"x": "y"}, (Requirement("gen", "Exists"),))
    got = base.with_label_values(LABELS, keys, operator)
    assert got.match_labels == {"x": "y"}
    assert got.match_expressions == (Requirement("gen", "Exists"),) + expected
    if not expected:
        assert got is base


# ------------------------------------------------------------------ parsing
@pytest.mark.parametrize(
    "raw, expected",
    [
        pytest.param(None, None, id="an absent selector is None, not empty"),
        pytest.param({}, LabelSelector(), id="an empty selector object is the empty selector"),
        pytest.param({"matchLabels": None, "matchExpressions": None}, LabelSelector(), id="null lists read as empty"),
        pytest.param({"matchLabels": {"a": "b"}}, LabelSelector({"a": "b"}), id="matchLabels are read"),
        pytest.param(
            {"matchLabels": {"v": 1}}, LabelSelector({"v": "1"}), id="a YAML number label value is read as text"
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "In", "values": ["x", "y"]}]},
            LabelSelector({}, (Requirement("a", "In", ("x", "y")),)),
            id="an In expression keeps its values",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "NotIn", "values": [1]}]},
            LabelSelector({}, (Requirement("a", "NotIn", ("1",)),)),
            id="numeric values are read as text",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "Exists"}]},
            LabelSelector({}, (Requirement("a", "Exists"),)),
            id="an Exists expression has no values",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "DoesNotExist", "values": []}]},
            LabelSelector({}, (Requirement("a", "DoesNotExist"),)),
            id="an empty values list is allowed for DoesNotExist",
        ),
    ],
)
def test_parse_label_selector(raw: Any, expected: LabelSelector | None) -> None:
    assert parse_label_selector(raw, "spec.selector") == expected


@pytest.mark.parametrize(
    "raw, path, message",
    [
        pytest.param("app=web", "spec.selector", "must be a label selector object", id="a string selector is rejected"),
        pytest.param(
            {"matchLabels": ["a"]},
            "spec.selector.matchLabels",
            "must be a map of strings, got list",
            id="matchLabels must be a map",
        ),
        pytest.param(
            {"matchLabels": {"a": True}},
            "spec.selector.matchLabels.a",
            "must be a string, got bool",
            id="a boolean label value is rejected",
        ),
        pytest.param(
            {"matchLabels": {1: "a"}},
            "spec.selector.matchLabels",
            "keys must be strings, got 1",
            id="a numeric label key is rejected",
        ),
        pytest.param(
            {"matchExpressions": {"key": "a"}},
            "spec.selector.matchExpressions",
            "must be a list",
            id="matchExpressions must be a list",
        ),
        pytest.param(
            {"matchExpressions": ["a"]},
            "spec.selector.matchExpressions[0]",
            "must be an object with key, operator and values",
            id="an expression must be an object",
        ),
        pytest.param(
            {"matchExpressions": [{"operator": "Exists"}]},
            "spec.selector.matchExpressions[0].key",
            "Required value",
            id="an expression needs a key",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]},
            "spec.selector.matchExpressions[0].operator",
            "Unsupported value: 'Gt': supported values: In, NotIn, Exists, DoesNotExist",
            id="Gt is not a label selector operator",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a"}]},
            "spec.selector.matchExpressions[0].operator",
            "Unsupported value: None: supported values: In, NotIn, Exists, DoesNotExist",
            id="an expression needs an operator",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "in", "values": ["x"]}]},
            "spec.selector.matchExpressions[0].operator",
            "Unsupported value: 'in': supported values: In, NotIn, Exists, DoesNotExist",
            id="operators are case-sensitive",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "In"}]},
            "spec.selector.matchExpressions[0].values",
            "must be specified when `operator` is 'In' or 'NotIn'",
            id="In needs values",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "NotIn", "values": []}]},
            "spec.selector.matchExpressions[0].values",
            "must be specified when `operator` is 'In' or 'NotIn'",
            id="NotIn needs values",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
            "spec.selector.matchExpressions[0].values",
            "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            id="Exists forbids values",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "In", "values": "x"}]},
            "spec.selector.matchExpressions[0].values",
            "must be a list of strings",
            id="values must be a list",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "In", "values": [["x"]]}]},
            "spec.selector.matchExpressions[0].values[0]",
            "must be a string, got list",
            id="a value must be a string",
        ),
    ],
)
def test_parse_label_selector_errors(raw: Any, path: str, message: str) -> None:
    with pytest.raises(FieldError) as exc:
        parse_label_selector(raw, "spec.selector")
    assert (exc.value.path, exc.value.message) == (path, message)


@pytest.mark.parametrize(
    "raw, path, message",
    [
        pytest.param(
            {"key": "a", "operator": "Gt", "values": ["1", "2"]},
            "t.matchExpressions[0].values",
            "must be specified single value when `operator` is 'Lt' or 'Gt'",
            id="Gt needs exactly one value",
        ),
        pytest.param(
            {"key": "a", "operator": "Lt"},
            "t.matchExpressions[0].values",
            "must be specified single value when `operator` is 'Lt' or 'Gt'",
            id="Lt needs a value",
        ),
        pytest.param(
            {"key": "a", "operator": "Exists", "values": ["1"]},
            "t.matchExpressions[0].values",
            "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            id="Exists forbids values in a node selector too",
        ),
        pytest.param(
            {"key": "a", "operator": "Equals", "values": ["1"]},
            "t.matchExpressions[0].operator",
            "Unsupported value: 'Equals': supported values: In, NotIn, Exists, DoesNotExist, Gt, Lt",
            id="an unknown node selector operator is rejected",
        ),
    ],
)
def test_node_selector_requirement_errors(raw: dict[str, Any], path: str, message: str) -> None:
    with pytest.raises(FieldError) as exc:
        parse_node_selector_term({"matchExpressions": [raw]}, "t")
    assert (exc.value.path, exc.value.message) == (path, message)


@pytest.mark.parametrize(
    "raw, expected",
    [
        pytest.param(
            {"key": "gen", "operator": "Gt", "values": ["2"]}, True, id="a node selector Gt is parsed and matches"
        ),
        pytest.param({"key": "gen", "operator": "Lt", "values": [4]}, True, id="a numeric Lt value is read as text"),
        pytest.param(
            {"key": "gen", "operator": "Gt", "values": ["abc"]},
            False,
            id="a non-integer Gt value is accepted by validation and matches nothing",
        ),
    ],
)
def test_node_selector_gt_lt(raw: dict[str, Any], expected: bool) -> None:
    term = parse_node_selector_term({"matchExpressions": [raw]}, "t")
    assert term.match_expressions[0].operator in NODE_SELECTOR_OPERATORS
    assert term.match_expressions[0].matches(LABELS) is expected


def test_node_selector_match_fields() -> None:
    sel = parse_node_selector(
        {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}, "s"
    )
    assert sel is not None
    assert sel.terms[0].match_fields == (Requirement("metadata.name", "In", ("n1",)),)
    with pytest.raises(FieldError) as exc:
        parse_node_selector(
            {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.labels", "operator": "In", "values": ["n1"]}]}]},
            "s",
        )
    assert exc.value.path == "s.nodeSelectorTerms[0].matchFields[0].key"
    with pytest.raises(FieldError) as exc:
        parse_node_selector(
            {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a", "b"]}]}
                ]
            },
            "s",
        )
    assert exc.value.path == "s.nodeSelectorTerms[0].matchFields[0].values"


def test_operator_sets() -> None:
    assert LABEL_OPERATORS == ("In", "NotIn", "Exists", "DoesNotExist")
    assert set(NODE_SELECTOR_OPERATORS) == set(LABEL_OPERATORS) | {"Gt", "Lt"}
    with pytest.raises(FieldError):
        parse_requirement({"key": "a", "operator": "Gt", "values": ["1"]}, "p", LABEL_OPERATORS)


@pytest.mark.parametrize(
    "raw, expected",
    [
        pytest.param(None, {}, id="an absent map is empty"),
        pytest.param({"a": "b"}, {"a": "b"}, id="strings are kept"),
        pytest.param({"a": 1, "b": 1.5}, {"a": "1", "b": "1.5"}, id="YAML numbers are read as text"),
        pytest.param({"a": None}, {"a": ""}, id="a null value is the empty string as the API server decodes it"),
    ],
)
def test_parse_string_map(raw: Any, expected: dict[str, str]) -> None:
    assert parse_string_map(raw, "metadata.labels") == expected
