// The Ask page: sends the question to /-/knowledge/ask and shows the answer with citation badges.
// Only citation ids from the server's mapped citation set become badges; everything is set as text.
// Without an answer (LightRAG not set up, down or slow) it says why in plain words and lists the
// local evidence passages that match the question, from /-/evidence/search.
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

  // Local evidence search for the same question: works without LightRAG.
  function showLocal(form, question, status, lead) {
    var section = document.getElementById("local");
    var panel = section.querySelector(".local-results");
    fetch(form.dataset.search + "?topK=10&query=" + encodeURIComponent(question))
      .then(function (r) { return r.json(); })
      .then(function (data) {
        if (!data.ok) { status.textContent = lead; return; }
        window.mnoteEvidence.showResults(panel, data);
        status.textContent = lead + (data.results.length ? " Here are the passages of your notes that match the question."
          : " No passage of your notes matches the question either.");
        section.hidden = !data.results.length;
      })
      .catch(function () { status.textContent = lead; });
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
      var question = form.q.value;
      status.textContent = "Asking…";
      document.getElementById("answer").hidden = true;
      document.getElementById("sources").textContent = "";
      document.getElementById("local").hidden = true;
      fetch(form.dataset.endpoint, {
        method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ query: question, mode: form.mode.value })
      }).then(function (r) { return r.json(); }).then(function (data) {
        if (data.error) { status.textContent = data.error.message; return; }  // a bad question: say why
        if (!data.ok) { showLocal(form, question, status, why(data.degradedReason)); return; }
        status.textContent = data.degraded ? "The sources below were found, but there is no written answer: " +
          why(data.degradedReason).charAt(0).toLowerCase() + why(data.degradedReason).slice(1) : "";
        render(data);
      }).catch(function () { status.textContent = "The query server did not answer."; });
    });
  });
})();
