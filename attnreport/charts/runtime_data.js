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
