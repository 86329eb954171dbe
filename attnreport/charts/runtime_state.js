/* attnreport chart runtime, part 1 of 3: one state per page, mirrored in the URL hash.
 *
 * The bound params named in SHARED are state of the page, not of one figure: every
 * chart that binds one shows the same value, moving any control moves them all, and
 * clicking a mark whose row names a head (and layer) selects it everywhere. The state
 * is mirrored in the URL hash ("#layer=7&head=2&eps=0.001&..."), so a link opens that
 * view, and each settled change is a history entry, so back and forward step through
 * views. Exposes window.attnreport.state (the page state) and .history; runtime.js, loaded
 * after this file and runtime_layout.js (embed.runtime_js() joins the three), draws.
 */
(function () {
  "use strict";

  var ns = (window.attnreport = window.attnreport || {});
  // layer, head: the chosen head; sort_idx: the target's rank; observation: the observed
  // layer of the intervention grids; eps: their scale factor; positions_from: a window.
  var SHARED = ["layer", "head", "sort_idx", "observation", "eps", "positions_from"];
  var HASH_DELAY = 400; // ms a control must rest before its view becomes a history entry
  var NUMBER = /^-?([0-9]+\.?[0-9]*|\.[0-9]+)(e[-+]?[0-9]+)?$/i;

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
        chart.view.signal(name, value).runAsync();
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

    // A click on a mark whose row names a head (a line, a point, a bar of a per-head chart).
    pick: function (item) {
      var datum = item && item.datum;
      if (!datum || typeof datum.head !== "number") {
        return;
      }
      if (typeof datum.layer === "number") {
        this.set("layer", datum.layer);
      }
      this.set("head", datum.head);
    },

    hash: function () {
      var values = this.values;
      return SHARED.filter(function (name) {
        return own(values, name);
      })
        .map(function (name) {
          return encodeURIComponent(name) + "=" + encodeURIComponent(values[name]);
        })
        .join("&");
    },

    // After a change settles, the view becomes a history entry (its hash and values).
    remember: function () {
      var self = this;
      if (this.restoring) {
        return;
      }
      window.clearTimeout(this.timer);
      this.timer = window.setTimeout(function () {
        var hash = "#" + self.hash();
        if (hash !== window.location.hash) {
          writeHistory("pushState", { attnreport: self.copy() }, hash);
        }
      }, HASH_DELAY);
    },

    copy: function () {
      return Object.assign({}, this.values);
    },

    // Back, forward or an edited hash: show the view that entry holds.
    restore: function (values) {
      var self = this;
      window.clearTimeout(this.timer);
      this.restoring = true;
      Object.keys(values).forEach(function (name) {
        self.set(name, values[name]);
      });
      this.restoring = false;
    },
  };

  function onHistory(event) {
    var saved = event && event.state && event.state.attnreport;
    pageState.restore(saved || parseHash(window.location.hash));
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
})();
