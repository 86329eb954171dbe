/* attnreport chart runtime, part 2 of 5: fitting each chart to its column.
 *
 * A chart is drawn for the width of its figure: "wide" (700 px or more) as compiled,
 * "narrow" (500-700 px) with legends below the plot and every wrapped facet in two
 * columns, "phone" (under 500 px) the same with wrapped facets in one column. A chart
 * still wider than its figure (a grid of facet rows and columns, a long input) then
 * shrinks its plots, not its text, down to LEAST of their size (a dense map, to any
 * size: it is then drawn at its column's width, not scaled down). When the window is
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

  // A compiled spec's size signals: steps and panel sizes; not, once wrapped (narrow or
  // phone fits), those of a wrapped facet's cells ("NAME_child_width"), which fit by
  // wrapping (shrinking them would not narrow a chart whose grid is its widest part).
  var SIZE = /(^|_)(step|width|height)$/;
  var WRAPPED = /_child_(width|height)$/;
  var LEAST = 0.3; // the smallest a plot is shrunk, as a share of its compiled size
  var TRIES = 3; // text does not shrink with the plots, so a few passes get it to fit
  var FILL_TRIES = 6; // a chart that fills its column: text is most of what is left
  var fitting = 0; // fitting passes begun or asked for and not finished (``busy``)

  // The width a drawn chart takes (its SVG's or canvas's own CSS pixels, before the
  // stylesheet scales it to the figure).
  function drawnWidth(el) {
    var marks = el.querySelector("svg.marks, canvas.marks");
    if (!marks) {
      return 0;
    }
    // a canvas holds devicePixelRatio pixels per CSS pixel; its style gives its CSS width
    var css = marks.tagName === "CANVAS" ? parseFloat(marks.style.width) : 0;
    return css || parseFloat(marks.getAttribute("width")) || parseFloat(marks.style.width) || 0;
  }

  // The width of a single view's plot (its "width" signal), or 0 (none: a facet grid).
  function plotWidth(view) {
    try {
      return +view.signal("width") || 0;
    } catch (error) {
      return 0;
    }
  }

  // The width a chart's drawing has in EL: its box less its padding (vega-embed keeps
  // room on the right for its actions menu).
  function roomOf(el) {
    var style = window.getComputedStyle(el);
    return el.clientWidth - (parseFloat(style.paddingLeft) || 0) - (parseFloat(style.paddingRight) || 0);
  }

  // A fitted chart still wider than its figure (a grid of facet rows and columns, which
  // cannot wrap; a long input's axis): its plots shrink (steps and panel sizes of the
  // compiled SIGNALS), its text keeps its size, until it fits or is LEAST of its size. A
  // chart whose spec says {usermeta: {fit: "fill"}} (a long input's attention map) shrinks
  // until it fits, to fractions of a pixel per cell. Whenever the view is resized by
  // anything but this fitting (a control moved, rows loaded later) it is fitted again from
  // its compiled sizes, as the same view opened from the URL is: each pass's scale depends
  // on the drawing it measures, so a fitting that went on from the last view's scale drew
  // 1-2 px off. Resolves when the first fitting is drawn.
  function shrinkToFit(el, view, signals, fit, usermeta) {
    var sizes = signals.filter(function (signal) {
      var name = signal.name;
      return SIZE.test(name) && (fit === "wide" || !WRAPPED.test(name)) &&
        typeof signal.value === "number" && !signal.bind;
    });
    if (!sizes.length) {
      return Promise.resolve();
    }
    var fill = Boolean(usermeta && usermeta.fit === "fill");
    var scale = 1;
    var busy = false;
    var running = 0; // runs of this fitting under way: the resizes they report are its own
    var stale = false; // resized by another run while a fitting was under way
    // At scale 1 the compiled sizes as they are (a view drawn from its spec has them).
    function sizeOf(signal) {
      if (scale === 1) {
        return signal.value;
      }
      var size = signal.value * scale;
      return fill ? Math.max(0.05, size) : Math.max(1, Math.floor(size));
    }
    function apply() {
      sizes.forEach(function (signal) {
        view.signal(signal.name, sizeOf(signal));
      });
      running += 1;
      function ran() {
        running -= 1;
      }
      var run = view.runAsync();
      run.then(ran, ran);
      return run;
    }
    // The next scale of the plots for a drawing WIDTH px wide in ROOM px. Text does not
    // shrink, so a chart that fills its column takes all of the excess off its plot (the
    // "width" signal); any other aims a little under the column, to fit in TRIES.
    function nextScale(width, room) {
      var plot = fill ? plotWidth(view) : 0;
      if (plot > 0) {
        return Math.max(0, (scale * (plot - (width - room) - 1)) / plot);
      }
      return Math.max(fill ? 0 : LEAST, (scale * (room - 1)) / width);
    }
    // LAST: the width and scale before the previous pass; when that pass did not narrow
    // the drawing, its text alone is that wide and shrinking the plot only hid it: undo.
    function pass(left, last) {
      var width = drawnWidth(el);
      var room = roomOf(el);
      if (last && width >= last.width - 0.5) {
        scale = last.scale;
        return apply();
      }
      if (!width || width <= room + 1 || !left || scale <= (fill ? 0 : LEAST)) {
        return Promise.resolve();
      }
      var before = { width: width, scale: scale };
      scale = nextScale(width, room);
      return apply().then(function () {
        return pass(left - 1, fill ? before : null);
      });
    }
    // Back to the compiled sizes (unless there already) and drawn, to be measured afresh.
    function restart() {
      if (scale === 1) {
        return Promise.resolve();
      }
      scale = 1;
      return apply();
    }
    function fitNow() {
      if (busy) {
        return Promise.resolve();
      }
      busy = true;
      stale = false;
      fitting += 1;
      function done() {
        busy = false;
        fitting -= 1;
        if (stale) {
          later(); // the view changed while it was measured: fit the view it is now
        }
      }
      return restart().then(function () {
        return pass(fill ? FILL_TRIES : TRIES, null);
      }).then(done, function (error) {
        done();
        throw error;
      });
    }
    function later() {
      fitting += 1; // asked for: busy until it has run
      window.setTimeout(function () {
        fitting -= 1;
        fitNow();
      }, 0); // not inside the dataflow run that resized it
    }
    // Vega reports a resize inside the run that made it: while one of this fitting's own
    // runs is under way, the resize is its own doing (fitting again on it would not end).
    view.addResizeListener(function () {
      if (running) {
        return;
      }
      if (busy) {
        stale = true; // fitted again once the fitting under way is done
      } else {
        later();
      }
    });
    return fitNow();
  }

  // Vega places a facet grid's rows on its first run by bounds that are not yet final (the
  // example's mean grid on a phone: a cell whose axis has no label at its top kept a
  // label's room above it, 1 px a row) and does not place them again; a run that updates
  // the same rows does, as after a control moved. So a grid's first drawing runs once
  // more, every row of its data set NAME marked modified (none of its values changed):
  // drawn directly or reached by the controls, a view is then laid out alike.
  function layOutAgain(view, name) {
    var rows = view.data(name) || [];
    var field = rows.length ? Object.keys(rows[0])[0] : null;
    if (!field) {
      return Promise.resolve();
    }
    var same = view.changeset().modify(function () {
      return true;
    }, field, function (row) {
      return row[field];
    });
    return view.change(name, same).runAsync();
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
    busy: function () {
      return fitting > 0;
    },
    fitOf: fitOf,
    fitted: fitted,
    shrinkToFit: shrinkToFit,
    layOutAgain: layOutAgain,
    fitCanvasPicking: fitCanvasPicking,
    followResize: followResize,
  };
})();
