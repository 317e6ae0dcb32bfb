"""Regenerate docs/report.png: the report of `kubesched simulate examples/cluster --seed 1
--report ...`, with its first scheduling attempt opened, as headless Chromium shows it.

    python scripts/report_screenshot.py [--out docs/report.png] [--example examples/cluster]

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
# What a click on the first attempt's summary does: open its <details>.
OPEN_FIRST = ("<script>window.addEventListener('load', function () {"
              " document.querySelector('details.att').open = true; });</script>")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(ROOT / "docs" / "report.png"))
    ap.add_argument("--example", default="examples/cluster")
    ap.add_argument("--window", default="1400,2150")
    args = ap.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("no chromium: apt-get install -y chromium", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "report.html"
        r = CliRunner().invoke(cli, ["simulate", args.example, "--seed", "1", "-q", "--report", str(page)])
        if r.exit_code != 0:
            print(r.output, file=sys.stderr)
            return 1
        page.write_text(page.read_text().replace("</body>", OPEN_FIRST + "</body>"))
        proc = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                               "--disable-background-networking", "--disable-component-update", "--hide-scrollbars",
                               "--force-device-scale-factor=1", f"--user-data-dir={tmp}/profile",
                               f"--window-size={args.window}", "--virtual-time-budget=3000",
                               f"--screenshot={Path(args.out).resolve()}", page.as_uri()],
                              capture_output=True, text=True, timeout=120, check=False)
    if proc.returncode != 0 or not Path(args.out).exists():
        print(proc.stderr[-2000:], file=sys.stderr)
        return 1
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
