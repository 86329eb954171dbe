/* attnreport chart runtime, part 1 of 6: one state per page, mirrored in the URL hash.
 *
 * The bound params named in SHARED are state of the page, not of one figure: every
 * chart that binds one shows the same value, moving any control moves them all, and
 * clicking a mark whose row names a head (and layer) selects it everywhere. The state
 * is mirrored in the URL hash ("#layer=7&head=2&eps=0.001&..."), so a link opens that
 * view, and each settled change is a history entry, so back and forward step through
 * views. A value no control of the page can show ("#layer=99&head=-3") is brought to the
 * nearest one every control of its name can show (a slider's end or step) or dropped (an
 * option no select has), before any chart draws, and the URL rewritten to the view shown;
 * an edited hash likewise. Exposes window.attnreport.state (the page state) and .history;
 * runtime.js, loaded after this file and the other parts (embed.runtime_js() joins them),
 * draws.
 */
(function () {
  "use strict";

  var ns = (window.attnreport = window.attnreport || {});
  // layer, head: the chosen head; sort_idx: the target's rank; observation: the observed
  // layer of the intervention grids; eps: their scale factor; positions_from: a window.
  var SHARED = ["layer", "head", "sort_idx", "observation", "eps", "positions_from"];
  var HASH_DELAY = 400; // ms a control must rest before its view becomes a history entry
  var NUMBER = /^-?([0-9]+\.?[0-9]*|\.[0-9]+)(e[-+]?[0-9]+)?$/i;
  // A row's link: a page beside this one, opened at a view ("s003-the-dog.html#layer=2&head=1")
  var PAGE_LINK = /^[A-Za-z0-9_.-]+\.html#[A-Za-z0-9_=&.-]+$/;
  // Marks that stand for one row (a line or an area stands for many: it links nowhere)
  var LINKING = ["symbol", "rect"];

  function own(object, name) {
    return Object.prototype.hasOwnProperty.call(object, name);
  }

  // {name: value} of the shared params in a hash; {} for a plain anchor ("#figure-3").
  // A number is a number ("eps=1e-3" is 0.001, the same float as the control's option).
  function parseHash(hash) {
    var out = {};
    var text = (hash || "").replace(/^#/, "");
    if (text.indexOf("=") < 0) {
      return out;
    }
    text.split("&").forEach(function (pair) {
      var at = pair.indexOf("=");
      var name = at > 0 ? decodeURIComponent(pair.slice(0, at)) : "";
      if (SHARED.indexOf(name) < 0) {
        return;
      }
      var value = decodeURIComponent(pair.slice(at + 1));
      out[name] = NUMBER.test(value) ? parseFloat(value) : value;
    });
    return out;
  }

  // Whether VALUE is one the bound SIGNAL's control can show (in range, on a step, an option).
  function fits(signal, value) {
    var bind = signal.bind || {};
    if (bind.input === "range") {
      var step = bind.step || 1;
      return typeof value === "number" && value >= bind.min && value <= bind.max &&
        (value - bind.min) % step === 0;
    }
    if (bind.options) {
      return bind.options.indexOf(value) >= 0;
    }
    return typeof value === typeof signal.value;
  }

  // VALUE made one that the bound SIGNAL's control can show: a number on a slider is
  // brought into its range and onto its nearest step ("layer=99" is the last layer,
  // "head=-3" the first head); anything else it cannot show is undefined (dropped).
  function nearest(signal, value) {
    var bind = signal.bind || {};
    if (bind.input === "range" && typeof value === "number" && isFinite(value)) {
      var step = bind.step || 1;
      var steps = Math.round((Math.min(Math.max(value, bind.min), bind.max) - bind.min) / step);
      value = Math.min(bind.min + steps * step, bind.max);
    }
    return fits(signal, value) ? value : undefined;
  }

  // VALUES (by name) as the CONTROLS (name -> the bound signals of that name, one per
  // chart) can all show them: each value brought to the nearest one every control of
  // its name can show, and dropped when none can, or when no control has that name.
  function validated(values, controls) {
    var out = {};
    Object.keys(values).forEach(function (name) {
      var signals = controls[name] || [];
      var value = values[name];
      for (var pass = 0; pass < 2 && value !== undefined; pass++) {
        // twice: a slider's nearest step may need the other sliders' range again
        signals.forEach(function (signal) {
          value = value === undefined ? undefined : nearest(signal, value);
        });
      }
      if (signals.length && value !== undefined) {
        out[name] = value;
      }
    });
    return out;
  }

  // The hash that shows VALUES ("" when none).
  function hashOf(values) {
    var text = SHARED.filter(function (name) {
      return own(values, name);
    })
      .map(function (name) {
        return encodeURIComponent(name) + "=" + encodeURIComponent(values[name]);
      })
      .join("&");
    return text ? "#" + text : "";
  }

  // The value a reader chose on TARGET, a control Vega made for a signal bound with
  // BIND in the chart element EL (a slider's number, a select's or radio button's
  // option, as Vega reads them); undefined for anything else (a radio button unchecked).
  function controlValue(target, bind, el) {
    if (target.type === "range") {
      return +target.value;
    }
    if (target.tagName === "SELECT") {
      return bind.options[target.selectedIndex];
    }
    if (target.type === "radio" && target.checked) {
      var group = el.querySelectorAll('input[type="radio"][name="' + target.name + '"]');
      return bind.options[Array.prototype.indexOf.call(group, target)];
    }
    return undefined;
  }

  // history.pushState / replaceState, where the page may use them (a sandboxed frame may
  // not: its figures still share their state, the URL just does not follow).
  function writeHistory(method, state, url) {
    try {
      window.history[method](state, "", url);
    } catch (error) {
      if (window.console) {
        window.console.warn("attnreport: the URL cannot follow the figures here", error);
      }
    }
  }

  var pageState = {
    values: parseHash(window.location.hash),
    controls: {}, // name -> the bound signals of that name, one per chart of the page
    charts: [],
    timer: null,
    restoring: false,

    // The shared, bound signals of a spec, by name.
    sharedSignals: function (signals) {
      var out = {};
      signals.forEach(function (signal) {
        if (signal.bind && SHARED.indexOf(signal.name) >= 0) {
          out[signal.name] = signal;
        }
      });
      return out;
    },

    // Before any chart draws: the controls of every chart of the page (their compiled
    // SIGNALS, one list per chart) say which values the page can show; the hash's values
    // become those (``validated``), and the URL is rewritten to them when they differ.
    expect: function (signalLists) {
      var controls = this.controls;
      var self = this;
      signalLists.forEach(function (signals) {
        var shared = self.sharedSignals(signals);
        Object.keys(shared).forEach(function (name) {
          controls[name] = (controls[name] || []).concat([shared[name]]);
        });
      });
      this.values = validated(this.values, controls);
      this.showInUrl(parseHash(window.location.hash));
    },

    // The URL's hash rewritten to the view shown when ASKED (the values a hash asked
    // for) differ from it: an out-of-range or unknown value is not left in the address.
    showInUrl: function (asked) {
      var shown = {};
      var values = this.values;
      Object.keys(asked).forEach(function (name) {
        if (own(values, name)) {
          shown[name] = values[name];
        }
      });
      if (hashOf(shown) !== hashOf(asked)) {
        var url = window.location.pathname + window.location.search + hashOf(shown);
        writeHistory("replaceState", { attnreport: this.copy() }, url);
      }
    },

    // A chart's signals before a draw: a shared one opens on the page's value (from the
    // hash, or an earlier figure's default), else its default becomes the page's.
    adopt: function (signals) {
      var values = this.values;
      return signals.map(function (signal) {
        if (!signal.bind || SHARED.indexOf(signal.name) < 0) {
          return signal;
        }
        if (!own(values, signal.name)) {
          values[signal.name] = signal.value;
          return signal;
        }
        return fits(signal, values[signal.name])
          ? Object.assign({}, signal, { value: values[signal.name] })
          : signal;
      });
    },

    // A drawn chart joins the page (again, after a redraw: its new view listens instead):
    // its controls and head clicks move every chart.
    join: function (chart) {
      var self = this;
      if (this.charts.indexOf(chart) < 0) {
        this.charts.push(chart);
      }
      Object.keys(chart.shared).forEach(function (name) {
        if (own(self.values, name)) {
          self.show(chart, name, self.values[name]); // moved while this chart was drawing
        }
        chart.view.addSignalListener(name, function (_, value) {
          self.set(name, value);
        });
      });
      chart.view.addEventListener("click", function (_, item) {
        self.pick(item);
      });
    },

    show: function (chart, name, value) {
      var signal = chart.shared[name];
      if (chart.view && signal && fits(signal, value) && chart.view.signal(name) !== value) {
        var change = {};
        change[name] = value;
        chart.show(change); // once the rows of that value are in
      }
    },

    set: function (name, value) {
      var shown = this.charts.some(function (chart) {
        return own(chart.shared, name);
      });
      if (this.values[name] === value || !shown) {
        return; // unchanged, or no chart on this page has that control
      }
      var self = this;
      this.values[name] = value;
      this.charts.forEach(function (chart) {
        self.show(chart, name, value);
      });
      this.remember();
    },

    // A click on a mark whose row names a head (a line, a point, a bar of a per-head chart):
    // on an index, whose rows link each head to a sentence page (an "href" column:
    // charts/figures/links.py), that page opens at the head; elsewhere the head is chosen.
    pick: function (item) {
      var datum = item && item.datum;
      if (datum && typeof datum.href === "string" && PAGE_LINK.test(datum.href) &&
          LINKING.indexOf(item.mark.marktype) >= 0) {
        window.location.assign(datum.href);
        return;
      }
      if (!datum || typeof datum.head !== "number") {
        return;
      }
      if (typeof datum.layer === "number") {
        this.set("layer", datum.layer);
      }
      this.set("head", datum.head);
    },

    hash: function () {
      return hashOf(this.values);
    },

    // After a change settles, the view becomes a history entry (its hash and values).
    remember: function () {
      var self = this;
      if (this.restoring) {
        return;
      }
      window.clearTimeout(this.timer);
      this.timer = window.setTimeout(function () {
        var hash = self.hash();
        if (hash && hash !== window.location.hash) {
          writeHistory("pushState", { attnreport: self.copy() }, hash);
        }
      }, HASH_DELAY);
    },

    copy: function () {
      return Object.assign({}, this.values);
    },

    // Back, forward or an edited hash: show the view that entry holds (what of it the
    // page can show: an edited hash is checked as the opening one is, and rewritten).
    restore: function (values, fromHash) {
      var self = this;
      var shown = validated(values, this.controls);
      window.clearTimeout(this.timer);
      this.restoring = true;
      Object.keys(shown).forEach(function (name) {
        self.set(name, shown[name]);
      });
      this.restoring = false;
      if (fromHash) {
        this.showInUrl(values);
      }
    },
  };

  function onHistory(event) {
    var saved = event && event.state && event.state.attnreport;
    pageState.restore(saved || parseHash(window.location.hash), !saved);
  }

  // Once every chart has started: the opening view becomes the current history entry (so
  // back from a later one returns to it), and back, forward and hash edits are followed.
  function followHistory() {
    writeHistory("replaceState", { attnreport: pageState.copy() }, window.location.href);
    window.addEventListener("popstate", onHistory);
    window.addEventListener("hashchange", onHistory);
  }

  ns.state = pageState;
  ns.followHistory = followHistory;
  ns.parseHash = parseHash;
  ns.controlValue = controlValue;
})();

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

/* attnreport chart runtime, part 3 of 6: shrinking a chart's plots to fit its column.
 *
 * A chart still wider than its figure once fitted (runtime_layout.js: a grid of facet rows
 * and columns, a long input) shrinks its plots, not its text, down to LEAST of their size
 * (a dense map, to any size: it is then drawn at its column's width, not scaled down).
 * A view is fitted alike whether it was opened from its URL or reached by the controls.
 * Exposes window.attnreport.fit.
 */
(function () {
  "use strict";

  var ns = (window.attnreport = window.attnreport || {});

  // A compiled spec's size signals: steps and panel sizes; not, once wrapped (narrow or
  // phone fits), those of a wrapped facet's cells ("NAME_child_width"), which fit by
  // wrapping (shrinking them would not narrow a chart whose grid is its widest part).
  var SIZE = /(^|_)(step|width|height)$/;
  var WRAPPED = /_child_(width|height)$/;
  var LEAST = 0.3; // the smallest a plot is shrunk, as a share of its compiled size
  // Passes at most. Text does not shrink with the plots, so each pass takes off less than
  // the excess and the next one measures again: the example's mean grid fits a 1280 px
  // window after 9. (A fitting's own resizes once set off more fittings, which went on
  // until the chart fitted; they are ignored now, so one fitting has to get there.)
  var TRIES = 24;
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
    // "width" signal); any other aims a little under the column.
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

  ns.fit = {
    busy: function () {
      return fitting > 0;
    },
    shrinkToFit: shrinkToFit,
    layOutAgain: layOutAgain,
  };
})();

/* attnreport chart runtime, part 4 of 6: the data files and their columns.
 *
 * A figure's rows travel as encoded columns (embed.py documents the forms), inline in the
 * page or in chunk files: classic scripts ("KEY--CHUNK.js", loaded with a script tag, so
 * that pages work from file://) that call window.attnreport.register(id, columns).
 * Exposes window.attnreport.data (loadFile, toRows, decodeColumn), and register,
 * decodeColumn and toRows on window.attnreport.
 */
(function () {
  "use strict";

  var ns = (window.attnreport = window.attnreport || {});
  var registry = {}; // "KEY--CHUNK" -> encoded columns, filled by chunk files
  var files = {}; // "KEY--CHUNK" -> {done, columns, error, waiters}: each file loads once

  // Load the chunk file DIR + ID + ".js" once per page; call back (columns, error) when
  // it has run, now if it already has. Charts that share a source share its files.
  function loadFile(dir, id, callback) {
    var file = files[id];
    if (file && file.done) {
      callback(file.columns, file.error);
      return;
    }
    if (file) {
      file.waiters.push(callback);
      return;
    }
    file = files[id] = { done: false, columns: null, error: null, waiters: [callback] };
    var script = document.createElement("script");
    function finish(error) {
      file.done = true;
      file.columns = registry[id] || null;
      delete registry[id];
      file.error =
        error || (file.columns ? null : "The data file " + id + ".js did not register its rows.");
      var waiters = file.waiters;
      file.waiters = [];
      waiters.forEach(function (waiter) {
        waiter(file.columns, file.error);
      });
    }
    script.onload = function () {
      finish(null);
    };
    script.onerror = function () {
      finish("Could not load " + dir + id + ".js.");
    };
    script.src = dir + id + ".js";
    document.head.appendChild(script);
  }

  // {"b": [d, w, BASE64], "x": [i0, v0, ...]}: little-endian signed integers of w bytes,
  // each divided by 10^d (one correctly rounded division, as in Python: the same float),
  // then the exceptions written over them.
  function decodePacked(encoded) {
    var decimals = encoded.b[0];
    var width = encoded.b[1];
    var text = atob(encoded.b[2]);
    var view = new DataView(new ArrayBuffer(text.length));
    for (var i = 0; i < text.length; i++) {
      view.setUint8(i, text.charCodeAt(i));
    }
    var scale = Math.pow(10, decimals); // exact for decimals <= 22
    var out = new Array(text.length / width);
    for (var j = 0; j < out.length; j++) {
      var q =
        width === 1
          ? view.getInt8(j)
          : width === 2
            ? view.getInt16(2 * j, true)
            : view.getInt32(4 * j, true);
      out[j] = decimals > 0 ? q / scale : q;
    }
    var exceptions = encoded.x || [];
    for (var k = 0; k < exceptions.length; k += 2) {
      out[exceptions[k]] = exceptions[k + 1];
    }
    return out;
  }

  function decodeColumn(encoded) {
    if (Array.isArray(encoded)) {
      return encoded;
    }
    if (Object.prototype.hasOwnProperty.call(encoded, "b")) {
      return decodePacked(encoded);
    }
    var delta = Object.prototype.hasOwnProperty.call(encoded, "d");
    var runs = delta ? encoded.d : encoded.r;
    var out = [];
    var total = 0;
    for (var i = 0; i < runs.length; i += 2) {
      for (var n = 0; n < runs[i + 1]; n++) {
        if (delta) {
          total += runs[i];
          out.push(total);
        } else {
          out.push(runs[i]);
        }
      }
    }
    return out;
  }

  function toRows(encodedColumns) {
    var names = Object.keys(encodedColumns || {});
    var columns = names.map(function (name) {
      return decodeColumn(encodedColumns[name]);
    });
    var length = columns.length ? columns[0].length : 0;
    var rows = new Array(length);
    for (var r = 0; r < length; r++) {
      var row = {};
      for (var c = 0; c < names.length; c++) {
        row[names[c]] = columns[c][r];
      }
      rows[r] = row;
    }
    return rows;
  }

  ns.data = { loadFile: loadFile, toRows: toRows, decodeColumn: decodeColumn };
  Object.assign(ns, {
    register: function (id, columns) {
      registry[id] = columns;
    },
    decodeColumn: decodeColumn,
    toRows: toRows,
  });
})();

/* attnreport chart runtime, part 5 of 6: each chart's label follows the view it draws.
 *
 * A figure's box carries an ARIA label (templates/partials/figure.html): its number, its
 * title and its alt text, which the report computes from the data of the view the figure
 * opens on (its controls' default values). When the chart draws another view (a control
 * moved, a hash, a clicked head), that text describes what is not drawn: the label then
 * names the figure and the view it draws, from the chart's own title and subtitle (the
 * title names the controls' values), and says where the figure is explained. Back on the
 * opening view, the alt text returns. Exposes window.attnreport.label.
 */
(function () {
  "use strict";

  var ns = (window.attnreport = window.attnreport || {});

  // The text of the chart's own title's part ROLE ("title-text", "title-subtitle") in
  // VIEW's scenegraph (not a facet's or a concatenated view's title), lines joined.
  function titlePart(view, role) {
    var root = view.scenegraph().root.items[0] || {};
    var title = (root.items || []).filter(function (mark) {
      return mark.role === "title";
    })[0];
    var parts = title && title.items[0] ? title.items[0].items || [] : [];
    var part = parts.filter(function (mark) {
      return mark.role === role;
    })[0];
    var item = part && part.items[0];
    return item && item.text !== undefined ? [].concat(item.text).join(" ").trim() : "";
  }

  // Whether CHART draws the view its alt text describes: every control at the value its
  // figure opens on (the compiled spec's, before the page's state was adopted).
  function opening(chart) {
    var defaults = {};
    (chart.payload.spec.signals || []).forEach(function (signal) {
      defaults[signal.name] = signal.value;
    });
    return Object.keys(chart.shared).every(function (name) {
      return chart.view.signal(name) === defaults[name];
    });
  }

  // Set CHART's label for the view it draws now.
  function follow(chart) {
    var el = chart.el;
    if (!el.hasAttribute("data-alt")) {
      el.setAttribute("data-alt", el.getAttribute("aria-label") || "");
    }
    var alt = el.getAttribute("data-alt");
    if (!Object.keys(chart.shared).length || opening(chart)) {
      el.setAttribute("aria-label", alt);
      return;
    }
    var number = alt.split(":")[0];
    var subtitle = titlePart(chart.view, "title-subtitle");
    el.setAttribute(
      "aria-label",
      number + ": " + titlePart(chart.view, "title-text") + (subtitle ? ": " + subtitle : "") +
        ". Its caption says how to read it."
    );
  }

  // Keep CHART's label with its view: now, and after every run that moves a control.
  function keep(chart) {
    Object.keys(chart.shared).forEach(function (name) {
      chart.view.addSignalListener(name, function () {
        chart.view.runAfter(function () {
          follow(chart);
        });
      });
    });
    follow(chart);
  }

  ns.label = { follow: follow, keep: keep };
})();

/* attnreport chart runtime: renders every .ar-chart of a static page with vegaEmbed.
 *
 * Classic script (no modules, no fetch) so that pages work from file://. Load it after
 * the Vega bundle, which defines window.vegaEmbed; pages load both with "defer", so the
 * article's text is laid out and painted while the bundle loads and compiles. The
 * protocol (payload, chunk files, column encodings, data attributes) is documented in
 * attnreport/charts/embed.py. This is the last part (drawing): runtime_state.js (the page
 * state, window.attnreport.state), runtime_layout.js (column fitting,
 * window.attnreport.layout), runtime_fit.js (plots shrunk to their column,
 * window.attnreport.fit), runtime_data.js (data files and column decoding,
 * window.attnreport.data) and runtime_label.js (each chart's label, following its view,
 * window.attnreport.label) run before it, in the same file (embed.runtime_js()).
 * Everything lives inside this function: the Vega bundle declares top-level names.
 */
(function () {
  "use strict";

  var readyCount = 0;
  var payloads = {}; // figure key -> its parsed payload: a shared source is parsed once
  // the page state, the column fitting, the data files and the labels, from the parts
  // that run before this one
  var pageState = window.attnreport.state;
  var layout = window.attnreport.layout;
  var fit = window.attnreport.fit;
  var loadFile = window.attnreport.data.loadFile;
  var toRows = window.attnreport.data.toRows;
  var label = window.attnreport.label;

  // The payload of figure KEY (its <script id="ar-data-KEY">), parsed on first use;
  // throws when it is missing or not JSON.
  function payloadOf(key) {
    if (!Object.prototype.hasOwnProperty.call(payloads, key)) {
      payloads[key] = JSON.parse(document.getElementById("ar-data-" + key).textContent);
    }
    return payloads[key];
  }

  function single(name, value) {
    var out = {};
    out[name] = value;
    return out;
  }

  function statusElement(el) {
    var status = document.createElement("div");
    status.className = "ar-status";
    status.setAttribute("role", "status");
    status.setAttribute("aria-live", "polite");
    el.parentNode.insertBefore(status, el.nextSibling);
    return status;
  }

  function Chart(el) {
    this.el = el;
    this.key = el.getAttribute("data-key");
    this.dir = el.getAttribute("data-chunks") || "";
    this.source = this.key; // the figure whose chunk files this chart reads
    this.status = statusElement(el);
    this.loaded = {};
    this.pending = {};
    this.failed = {}; // chunks whose file could not be loaded
    this.waiting = {}; // chunk -> what runs once its rows are in
    this.wanted = {}; // signal changes waiting for their rows (``show``)
    var intercept = this.intercept.bind(this);
    el.addEventListener("input", intercept, true); // before the control's own listener
    el.addEventListener("change", intercept, true);
    this.view = null;
    this.shared = {}; // name -> the bound signal of each shared param it has
  }

  Chart.prototype.say = function (text) {
    this.status.textContent = text;
    if (Object.keys(this.pending).length) {
      this.el.setAttribute("data-loading", "true");
    } else {
      this.el.removeAttribute("data-loading");
    }
  };

  Chart.prototype.fail = function (error) {
    this.el.setAttribute("data-rendered", "error");
    this.say("This figure could not be drawn: " + (error && error.message ? error.message : error));
    if (window.console) {
      window.console.error("attnreport chart " + this.key, error);
    }
  };

  // The id of CHUNK's data file: its own ("SOURCE--CHUNK"), or for a figure whose chunks
  // are results files (results_chunks: the attention map's parts), the chunk's name.
  Chart.prototype.fileOf = function (chunk) {
    return this.payload.results_chunks ? chunk : this.source + "--" + chunk;
  };

  Chart.prototype.wantedChunk = function () {
    var view = this.view;
    var values = this.payload.chunk_params.map(function (param) {
      return String(view.signal(param));
    });
    return this.payload.chunks[values.join("|")];
  };

  Chart.prototype.ensureChunk = function () {
    if (!this.payload.chunk_params.length) {
      return;
    }
    var chunk = this.wantedChunk();
    if (chunk === undefined) {
      this.say(Object.keys(this.pending).length ? "loading\u2026" : "No data for this choice.");
      return;
    }
    if (this.failed[chunk]) {
      return; // its status says why
    }
    if (this.loaded[chunk] || this.pending[chunk]) {
      this.say(Object.keys(this.pending).length ? "loading\u2026" : "");
      return;
    }
    this.load(chunk);
  };

  // Load CHUNK's file (once) and insert its rows; THEN, if given, runs before the view
  // does (every caller waiting on the chunk's file is called back).
  Chart.prototype.load = function (chunk, then) {
    var self = this;
    var waiting = (this.waiting[chunk] = this.waiting[chunk] || []);
    if (then) {
      waiting.push(then);
    }
    if (this.pending[chunk]) {
      return;
    }
    this.pending[chunk] = true;
    this.say("loading\u2026");
    loadFile(this.dir, this.fileOf(chunk), function (columns, error) {
      delete self.pending[chunk];
      delete self.waiting[chunk];
      if (error) {
        self.failed[chunk] = true;
        self.say(error);
      } else {
        self.loaded[chunk] = true;
        self.inserting = true; // a redraw waits for these rows to be in the data set
        self.view.insert(self.key, toRows(columns));
      }
      waiting.forEach(function (callback) {
        callback();
      });
      self.view.runAsync().then(function () {
        self.inserting = false;
        self.ensureChunk();
      });
    });
  };

  // Whether CHUNK's rows are in (or its file failed: the status says so).
  Chart.prototype.ready = function (chunk) {
    return Boolean(this.loaded[chunk] || this.failed[chunk]);
  };

  // The chunk the view shows once the CHANGES ({name: value}) of its signals are made.
  Chart.prototype.chunkWith = function (changes) {
    var view = this.view;
    var values = this.payload.chunk_params.map(function (param) {
      return String(Object.prototype.hasOwnProperty.call(changes, param) ? changes[param] : view.signal(param));
    });
    return this.payload.chunk_params.length ? this.payload.chunks[values.join("|")] : undefined;
  };

  // Show the CHANGES ({name: value}) of its signals, once the rows they select are in:
  // a view never runs on a choice whose rows are still loading (an empty plot, and Vega
  // warning that its scales have no extent). Changes asked for meanwhile join them.
  Chart.prototype.show = function (changes) {
    var self = this;
    var wanted = Object.assign(this.wanted, changes);
    var chunk = this.chunkWith(wanted);
    if (chunk !== undefined && !this.ready(chunk)) {
      this.load(chunk, function () {
        self.show({});
      });
      return;
    }
    this.wanted = {};
    Object.keys(wanted).forEach(function (name) {
      if (self.view.signal(name) !== wanted[name]) {
        self.view.signal(name, wanted[name]);
      }
    });
    this.view.runAsync();
  };

  // A control of this chart moved by the reader (EVENT, seen before Vega's own listener)
  // to a value whose rows are not loaded: Vega does not see it; the chart shows the
  // value once its rows are in (``show``), and the page follows.
  Chart.prototype.intercept = function (event) {
    var name = event.target && event.target.name;
    var signal = this.view && this.shared[name];
    if (!signal || this.payload.chunk_params.indexOf(name) < 0) {
      return;
    }
    var value = window.attnreport.controlValue(event.target, signal.bind, this.el);
    var chunk = value === undefined ? undefined : this.chunkWith(Object.assign({}, this.wanted, single(name, value)));
    if (chunk !== undefined && !this.ready(chunk)) {
      event.stopImmediatePropagation();
      this.show(single(name, value));
    }
  };

  Chart.prototype.listen = function () {
    var self = this;
    this.payload.chunk_params.forEach(function (param) {
      self.view.addSignalListener(param, function () {
        self.ensureChunk();
      });
    });
  };

  Chart.prototype.rendered = function () {
    charts[this.key] = this;
    showCsvLink(this.key);
    this.el.setAttribute("data-rendered", "true");
    readyCount += 1;
    document.body.setAttribute("data-charts-ready", String(readyCount));
  };

  // The default view's columns: the payload's own, or (inline null) those of the
  // chunk_source's payload when it inlines the same chunk; else none, and the chunk loads.
  Chart.prototype.inlineColumns = function () {
    var payload = this.payload;
    if (payload.inline !== null) {
      return payload.inline;
    }
    var source = null;
    try {
      source = payloadOf(payload.chunk_source);
    } catch (error) {
      source = null; // the source's own chart reports its missing or broken payload
    }
    if (source && source.inline && source.inline_chunk === payload.inline_chunk) {
      return source.inline;
    }
    delete this.loaded[payload.inline_chunk];
    return {};
  };

  Chart.prototype.start = function () {
    try {
      this.payload = payloadOf(this.key);
    } catch (error) {
      this.fail(error);
      return;
    }
    if (typeof window.vegaEmbed !== "function") {
      this.fail("the Vega bundle (window.vegaEmbed) is missing");
      return;
    }
    if (this.payload.inline_chunk) {
      this.loaded[this.payload.inline_chunk] = true;
    }
    if (this.payload.chunk_source) {
      // rows shared with another figure: its files, in its folder
      this.source = this.payload.chunk_source;
      var sourceEl = document.getElementById("ar-chart-" + this.source);
      this.dir = (sourceEl && sourceEl.getAttribute("data-chunks")) || this.dir;
    }
    this.rows = toRows(this.inlineColumns());
    this.inlineLoaded = Boolean(this.payload.inline_chunk && this.loaded[this.payload.inline_chunk]);
    this.draw();
  };

  // The chunk that the compiled SIGNALS' values of the chunk params select (undefined:
  // none, or a chart without chunks).
  Chart.prototype.chunkFor = function (signals) {
    var params = this.payload.chunk_params;
    if (!params.length) {
      return undefined;
    }
    var values = params.map(function (param) {
      var signal = signals.filter(function (s) {
        return s.name === param;
      })[0];
      return String(signal ? signal.value : undefined);
    });
    return this.payload.chunks[values.join("|")];
  };

  // Draw the chart (again) for the width of its figure (layout.fitted), on the page's
  // state: the inline rows, and the rows of the chunk that state selects when it is
  // another (a view opened from the hash, or drawn again after a resize: its file is
  // loaded first), become the values of the (Vega) spec's data set KEY, so the first
  // render already has the rows it shows (no empty-data layout, no warning about an
  // empty scale); rows of other chunks are inserted later into the same data set.
  Chart.prototype.draw = function () {
    var self = this;
    this.drawing = true;
    this.fit = layout.fitOf(this.el.clientWidth);
    this.el.setAttribute("data-fit", this.fit);
    // a payload may name the spec a phone's column draws instead (the grids: one column),
    // in a data file of its own: loaded once, then drawn
    var phone = this.fit === "phone" && this.payload.phone;
    if (phone && !this.phoneSpec) {
      loadFile(this.dir, this.key + "--" + this.payload.phone, function (loaded, error) {
        if (error) {
          self.drawing = false;
          self.fail(error);
          return;
        }
        self.phoneSpec = loaded;
        self.draw();
      });
      return;
    }
    var base = phone ? this.phoneSpec : this.payload.spec;
    var spec = Object.assign({}, layout.fitted(base, this.el.clientWidth));
    var own = this.own || {}; // its own controls' values, kept when it is drawn again
    spec.signals = pageState.adopt(spec.signals || []).map(function (signal) {
      return Object.prototype.hasOwnProperty.call(own, signal.name)
        ? Object.assign({}, signal, { value: own[signal.name] })
        : signal;
    });
    var chunk = this.chunkFor(spec.signals);
    if (chunk === undefined || this.loaded[chunk]) {
      this.embed(spec, this.rows);
      return;
    }
    this.pending[chunk] = true;
    this.say("loading\u2026");
    loadFile(this.dir, this.fileOf(chunk), function (columns, error) {
      delete self.pending[chunk];
      self.say(error || "");
      if (!error) {
        self.loaded[chunk] = true;
      }
      self.embed(spec, error ? self.rows : self.rows.concat(toRows(columns)));
    });
  };

  // vegaEmbed the fitted SPEC with ROWS as its data set KEY's values.
  Chart.prototype.embed = function (spec, rows) {
    var self = this;
    var key = this.key;
    spec.data = (spec.data || []).map(function (data) {
      return data.name === key ? Object.assign({}, data, { values: rows }) : data;
    });
    this.shared = pageState.sharedSignals(spec.signals);
    var options = {
      renderer: this.payload.renderer || "svg",
      actions: { export: true, source: false, compiled: false, editor: false },
    };
    window
      .vegaEmbed(this.el, spec, options)
      .then(function (result) {
        self.embedded = result;
        self.view = result.view;
        return self.view.runAsync();
      })
      .then(function () {
        var grid = spec.usermeta && spec.usermeta.relayout; // a facet grid (layOutAgain)
        return grid ? fit.layOutAgain(self.view, key) : null;
      })
      .then(function () {
        return fit.shrinkToFit(self.el, self.view, spec.signals, self.fit, spec.usermeta);
      })
      .then(function () {
        self.drawing = false;
        if (!self.drawn) {
          self.drawn = true;
          self.rendered();
        }
        self.listen();
        pageState.join(self);
        label.keep(self);
        if (spec.usermeta && spec.usermeta.relayout) {
          self.followDomains(spec);
        }
        self.ensureChunk();
        self.refit(); // the window may have been resized while it drew
      })
      .catch(function (error) {
        self.drawing = false;
        self.fail(error);
      });
  };

  // Draw again when the figure's width now asks for another fit (legends beside or
  // below, facets in more or fewer columns).
  Chart.prototype.refit = function () {
    if (this.view && layout.fitOf(this.el.clientWidth) !== this.fit) {
      this.redraw();
    }
  };

  // A spec whose usermeta says {relayout: true} is drawn again, on the page's state and
  // with every row it holds, whenever the values of a facet (its rows or columns: the
  // compiled data sets "..._domain") change, after a control moved or rows arrived: Vega
  // scrambles the cells of a drawn facet grid whose domain changes (an intervention
  // grid's scale factors), while a first draw lays them out as a page opened on that
  // view does.
  Chart.prototype.followDomains = function (spec) {
    var self = this;
    var view = this.view;
    var names = (spec.data || []).map(function (data) {
      return data.name;
    }).filter(function (name) {
      return /_domain$/.test(name);
    });
    var domains = function () {
      return JSON.stringify(names.map(function (name) {
        return view.data(name);
      }));
    };
    var drawn = domains();
    names.forEach(function (name) {
      view.addDataListener(name, function () {
        if (self.view === view && domains() !== drawn) {
          window.clearTimeout(self.redrawTimer);
          self.redrawTimer = window.setTimeout(function () {
            self.redraw(); // after the run that changed it
          }, 0);
        }
      });
    });
  };

  // Draw the chart again, once it is neither drawing nor loading, with every row its data
  // set holds (the inline rows and the chunks inserted since: they stay loaded).
  Chart.prototype.redraw = function () {
    var self = this;
    if (this.drawing || this.inserting || Object.keys(this.pending).length) {
      window.clearTimeout(this.redrawTimer);
      this.redrawTimer = window.setTimeout(function () {
        self.redraw();
      }, 100);
      return;
    }
    var view = this.view;
    var shared = this.shared;
    this.own = {};
    (this.embedded.spec.signals || []).forEach(function (signal) {
      if (signal.bind && !Object.prototype.hasOwnProperty.call(shared, signal.name)) {
        self.own[signal.name] = view.signal(signal.name);
      }
    });
    this.rows = view.data(this.key).map(function (row) {
      return Object.assign({}, row);
    });
    this.embedded.finalize();
    this.draw();
  };

  // --- the figure's rows as CSV, made here from the chart's own data (no file on disk) ---
  var charts = {}; // figure key -> drawn Chart

  function csvField(value) {
    var text = value === null || value === undefined ? "" : String(value);
    return /[",\n\r]/.test(text) ? '"' + text.replace(/"/g, '""') + '"' : text;
  }

  // The rows of the figure's data set (every layer or window loaded so far), one line each,
  // the columns in the order the first row names them.
  function figureCsv(key) {
    var chart = charts[key];
    if (!chart || !chart.view) {
      return null;
    }
    var rows = chart.view.data(key) || [];
    var names = [];
    rows.forEach(function (row) {
      Object.keys(row).forEach(function (name) {
        if (names.indexOf(name) < 0) {
          names.push(name);
        }
      });
    });
    var lines = [names.map(csvField).join(",")];
    rows.forEach(function (row) {
      lines.push(names.map(function (name) { return csvField(row[name]); }).join(","));
    });
    return lines.join("\r\n") + "\r\n";
  }

  function showCsvLink(key) {
    var link = document.querySelector('a.csv[data-key="' + key + '"]');
    if (!link) {
      return;
    }
    link.parentNode.hidden = false; // the span with the link and its separator
    link.addEventListener("click", function () {
      var text = figureCsv(key);
      if (text !== null) {
        var url = URL.createObjectURL(new Blob([text], { type: "text/csv" }));
        link.href = url; // the browser downloads it (the link has a download name)
        setTimeout(function () { URL.revokeObjectURL(url); }, 60000);
      }
    });
  }

  // The compiled signals of every chart of the page whose payload can be read (a chart
  // whose payload cannot reports it when it starts).
  function pageSignals(elements) {
    var lists = [];
    for (var i = 0; i < elements.length; i++) {
      try {
        lists.push(payloadOf(elements[i].getAttribute("data-key")).spec.signals || []);
      } catch (error) {
        continue;
      }
    }
    return lists;
  }

  function startAll() {
    layout.fitCanvasPicking();
    var elements = document.querySelectorAll(".ar-chart");
    pageState.expect(pageSignals(elements)); // the hash checked against every control
    for (var i = 0; i < elements.length; i++) {
      new Chart(elements[i]).start();
    }
    window.attnreport.followHistory();
    layout.followResize(function () {
      return pageState.charts;
    });
  }

  // Whether every chart has drawn and none is drawing, loading, waiting to be fitted
  // again or fitting its plots.
  function quiet() {
    var elements = document.querySelectorAll(".ar-chart");
    for (var i = 0; i < elements.length; i++) {
      if (!elements[i].hasAttribute("data-rendered")) {
        return false;
      }
    }
    return !fit.busy() && pageState.charts.every(function (chart) {
      return !chart.drawing && !Object.keys(chart.pending).length &&
        layout.fitOf(chart.el.clientWidth) === chart.fit;
    });
  }

  // Resolves when the page is quiet (``quiet``) after every view has run: the drawing
  // then shows the page's state. For scripts and tests that read the drawn charts.
  function settled() {
    return new Promise(function (resolve) {
      function check() {
        if (!quiet()) {
          window.setTimeout(check, 20);
          return;
        }
        Promise.all(pageState.charts.map(function (chart) {
          return chart.view.runAsync();
        })).then(function () {
          window.setTimeout(function () {
            if (quiet()) {
              resolve();
            } else {
              check();
            }
          }, 0);
        });
      }
      check();
    });
  }

  Object.assign(window.attnreport, {
    settled: settled,
    csv: figureCsv,
  });

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", startAll);
  } else {
    startAll();
  }
})();
