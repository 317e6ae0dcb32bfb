"""resource.Quantity parsing and rounding, checked against apimachinery's quantity_test.go
(TestQuantityParse, TestParseQuantityString, TestQuantityParseEmit, TestQuantityRoundUp,
TestInterpretExponentInt32Bounds) plus the scheduler's MilliValue/Value use."""

from __future__ import annotations

import time
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesched.errors import FieldError
from kubesched.objects.quantity import (
    ERR_FORMAT_WRONG,
    ERR_SUFFIX,
    base_value,
    milli_value,
    parse_quantity,
    scheduler_units,
)

MAX = 2**63 - 1  # resource.maxAllowed
N = Fraction(1, 10**9)  # one nano-unit
KI, MI, GI, TI, PI, EI = (2 ** (10 * k) for k in range(1, 7))


def dec(i: int, exponent: int) -> Fraction:
    """quantity_test.go's decQuantity(i, exponent): i × 10^exponent."""
    return Fraction(i) * Fraction(10) ** exponent


# (input, expected) — TestQuantityParse's table, in its order.
UPSTREAM_PARSE = [
    ("0", dec(0, 0)),
    ("0n", dec(0, 0)),
    ("0u", dec(0, 0)),
    ("0m", dec(0, 0)),
    ("0Ki", dec(0, 0)),
    ("0k", dec(0, 0)),
    ("0Mi", dec(0, 0)),
    ("0M", dec(0, 0)),
    ("0Gi", dec(0, 0)),
    ("0G", dec(0, 0)),
    ("0Ti", dec(0, 0)),
    ("0T", dec(0, 0)),
    # Quantity less numbers are allowed
    ("1", dec(1, 0)),
    # Binary suffixes
    ("1Ki", 1 * KI),
    ("8Ki", 8 * KI),
    ("7Mi", 7 * MI),
    ("6Gi", 6 * GI),
    ("5Ti", 5 * TI),
    ("4Pi", 4 * PI),
    ("3Ei", 3 * EI),
    ("10Ti", 10 * TI),
    ("100Ti", 100 * TI),
    # Decimal suffixes
    ("5n", dec(5, -9)),
    ("4u", dec(4, -6)),
    ("3m", dec(3, -3)),
    ("9", dec(9, 0)),
    ("8k", dec(8, 3)),
    ("50k", dec(5, 4)),
    ("7M", dec(7, 6)),
    ("6G", dec(6, 9)),
    ("5T", dec(5, 12)),
    ("40T", dec(4, 13)),
    ("300T", dec(3, 14)),
    ("2P", dec(2, 15)),
    ("1E", dec(1, 18)),
    # Decimal exponents
    ("1E-3", dec(1, -3)),
    ("1e3", dec(1, 3)),
    ("1E6", dec(1, 6)),
    ("1e9", dec(1, 9)),
    ("1E12", dec(1, 12)),
    ("1e15", dec(1, 15)),
    ("1E18", dec(1, 18)),
    # Nonstandard but still parsable
    ("1e14", dec(1, 14)),
    ("1e13", dec(1, 13)),
    ("100.035k", dec(100035, 0)),
    # Things that look like floating point
    ("0.001", dec(1, -3)),
    ("0.0005k", dec(5, -1)),
    ("0.005", dec(5, -3)),
    ("0.05", dec(5, -2)),
    ("0.5", dec(5, -1)),
    ("0.00050k", dec(5, -1)),
    ("0.00500", dec(5, -3)),
    ("0.05000", dec(5, -2)),
    ("0.50000", dec(5, -1)),
    ("0.5e0", dec(5, -1)),
    ("0.5e-1", dec(5, -2)),
    ("0.5e-2", dec(5, -3)),
    ("10.035M", dec(10035, 3)),
    ("1.2e3", dec(12, 2)),
    ("1.3E+6", dec(13, 5)),
    ("1.40e9", dec(14, 8)),
    ("1.53E12", dec(153, 10)),
    ("1.6e15", dec(16, 14)),
    ("1.7E18", dec(17, 17)),
    ("9.01", dec(901, -2)),
    ("8.1k", dec(81, 2)),
    ("7.123456M", dec(7123456, 0)),
    ("6.987654321G", dec(6987654321, 0)),
    ("5.444T", dec(5444, 9)),
    ("40.1T", dec(401, 11)),
    ("300.2T", dec(3002, 11)),
    ("2.5P", dec(25, 14)),
    ("1.01E", dec(101, 16)),
    # Things that saturate/round
    ("3.001n", dec(4, -9)),
    ("1.1E-9", dec(2, -9)),
    ("0.0000000001", dec(1, -9)),
    ("0.0000000005", dec(1, -9)),
    ("0.00000000050", dec(1, -9)),
    ("0.5e-9", dec(1, -9)),
    ("0.9n", dec(1, -9)),
    ("0.00000012345", dec(124, -9)),
    ("0.00000012354", dec(124, -9)),
    ("9Ei", Fraction(MAX)),
    ("9223372036854775807Ki", Fraction(MAX)),
    # We'll accept fractional binary stuff, too.
    ("100.035Ki", dec(10243584, -2)),
    ("0.5Mi", Fraction(MI, 2)),
    ("0.05Gi", dec(536870912, -1)),
    ("0.025Ti", dec(274877906944, -1)),
    # Things written by trolls
    ("0.000000000001Ki", dec(2, -9)),
    (".001", dec(1, -3)),
    (".0001k", dec(100, -3)),
    ("1.", dec(1, 0)),
    ("1.G", dec(1, 9)),
]


