// mnote-evidence: the small script behind ?hl=, ?page=&bbox= and the "not found" notice.
// The #blockId form needs none of this: CSS :target highlights and the browser scrolls.
(function () {
  "use strict";
  var params = new URLSearchParams(window.location.search);

  function notice(text) {
    var el = document.getElementById("notice");
    el.textContent = text;
    el.hidden = false;
  }

  function reveal(el) {
    el.scrollIntoView({ block: "center" });
  }

  // ?hl=<blockId>,<blockId>: mark several blocks, possibly on several pages.
  function highlightBlocks() {
    var ids = (params.get("hl") || "").split(",").filter(Boolean);
    var first = null, missing = 0;
    ids.forEach(function (id) {
      var el = document.getElementById(id);
      if (!el) { missing += 1; return; }
      el.classList.add("hl");
      if (!first) first = el;
    });
    if (first) reveal(first);
    if (missing) notice(missing + " of the highlighted passages are not in this version of the document.");
    return first !== null;
  }

  // ?page=N&bbox=x0,y0,x1,y1: an arbitrary box in PDF points (or image pixels), top-left origin.
  function highlightBox() {
    var page = document.getElementById("page-" + params.get("page"));
    var box = (params.get("bbox") || "").split(",").map(Number);
    if (!page || box.length !== 4 || box.some(isNaN)) {
      notice("That page or box is not in this document.");
      return false;
    }
    var w = Number(page.dataset.width), h = Number(page.dataset.height);
    var el = document.createElement("span");
    el.className = "overlay hl adhoc";
    el.style.left = (box[0] / w * 100) + "%";
    el.style.top = (box[1] / h * 100) + "%";
    el.style.width = ((box[2] - box[0]) / w * 100) + "%";
    el.style.height = ((box[3] - box[1]) / h * 100) + "%";
    page.appendChild(el);
    reveal(el);
    return true;
  }

  // An old id's alias span stands just before its successor (maybe after other aliases of it, or inside
  // it, e.g. a tight list item): mark exactly that block. CSS does the common cases without JavaScript.
  function successorOf(alias) {
    var el = alias.nextElementSibling;
    while (el && el.classList.contains("alias")) el = el.nextElementSibling;
    if (el && el.classList.contains("block")) return el;
    return alias.parentElement ? alias.parentElement.closest(".block") : null;
  }

  function checkFragment() {
    document.querySelectorAll(".block.successor").forEach(function (el) { el.classList.remove("successor"); });
    var id = decodeURIComponent(window.location.hash.slice(1));
    var target = id ? document.getElementById(id) : null;
    if (id && !target) {
      notice("The passage this link pointed to (" + id + ") is not in this version of the document: it was changed or removed.");
    } else if (target && target.classList.contains("alias") && !target.classList.contains("overlay")) {
      var next = target.classList.contains("removed") ? null : successorOf(target);
      if (next) next.classList.add("successor");
      else window.scrollTo(0, 0);  // removed: the page top, where the alias's notice is shown
    }
  }

  // The search box asks the query server (`mnote-evidence serve`); a static host or file://
  // has none, and the box says so instead of failing silently.
  function showResults(panel, data) {
    panel.textContent = "";
    if (!data.results.length) {
      panel.textContent = "No evidence matches.";
      return;
    }
    data.results.forEach(function (r) {
      var a = document.createElement("a");
      a.href = r.source.openAction.url;
      a.className = "result";
      var where = document.createElement("small");
      where.textContent = r.source.resourcePath + (r.source.page ? " · p." + r.source.page : "") +
        (r.source.sectionPath.length ? " · " + r.source.sectionPath.join(" > ") : "");
      var quote = document.createElement("span");
      quote.textContent = r.quote;
      a.appendChild(quote);
      a.appendChild(where);
      panel.appendChild(a);
    });
  }

  function searchBox() {
    var form = document.querySelector("form.search");
    if (!form) return;
    var panel = document.createElement("div");
    panel.id = "search-results";
    panel.hidden = true;
    form.appendChild(panel);
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      var q = form.querySelector("input").value.trim();
      if (!q) return;
      if (window.location.protocol === "file:") {
        notice("Search needs the query server: run `mnote-evidence serve` and open the site from the URL it prints.");
        return;
      }
      panel.hidden = false;
      panel.textContent = "Searching…";
      fetch(form.dataset.endpoint + "?topK=20&query=" + encodeURIComponent(q))
        .then(function (resp) {
          if (resp.status === 404) throw new Error("no server");
          return resp.json();
        })
        .then(function (data) {
          if (!data.ok) { panel.textContent = data.error.message; return; }
          showResults(panel, data);
        })
        .catch(function () {
          panel.hidden = true;
          notice("Search needs the query server: this copy of the site is static. Run `mnote-evidence serve`.");
        });
    });
  }

  // The Ask page shows local evidence with the same result list when no answer can be had.
  window.mnoteEvidence = { showResults: showResults };

  document.addEventListener("DOMContentLoaded", function () {
    if (params.has("hl")) highlightBlocks();
    else if (params.has("page") && params.has("bbox")) highlightBox();
    checkFragment();
    searchBox();
  });
  window.addEventListener("hashchange", function () {
    document.getElementById("notice").hidden = true;
    checkFragment();
  });
})();
