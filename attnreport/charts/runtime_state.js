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
