/* attnreport chart runtime: renders every .ar-chart of a static page with vegaEmbed.
 *
 * Classic script (no modules, no fetch) so that pages work from file://. Load it after
 * the Vega bundle, which defines window.vegaEmbed; pages load both with "defer", so the
 * article's text is laid out and painted while the bundle loads and compiles. The
 * protocol (payload, chunk files, column encodings, data attributes) is documented in
 * attnreport/charts/embed.py. This is part 3 of 3 (data and drawing): runtime_state.js
 * (the page state, window.attnreport.state) and runtime_layout.js (column fitting,
 * window.attnreport.layout) run before it, in the same file (embed.runtime_js()).
 * Everything lives inside this function: the Vega bundle declares top-level names.
 */
(function () {
  "use strict";

  var registry = {}; // "KEY--CHUNK" -> encoded columns, filled by chunk files
  var files = {}; // "KEY--CHUNK" -> {done, columns, error, waiters}: each file loads once
  var readyCount = 0;
  var payloads = {}; // figure key -> its parsed payload: a shared source is parsed once
  // the page state and the column fitting, from runtime_state.js and runtime_layout.js
  var pageState = window.attnreport.state;
  var layout = window.attnreport.layout;

  // The payload of figure KEY (its <script id="ar-data-KEY">), parsed on first use;
  // throws when it is missing or not JSON.
  function payloadOf(key) {
    if (!Object.prototype.hasOwnProperty.call(payloads, key)) {
      payloads[key] = JSON.parse(document.getElementById("ar-data-" + key).textContent);
    }
    return payloads[key];
  }

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
    if (this.loaded[chunk] || this.pending[chunk]) {
      this.say(Object.keys(this.pending).length ? "loading\u2026" : "");
      return;
    }
    this.load(chunk);
  };

  Chart.prototype.load = function (chunk) {
    var self = this;
    this.pending[chunk] = true;
    this.say("loading\u2026");
    loadFile(this.dir, this.source + "--" + chunk, function (columns, error) {
      delete self.pending[chunk];
      if (error) {
        self.say(error);
        return;
      }
      self.loaded[chunk] = true;
      self.inserting = true; // a redraw waits for these rows to be in the data set
      self.view.insert(self.key, toRows(columns)).runAsync().then(function () {
        self.inserting = false;
        self.ensureChunk();
      });
    });
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

  // Draw the chart (again) for the width of its figure (layout.fitted), on the page's
  // state: the inline rows become the values of the (Vega) spec's data set KEY, so the
  // first render already has them (no empty-data layout); chunk rows are inserted later
  // into the same data set.
  Chart.prototype.draw = function () {
    var self = this;
    var key = this.key;
    var rows = this.rows;
    this.drawing = true;
    this.fit = layout.fitOf(this.el.clientWidth);
    this.el.setAttribute("data-fit", this.fit);
    // a payload may name the spec a phone's column draws instead (the grids: one column),
    // in a data file of its own: loaded once, then drawn
    var phone = this.fit === "phone" && this.payload.phone;
    if (phone && !this.phoneSpec) {
      loadFile(this.dir, key + "--" + this.payload.phone, function (spec, error) {
        if (error) {
          self.drawing = false;
          self.fail(error);
          return;
        }
        self.phoneSpec = spec;
        self.draw();
      });
      return;
    }
    var base = phone ? this.phoneSpec : this.payload.spec;
    var spec = Object.assign({}, layout.fitted(base, this.el.clientWidth));
    spec.data = (spec.data || []).map(function (data) {
      return data.name === key ? Object.assign({}, data, { values: rows }) : data;
    });
    var own = this.own || {}; // its own controls' values, kept when it is drawn again
    spec.signals = pageState.adopt(spec.signals || []).map(function (signal) {
      return Object.prototype.hasOwnProperty.call(own, signal.name)
        ? Object.assign({}, signal, { value: own[signal.name] })
        : signal;
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
        return layout.shrinkToFit(self.el, self.view, spec.signals, self.fit, spec.usermeta);
      })
      .then(function () {
        self.drawing = false;
        if (!self.drawn) {
          self.drawn = true;
          self.rendered();
        }
        self.listen();
        pageState.join(self);
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
  // set holds (the inline rows and the chunks inserted since).
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

  function startAll() {
    layout.fitCanvasPicking();
    var elements = document.querySelectorAll(".ar-chart");
    for (var i = 0; i < elements.length; i++) {
      new Chart(elements[i]).start();
    }
    window.attnreport.followHistory();
    layout.followResize(function () {
      return pageState.charts;
    });
  }

  Object.assign(window.attnreport, {
    register: function (id, columns) {
      registry[id] = columns;
    },
    decodeColumn: decodeColumn,
    toRows: toRows,
    csv: figureCsv,
  });

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", startAll);
  } else {
    startAll();
  }
})();
