"""Go ``time.Duration`` text (metav1.Duration in YAML): ParseDuration and Duration.String."""

from __future__ import annotations

import re
from fractions import Fraction

_UNITS_NS = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,  # micro sign
    "\u03bcs": 1_000,  # Greek mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60 * 1_000_000_000,
    "h": 3600 * 1_000_000_000,
}
_PART = re.compile(r"(\d*\.?\d*)([a-zµμ]+)")


def parse_duration(text: str) -> int | None:
    """time.ParseDuration -> nanoseconds, or None when ``text`` is not a duration."""
    s = text.strip()
    if not s:
        return None
    sign = 1
    if s[0] in "+-":
        sign = -1 if s[0] == "-" else 1
        s = s[1:]
    if s == "0":
        return 0
    if not s:
        return None
    total = Fraction(0)
    pos = 0
    while pos < len(s):
        m = _PART.match(s, pos)
        if m is None or m.group(1) in ("", "."):
            return None
        unit = _UNITS_NS.get(m.group(2))
        if unit is None:
            return None
        total += Fraction(m.group(1)) * unit
        pos = m.end()
    return sign * int(total)  # Go truncates sub-nanosecond fractions


def _frac(value: int, prec: int) -> tuple[str, int]:
    """fmtFrac: the fraction digits of value / 10**prec (no trailing zeros) and the integer part."""
    whole, rest = divmod(value, 10**prec)
    digits = str(rest).rjust(prec, "0").rstrip("0") if prec else ""
    return ("." + digits if digits else ""), whole


def format_duration(ns: int) -> str:
    """time.Duration.String: ``15s``, ``1m30s``, ``1h0m0s``, ``500ms``, ``1.5s``, ``0s``."""
    if ns == 0:
        return "0s"
    neg = ns < 0
    u = -ns if neg else ns
    if u < 1_000_000_000:
        if u < 1_000:
            prec, unit = 0, "ns"
        elif u < 1_000_000:
            prec, unit = 3, "\u00b5s"
        else:
            prec, unit = 6, "ms"
        frac, whole = _frac(u, prec)
        out = f"{whole}{frac}{unit}"
    else:
        frac, secs = _frac(u, 9)
        out = f"{secs % 60}{frac}s"
        mins = secs // 60
        if mins:
            out = f"{mins % 60}m{out}"
            hours = mins // 60
            if hours:
                out = f"{hours}h{out}"
    return "-" + out if neg else out


def seconds_to_ns(seconds: float) -> int:
    return round(seconds * 1_000_000_000)


def format_seconds(seconds: float) -> str:
    return format_duration(seconds_to_ns(seconds))
