"""The report's chart code (JavaScript, inlined into every report; kept in Python so it ships
with the package without package-data rules). It draws inline SVG from JSON chart specs and
sets ``document.body.dataset.chartsRendered`` to the number of charts drawn."""

__all__ = ["CHARTS_JS"]

CHARTS_JS = r"""
// tfpilot report charts: inline SVG drawn from the JSON specs embedded in the page.
// No dependencies and no network: the report must open offline, from a file, years later.
(function () {
  "use strict";
  var SVG = "http://www.w3.org/2000/svg";
  var PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"];
  var errors = [];
  window.addEventListener("error", function (event) {
    errors.push(String(event.message));
    document.body.dataset.jsErrors = String(errors.length);
  });

  function el(name, attrs, parent) {
    var node = document.createElementNS(SVG, name);
    for (var key in attrs) { if (attrs.hasOwnProperty(key)) { node.setAttribute(key, attrs[key]); } }
    if (parent) { parent.appendChild(node); }
    return node;
  }

  function text(parent, x, y, content, attrs) {
    var node = el("text", attrs || {}, parent);
    node.setAttribute("x", x);
    node.setAttribute("y", y);
    node.textContent = content;
    return node;
  }

  function tooltip(node, content) {
    var title = el("title", {}, node);
    title.textContent = content;
  }

  function fmt(value) {
    if (value === null || value === undefined || !isFinite(value)) { return "n/a"; }
    var magnitude = Math.abs(value);
    if (magnitude !== 0 && (magnitude < 1e-3 || magnitude >= 1e5)) { return value.toExponential(2); }
    return String(Math.round(value * 1e4) / 1e4);
  }

  // "Nice" axis ticks (1, 2, 5 x 10^k steps) covering [low, high].
  function ticks(low, high, count) {
    if (!(high > low)) { high = low + 1; }
    var raw = (high - low) / Math.max(1, count);
    var power = Math.pow(10, Math.floor(Math.log(raw) / Math.LN10));
    var step = [1, 2, 5, 10].map(function (m) { return m * power; }).filter(function (s) { return s >= raw; })[0];
    var start = Math.floor(low / step) * step;
    var result = [];
    for (var value = start; value <= high + step * 0.5; value += step) { result.push(Math.round(value / step) * step); }
    return result;
  }

  function frame(container, spec, width, height) {
    var svg = el("svg", { width: width, height: height, viewBox: "0 0 " + width + " " + height, role: "img",
                          "class": "chart-svg", "aria-label": spec.title || "" }, null);
    if (spec.title) { text(svg, width / 2, 16, spec.title, { "text-anchor": "middle", "class": "chart-title" }); }
    container.appendChild(svg);
    return svg;
  }

  function axes(svg, box, xs, ys, spec) {
    var g = el("g", { "class": "axes" }, svg);
    ys.ticks.forEach(function (value) {
      var y = ys.scale(value);
      el("line", { x1: box.left, x2: box.right, y1: y, y2: y, "class": "grid" }, g);
      text(g, box.left - 6, y + 4, fmt(value), { "text-anchor": "end", "class": "tick" });
    });
    xs.ticks.forEach(function (value) {
      var x = xs.scale(value);
      el("line", { x1: x, x2: x, y1: box.bottom, y2: box.bottom + 4, "class": "axis" }, g);
      text(g, x, box.bottom + 16, fmt(value), { "text-anchor": "middle", "class": "tick" });
    });
    el("line", { x1: box.left, x2: box.right, y1: box.bottom, y2: box.bottom, "class": "axis" }, g);
    el("line", { x1: box.left, x2: box.left, y1: box.top, y2: box.bottom, "class": "axis" }, g);
    if (spec.x_label) { text(g, (box.left + box.right) / 2, box.bottom + 32, spec.x_label, { "text-anchor": "middle", "class": "label" }); }
    if (spec.y_label) {
      text(g, 12, (box.top + box.bottom) / 2, spec.y_label,
           { "text-anchor": "middle", "class": "label", transform: "rotate(-90 12 " + (box.top + box.bottom) / 2 + ")" });
    }
  }

  // One row under the title, so the legend never covers the data.
  function legend(svg, names, colors, x, y) {
    var offset = x;
    names.forEach(function (name, i) {
      el("rect", { x: offset, y: y - 9, width: 10, height: 10, fill: colors[i] }, svg);
      text(svg, offset + 14, y, name, { "class": "legend" });
      offset += 24 + String(name).length * 6;
    });
  }

  function linear(domainLow, domainHigh, rangeLow, rangeHigh) {
    var span = domainHigh - domainLow || 1;
    return function (value) { return rangeLow + (value - domainLow) / span * (rangeHigh - rangeLow); };
  }

  function finite(values) { return values.filter(function (v) { return v !== null && isFinite(v); }); }

  function lineChart(container, spec) {
    var width = 460, height = 280;
    var svg = frame(container, spec, width, height);
    var box = { left: 62, right: width - 16, top: 44, bottom: height - 42 };
    var xsAll = [], ysAll = [];
    spec.series.forEach(function (s) { xsAll = xsAll.concat(finite(s.x)); ysAll = ysAll.concat(finite(s.y)); });
    if (spec.threshold !== undefined && spec.threshold !== null) { ysAll.push(spec.threshold); }
    if (!xsAll.length || !ysAll.length) { text(svg, width / 2, height / 2, "no data", { "text-anchor": "middle" }); return svg; }
    var yLow = Math.min.apply(null, ysAll), yHigh = Math.max.apply(null, ysAll);
    if (spec.zero_based) { yLow = Math.min(0, yLow); yHigh = Math.max(0, yHigh); }
    var yTicks = ticks(yLow, yHigh, 5), xTicks = ticks(Math.min.apply(null, xsAll), Math.max.apply(null, xsAll), 6);
    var xs = { ticks: xTicks, scale: linear(xTicks[0], xTicks[xTicks.length - 1], box.left, box.right) };
    var ys = { ticks: yTicks, scale: linear(yTicks[0], yTicks[yTicks.length - 1], box.bottom, box.top) };
    axes(svg, box, xs, ys, spec);
    var colors = [];
    spec.series.forEach(function (s, index) {
      var color = s.color || PALETTE[index % PALETTE.length];
      colors.push(color);
      var points = [];
      for (var i = 0; i < s.x.length; i++) {
        if (s.y[i] !== null && isFinite(s.y[i])) { points.push(xs.scale(s.x[i]).toFixed(1) + "," + ys.scale(s.y[i]).toFixed(1)); }
      }
      el("polyline", { points: points.join(" "), fill: "none", stroke: color, "stroke-width": 2, "class": "series",
                       "stroke-dasharray": s.dashed ? "5,4" : "" }, svg);
      for (var j = 0; j < s.x.length; j++) {
        if (s.y[j] === null || !isFinite(s.y[j])) { continue; }
        var dot = el("circle", { cx: xs.scale(s.x[j]), cy: ys.scale(s.y[j]), r: 2.5, fill: color }, svg);
        tooltip(dot, s.name + " @ " + fmt(s.x[j]) + ": " + fmt(s.y[j]));
      }
    });
    if (spec.threshold !== undefined && spec.threshold !== null) {
      var ty = ys.scale(spec.threshold);
      el("line", { x1: box.left, x2: box.right, y1: ty, y2: ty, "class": "threshold" }, svg);
    }
    legend(svg, spec.series.map(function (s) { return s.name; }), colors, box.left, 34);
    return svg;
  }

  function barChart(container, spec) {
    var categories = spec.categories;
    var width = Math.max(460, Math.min(900, 70 + categories.length * 14 * spec.series.length)), height = 280;
    var svg = frame(container, spec, width, height);
    var box = { left: 62, right: width - 16, top: 44, bottom: height - 56 };
    var values = [0];
    spec.series.forEach(function (s) { values = values.concat(finite(s.values)); });
    if (spec.threshold !== undefined && spec.threshold !== null) { values.push(spec.threshold); }
    var yTicks = ticks(Math.min.apply(null, values), Math.max.apply(null, values), 5);
    var scaleY = linear(yTicks[0], yTicks[yTicks.length - 1], box.bottom, box.top);
    var g = el("g", { "class": "axes" }, svg);
    yTicks.forEach(function (value) {
      var y = scaleY(value);
      el("line", { x1: box.left, x2: box.right, y1: y, y2: y, "class": "grid" }, g);
      text(g, box.left - 6, y + 4, fmt(value), { "text-anchor": "end", "class": "tick" });
    });
    el("line", { x1: box.left, x2: box.right, y1: scaleY(0), y2: scaleY(0), "class": "axis" }, g);
    var band = (box.right - box.left) / Math.max(1, categories.length);
    var barWidth = Math.max(1, band * 0.8 / spec.series.length);
    var colors = [];
    spec.series.forEach(function (s, si) {
      var color = s.color || PALETTE[si % PALETTE.length];
      colors.push(color);
      s.values.forEach(function (value, ci) {
        if (value === null || !isFinite(value)) { return; }
        var x = box.left + ci * band + band * 0.1 + si * barWidth;
        var y0 = scaleY(0), y1 = scaleY(value);
        var fill = (s.highlight && s.highlight[ci]) ? "#d62728" : color;
        var bar = el("rect", { x: x, y: Math.min(y0, y1), width: barWidth, height: Math.max(0.5, Math.abs(y1 - y0)), fill: fill, "class": "bar" }, svg);
        tooltip(bar, s.name + " / " + categories[ci] + ": " + fmt(value));
      });
    });
    var every = Math.ceil(categories.length / 24);
    categories.forEach(function (name, ci) {
      if (ci % every) { return; }
      var x = box.left + ci * band + band / 2;
      var label = String(name).length > 14 ? String(name).slice(0, 13) + "…" : String(name);
      text(svg, x, box.bottom + 12, label, { "text-anchor": "end", "class": "tick", transform: "rotate(-35 " + x + " " + (box.bottom + 12) + ")" });
    });
    if (spec.threshold !== undefined && spec.threshold !== null) {
      var ty = scaleY(spec.threshold);
      var line = el("line", { x1: box.left, x2: box.right, y1: ty, y2: ty, "class": "threshold" }, svg);
      tooltip(line, "threshold " + fmt(spec.threshold));
    }
    if (spec.series.length > 1) { legend(svg, spec.series.map(function (s) { return s.name; }), colors, box.left, 34); }
    return svg;
  }

  function heatmap(container, spec) {
    var labels = spec.labels, n = labels.length;
    var cell = Math.max(14, Math.min(40, Math.floor(360 / Math.max(1, n))));
    var left = 70, top = 40, width = Math.max(320, left + n * cell + 20), height = top + n * cell + 50;
    var svg = frame(container, spec, width, height);
    var peak = 1;
    spec.matrix.forEach(function (row) { row.forEach(function (v) { peak = Math.max(peak, v); }); });
    spec.matrix.forEach(function (row, i) {
      var rowTotal = row.reduce(function (a, b) { return a + b; }, 0) || 1;
      row.forEach(function (value, j) {
        var intensity = Math.sqrt(value / peak);
        var hue = i === j ? 210 : 0;
        var rect = el("rect", { x: left + j * cell, y: top + i * cell, width: cell - 1, height: cell - 1, "class": "cell",
                                fill: value ? "hsl(" + hue + ",70%," + (95 - 55 * intensity).toFixed(1) + "%)" : "#f6f6f6" }, svg);
        tooltip(rect, "true " + labels[i] + ", predicted " + labels[j] + ": " + value + " (" + fmt(100 * value / rowTotal) + "% of row)");
        if (value && cell >= 20) {
          text(svg, left + j * cell + cell / 2, top + i * cell + cell / 2 + 4, String(value),
               { "text-anchor": "middle", "class": intensity > 0.6 ? "cell-text dark" : "cell-text" });
        }
      });
      text(svg, left - 6, top + i * cell + cell / 2 + 4, labels[i], { "text-anchor": "end", "class": "tick" });
    });
    labels.forEach(function (name, j) {
      text(svg, left + j * cell + cell / 2, top + n * cell + 14, name, { "text-anchor": "middle", "class": "tick" });
    });
    text(svg, left + n * cell / 2, top + n * cell + 34, "predicted class", { "text-anchor": "middle", "class": "label" });
    text(svg, 12, top + n * cell / 2, "true class", { "text-anchor": "middle", "class": "label", transform: "rotate(-90 12 " + (top + n * cell / 2) + ")" });
    return svg;
  }

  var DRAW = { line: lineChart, bar: barChart, heatmap: heatmap };

  function render() {
    var specs = JSON.parse(document.getElementById("tfpilot-charts").textContent);
    var rendered = 0;
    specs.forEach(function (spec) {
      var container = document.getElementById(spec.id);
      if (!container || !DRAW[spec.type]) { return; }
      try {
        DRAW[spec.type](container, spec);
        container.dataset.rendered = "true";
        rendered += 1;
      } catch (error) {
        errors.push(spec.id + ": " + error.message);
        container.textContent = "chart failed: " + error.message;
        document.body.dataset.jsErrors = String(errors.length);
      }
    });
    document.body.dataset.chartsExpected = String(specs.length);
    document.body.dataset.chartsRendered = String(rendered);
  }

  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", render); } else { render(); }
})();
"""
