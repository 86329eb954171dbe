// attnreport serve --watch: reload this page when the site is rebuilt. Injected by the
// server into the pages it serves, never written into a site. The server sends one
// "build" event on connecting and one after every build (good or failed); a version
// other than the one this page was served with means the page is out of date. A
// reload keeps the URL, so the hash (#layer=..&head=..) and with it the page's state.
(function () {
  "use strict";
  var script = document.currentScript;
  var served = script ? script.getAttribute("data-build") : null;

  function pageName() {
    var name = location.pathname.split("/").pop();
    return name || "index.html";
  }

  function follow(data) {
    var moved = data.moved || {};
    var next = moved[pageName()];
    if (next) {
      location.replace(next + location.search + location.hash);
    } else {
      location.reload();
    }
  }

  var source = new EventSource("/__attnreport/events");
  source.addEventListener("build", function (event) {
    var data = JSON.parse(event.data);
    if (data.version !== served) {
      served = data.version;
      source.close();
      follow(data);
    }
  });
})();
