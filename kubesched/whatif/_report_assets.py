"""The CSS and JavaScript inlined in every report (kubesched.whatif.report): plain browser
APIs, no library, nothing fetched at view time.

The script reads the JSON in ``<script id="report-data">`` ({title, subtitle, strings,
sections}; numbers in ``sections`` index ``strings`` where noted in report.py) and renders
each section by its kind ``k``: summary, util, placements, preemptions, attempts, table.
Lists are paged (50 rows, 100 in a node x plugin table), the search box filters every list, and an attempt's node x
plugin table is built when its <details> opens. ``<html data-ready="1">`` marks the end of
the first render.
"""

CSS = r"""
:root { --fg:#111827; --muted:#6b7280; --line:#e5e7eb; --bg:#f6f7f9; --card:#fff;
  --before:#9ca3af; --ok:#2563eb; --high:#d97706; --over:#dc2626; --track:#eef0f3; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color:var(--fg);
  background:var(--bg); }
header { position:sticky; top:0; z-index:5; background:#1f2937; color:#fff; padding:10px 20px;
  display:flex; align-items:center; gap:16px; flex-wrap:wrap; }
header h1 { font-size:18px; margin:0; font-weight:600; }
#subtitle { color:#cbd5e1; font-size:13px; flex:1; }
#search { width:340px; max-width:100%; padding:6px 10px; border-radius:6px; border:1px solid #4b5563;
  font-size:14px; }
main { padding:16px 20px 40px; max-width:1600px; }
section.card { background:var(--card); border:1px solid var(--line); border-radius:8px; padding:14px 16px;
  margin-bottom:16px; }
section.card > h2 { font-size:16px; margin:0 0 4px; }
.note { color:var(--muted); font-size:12.5px; margin:0 0 10px; }
.cards { display:flex; flex-wrap:wrap; gap:10px; }
.cards .item { border:1px solid var(--line); border-radius:6px; padding:6px 12px; min-width:110px; }
.cards .v { font-size:18px; font-weight:600; }
.cards .l { color:var(--muted); font-size:12px; }
.cards .item.wide { flex:1 1 100%; }
.cards .item.wide .v { font-size:14px; font-weight:500; overflow-wrap:anywhere; }
table { border-collapse:collapse; width:100%; }
th, td { text-align:left; padding:4px 8px; border-bottom:1px solid var(--line); vertical-align:top; }
th { font-size:12px; color:var(--muted); font-weight:600; background:#fafafa; position:sticky; top:52px; }
td.num, th.num { text-align:right; font-variant-numeric:tabular-nums; }
td.reason { max-width:760px; white-space:normal; word-break:break-word; }
.pager { display:flex; gap:8px; align-items:center; margin:8px 0; font-size:13px; color:var(--muted); }
.pager button { font-size:12px; padding:2px 8px; }
.controls { display:flex; gap:12px; align-items:center; margin:8px 0; font-size:13px; flex-wrap:wrap; }
.legend { display:inline-flex; gap:10px; align-items:center; color:var(--muted); font-size:12px; }
.sw { display:inline-block; width:12px; height:8px; border-radius:2px; vertical-align:middle; margin-right:3px; }
.sw.s0 { background:var(--before); } .sw.ok { background:var(--ok); } .sw.high { background:var(--high); }
.sw.over { background:var(--over); }
td.u { min-width:150px; }
.bars { display:flex; flex-direction:column; gap:2px; margin-top:3px; }
.bar { height:9px; background:var(--track); border-radius:2px; overflow:hidden; }
.bar i { display:block; height:100%; }
.bar.s0 i { background:var(--before); }
.bar.ok i { background:var(--ok); } .bar.high i { background:var(--high); } .bar.over i { background:var(--over); }
.bar.na { background:repeating-linear-gradient(45deg,#f3f4f6,#f3f4f6 3px,#e5e7eb 3px,#e5e7eb 6px); }
.u .txt { font-size:11.5px; color:#374151; font-variant-numeric:tabular-nums; white-space:nowrap; }
table.totals { width:auto; }
table.totals td { border:none; padding:3px 8px; white-space:nowrap; }
table.totals td.u { width:560px; }
.hists { display:flex; flex-wrap:wrap; gap:18px; margin:10px 0; }
.hist { border:1px solid var(--line); border-radius:6px; padding:6px 8px; }
.hist .ht { font-size:12px; font-weight:600; margin-bottom:4px; }
.hbars { display:flex; align-items:flex-end; gap:3px; height:70px; }
.hcol { display:flex; flex-direction:column; align-items:center; width:24px; }
.hpair { display:flex; align-items:flex-end; gap:1px; height:60px; }
.hb { width:10px; min-height:0; }
.hb.s0 { background:var(--before); } .hb.s1, .hb.only { background:var(--ok); }
.hl { font-size:9.5px; color:var(--muted); }
.badge { display:inline-block; padding:0 6px; border-radius:9px; font-size:12px; background:#e5e7eb;
  white-space:nowrap; }
.o-scheduled, .o-Scheduled { background:#dcfce7; color:#166534; }
.o-unschedulable, .o-Unschedulable, .o-error, .o-Error { background:#fee2e2; color:#991b1b; }
.o-pending { background:#fef3c7; color:#92400e; }
.o-not-attempted { background:#f3f4f6; color:#374151; }
.o-preempted { background:#ede9fe; color:#5b21b6; }
details.att { border-bottom:1px solid var(--line); padding:4px 0; }
details.att > summary { cursor:pointer; }
details.att .body { padding:6px 0 6px 18px; }
.feasible { color:#166534; } .rejected { color:#991b1b; } .chosen { font-weight:600; }
.muted { color:var(--muted); }
input.nodefilter { padding:3px 6px; font-size:12px; }
"""