@pytest.mark.parametrize("sign", ["", "+", "-"], ids=["unsigned", "with an explicit plus", "negated"])
@pytest.mark.parametrize(
    "text, expected", UPSTREAM_PARSE, ids=[f"{t!r} parses as upstream's table says" for t, _ in UPSTREAM_PARSE]
)
def test_upstream_parse_table(text: str, expected: Fraction, sign: str) -> None:
    got = parse_quantity(sign + text)
    assert got == (-expected if sign == "-" else expected)


@pytest.mark.parametrize(
    "text, expected",
    [
        pytest.param("12E", Fraction(MAX), id="12E is capped at 2^63-1 (upstream's int64 fast path keeps 12e18)"),
        pytest.param("1e2147483647", Fraction(MAX), id="the largest accepted exponent caps without building 10^(2^31)"),
        pytest.param(
            "1e-2147483647", N, id="the smallest accepted exponent rounds up to 1n without building 10^(2^31)"
        ),
        pytest.param("0e2147483647", Fraction(0), id="zero with a huge exponent is zero"),
        pytest.param("-1e2147483647", -Fraction(MAX), id="a huge negative value is capped at -(2^63-1)"),
        pytest.param("1e20", Fraction(MAX), id="1e20 exceeds int64 and is capped"),
        pytest.param("9223372036854775807", Fraction(MAX), id="2^63-1 itself is kept"),
        pytest.param("9223372036854775808", Fraction(MAX), id="2^63 is capped"),
        pytest.param(
            "0.000000000000000000000000001e27", Fraction(1), id="many fraction digits with a large exponent stay exact"
        ),
        pytest.param(
            "1000000000000000000000e-20", Fraction(10), id="many integer digits with a negative exponent stay exact"
        ),
    ],
)
def test_bounds_and_extreme_exponents(text: str, expected: Fraction) -> None:
    start = time.monotonic()
    assert parse_quantity(text) == expected
    assert time.monotonic() - start < 1.0


@pytest.mark.parametrize(
    "text",
    [".", "-.", "+.", "+", "-", "m", "Ki", "k", "e3", "E-3", "0.", "00", "-0", "+0Ki", "0.0e0"],
    ids=lambda t: f"{t!r} has an empty or zero number and reads as 0 (parseQuantityString)",
)
def test_empty_number_reads_as_zero(text: str) -> None:
    assert parse_quantity(text) == 0


# (input, expected error): TestQuantityParse's invalid list plus TestInterpretExponentInt32Bounds.
INVALID = [
    ("", ERR_FORMAT_WRONG),
    ("1.1.M", ERR_FORMAT_WRONG),
    ("1+1.0M", ERR_FORMAT_WRONG),
    ("0.1mi", ERR_SUFFIX),
    ("0.1am", ERR_FORMAT_WRONG),
    ("aoeu", ERR_FORMAT_WRONG),
    (".5i", ERR_SUFFIX),
    ("1i", ERR_SUFFIX),
    ("-3.01i", ERR_SUFFIX),
    ("-3.01e-", ERR_SUFFIX),
    ("1e4294967297", ERR_SUFFIX),
    ("1E2147483648", ERR_SUFFIX),
    ("1E-2147483648", ERR_SUFFIX),
    ("1E9223372036854775807", ERR_SUFFIX),
    ("1E9223372036854775808", ERR_SUFFIX),
    ("1e99999999999999999999999", ERR_SUFFIX),
    ("1K", ERR_SUFFIX),
    ("1e", ERR_SUFFIX),
    ("1ee3", ERR_SUFFIX),
    ("1kk", ERR_SUFFIX),
    ("1Mi3", ERR_SUFFIX),
    ("1e+-3", ERR_FORMAT_WRONG),
    ("1e3.5", ERR_FORMAT_WRONG),
    ("1x", ERR_FORMAT_WRONG),
    ("- 1", ERR_FORMAT_WRONG),
    ("1 Gi", ERR_FORMAT_WRONG),
    ("1_000", ERR_FORMAT_WRONG),
    ("0x10", ERR_FORMAT_WRONG),
    ("\u0663", ERR_FORMAT_WRONG),
    ("1\u0663", ERR_FORMAT_WRONG),
    ("--1", ERR_SUFFIX),
    ("1e_3", ERR_FORMAT_WRONG),
    ("   ", ERR_FORMAT_WRONG),
]


