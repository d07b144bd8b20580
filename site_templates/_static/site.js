// mnote-evidence: the small script behind ?hl=, ?page=&bbox= and the "not found" notice (the search box is
// search.js).
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
  window.mnote = window.mnote || {};
  window.mnote.successorOf = successorOf; // the link previews (preview.js) land on the same block

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

  document.addEventListener("DOMContentLoaded", function () {
    if (params.has("hl")) highlightBlocks();
    else if (params.has("page") && params.has("bbox")) highlightBox();
    checkFragment();
  });
  window.addEventListener("hashchange", function () {
    document.getElementById("notice").hidden = true;
    checkFragment();
  });
})();
