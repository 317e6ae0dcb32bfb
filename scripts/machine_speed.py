"""A yardstick for this machine's speed right now: a fixed pure-Python loop (2,000,000
multiply-adds), timed. Run it before a benchmark to tell a slow moment of a (virtual) machine
from a slower scheduler: the README's figures were taken while it read 185-210 ms.

    python scripts/machine_speed.py [--runs 3]
"""

from __future__ import annotations

import argparse
import time

# Run as module-level code (global name lookups), as the README's reference figures were taken.
_LOOP = compile("s = 0\nfor i in range(2_000_000):\n    s += i * i\n", "<machine_speed>", "exec")


def loop_ms() -> float:
    start = time.perf_counter()
    exec(_LOOP, {})  # noqa: S102 - a fixed, local workload
    return (time.perf_counter() - start) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    print(" ".join(f"{loop_ms():.0f}ms" for _ in range(max(args.runs, 1))))


if __name__ == "__main__":
    main()
