"""Write traces for every scenario of the conformance corpus (in-process, same as
`kubesched simulate SCENARIO --deterministic --trace OUT`) and run the corpus checker.

usage: python scripts/conformance.py [OUT_DIR] [--only NAME_SUBSTRING]
"""

from __future__ import annotations

import json
import subprocess
import sys
import traceback
from pathlib import Path

from kubesched.objects import load_manifests
from kubesched.simulation import Simulator

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "conformance"


def main() -> int:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else ""
    out = Path(args[0] if args else "traces")
    out.mkdir(parents=True, exist_ok=True)
    for f in sorted((CORPUS / "scenarios").glob("*.yaml")):
        if only and only not in f.name:
            continue
        try:
            trace = Simulator(load_manifests([f]), deterministic=True).run().trace()
        except Exception:  # noqa: BLE001 - report and go on to the next scenario
            print(f"CRASH {f.stem}")
            traceback.print_exc(limit=3)
            continue
        (out / f"{f.stem}.json").write_text(json.dumps(trace, indent=1))
    return subprocess.call([sys.executable, str(CORPUS / "check.py"), str(CORPUS / "expected"), str(out), "--summary"])


if __name__ == "__main__":
    sys.exit(main())
