"""Go behaviours several plugins reproduce: integer division and math.Round (Python's ``//``
floors, its ``round()`` rounds half to even), and the %q quoting of names in messages."""

from __future__ import annotations

import math


def go_div(a: int, b: int) -> int:
    """Go int64 division: truncation toward zero (Python's // floors)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def go_round(x: float) -> int:
    """math.Round: half away from zero (Python's round() is banker's rounding). Exact:
    math.floor(x + 0.5) can be off by one (0.49999999999999994 + 0.5 rounds to 1.0)."""
    t = math.trunc(x)
    if abs(x - t) >= 0.5:
        t += 1 if x > 0 else -1
    return t


def go_quote(s: str) -> str:
    """fmt's %q for the plain names and label values used in messages (best effort: only
    backslashes and double quotes are escaped)."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


__all__ = ["go_div", "go_quote", "go_round"]
