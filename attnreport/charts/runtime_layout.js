/* attnreport chart runtime, part 2 of 6: fitting each chart to its column.
 *
 * A chart is drawn for the width of its figure: "wide" (700 px or more) as compiled,
 * "narrow" (500-700 px) with legends below the plot and every wrapped facet in two
 * columns, "phone" (under 500 px) the same with wrapped facets in one column. A chart
 * still wider than its figure then shrinks its plots (runtime_fit.js). When the window is
 * resized so that a chart's fit changes, the chart is drawn again (runtime.js,
 * Chart.refit). Exposes window.attnreport.layout.
 */
(function () {
  "use strict";

  var ns = (window.attnreport = window.attnreport || {});
  var NARROW = 700; // px: a chart narrower than this puts its legends below the plot
  var PHONE = 500; // px: and narrower than this, its wrapped facets in one column
  var RESIZE_DELAY = 150; // ms the window must rest before charts are fitted again
  // px a title leaves for the axis beside the plot: it starts where the plot does, right
  // of the y axis's labels (a long input's token labels take about 60 px)
  var AXIS_ROOM = 100;

  function own(object, name) {
    return Object.prototype.hasOwnProperty.call(object, name);
  }

  // The fit of a chart WIDTH px wide ("wide" when not laid out yet: 0).
  function fitOf(width) {
    if (!width || width >= NARROW) {
      return "wide";
    }
    return width >= PHONE ? "narrow" : "phone";
  }

  // TEXT in lines of at most CHARS characters, broken between words.
  function wrapText(text, chars) {
    var lines = [];
    text.split(" ").forEach(function (word) {
      var last = lines.length - 1;
      if (last >= 0 && (lines[last] + " " + word).length <= chars) {
        lines[last] += " " + word;
      } else {
        lines.push(word);
      }
    });
    return lines;
  }

  // The compiled SPEC drawn WIDTH px wide: as it is when wide; else legends below, every
  // wrapped facet (at the top or inside a concatenation) in at most 2 columns (1 on a
  // phone), a plain-text title and subtitle in lines that fit WIDTH (a fitted view would
  // otherwise shrink its plot to make room for them).
  function fitted(spec, width) {
    var fit = fitOf(width);
    if (fit === "wide") {
      return spec;
    }
    var columns = fit === "phone" ? 1 : 2;
    var out = JSON.parse(JSON.stringify(spec));
    var title = out.title;
    if (title && typeof title === "object") {
      var chars = Math.floor((width - AXIS_ROOM) / 9);
      if (typeof title.text === "string") {
        title.text = wrapText(title.text, chars);
      } else if (title.text && typeof title.text.signal === "string") {
        title.text = { signal: wrapSignal(title.text.signal, chars) };
      }
      if (typeof title.subtitle === "string") {
        title.subtitle = wrapText(title.subtitle, Math.floor((width - AXIS_ROOM) / 7));
      }
    }
    wrapFacets(out, columns, {});
    out.data = (out.data || []).map(function (data) {
      return wrapDomain(data, columns);
    });
    legendsBelow(out);
    return out;
  }

  // A title that names the controls' values, "'TEXT (' + ...values... + ')'" (as
  // charts/common.selection_title writes it), as an array of lines: TEXT wrapped at CHARS
  // characters, then the values in parentheses. Any other expression is left as it is.
  function wrapSignal(expr, chars) {
    var parts = /^'([^'\\]*) \(' \+ ([\s\S]*)$/.exec(expr);
    if (!parts) {
      return expr;
    }
    var lines = wrapText(parts[1], chars).map(function (line) {
      return JSON.stringify(line);
    });
    return "[" + lines.join(", ") + ", '(' + " + parts[2] + "]";
  }

  // Every group with a fixed column count (a wrapped facet) in at most COLUMNS columns,
  // tick labels that would overlap left out on a continuous axis and turned upright on a
  // horizontal axis of categories (a bar keeps its name where its label fits; every other
  // one is left out only where the categories are closer than a line of text, as a long
  // sentence's tokens), and row headers written along their row (a long label beside a
  // grid on a phone takes the width its cells need; the tooltips name the row in full).
  // SCALES: the scale types by name, of this group and the groups around it.
  function wrapFacets(group, columns, scales) {
    var layout = group.layout;
    if (layout && typeof layout.columns === "number" && layout.columns > columns) {
      layout.columns = columns;
    }
    scales = Object.assign({}, scales);
    (group.scales || []).forEach(function (scale) {
      scales[scale.name] = scale.type;
    });
    (group.axes || []).forEach(function (axis) {
      var type = scales[axis.scale];
      var across = axis.orient === "bottom";
      if (across && (type === "band" || type === "point") && axis.labels !== false) {
        Object.assign(axis, { labelAngle: -90, labelAlign: "right", labelBaseline: "middle" });
        // upright, a label takes its line's height: where the categories are closer than
        // that (a sentence's tokens on a phone) every other one is left out, in turn (the
        // tooltips name each); a few bars keep every name
        axis.labelOverlap = "parity";
      } else {
        axis.labelOverlap = true; // a shrunk plot's tick labels would run into each other
      }
    });
    var title = group.title;
    if (group.role === "row-header" && title && title.angle === 0 && columns === 1) {
      Object.assign(title, { angle: -90, align: "center", baseline: "bottom", limit: 110 });
    }
    (group.marks || []).forEach(function (mark) {
      if (mark.type === "group") {
        wrapFacets(mark, columns, scales);
      }
    });
  }

  // A wrapped facet's header and footer rows are a sequence whose length Vega-Lite wrote
  // with its column count N: "ceil(length(data(\"NAME_facet_domain\")) / N)" and
  // "min(length(...), N)".
  function wrapDomain(data, columns) {
    if (!/facet_domain_(row|column)$/.test(data.name)) {
      return data;
    }
    var text = JSON.stringify(data)
      .replace(/\/ ([0-9]+)\)/g, function (whole, n) {
        return +n > columns ? "/ " + columns + ")" : whole;
      })
      .replace(/, ([0-9]+)\)/g, function (whole, n) {
        return +n > columns ? ", " + columns + ")" : whole;
      });
    return JSON.parse(text);
  }

  // Legends below the plot, in every view of a compiled spec, one under the other (side
  // by side, a gradient and a symbol legend are wider than a phone): gradients
  // horizontal, symbol entries one per line.
  function legendsBelow(spec) {
    spec.config = spec.config || {};
    spec.config.legend = Object.assign({}, spec.config.legend, {
      layout: { bottom: { anchor: "start", direction: "vertical" } },
    });
    legendsBelowIn(spec);
  }

  function legendsBelowIn(spec) {
    (spec.legends || []).forEach(function (legend) {
      legend.orient = "bottom";
      if (own(legend, "gradientLength")) {
        legend.direction = "horizontal";
        legend.gradientLength = 160;
      } else {
        legend.direction = "vertical";
      }
    });
    (spec.marks || []).forEach(function (mark) {
      if (mark.type === "group") {
        legendsBelowIn(mark);
      }
    });
  }

  // The stylesheet scales a chart wider than its column down to fit (max-width: 100%).
  // An SVG scales with its viewBox; a canvas is scaled as an image, so Vega, which picks
  // the mark under the pointer in the canvas's own pixels, gets the pointer scaled back.
  function fitCanvasPicking() {
    var Handler = window.vega && window.vega.CanvasHandler;
    if (!Handler || Handler.prototype.attnreportFitted) {
      return;
    }
    var pickEvent = Handler.prototype.pickEvent;
    Handler.prototype.attnreportFitted = true;
    Handler.prototype.pickEvent = function (event) {
      var canvas = this._canvas;
      var rect = canvas ? canvas.getBoundingClientRect() : null;
      var width = canvas ? parseFloat(canvas.style.width) || canvas.width : 0;
      if (!rect || !rect.width || !width || Math.abs(rect.width - width) < 0.5) {
        return pickEvent.call(this, event);
      }
      var k = width / rect.width;
      var x = (event.clientX - rect.left) * k;
      var y = (event.clientY - rect.top) * k;
      return this.pick(this._scene, x, y, x - this._origin[0], y - this._origin[1]);
    };
  }

  // After the window is resized (and rests), every chart in CHARTS() whose fit changed
  // is drawn again (chart.refit()).
  function followResize(charts) {
    var timer = null;
    window.addEventListener("resize", function () {
      window.clearTimeout(timer);
      timer = window.setTimeout(function () {
        charts().forEach(function (chart) {
          chart.refit();
        });
      }, RESIZE_DELAY);
    });
  }

  ns.layout = {
    fitOf: fitOf,
    fitted: fitted,
    fitCanvasPicking: fitCanvasPicking,
    followResize: followResize,
  };
})();
