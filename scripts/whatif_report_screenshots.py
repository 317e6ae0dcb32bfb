"""Regenerate docs/report-capacity.png, docs/report-compare.png and docs/report-pack.png: the
``--report`` pages of the what-if commands on their examples, as headless Chromium shows them.

    python scripts/whatif_report_screenshots.py [--out-dir docs] [--only capacity|compare|pack]

Needs Chromium (Debian: apt-get install -y chromium).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from click.testing import CliRunner

from kubesched.cli import main as cli

ROOT = Path(__file__).resolve().parents[1]
EX = "examples"
# command line (run from the repository root), window size: the whole page in view.
PAGES = {
    "capacity": ([f"{EX}/capacity/cluster.yaml", "--pod", f"{EX}/capacity/web.yaml",
                  "--pod", f"{EX}/capacity/cache.yaml"], (1400, 1660)),
    "compare": ([f"{EX}/compare/cluster.yaml", "--config", f"{EX}/compare/leastallocated.yaml",
                 "--config", f"{EX}/compare/mostallocated.yaml"], (1400, 2540)),
    "pack": ([f"{EX}/pack"], (1400, 2130)),
}


def shoot(chromium: str, command: str, args: list[str], window: tuple[int, int], out: Path, tmp: Path) -> bool:
    page = tmp / f"{command}.html"
    r = CliRunner().invoke(cli, [command, *args, "--report", str(page)])
    if r.exit_code != 0:
        print(r.output, file=sys.stderr)
        return False
    proc = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           "--disable-background-networking", "--disable-component-update", "--hide-scrollbars",
                           "--force-device-scale-factor=1", f"--user-data-dir={tmp}/profile-{command}",
                           f"--window-size={window[0]},{window[1]}", "--virtual-time-budget=3000",
                           f"--screenshot={out.resolve()}", page.as_uri()],
                          capture_output=True, text=True, timeout=120, check=False)
    if proc.returncode != 0 or not out.exists():
        print(proc.stderr[-2000:], file=sys.stderr)
        return False
    print(f"wrote {out}")
    return True


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out-dir", default=str(ROOT / "docs"))
    ap.add_argument("--only", choices=sorted(PAGES), action="append")
    args = ap.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("no chromium: apt-get install -y chromium", file=sys.stderr)
        return 1
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for command in args.only or list(PAGES):
            cmd_args, window = PAGES[command]
            ok &= shoot(chromium, command, cmd_args, window, Path(args.out_dir) / f"report-{command}.png", Path(tmp))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
