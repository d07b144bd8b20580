// mnote-evidence: live reload under `mnote-evidence serve --watch`. A page that serve sends (its address
// is under /-/evidence/site/) asks /-/evidence/live which build the site is at, every second while it
// is visible, and reloads itself when a rebuild has changed the site. Anywhere else (a static host,
// file://) it asks nothing; a serve without --watch answers once that it is not watching, and the page
// stops asking. The build a page was sent at comes with it (`Server-Timing: mnote-build`), so a rebuild
// that lands between the page's request and its first question still reloads it.
(function () {
  "use strict";
  var SITE = "/-/evidence/site/", ENDPOINT = "/-/evidence/live", EVERY_MS = 1000, AT_MOST_MS = 10000;
  if (location.pathname.indexOf(SITE) !== 0) return;
  var seen = sentAt(), wait = EVERY_MS, timer = null;

  function sentAt() {  // null where the browser does not tell (an insecure origin): the first answer is it
    var nav = window.performance && performance.getEntriesByType && performance.getEntriesByType("navigation")[0];
    var entry = nav && nav.serverTiming && nav.serverTiming.filter(function (t) { return t.name === "mnote-build"; })[0];
    return entry ? entry.description : null;
  }

  function later(ms) {
    clearTimeout(timer);
    timer = setTimeout(check, ms);
  }

  function check() {
    if (document.hidden) return; // visibilitychange asks again
    fetch(ENDPOINT, { cache: "no-store", credentials: "same-origin" }).then(function (r) {
      return r.ok ? r.json() : null;
    }).then(function (state) {
      if (!state || !state.watching) { seen = false; return; } // not watching: never ask again
      if (seen !== null && state.build !== seen) { window.location.reload(); return; }
      seen = state.build;
      wait = EVERY_MS;
      later(wait);
    }, function () {
      wait = Math.min(wait * 2, AT_MOST_MS); // the server is down or restarting: ask less often
      later(wait);
    });
  }

  document.addEventListener("visibilitychange", function () {
    if (!document.hidden && seen !== false) later(0);
  });
  check();
})();
