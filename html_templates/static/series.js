// Series pages: on a chart whose lines are too long for a dot per commit, show the commit nearest the
// pointer (its subject, and each line's level, median, blocks and processes there). `#at=<commit>` in the
// address shows that commit on every such chart. The data is laid out by torchbench/publish/publisher.py
// (_hover) and the commits by _series_context; the page works from file:// (no fetch).
(function () {
  "use strict";
  var commits = JSON.parse(document.getElementById("series-commits").textContent);

  function fmt(v) {
    return Number(v).toPrecision(4).replace(/\.?0+(e|$)/, "$1");
  }

  function nearest(pos, x) {  // index of the position closest to x in an ascending list
    var lo = 0, hi = pos.length - 1;
    while (lo < hi) {
      var mid = (lo + hi) >> 1;
      if (pos[mid] < x) lo = mid + 1; else hi = mid;
    }
    if (lo > 0 && Math.abs(pos[lo - 1] - x) <= Math.abs(pos[lo] - x)) lo -= 1;
    return lo;
  }

  function measuredBy(n, p) {
    return p ? n + " blocks from " + p + " process" + (p === 1 ? "" : "es") : n + " blocks (processes not counted)";
  }

  function show(figure, data, tip, x) {
    var best = null;
    data.lines.forEach(function (line) {
      if (!line.pos.length) return;
      var p = line.pos[nearest(line.pos, x)];
      if (best === null || Math.abs(p - x) < Math.abs(best - x)) best = p;
    });
    if (best === null) return false;
    var commit = commits[best] || ["?", ""];
    var rows = [commit[0] + " " + commit[1]];
    data.lines.forEach(function (line) {
      var i = nearest(line.pos, best);
      if (line.pos[i] !== best) return;
      rows.push(line.name + ": level " + fmt(line.level[i]) + " " + data.unit + ", median " +
                fmt(line.median[i]) + " " + data.unit + " (" + measuredBy(line.n[i], line.p[i]) + ")");
    });
    tip.textContent = rows.join("\n");
    tip.dataset.position = best;
    var frac = (best - data.range[0]) / (data.range[1] - data.range[0]);
    var x = data.plot[0] + frac * (data.plot[2] - data.plot[0]);  // plot: x0, y0, x1, y1 in the SVG's units
    tip.style.left = Math.round(x) + "px";
    tip.hidden = false;
    var rule = figure.querySelector("line.hover-rule");
    if (!rule) {
      rule = document.createElementNS("http://www.w3.org/2000/svg", "line");
      rule.setAttribute("class", "hover-rule");
      figure.querySelector("svg").appendChild(rule);
    }
    rule.setAttribute("x1", x); rule.setAttribute("x2", x);
    rule.setAttribute("y1", data.plot[1]); rule.setAttribute("y2", data.plot[3]);
    rule.style.display = "";
    return true;
  }

  function hide(figure, tip) {
    tip.hidden = true;
    var rule = figure.querySelector("line.hover-rule");
    if (rule) rule.style.display = "none";
  }

  var wanted = (location.hash.match(/^#at=([0-9a-fA-F]+)/) || [])[1];
  document.querySelectorAll("figure.chart.hover").forEach(function (figure) {
    var data = JSON.parse(figure.querySelector("script.hover-data").textContent);
    var tip = figure.querySelector(".hover-tip");
    var svg = figure.querySelector("svg");
    svg.addEventListener("mousemove", function (event) {
      var box = svg.getBoundingClientRect();
      var px = (event.clientX - box.left) * svg.viewBox.baseVal.width / box.width;
      var frac = (px - data.plot[0]) / (data.plot[2] - data.plot[0]);
      if (frac < 0 || frac > 1) { hide(figure, tip); return; }
      show(figure, data, tip, data.range[0] + frac * (data.range[1] - data.range[0]));
    });
    svg.addEventListener("mouseleave", function () { hide(figure, tip); });
    if (wanted) {
      for (var position in commits) {
        if (commits[position][0].toLowerCase().indexOf(wanted.toLowerCase().slice(0, 8)) === 0) {
          show(figure, data, tip, Number(position));
          break;
        }
      }
    }
  });
})();
