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