@pytest.mark.parametrize("text, error", INVALID, ids=[f"{t!r} is rejected" for t, _ in INVALID])
def test_invalid_strings_are_rejected(text: str, error: str) -> None:
    with pytest.raises(FieldError) as exc:
        parse_quantity(text, "spec.containers[0].resources.requests.cpu")
    assert exc.value.path == "spec.containers[0].resources.requests.cpu"
    assert exc.value.message == f'Invalid value: "{text}": {error}'


@pytest.mark.parametrize(
    "value, expected",
    [
        pytest.param(" 1", Fraction(1), id="a leading blank is trimmed as Quantity.UnmarshalJSON does"),
        pytest.param("1Gi\n", Fraction(GI), id="a trailing newline is trimmed"),
        pytest.param(3, Fraction(3), id="a YAML integer is a quantity"),
        pytest.param(0, Fraction(0), id="a YAML zero is zero"),
        pytest.param(-2, Fraction(-2), id="a negative YAML integer keeps its sign"),
        pytest.param(0.5, Fraction(1, 2), id="a YAML float is read from its shortest text"),
        pytest.param(0.1, Fraction(1, 10), id="0.1 is exactly one tenth, not the binary float"),
        pytest.param(1e-10, N, id="a tiny YAML float rounds up to 1n"),
        pytest.param(1.5e20, Fraction(MAX), id="a huge YAML float is capped"),
        pytest.param(2**70, Fraction(MAX), id="a huge YAML integer is capped"),
    ],
)
def test_yaml_values(value: object, expected: Fraction) -> None:
    assert parse_quantity(value) == expected


@pytest.mark.parametrize(
    "value, message",
    [
        pytest.param(True, f"Invalid value: true: {ERR_FORMAT_WRONG}", id="a YAML boolean is rejected"),
        pytest.param(float("nan"), f"Invalid value: nan: {ERR_FORMAT_WRONG}", id="NaN is rejected"),
        pytest.param(float("inf"), f"Invalid value: inf: {ERR_FORMAT_WRONG}", id="infinity is rejected"),
        pytest.param(None, "a quantity must be a string or number, got NoneType", id="null is rejected"),
        pytest.param([1], "a quantity must be a string or number, got list", id="a list is rejected"),
        pytest.param({"a": 1}, "a quantity must be a string or number, got dict", id="a map is rejected"),
    ],
)
def test_non_quantity_values_are_rejected(value: object, message: str) -> None:
    with pytest.raises(FieldError) as exc:
        parse_quantity(value, "x")
    assert exc.value.message == message


@pytest.mark.parametrize(
    "text, expected",
    [
        # TestQuantityParseEmit: the value behind each canonical form.
        ("1Ki", Fraction(1024)),
        ("1Mi", Fraction(MI)),
        ("1Gi", Fraction(GI)),
        ("1024Mi", Fraction(GI)),
        ("1000M", Fraction(10**9)),
        (".001Ki", dec(1024, -3)),
        (".000001Ki", dec(1024, -6)),
        (".000000001Ki", dec(1024, -9)),
        (".000000000001Ki", dec(2, -9)),
    ],
    ids=lambda v: str(v),
)
def test_upstream_parse_emit_values(text: str, expected: Fraction) -> None:
    assert parse_quantity(text) == expected
    assert parse_quantity("-" + text) == -expected


