"""Run the live fault matrix and print it as a markdown table (for the README).

    python scripts/live_fault_matrix.py [--out FILE] [--only TEXT]

The same cases as tests/live/test_fault_matrix.py (tests/live/fault_matrix.py: CASES): kubesched
against the local API server (kubesched.testing.apiserver), each fault injected once about 30 % of
the pods are bound. Every "what kubesched does" cell is measured in that run (times from the
server's request log); the last column counts, on the server, pods never bound and pods bound by
more than one successful pods/binding POST. The exit status is 1 if any case departs from its
expectations.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.live.fault_matrix import CASES, NODES, PODS, Outcome, markdown_table, run_case  # noqa: E402

INTRO = f"""\
Each row is a run of kubesched against the local API server (`kubesched.testing.apiserver`): {NODES}
nodes, {PODS} pending pods (unless the row says otherwise), the scheduler's client paced at 100 qps
so that the fault lands mid-run: it is injected once ~30 % of the pods are bound. Single-scheduler
rows run the scheduling loop directly; leader-election rows run `kubesched run` replicas in-process
(lease 4 s, renew 2 s, retry 0.4 s). Pods lost / double-bound are counted on the server (pods never
bound; pods with more than one successful `pods/binding`). Regenerate with
`python scripts/live_fault_matrix.py`; the same cases are tests/live/test_fault_matrix.py.
"""

NOTES = """\
- Times come from one run on a loaded 2-core machine with the API server in the same process;
  they vary from run to run (the tests check what does not: no backoff counted, and a watch back well
  under the 800 ms backoff step).
- The API server restart row retries events every 1 s instead of tools/events' 10 s, to keep the
  run short; the slow-responses row sets kubesched's client timeout to 1 s (30 s by default;
  kube-scheduler's client has none).
- The restarted process starts from bytecode (the row compiles the package first, as `pip install`
  does; a checkout run with PYTHONDONTWRITEBYTECODE compiles every module at each start, ~0.2 s
  more). Most of its time to the first request is the interpreter and imports (numpy, httpx,
  uvicorn/starlette for health and metrics, pydantic's configuration models, ~150 frozen
  dataclasses); `python -m kubesched` / the `kubesched` script pause the garbage collector while
  they load (kubesched._entry).
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--out", type=Path, help="write the markdown (intro, table, notes) here too")
    ap.add_argument("--only", default="", help="only the cases whose fault or id contains this text")
    args = ap.parse_args(argv)
    logging.getLogger("kubesched").setLevel(logging.CRITICAL)  # the faults' expected warnings
    outcomes: list[Outcome] = []
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="live-fault-matrix-") as tmp:
        for i, case in enumerate(CASES):
            if args.only and args.only not in case.fault and args.only not in case.id:
                continue
            o = run_case(case, Path(tmp) / str(i))
            outcomes.append(o)
            status = "ok" if o.ok else "FAILED: " + "; ".join(o.problems)
            print(f"{case.fault}: {o.seconds:.1f} s, {status}", file=sys.stderr, flush=True)
    text = f"{INTRO}\n{markdown_table(outcomes)}\n{NOTES}"
    print(text)
    print(f"{len(outcomes)} cases in {time.monotonic() - t0:.0f} s", file=sys.stderr)
    if args.out:
        args.out.write_text(text)
    return 0 if all(o.ok for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
