// The Compare page's choices: which commits and environments, the baseline, the relative view.
// The page arrives with the default view rendered (it works without this script); this
// re-lays the table from the data embedded in the page (no XHR, so it works from file://).
// Cell text follows torchbench_core.Compare (1 decimal; 2 for ratios) and colour follows
// torchbench/stats.py `page_changes` (tests check that both agree with the Python side): the
// arithmetic is written out here (Welch's t through the incomplete beta function,
// Benjamini-Hochberg, medians) because a page opened from disk can load no library.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("compare-data").textContent);
  var envById = {};
  data.envs.forEach(function (e) { envById[e.id] = e; });

  function selectUnit(t) {
    if (!(t > 0) || !isFinite(t)) { return ["s", 1, "second"]; }
    var exponent = Math.floor(Math.floor(Math.log10(t)) / 3);
    if (exponent < -4) { exponent = -4; }
    var u = data.units[String(exponent)];
    return u ? u : ["s", 1, "second"];
  }

  // log Gamma for x > 0 (Numerical Recipes, 3rd ed., gammln: Lanczos with 14 terms, ~1e-15 relative)
  var GAMMLN = [57.1562356658629235, -59.5979603554754912, 14.1360979747417471, -0.491913816097620199,
    0.339946499848118887e-4, 0.465236289270485756e-4, -0.983744753048795646e-4, 0.158088703224912494e-3,
    -0.210264441724104883e-3, 0.217439618115212643e-3, -0.164318106536763890e-3, 0.844182239838527433e-4,
    -0.261908384015814087e-4, 0.368991826595316234e-5];
  function lgamma(x) {
    var y = x, tmp = x + 5.24218750000000000, ser = 0.999999999999997092;
    tmp = (x + 0.5) * Math.log(tmp) - tmp;
    for (var j = 0; j < 14; j++) { y += 1; ser += GAMMLN[j] / y; }
    return tmp + Math.log(2.5066282746310005 * ser / x);
  }
  // the continued fraction of the regularized incomplete beta function (modified Lentz)
  function betacf(a, b, x) {
    var tiny = 1e-300, qab = a + b, qap = a + 1, qam = a - 1, c = 1, d = 1 - qab * x / qap;
    if (Math.abs(d) < tiny) { d = tiny; }
    d = 1 / d;
    var h = d;
    for (var m = 1; m <= 300; m++) {
      var m2 = 2 * m, aa = m * (b - m) * x / ((qam + m2) * (a + m2));
      d = 1 + aa * d; if (Math.abs(d) < tiny) { d = tiny; }
      c = 1 + aa / c; if (Math.abs(c) < tiny) { c = tiny; }
      d = 1 / d; h *= d * c;
      aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
      d = 1 + aa * d; if (Math.abs(d) < tiny) { d = tiny; }
      c = 1 + aa / c; if (Math.abs(c) < tiny) { c = tiny; }
      d = 1 / d;
      var del = d * c; h *= del;
      if (Math.abs(del - 1) < 1e-15) { break; }
    }
    return h;
  }
  // scipy.special.betainc(a, b, x)
  function betainc(a, b, x) {
    if (!(x > 0)) { return x === 0 ? 0 : NaN; }
    if (x >= 1) { return 1; }
    var front = Math.exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * Math.log(x) + b * Math.log(1 - x));
    if (x < (a + 1) / (a + b + 2)) { return front * betacf(a, b, x) / a; }
    return 1 - front * betacf(b, a, 1 - x) / b;
  }
  // stats._welch_p: a cell is [median, low, high, blocks, level, processes, log mean, log variance]
  function welchP(base, head, shift) {
    var nb = base[5], mb = base[6], vb = base[7], nh = head[5], mh = head[6], vh = head[7];
    if (!(nb >= 2 && nh >= 2) || vb === null || vh === null) { return NaN; }
    var a = vb / nb, b = vh / nh, se2 = a + b;
    if (se2 === 0) { return mh - shift === mb ? 1 : 0; }
    var t = (mh - shift - mb) / Math.sqrt(se2);
    var df = se2 * se2 / (a * a / (nb - 1) + b * b / (nh - 1));
    return betainc(df / 2, 0.5, df / (df + t * t));
  }
  // stats._bh: Benjamini-Hochberg over the finite p-values
  function bh(p, q) {
    var tested = [];
    p.forEach(function (x, i) { if (isFinite(x)) { tested.push(i); } });
    var out = p.map(function () { return false; });
    tested.sort(function (i, j) { return p[i] - p[j] || i - j; });
    var last = -1;
    tested.forEach(function (i, k) { if (p[i] <= q * (k + 1) / tested.length) { last = k; } });
    for (var k = 0; k <= last; k++) { out[tested[k]] = true; }
    return out;
  }
  function median(xs) {
    var s = xs.slice().sort(function (a, b) { return a - b; }), n = s.length;
    return (s[(n - 1) >> 1] + s[n >> 1]) / 2;
  }
  // pages.steps_between
  function stepsBetween(found, basePos, headPos) {
    var low = Math.min(basePos, headPos), high = Math.max(basePos, headPos), ratio = 1, candidate = false;
    (found || []).forEach(function (st) {
      if (low < st[0] && st[0] <= high) { if (st[1]) { ratio *= st[2]; } else { candidate = true; } }
    });
    return [headPos >= basePos ? ratio : 1 / ratio, candidate];
  }
  // stats.page_changes over a view's pairs {base: cell, head: cell, group: env id, steps: [ratio, candidate]}:
  // each pair gets .direction (+1 slower, -1 faster, 0 none), .reason and .p; returns env id -> common ratio.
  function pageChanges(pairs) {
    var bar = Math.log(1 + data.floor), moved = {}, common = {};
    pairs.forEach(function (x) {
      x.moved = Math.log(x.head[4] / x.base[4]);
      x.stepped = Math.abs(Math.log(x.steps[0])) >= bar;
      if (isFinite(x.moved) && !x.stepped && !x.steps[1]) { (moved[x.group] = moved[x.group] || []).push(x.moved); }
    });
    Object.keys(moved).forEach(function (g) {
      common[g] = moved[g].length >= data.common_min ? median(moved[g]) : 0;
    });
    pairs.forEach(function (x) {
      x.shift = common[x.group] || 0;
      x.p = x.stepped || x.steps[1] ? NaN : welchP(x.base, x.head, x.shift);
    });
    var rejected = bh(pairs.map(function (x) { return x.p; }), data.q);
    pairs.forEach(function (x, i) {
      var adjusted = x.moved - x.shift;
      x.direction = 0; x.reason = "";
      if (x.stepped) { x.direction = x.steps[0] > 1 ? 1 : -1; x.reason = "step"; }
      else if (x.steps[1]) { x.reason = "candidate"; }
      else if (!(x.base[5] >= 1 && x.head[5] >= 1)) { x.reason = "no levels"; }
      else if (isNaN(x.p)) { x.reason = "one process"; }
      else if (rejected[i] && Math.abs(adjusted) >= bar) { x.direction = adjusted > 0 ? 1 : -1; x.reason = "evidence"; }
    });
    var out = {};
    Object.keys(common).forEach(function (g) { out[g] = Math.exp(common[g]); });
    return out;
  }
  function pValueText(p) {  // Python's "{:.2g}"
    if (p !== 0 && Math.abs(p) < 1e-4) {
      return Number(p.toPrecision(2)).toExponential().replace(/e([+-])(\d)$/, "e$10$2");
    }
    return String(Number(p.toPrecision(2)));
  }
  function percent(ratio) { var x = (ratio - 1) * 100; return (x >= 0 ? "+" : "") + x.toFixed(1) + "%"; }
  // publisher._change_text
  function changeText(x) {
    if (x.reason === "step") { return "a confirmed step lies between it and its baseline (Steps page)"; }
    if (x.reason === "candidate") {
      return "an unconfirmed step lies between it and its baseline: a candidate, not yet a change";
    }
    if (x.reason === "one process") { return "measured by one process: no between-process evidence, not coloured"; }
    if (x.reason === "no levels") { return "its processes' levels were not kept: not coloured"; }
    if (x.reason === "evidence") { return "differs from its baseline across processes (p = " + pValueText(x.p) + ")"; }
    if (!isNaN(x.p)) { return "no change shown across processes (p = " + pValueText(x.p) + ")"; }
    return "";
  }
  // publisher._common_text
  function commonText(ratio) {
    if (!(Math.abs(Math.log(ratio)) >= Math.log(1 + data.floor))) { return ""; }
    return "all cells " + percent(ratio) + " together: the machine's state, taken out before colouring";
  }

  // publisher._ci_text: the cell's tooltip, before the reason for its colour.
  function g(x, digits) { return String(Number(x.toPrecision(digits))).replace(/e([+-])(\d)$/, "e$10$2"); }
  function ciText(cell) {
    var median, ci = "";
    if (data.fixed) {  // values as they are: instructions, a ratio, bytes
      median = "median " + g(cell[0], 6);
      if (cell[1] !== null && cell[2] !== null) {
        ci = ", " + Math.round(data.confidence * 100) + "% CI " + g(cell[1], 6) + " to " + g(cell[2], 6);
      }
    } else {
      var u = selectUnit(cell[0]);
      median = "median " + g(cell[0] / u[1], 4) + " " + u[0];
      if (cell[1] !== null && cell[2] !== null) {
        ci = ", " + Math.round(data.confidence * 100) + "% CI " + g(cell[1] / u[1], 4) + " to " +
          g(cell[2] / u[1], 4) + " " + u[0];
      }
    }
    return "level; " + median + ci + " (" + cell[3] + " blocks)";
  }

  function key(threads, name, column) { return threads + "|" + name + "|" + column; }

  function baselines(chosen, base) {
    var out = {};
    chosen.forEach(function (id) {
      var e = envById[id];
      if (base) { out[e.group] = base; } else if (!(e.group in out)) { out[e.group] = id; }
    });
    return out;
  }

  function render(state) {
    var chosen = state.envs.filter(function (id) { return id in envById; });
    chosen.sort(function (a, b) { return envById[a].pos - envById[b].pos || (a < b ? -1 : 1); });
    var base = baselines(chosen, state.base && state.base in envById ? state.base : "");
    var unit = ["", 1, ""];
    if (!state.relative) {
      if (data.fixed) { unit = [data.fixed[0], 1, ""]; } else {
        var least = Infinity;
        chosen.forEach(function (id) {
          var cells = data.cells[id] || {};
          Object.keys(cells).forEach(function (k) { least = Math.min(least, cells[k][4]); });
        });
        unit = selectUnit(least);
      }
    }
    // every chosen cell against its baseline's, compared together (stats.page_changes)
    var pairs = {}, all = [];
    chosen.forEach(function (id) {
      var e = envById[id], baseId = base[e.group];
      if (baseId === id) { return; }
      var cells = data.cells[id] || {}, baseCells = data.cells[baseId] || {};
      var steps = (data.steps[e.group] || {});
      Object.keys(cells).forEach(function (k) {
        if (!(k in baseCells)) { return; }
        var x = { base: baseCells[k], head: cells[k], group: id,
                  steps: stepsBetween(steps[k], envById[baseId].pos, e.pos) };
        pairs[id + "\u0000" + k] = x; all.push(x);
      });
    });
    var common = pageChanges(all);
    var table = document.createElement("table");
    table.className = "compare";
    table.id = "table";
    var head = table.createTHead().insertRow();
    head.appendChild(document.createElement("th"));
    data.columns.forEach(function (c) {
      var th = document.createElement("th"); th.textContent = c; head.appendChild(th);
    });
    var body = table.createTBody();
    var threadsSeen = [];
    data.rows.forEach(function (r) { if (threadsSeen.indexOf(r[0]) < 0) { threadsSeen.push(r[0]); } });
    threadsSeen.sort(function (a, b) { return a - b; });
    threadsSeen.forEach(function (threads) {
      var blockRows = [];
      chosen.forEach(function (id) {
        var cells = data.cells[id] || {};
        data.rows.forEach(function (r) {
          if (r[0] !== threads) { return; }
          var any = data.columns.some(function (c) { return key(threads, r[1], c) in cells; });
          if (any) { blockRows.push([id, r]); }
        });
      });
      if (!blockRows.length) { return; }
      var sep = body.insertRow(); sep.className = "threads";
      var th = document.createElement("th"); th.colSpan = data.columns.length + 1;
      th.textContent = threads + " threads:"; sep.appendChild(th);
      var prior = null;
      blockRows.forEach(function (pair) {
        var id = pair[0], r = pair[1], e = envById[id];
        var tr = body.insertRow();
        tr.id = ("r-" + id + "-" + threads + "-" + r[2]).replace(/\./g, "-");
        tr.className = "row" + (prior !== id ? " env-start" : "");
        tr.setAttribute("data-env", id);
        prior = id;
        var name = document.createElement("th"); name.className = "rowname";
        var tag = document.createElement("span"); tag.className = "env";
        tag.title = e.subject + " (" + e.machine + " \u00b7 " + e.env + ")";
        tag.textContent = "(" + e.tag + ")";
        name.appendChild(tag);
        var shared = commonText(common[id] || 1);
        if (shared) {
          var mark = document.createElement("span"); mark.className = "common"; mark.title = shared;
          mark.textContent = "\u2248"; name.appendChild(document.createTextNode(" ")); name.appendChild(mark);
        }
        name.appendChild(document.createTextNode(" " + r[1])); tr.appendChild(name);
        data.columns.forEach(function (c) {
          var td = document.createElement("td");
          var cell = (data.cells[id] || {})[key(threads, r[1], c)];
          var baseCell = (data.cells[base[e.group]] || {})[key(threads, r[1], c)];
          if (!cell || (state.relative && !baseCell)) { td.className = "cell empty"; tr.appendChild(td); return; }
          var value = state.relative ? cell[4] / baseCell[4] : cell[4] / unit[1];
          var text = value.toFixed(state.relative ? 2 : 1);
          var x = pairs[id + "\u0000" + key(threads, r[1], c)] || { direction: 0, reason: "", p: NaN };
          td.className = "cell" + (x.direction > 0 ? " slower" : x.direction < 0 ? " faster" : "") +
            (x.reason === "candidate" ? " candidate" : "") + (base[e.group] === id ? " baseline" : "");
          var why = changeText(x);
          td.title = ciText(cell) + (why ? "; " + why : "");
          if (cell[8]) {
            var a = document.createElement("a"); a.href = cell[8]; a.textContent = text; td.appendChild(a);
          } else { td.textContent = text; }
          var counts = (data.instructions[id] || {})[key(threads, r[1], c)];
          if (counts !== undefined) {  // publisher: the case's instructions per call beside its time
            var baseCounts = (data.instructions[base[e.group]] || {})[key(threads, r[1], c)];
            var span = document.createElement("span"); span.className = "counts";
            span.title = data.counts_title;
            span.textContent = state.relative && baseCounts ? (counts / baseCounts).toFixed(3) + " instr"
              : Math.round(counts).toLocaleString("en-US") + " instr";
            td.appendChild(document.createTextNode(" ")); td.appendChild(span);
          }
          tr.appendChild(td);
        });
      });
    });
    var old = document.getElementById("table");
    old.parentNode.replaceChild(table, old);
    document.getElementById("footer").textContent = state.relative
      ? "Values are ratios of levels to the baseline env's (lower is faster)."
      : data.fixed ? data.fixed[1]
      : "Times are in " + unit[2] + "s (" + unit[0] + ").";
  }

  // The choices are built here from the data (newest first): a history of 2000 commits would
  // otherwise be 2000 server-rendered rows on every page.
  function buildControls() {
    var list = document.getElementById("env-list");
    var select = document.getElementById("baseline");
    data.envs.slice().reverse().forEach(function (e) {
      var label = document.createElement("label");
      var box = document.createElement("input");
      box.type = "checkbox"; box.name = "env"; box.value = e.id;
      box.checked = data["default"].indexOf(e.id) >= 0;
      var code = document.createElement("code"); code.textContent = e.short;
      var where = document.createElement("span"); where.className = "envname";
      where.textContent = e.machine + " \u00b7 " + e.env;
      label.appendChild(box); label.appendChild(document.createTextNode(" "));
      label.appendChild(code); label.appendChild(document.createTextNode(" " + e.subject + " "));
      label.appendChild(where); list.appendChild(label);
      var option = document.createElement("option");
      option.value = e.id; option.textContent = e.short + " " + e.machine + " \u00b7 " + e.env;
      select.appendChild(option);
    });
  }

  function readControls() {
    var envs = [];
    document.querySelectorAll("input[name=env]").forEach(function (b) { if (b.checked) { envs.push(b.value); } });
    return { envs: envs, base: document.getElementById("baseline").value,
             relative: document.getElementById("relative").checked };
  }

  function toHash(state) {
    return "#view:envs=" + state.envs.join(",") + ";base=" + state.base + ";rel=" + (state.relative ? 1 : 0);
  }

  function fromHash(hash) {
    if (hash.indexOf("#view:") !== 0) { return null; }
    var state = { envs: data["default"].slice(), base: "", relative: false };
    hash.slice(6).split(";").forEach(function (part) {
      var kv = part.split("=");
      var value = decodeURIComponent(kv.slice(1).join("="));
      if (kv[0] === "envs") { state.envs = value ? value.split(",") : []; }
      if (kv[0] === "base") { state.base = value; }
      if (kv[0] === "rel") { state.relative = value === "1"; }
    });
    return state;
  }

  function applyToControls(state) {
    document.querySelectorAll("input[name=env]").forEach(function (b) { b.checked = state.envs.indexOf(b.value) >= 0; });
    document.getElementById("baseline").value = state.base;
    document.getElementById("relative").checked = state.relative;
  }

  function update() {
    var state = readControls();
    render(state);
    document.getElementById("permalink").href = toHash(state);
  }

  buildControls();
  document.getElementById("controls").addEventListener("change", update);
  var initial = fromHash(window.location.hash);
  if (initial) { applyToControls(initial); render(initial); }
  document.getElementById("permalink").href = toHash(initial || readControls());
  window.addEventListener("hashchange", function () {
    var state = fromHash(window.location.hash);
    if (state) { applyToControls(state); render(state); }
  });
  window.torchbenchCompare = { render: render, pageChanges: pageChanges, betainc: betainc, data: data };
}());
