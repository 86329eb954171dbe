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
