// The Ask page: sends the question to /-/knowledge/ask and shows the answer with citation badges.
// Only citation ids from the server's mapped citation set become badges; everything is set as text.
// Without an answer (LightRAG not set up, down or slow, no query server on a static host) it says why in plain
// words and lists the local evidence passages that match the question (`showLocal`).
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

  // Why there is no (full) answer, in words: reason codes stay in the JSON, never on the page.
  var WHY = {
    knowledge_rag_unconfigured: "No answering service (LightRAG) is set up for this server, so there is no written answer.",
    knowledge_rag_unavailable: "The answering service (LightRAG) could not be reached: it may be stopped or still starting.",
    knowledge_rag_timeout: "The answering service (LightRAG) took too long to reply.",
    knowledge_rag_unhealthy: "The answering service (LightRAG) reports a problem."
  };
  var WHY_OTHER = "The answering service (LightRAG) gave an answer that could not be used.";

  function why(reason) { return WHY[reason] || WHY_OTHER; }

  // Local evidence search for the same question: works without LightRAG and without a server. The search box's
  // transport (search.js) asks the query server when the page is served by it, and reads the static index
  // (`_search/` by range requests, search_query.js) on a static host: the same answer either way. A
  // question no passage holds whole is matched on its meaning-bearing words (matchMode "any").
  function showLocal(question, status, lead) {
    var section = document.getElementById("local");
    var panel = section.querySelector(".local-results");
    var heading = section.querySelector("h2");
    lead = lead ? lead + " " : "";
    status.textContent = lead + "Searching your notes…";
    window.mnoteEvidence.search({ query: question, topK: 10 })
      .then(function (data) {
        var some = data.matchMode === "any";
        window.mnoteEvidence.showResults(panel, data, question);
        heading.textContent = some ? "Passages of your notes that match some of the words of the question"
          : "Passages of your notes that match the question";
        status.textContent = lead + (!data.results.length ? "No passage of your notes matches the question either."
          : some ? "No passage holds every word of the question; here are the passages of your notes that match some of them."
          : "Here are the passages of your notes that match the question.");
        section.hidden = !data.results.length;
      })
      .catch(function (err) { status.textContent = lead + "Searching your notes failed: " + err.message; });
  }

  // A page served by `mnote-evidence serve` (or the plugin) has the knowledge endpoint; a static host has not.
  function served() { return window.location.pathname.indexOf("/-/evidence/site/") >= 0; }

  var STATIC_LEAD = "Written answers need the query server (mnote-evidence serve --lightrag-url URL).";

  document.addEventListener("DOMContentLoaded", function () {
    var form = document.getElementById("ask");
    var status = document.getElementById("ask-status");
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      if (window.location.protocol === "file:") {
        status.textContent = "Asking needs a web server: run `mnote-evidence serve`, or put the site on any static host.";
        return;
      }
      var question = form.q.value;
      document.getElementById("answer").hidden = true;
      document.getElementById("sources").textContent = "";
      document.getElementById("local").hidden = true;
      if (!served()) { showLocal(question, status, STATIC_LEAD); return; }
      status.textContent = "Asking…";
      fetch(form.dataset.endpoint, {
        method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ query: question, mode: form.mode.value })
      }).then(function (r) { return r.json(); }).then(function (data) {
        if (data.error) { status.textContent = data.error.message; return; }  // a bad question: say why
        if (!data.ok) { showLocal(question, status, why(data.degradedReason)); return; }
        status.textContent = data.degraded ? "The sources below were found, but there is no written answer: " +
          why(data.degradedReason).charAt(0).toLowerCase() + why(data.degradedReason).slice(1) : "";
        render(data);
      }).catch(function () { showLocal(question, status, "The query server did not answer."); });
    });
  });
})();
