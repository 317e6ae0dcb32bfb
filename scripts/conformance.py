"""Write traces for every scenario of a conformance corpus (in-process, same as
`kubesched simulate SCENARIO --deterministic [--config configs/SCENARIO.yaml] --trace OUT`) and
run the corpus checker.

usage: python scripts/conformance.py [OUT_DIR] [--corpus DIR] [--only NAME_SUBSTRING] [--jobs N]

--corpus is a corpus directory holding scenarios/, expected/ and optionally configs/ (the
third corpus: extract ../shared/conformance3/corpus.tar.xz, or give the .tar.xz itself and it
is extracted next to OUT_DIR). Default: ../shared/conformance.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
import traceback
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / "shared"
CHECKER = SHARED / "conformance" / "check.py"


def corpus_dir(arg: str, out: Path) -> Path:
    """A corpus directory; a .tar.xz is extracted once under OUT_DIR/../<name>-corpus."""
    p = Path(arg)
    if p.is_file() and p.name.endswith(".tar.xz"):
        dest = out.parent / f"{p.parent.name}-corpus"
        if not (dest / "expected").is_dir():
            dest.mkdir(parents=True, exist_ok=True)
            with tarfile.open(p) as tar:
                tar.extractall(dest, filter="data")
        return dest
    return p


def run_one(corpus: Path, scenario: Path, out: Path) -> str:
    from kubesched.config import load_config
    from kubesched.objects import load_manifests
    from kubesched.simulation import Simulator

    cfg_file = corpus / "configs" / scenario.name
    try:
        cfg = load_config(cfg_file) if cfg_file.exists() else None
        objs = load_manifests([scenario], controllers="none")
        trace = Simulator(objs, cfg, deterministic=True).run().trace()
    except Exception:  # noqa: BLE001 - report and go on to the next scenario
        return f"CRASH {scenario.stem}\n{traceback.format_exc(limit=4)}"
    (out / f"{scenario.stem}.json").write_text(json.dumps(trace, indent=1))
    return ""


def main() -> int:
    argv = sys.argv[1:]
    opts: dict[str, str] = {}
    args: list[str] = []
    while argv:
        a = argv.pop(0)
        if a in ("--only", "--corpus", "--jobs"):
            opts[a] = argv.pop(0)
        else:
            args.append(a)
    out = Path(args[0] if args else "traces")
    out.mkdir(parents=True, exist_ok=True)
    corpus = corpus_dir(opts.get("--corpus", str(SHARED / "conformance")), out)
    only = opts.get("--only", "")
    scenarios = [f for f in sorted((corpus / "scenarios").glob("*.yaml")) if not only or only in f.name]
    jobs = int(opts.get("--jobs", "1"))
    if jobs > 1:
        with ProcessPoolExecutor(jobs) as pool:
            reports = list(pool.map(run_one, [corpus] * len(scenarios), scenarios, [out] * len(scenarios)))
    else:
        reports = [run_one(corpus, f, out) for f in scenarios]
    for r in reports:
        if r:
            print(r)
    expected = corpus / "expected"
    if only:  # check only the scenarios written: a directory of links to their expected traces
        subset = out.parent / f"{out.name}-expected"
        subset.mkdir(exist_ok=True)
        for old in subset.glob("*.json"):
            old.unlink()
        for f in scenarios:
            (subset / f"{f.stem}.json").symlink_to((expected / f"{f.stem}.json").resolve())
        expected = subset
    return subprocess.call([sys.executable, str(CHECKER), str(expected), str(out), "--summary"])


if __name__ == "__main__":
    sys.exit(main())