@pytest.mark.parametrize(
    "text, milli, value",
    [
        pytest.param("0.0001", 1, 1, id="cpu 0.0001 is 1m (MilliValue rounds up)"),
        pytest.param("100m", 100, 1, id="100m is 100 millis and Value 1"),
        pytest.param("1.5", 1500, 2, id="memory 1.5 is 2 bytes (Value rounds up)"),
        pytest.param("1m", 1, 1, id="1m has Value 1"),
        pytest.param("1n", 1, 1, id="1n is 1m and Value 1"),
        pytest.param("999m", 999, 1, id="999m has Value 1"),
        pytest.param("1000m", 1000, 1, id="1000m is exactly 1"),
        pytest.param("1001m", 1001, 2, id="1001m has Value 2"),
        pytest.param("2.0001", 2001, 3, id="2.0001 rounds up in both units"),
        pytest.param("1.5Ki", 1536000, 1536, id="1.5Ki is 1536 bytes"),
        pytest.param("0", 0, 0, id="zero is zero in both units"),
        # TestQuantityRoundUp: 9.01 -> 10 at scale 0; negatives round away from zero.
        pytest.param("9.01", 9010, 10, id="9.01 rounds up to 10"),
        pytest.param("-9.01", -9010, -10, id="-9.01 rounds away from zero to -10"),
        pytest.param("-0.0001", -1, -1, id="-0.0001 rounds away from zero to -1m"),
        pytest.param("9Ei", MAX, MAX, id="a capped quantity saturates MilliValue at int64"),
        pytest.param("-9Ei", -(2**63), -MAX, id="a negative capped quantity saturates MilliValue at int64 min"),
    ],
)
def test_milli_value_and_value(text: str, milli: int, value: int) -> None:
    q = parse_quantity(text)
    assert milli_value(q) == milli
    assert base_value(q) == value


@pytest.mark.parametrize(
    "resource, text, expected",
    [
        pytest.param("cpu", "250m", 250, id="cpu is compared in millicores"),
        pytest.param("memory", "1.5", 2, id="memory is compared in bytes, rounded up"),
        pytest.param("ephemeral-storage", "1Gi", GI, id="ephemeral storage is compared in bytes"),
        pytest.param("example.com/gpu", "2", 2, id="an extended resource is compared in units"),
        pytest.param("pods", "110", 110, id="pods are compared in units"),
        pytest.param("hugepages-2Mi", "0.5Mi", MI // 2, id="hugepages are compared in bytes"),
    ],
)
def test_scheduler_units(resource: str, text: str, expected: int) -> None:
    assert scheduler_units(resource, parse_quantity(text)) == expected


SUFFIXES = {
    "n": dec(1, -9),
    "u": dec(1, -6),
    "m": dec(1, -3),
    "": Fraction(1),
    "k": dec(1, 3),
    "M": dec(1, 6),
    "G": dec(1, 9),
    "T": dec(1, 12),
    "P": dec(1, 15),
    "E": dec(1, 18),
    "Ki": Fraction(KI),
    "Mi": Fraction(MI),
    "Gi": Fraction(GI),
    "Ti": Fraction(TI),
    "Pi": Fraction(PI),
    "Ei": Fraction(EI),
}


def _reference(exact: Fraction) -> Fraction:
    """Round a magnitude up to 1n, then cap it: ParseQuantity's arbitrary-precision path."""
    mag = abs(exact)
    nanos = -((-mag * 10**9) // 1)
    rounded = min(Fraction(nanos, 10**9), Fraction(MAX))
    return rounded if exact >= 0 else -rounded


@given(
    st.sampled_from(["", "+", "-"]),
    st.text("0123456789", max_size=12),
    st.one_of(st.none(), st.text("0123456789", max_size=12)),
    st.one_of(
        st.sampled_from(sorted(SUFFIXES)),
        st.integers(-40, 40).map(lambda e: f"e{e}"),
        st.integers(-40, 40).map(lambda e: f"E{e:+d}"),
    ),
)
def test_any_well_formed_quantity_matches_the_exact_decimal(sign: str, num: str, frac: str | None, suffix: str) -> None:
    text = sign + num + ("" if frac is None else "." + frac) + suffix
    if not text:
        return
    exact = Fraction(int(num + (frac or "") or "0"), 10 ** len(frac or ""))
    if suffix in SUFFIXES:
        exact *= SUFFIXES[suffix]
    else:
        exact *= Fraction(10) ** int(suffix[1:])
    if sign == "-":
        exact = -exact
    assert parse_quantity(text) == _reference(exact)


@pytest.mark.parametrize("text", ["100m", " 2Gi ", "1.5", "0"], ids=["milli", "blanks around", "decimal", "zero"])
def test_a_quantity_read_again_is_the_same_value(text: str) -> None:
    assert parse_quantity(text) == parse_quantity(text) == parse_quantity(text, "again")


def test_an_invalid_quantity_fails_every_time_with_its_own_path() -> None:
    for path in ("a.cpu", "b.cpu"):
        with pytest.raises(FieldError) as e:
            parse_quantity("12Q", path)
        assert e.value.path == path
