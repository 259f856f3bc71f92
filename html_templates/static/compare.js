// The Compare page's choices: which commits and environments, the baseline, the relative view.
// The page arrives with the default view rendered (it works without this script); this
// re-lays the table from the data embedded in the page (no XHR, so it works from file://).
// Cell text follows torchbench_core.Compare (1 decimal; 2 for ratios) and colour follows
// torchbench/stats.py `cells_differ`: tests check that both agree with the Python side.
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

  // stats.cells_differ: +1 slower, -1 faster, 0 nothing shown.
  function differ(base, head, floor) {
    if (!base || !head || base[1] === null || base[2] === null || head[1] === null || head[2] === null ||
        base[0] <= 0) { return 0; }
    var ratio = head[0] / base[0];
    if (head[1] > base[2] && ratio >= 1 + floor) { return 1; }
    if (head[2] < base[1] && ratio <= 1 / (1 + floor)) { return -1; }
    return 0;
  }

  // publisher._ci_text: a cell is [median, low, high, samples, flame graph (where one exists)].
  function g(x, digits) { return String(Number(x.toPrecision(digits))).replace(/e([+-])(\d)$/, "e$10$2"); }
  function ciText(cell) {
    if (cell[1] === null || cell[2] === null) { return cell[3] + " sample(s): too few for an interval"; }
    var level = Math.round(data.confidence * 100) + "% CI ";
    if (data.counts) { return level + g(cell[1], 6) + " to " + g(cell[2], 6) + " (" + cell[3] + " samples)"; }
    var u = selectUnit(cell[0]);
    return level + g(cell[1] / u[1], 4) + " to " + g(cell[2] / u[1], 4) + " " + u[0] + " (" + cell[3] + " samples)";
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
      if (data.counts) { unit = ["instructions", 1, ""]; } else {
        var least = Infinity;
        chosen.forEach(function (id) {
          var cells = data.cells[id] || {};
          Object.keys(cells).forEach(function (k) { least = Math.min(least, cells[k][0]); });
        });
        unit = selectUnit(least);
      }
    }
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
        name.appendChild(tag); name.appendChild(document.createTextNode(" " + r[1])); tr.appendChild(name);
        data.columns.forEach(function (c) {
          var td = document.createElement("td");
          var cell = (data.cells[id] || {})[key(threads, r[1], c)];
          var baseCell = (data.cells[base[e.group]] || {})[key(threads, r[1], c)];
          if (!cell || (state.relative && !baseCell)) { td.className = "cell empty"; tr.appendChild(td); return; }
          var value = state.relative ? cell[0] / baseCell[0] : cell[0] / unit[1];
          var text = value.toFixed(state.relative ? 2 : 1);
          var direction = base[e.group] === id ? 0 : differ(baseCell, cell, data.floor);
          td.className = "cell" + (direction > 0 ? " slower" : direction < 0 ? " faster" : "") +
            (base[e.group] === id ? " baseline" : "");
          td.title = ciText(cell);
          if (cell[4]) {
            var a = document.createElement("a"); a.href = cell[4]; a.textContent = text; td.appendChild(a);
          } else { td.textContent = text; }
          var counts = (data.instructions[id] || {})[key(threads, r[1], c)];
          if (counts !== undefined) {  // publisher: the case's instructions per call beside its time
            var baseCounts = (data.instructions[base[e.group]] || {})[key(threads, r[1], c)];
            var span = document.createElement("span"); span.className = "counts";
            span.title = "instructions per call (callgrind)";
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
      ? "Values are ratios of medians to the baseline env's (lower is faster)."
      : data.counts ? "Values are instructions per run (median)."
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
  window.torchbenchCompare = { render: render, differ: differ, data: data };
}());