JS = r"""
(function () {
  "use strict";
  var PAGE = 50, NODE_PAGE = 100;
  var DATA = JSON.parse(document.getElementById("report-data").textContent);
  var S = DATA.strings;
  var main = document.getElementById("main");
  var search = document.getElementById("search");
  var query = "";
  var listeners = [];
  var collator = new Intl.Collator(undefined, {numeric: true});

  function h(tag, props, children) {
    var e = document.createElement(tag);
    if (props) {
      for (var k in props) {
        var v = props[k];
        if (v === null || v === undefined || v === false) continue;
        if (k === "class") e.className = v;
        else if (k === "text") e.textContent = v;
        else if (k === "style") e.style.cssText = v;
        else if (k.slice(0, 2) === "on") e.addEventListener(k.slice(2), v);
        else e.setAttribute(k, v === true ? "" : v);
      }
    }
    if (children) {
      for (var i = 0; i < children.length; i++) {
        var c = children[i];
        if (c === null || c === undefined) continue;
        e.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
      }
    }
    return e;
  }
  function str(i) { return i < 0 ? "" : S[i]; }
  function matches(texts) {
    if (!query) return true;
    for (var i = 0; i < texts.length; i++) {
      var t = texts[i];
      if (t !== null && t !== undefined && String(t).toLowerCase().indexOf(query) >= 0) return true;
    }
    return false;
  }
  function onSearch(fn) { listeners.push(fn); }
  function trimNum(x, digits) {
    var s = x.toFixed(digits);
    return s.indexOf(".") >= 0 ? s.replace(/\.?0+$/, "") : s;
  }
  function isBytes(r) { return r === "memory" || r === "ephemeral-storage" || r.indexOf("hugepages-") === 0; }
  function fmt(r, v) {
    if (r === "cpu") {
      if (v % 1000 === 0) return String(v / 1000);
      if (Math.abs(v) < 1000) return v + "m";
      return trimNum(v / 1000, 2);
    }
    if (isBytes(r)) {
      var units = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"], i = 0, x = v;
      while (Math.abs(x) >= 1024 && i < units.length - 1) { x /= 1024; i++; }
      return i === 0 ? String(x) : trimNum(x, Math.abs(x) >= 100 ? 0 : (Math.abs(x) >= 10 ? 1 : 2)) + units[i];
    }
    return String(v);
  }
  function pct(v, alloc) { return alloc > 0 ? 100 * v / alloc : (v > 0 ? Infinity : null); }
  function fmtPct(p) { return p === null ? "n/a" : (p === Infinity ? "∞" : (Math.round(p * 10) / 10) + "%"); }
  function level(p) { return p === null ? "na" : (p > 100 ? "over" : (p >= 90 ? "high" : "ok")); }
  function oclass(o) { return "badge o-" + String(o).replace(/\s+/g, "-"); }

  function Pager(size, onChange) {
    var self = this;
    this.size = size; this.page = 0;
    this.prev = h("button", {type: "button", text: "‹ prev", onclick: function () { self.page--; onChange(); }});
    this.next = h("button", {type: "button", text: "next ›", onclick: function () { self.page++; onChange(); }});
    this.info = h("span", {class: "pinfo"});
    this.el = h("div", {class: "pager"}, [this.prev, this.info, this.next]);
  }
  Pager.prototype.slice = function (items, all, what) {
    var pages = Math.max(1, Math.ceil(items.length / this.size));
    if (this.page >= pages) this.page = pages - 1;
    if (this.page < 0) this.page = 0;
    var start = this.page * this.size, part = items.slice(start, start + this.size);
    var filtered = items.length !== all ? " (filtered from " + all + ")" : "";
    this.info.textContent = items.length
      ? (start + 1) + "–" + (start + part.length) + " of " + items.length + " " + what + filtered +
        (pages > 1 ? " · page " + (this.page + 1) + "/" + pages : "")
      : (all ? "no " + what + " match the filter (" + all + " in all)" : "no " + what);
    this.prev.disabled = this.page === 0;
    this.next.disabled = this.page >= pages - 1;
    return part;
  };

  function section(sec, idx) {
    var el = h("section", {class: "card", id: "sec-" + idx, "data-kind": sec.k}, [h("h2", {text: sec.title})]);
    if (sec.note) el.appendChild(h("p", {class: "note", text: sec.note}));
    return el;
  }
  function legend(labels) {
    var parts = [];
    labels.forEach(function (l, k) {
      if (labels.length > 1 && k === 0) parts.push(h("span", null, [h("span", {class: "sw s0"}), l]));
      else {
        parts.push(h("span", null, [h("span", {class: "sw ok"}), l + " < 90%"]));
        parts.push(h("span", null, [h("span", {class: "sw high"}), "≥ 90%"]));
        parts.push(h("span", null, [h("span", {class: "sw over"}), "> 100%"]));
      }
    });
    return h("span", {class: "legend"}, parts);
  }

  // ---- summary
  function renderSummary(sec, el) {
    var cards = h("div", {class: "cards"});
    sec.items.forEach(function (it) {
      var wide = typeof it[1] === "string" && it[1].length > 40;  // a message: its own line, smaller
      cards.appendChild(h("div", {class: wide ? "item wide" : "item"}, [h("div", {class: "v", text: it[1]}),
        h("div", {class: "l", text: it[0]})]));
    });
    el.appendChild(cards);
  }

  // ---- utilisation
  function barCell(r, alloc, vals, title) {
    var bars = h("div", {class: "bars"});
    var ps = vals.map(function (v) { return pct(v, alloc); });
    vals.forEach(function (v, k) {
      var p = ps[k];
      var cls = "bar " + (vals.length > 1 && k === 0 ? "s0" : level(p)) + (p === null ? " na" : "");
      var w = p === null ? 0 : Math.min(100, p);
      bars.appendChild(h("div", {class: cls, title: title[k] + ": " + fmt(r, v) + " / " + fmt(r, alloc) + " (" + fmtPct(p) + ")"},
        [h("i", {style: "width:" + w + "%"})]));
    });
    var txt = vals.map(function (v) { return fmt(r, v); }).join(" → ") + " / " + fmt(r, alloc) + "  (" +
      ps.map(fmtPct).join(" → ") + ")";
    return h("td", {class: "u", "data-res": r}, [h("div", {class: "txt", text: txt}), bars]);
  }
  function renderUtil(sec, el) {
    var names = sec.nodes.map(str), R = sec.res, L = sec.labels, n = names.length, ns = sec.req.length;
    var last = ns - 1;
    el.appendChild(h("div", {class: "controls"}, [h("b", {text: n + " nodes"}), legend(L)]));
    // cluster totals
    var tot = h("table", {class: "totals"});
    R.forEach(function (r) {
      var alloc = sec.totals[0][r][1];
      var vals = sec.totals.map(function (t) { return t[r][0]; });
      tot.appendChild(h("tr", null, [h("td", {text: "cluster " + r}), barCell(r, alloc, vals, L)]));
    });
    el.appendChild(tot);
    // histograms
    var hists = h("div", {class: "hists"});
    var blabels = ["0", "10", "20", "30", "40", "50", "60", "70", "80", "90", ">100"];
    R.forEach(function (r) {
      var hs = sec.hist.map(function (x) { return x[r]; });
      var max = 0;
      hs.forEach(function (c) { c.forEach(function (v) { if (v > max) max = v; }); });
      if (!max) return;
      var cols = h("div", {class: "hbars"});
      for (var b = 0; b < blabels.length; b++) {
        var pair = h("div", {class: "hpair"});
        for (var k = 0; k < ns; k++) {
          var c = hs[k][b];
          pair.appendChild(h("div", {class: "hb " + (ns > 1 ? "s" + k : "only"), style: "height:" + (60 * c / max) + "px",
            title: L[k] + ": " + c + " node(s) at " + (b === 10 ? "over 100%" : (b * 10) + "–" + (b * 10 + 10) + "%")}));
        }
        cols.appendChild(h("div", {class: "hcol"}, [pair, h("div", {class: "hl", text: blabels[b]})]));
      }
      hists.appendChild(h("div", {class: "hist", "data-res": r},
        [h("div", {class: "ht", text: r + ": nodes per % requested (" + L.join(" / ") + ")"}), cols]));
    });
    el.appendChild(hists);
    // per node, sorted and paged
    var sortSel = h("select", {class: "sort"});
    var sorts = [["name", "node name"]];
    R.forEach(function (r) {
      sorts.push([r + ":" + last, r + " " + L[last] + " (highest first)"]);
      if (ns > 1) sorts.push([r + ":delta", r + " change (largest first)"]);
    });
    sorts.forEach(function (s) { sortSel.appendChild(h("option", {value: s[0], text: s[1]})); });
    var order = null;
    function computeOrder() {
      var idx = [];
      for (var i = 0; i < n; i++) idx.push(i);
      var key = sortSel.value;
      if (key === "name") idx.sort(function (a, b) { return collator.compare(names[a], names[b]); });
      else {
        var parts = key.split(":"), r = parts[0], alloc = sec.alloc[r];
        var val = parts[1] === "delta"
          ? function (i) { return (sec.req[last][r][i] - sec.req[0][r][i]) / (alloc[i] || 1); }
          : function (i) { var p = pct(sec.req[last][r][i], alloc[i]); return p === null ? -1 : p; };
        idx.sort(function (a, b) { return (val(b) - val(a)) || collator.compare(names[a], names[b]); });
      }
      order = idx;
    }
    var head = h("tr", null, [h("th", {text: "node"})].concat(R.map(function (r) { return h("th", {text: r}); })));
    var tbody = h("tbody");
    var pager = new Pager(PAGE, draw);
    function draw() {
      var shown = order.filter(function (i) { return matches([names[i]]); });
      var part = pager.slice(shown, n, "nodes");
      tbody.textContent = "";
      part.forEach(function (i) {
        var tr = h("tr", {class: "row", "data-node": names[i]}, [h("td", {text: names[i]})]);
        R.forEach(function (r) {
          tr.appendChild(barCell(r, sec.alloc[r][i], sec.req.map(function (q) { return q[r][i]; }), L));
        });
        tbody.appendChild(tr);
      });
    }
    sortSel.addEventListener("change", function () { computeOrder(); pager.page = 0; draw(); });
    el.appendChild(h("div", {class: "controls"}, ["sort by ", sortSel]));
    el.appendChild(pager.el);
    el.appendChild(h("table", {class: "nodes"}, [h("thead", null, [head]), tbody]));
    computeOrder();
    draw();
    onSearch(function () { pager.page = 0; draw(); });
  }

  // ---- generic paged table
  function pagedTable(el, columns, rows, rowText, renderRow, what, numeric) {
    var tbody = h("tbody");
    var pager = new Pager(PAGE, draw);
    function draw() {
      var shown = [];
      for (var i = 0; i < rows.length; i++) if (matches(rowText(rows[i]))) shown.push(i);
      var part = pager.slice(shown, rows.length, what);
      tbody.textContent = "";
      part.forEach(function (i) { tbody.appendChild(renderRow(rows[i])); });
    }
    el.appendChild(pager.el);
    el.appendChild(h("table", null, [h("thead", null, [h("tr", null, columns.map(function (c, k) {
      return h("th", {text: c, class: numeric && numeric[k] ? "num" : null});
    }))]), tbody]));
    draw();
    onSearch(function () { pager.page = 0; draw(); });
  }
  function renderTable(sec, el) {
    var numeric = sec.columns.map(function (_, k) {
      return sec.rows.length > 0 && sec.rows.every(function (r) { return typeof r[k] === "number" || r[k] === null; });
    });
    pagedTable(el, sec.columns, sec.rows, function (r) { return r; }, function (r) {
      return h("tr", {class: "row"}, r.map(function (c, k) {
        return h("td", {class: numeric[k] ? "num" : null, text: c === null ? "" : c});
      }));
    }, "rows", numeric);
  }

  // ---- placements
  function renderPlacements(sec, el) {
    var counts = {};
    sec.rows.forEach(function (r) { var o = S[r[1]]; counts[o] = (counts[o] || 0) + 1; });
    var chips = h("div", {class: "controls"});
    Object.keys(counts).forEach(function (o) { chips.appendChild(h("span", {class: oclass(o), text: o + ": " + counts[o]})); });
    el.appendChild(chips);
    pagedTable(el, ["pod", "outcome", "node", "attempts", "reason / note"], sec.rows,
      function (r) { return [S[r[0]], S[r[1]], str(r[2]), S[r[3]]]; },
      function (r) {
        return h("tr", {class: "row", "data-pod": S[r[0]]}, [h("td", {text: S[r[0]]}),
          h("td", null, [h("span", {class: oclass(S[r[1]]), text: S[r[1]]})]), h("td", {text: str(r[2])}),
          h("td", {class: "num", text: r[4]}), h("td", {class: "reason", text: S[r[3]]})]);
      }, "pods", [false, false, false, true, false]);
  }

  // ---- preemptions
  function renderPreemptions(sec, el) {
    pagedTable(el, ["preemptor", "node", "victims", "attempt", "preemptor then"], sec.rows,
      function (r) { return [S[r[0]], S[r[1]]].concat(r[2].map(str)); },
      function (r) {
        return h("tr", {class: "row"}, [h("td", {text: S[r[0]]}), h("td", {text: S[r[1]]}),
          h("td", {class: "reason", text: r[2].map(str).join(", ")}), h("td", {class: "num", text: r[3]}),
          h("td", {text: S[r[4]]})]);
      }, "preemptions", [false, false, false, true, false]);
  }

  // ---- attempts: node x plugin, built when opened
  function nodeTable(a, body, totalNodes) {
    var plugins = a.pl.map(str);
    var rows = [];  // [node, verdictClass, verdict, scores[], total, chosen]
    var scored = a.sc.slice().sort(function (x, y) { return (y[1] - x[1]) || collator.compare(S[x[0]], S[y[0]]); });
    scored.forEach(function (s) { rows.push([S[s[0]], "feasible", "feasible", s.slice(2), s[1]]); });
    a.fe.slice().sort(function (x, y) { return collator.compare(S[x], S[y]); }).forEach(function (nidx) {
      rows.push([S[nidx], "feasible", "feasible", [], null]);
    });
    a.fl.slice().sort(function (x, y) { return collator.compare(S[x[0]], S[y[0]]); }).forEach(function (f) {
      rows.push([S[f[0]], "rejected", S[f[1]] + ": " + S[f[2]], [], null]);
    });
    var chosen = str(a.h);
    rows.sort(function (x, y) { return (y[0] === chosen) - (x[0] === chosen); });
    var filter = h("input", {class: "nodefilter", type: "search", placeholder: "filter these nodes"});
    var notEval = totalNodes - a.nf - a.nx;
    body.appendChild(h("div", {class: "controls"}, [filter, notEval > 0 ? h("span", {class: "muted",
      text: notEval + " node(s) not evaluated (kube-scheduler stops once it found enough feasible nodes)"}) : null]));
    var tbody = h("tbody");
    var pager = new Pager(NODE_PAGE, draw);
    function draw() {
      var q = filter.value.trim().toLowerCase();
      var shown = [];
      for (var i = 0; i < rows.length; i++) if (!q || rows[i][0].toLowerCase().indexOf(q) >= 0) shown.push(i);
      var part = pager.slice(shown, rows.length, "nodes");
      tbody.textContent = "";
      part.forEach(function (i) {
        var r = rows[i];
        var tr = h("tr", {class: "row" + (r[0] === chosen ? " chosen" : "")},
          [h("td", {text: r[0] + (r[0] === chosen ? " *" : "")}), h("td", {class: r[1] + " reason", text: r[2]})]);
        plugins.forEach(function (_, k) { tr.appendChild(h("td", {class: "num", text: r[3].length ? r[3][k] : ""})); });
        tr.appendChild(h("td", {class: "num", text: r[4] === null ? "" : r[4]}));
        tbody.appendChild(tr);
      });
    }
    filter.addEventListener("input", function () { pager.page = 0; draw(); });
    body.appendChild(pager.el);
    body.appendChild(h("table", {class: "explain"}, [h("thead", null, [h("tr", null,
      [h("th", {text: "node"}), h("th", {text: "filter"})].concat(plugins.map(function (p) {
        return h("th", {class: "num", text: p});
      })).concat([h("th", {class: "num", text: "total"})]))]), tbody]));
    draw();
  }
  function attemptSummary(a, body) {
    var plugins = a.pl.map(str);
    if (a.top.length) {
      body.appendChild(h("div", {class: "muted", text: "best-scored nodes (" + a.nf + " feasible):"}));
      body.appendChild(h("table", {class: "explain"}, [h("thead", null, [h("tr", null,
        [h("th", {text: "node"})].concat(plugins.map(function (p) { return h("th", {class: "num", text: p}); }))
          .concat([h("th", {class: "num", text: "total"})]))]),
        h("tbody", null, a.top.map(function (s) {
          return h("tr", {class: "row"}, [h("td", {text: S[s[0]] + (s[0] === a.h ? " *" : "")})]
            .concat(s.slice(2).map(function (v) { return h("td", {class: "num", text: v}); }))
            .concat([h("td", {class: "num", text: s[1]})]));
        }))]));
    }
    if (a.fc.length) {
      body.appendChild(h("div", {class: "muted", text: "nodes filtered out (" + a.nx + "):"}));
      body.appendChild(h("table", {class: "explain"}, [h("thead", null, [h("tr", null,
        [h("th", {text: "filter"}), h("th", {text: "reason"}), h("th", {class: "num", text: "nodes"})])]),
        h("tbody", null, a.fc.map(function (f) {
          return h("tr", {class: "row"}, [h("td", {text: S[f[0]]}), h("td", {class: "reason", text: S[f[1]]}),
            h("td", {class: "num", text: f[2]})]);
        }))]));
    }
  }
  function renderAttempts(sec, el) {
    var cache = {};
    function make(i) {
      var a = sec.items[i];
      var outcome = S[a.o];
      var d = h("details", {class: "att", "data-pod": S[a.p]});
      d.appendChild(h("summary", null, [h("b", {text: S[a.p]}), " attempt " + a.n + " ",
        h("span", {class: oclass(outcome), text: outcome}), a.h >= 0 ? " on " + S[a.h] : "",
        a.nn >= 0 ? " · nominated to " + S[a.nn] : "", a.v.length ? " · preempts " + a.v.length : "",
        h("span", {class: "muted", text: " · " + a.nf + " feasible, " + a.nx + " filtered out of " + sec.nodes + " nodes"})]));
      d.addEventListener("toggle", function () {
        if (!d.open || d.dataset.rendered) return;
        d.dataset.rendered = "1";
        var body = h("div", {class: "body"});
        if (a.m >= 0) body.appendChild(h("p", {class: "reason", text: S[a.m]}));
        if (a.v.length) body.appendChild(h("p", {text: "preempted: " + a.v.map(str).join(", ") + (a.nn >= 0 ? " (nominated " + S[a.nn] + ")" : "")}));
        if (a.sc) nodeTable(a, body, sec.nodes); else attemptSummary(a, body);
        d.appendChild(body);
      });
      return d;
    }
    var list = h("div", {class: "attempts"});
    var pager = new Pager(PAGE, draw);
    function draw() {
      var shown = [];
      sec.items.forEach(function (a, i) {
        if (matches([S[a.p], str(a.h), str(a.nn), S[a.o]])) shown.push(i);
      });
      var part = pager.slice(shown, sec.items.length, "attempts");
      list.textContent = "";
      part.forEach(function (i) { list.appendChild(cache[i] || (cache[i] = make(i))); });
    }
    el.appendChild(pager.el);
    el.appendChild(list);
    draw();
    onSearch(function () { pager.page = 0; draw(); });
  }

  var RENDER = {summary: renderSummary, util: renderUtil, table: renderTable, placements: renderPlacements,
    preemptions: renderPreemptions, attempts: renderAttempts};
  document.getElementById("title").textContent = DATA.title;
  document.getElementById("subtitle").textContent = DATA.subtitle;
  main.textContent = "";
  DATA.sections.forEach(function (sec, i) {
    var el = section(sec, i);
    var fn = RENDER[sec.k];
    if (fn) fn(sec, el); else el.appendChild(h("p", {class: "note", text: "unknown section kind " + sec.k}));
    main.appendChild(el);
  });
  search.addEventListener("input", function () {
    query = search.value.trim().toLowerCase();
    listeners.forEach(function (fn) { fn(); });
  });
  document.documentElement.setAttribute("data-ready", "1");
})();
"""
