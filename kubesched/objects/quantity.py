"""Kubernetes resource quantities, exactly as apimachinery's resource.Quantity reads them.

A quantity is kept as an exact :class:`fractions.Fraction`; the scheduler compares CPU in
milli-units (``MilliValue``) and everything else in base units (``Value``), both rounded
**up** (away from zero) when the quantity is finer than that unit (resource.Quantity.MilliValue
/ Value).

Parsing mirrors resource.ParseQuantity (behind Quantity.UnmarshalJSON, which trims blanks first):

- the grammar of parseQuantityString: ``[+-]? digits* (. digits*)? suffix`` where the suffix is
  letters from ``eEinumkKMGTP``, then an optional sign and digits. The number may be empty, so
  ``"."``, ``"-"``, ``"m"`` and ``"Ki"`` all read as 0, as they do in Go;
- the suffix is a decimal SI suffix (n u m "" k M G T P E), a binary SI suffix (Ki Mi Gi Ti Pi Ei),
  or a decimal exponent ``e``/``E`` followed by a base-10 integer within int32 (a larger
  exponent is rejected, as upstream does since it stopped truncating it to int32);
- a non-zero value finer than 1n is rounded up (away from zero) to a whole number of nano-units;
- a magnitude above 2^63-1 is capped at 2^63-1 (ParseQuantity's arbitrary-precision path;
  upstream's int64 fast path keeps e.g. ``12E`` uncapped and then overflows in Value/MilliValue,
  which is not mirrored).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

from kubesched.errors import FieldError

_INT64_MAX = 2**63 - 1
_INT64_MIN = -(2**63)
_MAX_ALLOWED = Fraction(_INT64_MAX)  # resource.maxAllowed
_NANO = 10**9
_INT32_MAX = 2**31 - 1

_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}  # power of two
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}  # power of ten
# parseQuantityString's grammar (possessive, so the split is its greedy one); ASCII digits only.
_QUANTITY = re.compile(r"([+-]?)([0-9]*+)(?:\.([0-9]*+))?([eEinumkKMGTP]*+[+-]?[0-9]*+)")
_GO_INT = re.compile(r"[+-]?[0-9]+")

# resource.ErrFormatWrong / ErrSuffix.
ERR_FORMAT_WRONG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
ERR_SUFFIX = "unable to parse quantity's suffix"


def _invalid(path: str, value: object, message: str) -> FieldError:
    if isinstance(value, str):
        shown = f'"{value}"'
    else:
        shown = str(value).lower() if isinstance(value, bool) else repr(value)
    return FieldError(path, f"Invalid value: {shown}: {message}")


def _exponent(suffix: str) -> int | None:
    """suffixHandler.interpret: the power of ten of a decimal-exponent suffix, or None."""
    digits = suffix[1:]
    if _GO_INT.fullmatch(digits) is None:  # strconv.ParseInt(s, 10, 64): no "_", no blanks
        return None
    exp = int(digits)
    if not -_INT32_MAX <= exp <= _INT32_MAX:
        return None
    return exp


def _scale10(amount: Fraction, exp: int, int_digits: int, frac_digits: int) -> Fraction:
    """amount × 10^exp without ever building a huge power: a result beyond the cap is capped,
    a non-zero result below 1n becomes 1n (what rounding and capping would make of it)."""
    if amount == 0 or exp == 0:
        return amount
    if exp - frac_digits > 19:  # amount >= 10^-frac_digits, so the result is >= 10^20
        return _MAX_ALLOWED
    if exp + int_digits < -9:  # amount < 10^int_digits, so the result is < 10^-9
        return Fraction(1, _NANO)
    power: int = 10 ** abs(exp)
    return amount * power if exp > 0 else amount / power


def _bound(amount: Fraction) -> Fraction:
    """Round a non-negative amount up to nano-units, then cap it (ParseQuantity's inf.Dec path)."""
    if _NANO % amount.denominator:
        amount = Fraction(math.ceil(amount * _NANO), _NANO)
    return min(amount, _MAX_ALLOWED)


_PARSED: dict[str, Fraction] = {}
_PARSED_MAX = 4096


def parse_quantity(value: object, path: str = "") -> Fraction:
    """Parse a quantity string (or a YAML number) into an exact Fraction.

    Raises FieldError for anything resource.ParseQuantity would reject. Strings that parsed
    are remembered (at most 4096: a cluster's pods repeat a few request values, and a live
    scheduler parses each pod's on every watch event); a Fraction is immutable.
    """
    if type(value) is str:
        known = _PARSED.get(value)
        if known is not None:
            return known
        out = _parse_quantity(value, path)
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.clear()
        _PARSED[value] = out
        return out
    return _parse_quantity(value, path)


def _parse_quantity(value: object, path: str) -> Fraction:
    if isinstance(value, bool):
        raise _invalid(path, value, ERR_FORMAT_WRONG)
    if isinstance(value, int):
        return -_bound(Fraction(-value)) if value < 0 else _bound(Fraction(value))
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _invalid(path, value, ERR_FORMAT_WRONG)
        text = repr(value)  # the JSON number kubectl would send, e.g. 0.5 or 1e-07
    elif isinstance(value, str):
        text = value.strip()  # Quantity.UnmarshalJSON: strings.TrimSpace
    else:
        raise FieldError(path, f"a quantity must be a string or number, got {type(value).__name__}")
    m = _QUANTITY.fullmatch(text) if text else None
    if m is None:
        raise _invalid(path, value, ERR_FORMAT_WRONG)
    sign, num, denom, suffix = m.groups()
    denom = denom or ""
    amount = Fraction(int(num + denom or "0"), 10 ** len(denom))
    if suffix in _DECIMAL:
        amount = _scale10(amount, _DECIMAL[suffix], len(num), len(denom))
    elif suffix in _BINARY:
        amount *= 2 ** _BINARY[suffix]
    elif len(suffix) > 1 and suffix[0] in "eE" and (exp := _exponent(suffix)) is not None:
        amount = _scale10(amount, exp, len(num), len(denom))
    else:
        raise _invalid(path, value, ERR_SUFFIX)
    amount = _bound(amount)
    return -amount if sign == "-" else amount


def _ceil_away(q: Fraction) -> int:
    """Round away from zero (resource's RoundUp / negativeScaleInt64)."""
    return math.ceil(q) if q >= 0 else -math.ceil(-q)


def saturate(v: int) -> int:
    # Go would overflow int64 here; saturating keeps int64 columns (numpy) safe.
    return _INT64_MAX if v > _INT64_MAX else _INT64_MIN if v < _INT64_MIN else v


def milli_value(q: Fraction) -> int:
    """resource.Quantity.MilliValue: value × 1000, rounded up (away from zero)."""
    return saturate(_ceil_away(q * 1000))


def base_value(q: Fraction) -> int:
    """resource.Quantity.Value: the value in base units, rounded up (away from zero)."""
    return saturate(_ceil_away(q))


def scheduler_units(resource_name: str, q: Fraction) -> int:
    """The integer the scheduler compares: milli-CPU for cpu, base units for the rest."""
    return milli_value(q) if resource_name == "cpu" else base_value(q)
