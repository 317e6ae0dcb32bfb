"""A real headless Chromium for the HTML report tests, with no WebDriver or CDP client: the
browser's own command-line modes (``--dump-dom`` after a virtual-time budget, ``--screenshot``),
and a harness script injected into a copy of the page that exercises it and writes what it saw
into the DOM. Plus a small PNG decoder (zlib + numpy) to check the screenshot.

Chromium comes from Debian (``apt-get install -y chromium``); without it the tests skip.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import tempfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np

CHROMIUM = os.environ.get("KUBESCHED_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
MISSING = ("Chromium is not installed: the HTML report browser tests need the Debian package 'chromium' "
           "(apt-get install -y chromium)")
WINDOW = (1280, 1000)

# Installed first in <head>: every uncaught error, unhandled rejection and console.error/warn.
_HOOK = """<script>
window.__errors = [];
window.addEventListener("error", function (e) { window.__errors.push("error: " + e.message + " at " + e.lineno); });
window.addEventListener("unhandledrejection", function (e) { window.__errors.push("rejection: " + e.reason); });
["error", "warn"].forEach(function (level) {
  var orig = console[level];
  console[level] = function () {
    window.__errors.push(level + ": " + Array.prototype.join.call(arguments, " "));
    return orig.apply(console, arguments);
  };
});
</script>"""

# Appended to <body>: measures the page as loaded, then types in the search box and opens a
# <details>, and writes everything into <pre id="harness-result">.
_HARNESS = """<script>
(function () {
  var cfg = %s;
  function rect(el) { var r = el.getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; }
  function texts(sel) { return Array.prototype.map.call(document.querySelectorAll(sel), function (e) { return e.textContent; }); }
  function attrs(sel, name) { return Array.prototype.map.call(document.querySelectorAll(sel), function (e) { return e.getAttribute(name); }); }
  function finish(out) {
    out.errors = window.__errors;
    var pre = document.createElement("pre");
    pre.id = "harness-result";
    pre.textContent = JSON.stringify(out);
    document.body.appendChild(pre);
  }
  window.addEventListener("load", function () {
    var out = {ready: document.documentElement.getAttribute("data-ready"), viewport: [innerWidth, innerHeight]};
    try {
      out.bars = document.querySelectorAll(".bar").length;
      out.filledBars = [];
      Array.prototype.forEach.call(document.querySelectorAll(".bar > i"), function (i) {
        var r = rect(i);
        if (r[2] >= 6 && r[3] >= 6 && r[1] + r[3] < innerHeight && out.filledBars.length < 40)
          out.filledBars.push({rect: r, color: getComputedStyle(i).backgroundColor});
      });
      out.nodeRows = attrs("section[data-kind=util] tr.row", "data-node");
      out.podRows = attrs("section[data-kind=placements] tr.row", "data-pod");
      out.attemptItems = attrs("details.att", "data-pod");
      out.pagerInfo = texts(".pinfo");
      out.sections = attrs("section.card", "data-kind");
      out.tableCellsTotal = document.querySelectorAll("td").length;
      out.tableRows = texts("section[data-kind=table] tr.row");
      out.preemptionRows = texts("section[data-kind=preemptions] tr.row");
      var search = document.getElementById("search");
      search.value = cfg.search;
      search.dispatchEvent(new Event("input", {bubbles: true}));
      out.searched = {nodeRows: attrs("section[data-kind=util] tr.row", "data-node"),
                      podRows: attrs("section[data-kind=placements] tr.row", "data-pod"),
                      attemptItems: attrs("details.att", "data-pod"), pagerInfo: texts(".pinfo"),
                      tableRows: texts("section[data-kind=table] tr.row"),
                      preemptionRows: texts("section[data-kind=preemptions] tr.row")};
      search.value = "";
      search.dispatchEvent(new Event("input", {bubbles: true}));
      out.cleared = {nodeRows: attrs("section[data-kind=util] tr.row", "data-node").length,
                     podRows: attrs("section[data-kind=placements] tr.row", "data-pod").length};
      if (cfg.openSearch) {
        search.value = cfg.openSearch;
        search.dispatchEvent(new Event("input", {bubbles: true}));
      }
      var all = document.querySelectorAll("details.att");
      var d = all[cfg.open < 0 ? all.length + cfg.open : Math.min(cfg.open, all.length - 1)];
      if (!d) { finish(out); return; }
      out.opened = {pod: d.getAttribute("data-pod"), tablesBefore: d.querySelectorAll("table").length};
      d.open = true;
      setTimeout(function () {
        try {
          var t = d.querySelector("table.explain");
          out.opened.tablesAfter = d.querySelectorAll("table").length;
          out.opened.headers = t ? texts("details.att[open] table.explain th") : [];
          out.opened.pager = texts("details.att[open] .pinfo");
          out.opened.cells = d.querySelectorAll("td").length;
          out.opened.rows = Array.prototype.map.call(d.querySelectorAll("table.explain tbody tr"), function (tr) {
            return Array.prototype.map.call(tr.children, function (td) { return td.textContent; });
          });
          out.opened.text = d.textContent;
        } catch (e) { window.__errors.push("harness: " + e); }
        finish(out);
      }, 100);
    } catch (e) { window.__errors.push("harness: " + e); finish(out); }
  });
})();
</script>"""


def _flags(user_dir: str, window: tuple[int, int]) -> list[str]:
    assert CHROMIUM is not None, MISSING
    return [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--disable-extensions", "--disable-default-apps", "--mute-audio", "--hide-scrollbars",
            "--force-device-scale-factor=1", f"--user-data-dir={user_dir}", f"--window-size={window[0]},{window[1]}",
            "--enable-logging=stderr", "--v=0"]


def _run(args: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, check=False,
                          env={**os.environ, "LANG": "C.UTF-8"})


def console_lines(stderr: str) -> list[str]:
    """Chromium's log of the page's console (every level, and uncaught errors)."""
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


def exercise(page: str, workdir: Path, *, search: str, open_index: int = 0, open_search: str = "",
             budget_ms: int = 10_000, window: tuple[int, int] = WINDOW,
             timeout: float = 120) -> tuple[dict[str, Any], list[str]]:
    """Load a copy of ``page`` with the harness in Chromium; (what the harness saw, the page's
    console lines from Chromium's log). The harness types ``search`` in the search box and
    records the rows left, clears it, then (after typing ``open_search``, if given) opens the
    ``open_index``-th attempt's <details> (negative: from the end of the page)."""
    hook = _HOOK
    harness = _HARNESS % json.dumps({"search": search, "open": open_index, "openSearch": open_search})
    assert "<head>" in page and "</body>" in page
    instrumented = page.replace("<head>", "<head>" + hook, 1)
    head, tail = instrumented.rsplit("</body>", 1)
    instrumented = head + harness + "</body>" + tail
    path = workdir / "harness.html"
    path.write_text(instrumented, encoding="utf-8")
    with tempfile.TemporaryDirectory() as user_dir:
        proc = _run([*_flags(user_dir, window), f"--virtual-time-budget={budget_ms}", "--dump-dom",
                     path.as_uri()], timeout)
    m = re.search(r'<pre id="harness-result">(.*?)</pre>', proc.stdout, re.S)
    if m is None:
        raise AssertionError(f"the harness wrote no result (exit {proc.returncode}); stderr tail:\n"
                             + "\n".join(proc.stderr.splitlines()[-20:]))
    import html

    return json.loads(html.unescape(m.group(1))), console_lines(proc.stderr)


def screenshot(page_file: Path, png: Path, *, window: tuple[int, int] = WINDOW, budget_ms: int = 5000,
               timeout: float = 120) -> list[str]:
    """Screenshot of ``page_file`` as loaded; returns the page's console lines."""
    with tempfile.TemporaryDirectory() as user_dir:
        proc = _run([*_flags(user_dir, window), f"--virtual-time-budget={budget_ms}", f"--screenshot={png}",
                     page_file.as_uri()], timeout)
    if not png.exists():
        raise AssertionError(f"no screenshot (exit {proc.returncode}): {proc.stderr[-2000:]}")
    return console_lines(proc.stderr)


# ----------------------------------------------------------------------------- PNG
def read_png(path: Path) -> np.ndarray:
    """Decode an 8-bit RGB/RGBA, non-interlaced PNG (what Chromium writes) to an array of
    shape (height, width, channels)."""
    data = path.read_bytes()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, ihdr = 8, [], b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            ihdr = body
        elif kind == b"IDAT":
            idat.append(body)
        pos += 12 + length
    width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", ihdr)
    if depth != 8 or color not in (2, 6) or interlace:
        raise ValueError(f"unsupported PNG: depth {depth}, colour type {color}, interlace {interlace}")
    bpp = 3 if color == 2 else 4
    stride = width * bpp
    raw = zlib.decompress(b"".join(idat))
    out = np.zeros((height, stride), dtype=np.uint8)
    prev = np.zeros(stride, dtype=np.int64)
    for y in range(height):
        start = y * (stride + 1)
        ftype = raw[start]
        line = np.frombuffer(raw, dtype=np.uint8, count=stride, offset=start + 1).astype(np.int64)
        if ftype == 0:
            cur = line
        elif ftype == 1:  # Sub: a running sum per channel
            cur = np.cumsum(line.reshape(width, bpp), axis=0).reshape(stride) % 256
        elif ftype == 2:  # Up
            cur = (line + prev) % 256
        else:  # Average, Paeth: sequential along the row
            vals, up = line.tolist(), prev.tolist()
            rec = [0] * stride
            for i in range(stride):
                a = rec[i - bpp] if i >= bpp else 0
                b = up[i]
                if ftype == 3:
                    rec[i] = (vals[i] + ((a + b) >> 1)) & 0xFF
                else:
                    c = up[i - bpp] if i >= bpp else 0
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                    rec[i] = (vals[i] + pred) & 0xFF
            cur = np.array(rec, dtype=np.int64)
        out[y] = cur
        prev = cur
    return out.reshape(height, width, bpp)


def css_rgb(color: str) -> tuple[int, int, int]:
    """'rgb(37, 99, 235)' -> (37, 99, 235)."""
    m = re.match(r"rgba?\((\d+),\s*(\d+),\s*(\d+)", color)
    if m is None:
        raise ValueError(color)
    r, g, b = (int(x) for x in m.groups())
    return r, g, b
