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
