"""Kubernetes resource quantities, exactly as apimachinery's resource.Quantity reads them.

A quantity is kept as an exact :class:`fractions.Fraction`; the scheduler compares CPU in
milli-units (``MilliValue``) and everything else in base units (``Value``), both rounded
**up** when the quantity is finer than that unit (resource.Quantity.MilliValue / Value).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

from kubesched.errors import FieldError

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
# Mirrors resource.ParseQuantity's grammar: <signedNumber><suffix>, where suffix is a binary
# SI suffix, a decimal SI suffix, or a decimal exponent (e/E followed by a signed integer).
_QUANTITY = re.compile(r"^([+-]?)(\d+(?:\.\d*)?|\.\d+)([a-zA-Z]*|[eE][+-]?\d+)$")


def parse_quantity(value: object, path: str = "") -> Fraction:
    """Parse a quantity string (or a YAML number) into an exact Fraction.

    Raises FieldError for anything resource.ParseQuantity would reject.
    """
    if isinstance(value, bool):
        raise FieldError(path, f"quantities must match the regular expression, got {value!r}")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise FieldError(path, f"invalid quantity {value!r}")
        return Fraction(str(value))
    if not isinstance(value, str):
        raise FieldError(path, f"a quantity must be a string or number, got {type(value).__name__}")
    text = value.strip()
    m = _QUANTITY.match(text)
    if not m:
        raise FieldError(path, f"quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$', got {value!r}")
    sign, number, suffix = m.groups()
    amount = Fraction(number)
    if suffix in _BINARY:
        amount *= _BINARY[suffix]
    elif suffix in _DECIMAL:
        amount *= _DECIMAL[suffix]
    elif suffix[:1] in ("e", "E") and len(suffix) > 1:
        amount *= Fraction(10) ** int(suffix[1:])
    else:
        raise FieldError(path, f"unknown quantity suffix {suffix!r} in {value!r}")
    return -amount if sign == "-" else amount


def milli_value(q: Fraction) -> int:
    """resource.Quantity.MilliValue: value × 1000, rounded up."""
    return math.ceil(q * 1000)


def base_value(q: Fraction) -> int:
    """resource.Quantity.Value: the value in base units, rounded up."""
    return math.ceil(q)


def scheduler_units(resource_name: str, q: Fraction) -> int:
    """The integer the scheduler compares: milli-CPU for cpu, base units for the rest."""
    return milli_value(q) if resource_name == "cpu" else base_value(q)
