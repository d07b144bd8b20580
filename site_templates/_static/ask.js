// The Ask page: sends the question to /-/knowledge/ask and shows the answer with citation badges.
// Only citation ids from the server's mapped citation set become badges; everything is set as text.
(function () {
  "use strict";
  var PRECISION = { bbox: "exact box", paragraph: "paragraph", line: "lines", file: "whole file" };

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text) e.textContent = text;
    return e;
  }

  function card(c) {
    var box = el("article", "source-card");
    box.id = "cite-" + c.citationId;
    var head = el("a", "card-head");
    head.href = c.citationUrl;
    head.appendChild(el("span", "badge", c.citationId));
    head.appendChild(document.createTextNode(" " + c.sourcePath.split("/").pop()));
    box.appendChild(head);
    var where = [];
    if (c.headingPath.length) where.push(c.headingPath.join(" > "));
    if (c.page) where.push("page " + c.page);
    where.push(PRECISION[c.locatorPrecision] || c.locatorPrecision);
    box.appendChild(el("div", "muted", where.join(" · ")));
    box.appendChild(el("blockquote", null, c.displayQuote));
    return box;
  }

  function render(data) {
    var answer = document.getElementById("answer");
    var sources = document.getElementById("sources");
    answer.textContent = "";
    sources.textContent = "";
    var known = {};
    data.citations.forEach(function (c) { known[c.citationId] = c; sources.appendChild(card(c)); });
    (data.segments || []).forEach(function (s) {
      if (s.citationId && known[s.citationId]) {
        var a = el("a", "badge cite", s.citationId);
        a.href = known[s.citationId].citationUrl;
        answer.appendChild(a);
      } else if (s.text) {
        answer.appendChild(document.createTextNode(s.text));
      }
    });
    answer.hidden = false;
  }

  document.addEventListener("DOMContentLoaded", function () {
    var form = document.getElementById("ask");
    var status = document.getElementById("ask-status");
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      if (window.location.protocol === "file:") {
        status.textContent = "Asking needs the query server: run `mnote-evidence serve --lightrag-url URL`.";
        return;
      }
      status.textContent = "Asking…";
      fetch(form.dataset.endpoint, {
        method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ query: form.q.value, mode: form.mode.value })
      }).then(function (r) { return r.json(); }).then(function (data) {
        if (!data.ok) {
          status.textContent = (data.error && data.error.message) || ("No answer: " + (data.degradedReason || "unknown") +
            ". Evidence search still works.");
          return;
        }
        status.textContent = data.degraded ? "Partial answer (" + data.degradedReason + ")." : "";
        render(data);
      }).catch(function () { status.textContent = "The query server did not answer."; });
    });
  });
})();
