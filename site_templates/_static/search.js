// mnote-evidence: the site's search box (SPEC §9), one UI over two transports.
// Served (`mnote-evidence serve`, a page under /-/evidence/site/): the search API. Any other http(s) host:
// evidence.sqlite beside index.html, queried in the browser (sql.js-httpvfs, vendored in _static/vendor/)
// with HTTP range requests, or downloaded whole where the host does not serve ranges; search_query.js runs
// the API's query and ranking on it. From file:// browsers allow neither: the box says what to run instead.
// Results are grouped by file (best passage first, "n more in this file"), show a snippet with the matched
// terms highlighted, the page and section path, a count and "more results", and open the same anchors.
(function () {
  "use strict";
  // Files shown per "More results"; passages asked for at first and added per fetch. On a static host each
  // candidate passage is a range request or so (the API re-ranks 5 x topK of them), so the first ask is small.
  var PAGE_GROUPS = 10, FETCH = 20;
  var FILE_HINT = "Search needs a web server (browsers do not let a page opened from disk read evidence.sqlite): " +
    "run `python -m http.server` in this folder and open http://localhost:8000/, or run `mnote-evidence serve`. " +
    "Links and highlighted passages work from disk.";
  var Q = window.mnoteSearchQuery;
  var dbPromise = null;

  function notice(text) {
    var el = document.getElementById("notice");
    el.textContent = text;
    el.hidden = false;
  }

  function served(form) {
    return window.location.pathname.indexOf("/-/evidence/site/") >= 0 && !!form.dataset.endpoint;
  }

  // -- transports: both take the API's request ({query, topK, offset, groupBy, perDocument, resourceKinds,
  // folder, resourcePath …}) and answer the API's page ({results, total, totalIsLowerBound, nextOffset, groups})
  function apiSearch(form, request) {
    var url = form.dataset.endpoint + "?" + Object.keys(request).filter(function (k) {
      var v = request[k];
      return v !== undefined && v !== null && v !== "" && !(Array.isArray(v) && !v.length);
    }).map(function (k) {
      var v = request[k];
      return k + "=" + encodeURIComponent(Array.isArray(v) ? v.join(",") : String(v));
    }).join("&");
    return fetch(url).then(function (resp) {
      var json = (resp.headers.get("content-type") || "").indexOf("json") >= 0;
      if (!json) throw new Error("no search API here (HTTP " + resp.status + ")");
      return resp.json();
    }).then(function (data) {
      if (!data.ok) throw new Error(data.error ? data.error.message : "search failed");
      return data;
    });
  }

  function loadScript(src) {
    return new Promise(function (resolve, reject) {
      var s = document.createElement("script");
      s.src = src; s.onload = resolve;
      s.onerror = function () { reject(new Error("could not load " + src)); };
      document.head.appendChild(s);
    });
  }

  // The database is opened once per page. Hosts that serve byte ranges (`Accept-Ranges: bytes`: GitHub
  // Pages, S3, nginx, Netlify …) give 4 KiB pages on demand; others (python -m http.server) the whole file.
  function openDb(form) {
    if (dbPromise) return dbPromise;
    var dbUrl = new URL(form.dataset.db, document.baseURI).href;
    var vendor = new URL(form.dataset.static + "/vendor/sql.js-httpvfs/", document.baseURI).href;
    dbPromise = fetch(dbUrl, { method: "HEAD", cache: "no-store" }).then(function (resp) {
      if (!resp.ok) throw new Error("evidence.sqlite is not on this host (HTTP " + resp.status + ")");
      var length = Number(resp.headers.get("content-length"));
      var encoding = resp.headers.get("content-encoding");
      if (encoding && encoding !== "identity") {
        throw new Error("this host compresses evidence.sqlite (Content-Encoding: " + encoding + "); serve it as is");
      }
      var ranges = resp.headers.get("accept-ranges") === "bytes";
      // The file's version in its URL: pages cached from an earlier build are never mixed with this one's.
      var version = resp.headers.get("etag") || resp.headers.get("last-modified") || "";
      var url = version ? dbUrl + "?v=" + encodeURIComponent(version + "-" + length) : dbUrl;
      return loadScript(vendor + "index.js").then(function () {
        var config = { serverMode: "full", url: url, requestChunkSize: ranges || !length ? 4096 : length };
        return window.createDbWorker([{ from: "inline", config: config }], vendor + "sqlite.worker.js",
                                     vendor + "sql-wasm.wasm");
      }).then(function (worker) { return { worker: worker, ranges: ranges, length: length }; });
    });
    dbPromise.catch(function () { dbPromise = null; });
    return dbPromise;
  }

  // `exact`: rank the server's 250-row window for the server's totals (tests); the box ranks only what a
  // page needs (docs/performance.md).
  function staticSearch(form, request, exact) {
    return openDb(form).then(function (h) {
      var root = form.dataset.db.replace(/evidence\.sqlite$/, "");
      return Q.staticSearch(h.worker.db, request, root, { lean: !exact });
    });
  }

  function search(form, request, exact) {
    return served(form) ? apiSearch(form, request) : staticSearch(form, request, exact);
  }

  // -- rendering -------------------------------------------------------------------------------------------
  // The API's snippet ({text, highlights}) when it sends one; the same computed here otherwise.
  function snippetOf(r, terms) {
    if (r.snippet && typeof r.snippet.text === "string" && Array.isArray(r.snippet.highlights)) return r.snippet;
    return Q.snippet(r.quote || "", terms);
  }

  function marked(parent, text, highlights) {  // highlights: [start, end) in UTF-16 units, sorted
    var at = 0;
    (highlights || []).forEach(function (h) {
      if (h[0] < at) return;
      parent.appendChild(document.createTextNode(text.slice(at, h[0])));
      var m = document.createElement("mark");
      m.textContent = text.slice(h[0], h[1]);
      parent.appendChild(m);
      at = h[1];
    });
    parent.appendChild(document.createTextNode(text.slice(at)));
  }

  function resultLink(r, terms) {
    var a = document.createElement("a"), s = r.source;
    a.href = s.openAction.url;
    a.className = "result";
    var quote = document.createElement("span");
    quote.className = "snippet";
    var snip = snippetOf(r, terms);
    marked(quote, snip.text, snip.highlights);
    var where = document.createElement("small");
    where.textContent = s.resourcePath + (s.page ? " · p." + s.page : "") +
      (s.sectionPath && s.sectionPath.length ? " · " + s.sectionPath.join(" > ") : "");
    a.appendChild(quote);
    a.appendChild(where);
    return a;
  }

  function groups(results) {
    var byPath = {}, order = [];
    results.forEach(function (r) {
      var key = r.source.resourcePath;
      if (!byPath[key]) { byPath[key] = []; order.push(key); }
      byPath[key].push(r);
    });
    return order.map(function (k) { return byPath[k]; });
  }

  function groupEl(list, terms) {
    var g = document.createElement("div");
    g.className = "result-group";
    g.appendChild(resultLink(list[0], terms));
    if (list.length > 1) {
      var rest = document.createElement("div");
      rest.className = "group-rest";
      rest.hidden = true;
      list.slice(1).forEach(function (r) { rest.appendChild(resultLink(r, terms)); });
      var more = document.createElement("button");
      more.type = "button";
      more.className = "more-in-file";
      more.textContent = (list.length - 1) + " more in this file";
      more.addEventListener("click", function () { rest.hidden = false; more.remove(); });
      g.appendChild(more);
      g.appendChild(rest);
    }
    return g;
  }

  // "12 matching passages · showing 3 of 5 files"; "250+ matching passages" when the answer's total is a
  // lower bound (the API counts among the 250 best by bm25, and so does the static path).
  function countText(data, shown, files) {
    var total = typeof data.total === "number" ? data.total : data.results.length;
    var plus = data.totalIsLowerBound ? "+" : "";
    return total + plus + (total === 1 && !plus ? " matching passage" : " matching passages") +
      " · showing " + shown + " of " + files + (files === 1 ? " file" : " files");
  }

  // Renders `data` (the API's answer) into `panel`; `more(n)` fetches further results when all are shown.
  function showResults(panel, data, query, more) {
    var terms = Q.queryTerms(query || data.query || "");
    panel.textContent = "";
    if (!data.results.length) { panel.textContent = "No evidence matches."; return; }
    var all = groups(data.results), shown = 0;
    var count = document.createElement("div");
    count.className = "result-count";
    panel.appendChild(count);
    var list = document.createElement("div");
    panel.appendChild(list);
    var button = document.createElement("button");
    button.type = "button";
    button.className = "more-results";
    button.textContent = "More results";
    function render(upTo) {  // the first `upTo` files (re-drawn whole: a fetch may add to a shown file)
      list.textContent = "";
      all.slice(0, upTo).forEach(function (g) { list.appendChild(groupEl(g, terms)); });
      shown = Math.min(all.length, upTo);
      var fetchable = !!more && more.can(data);
      count.textContent = countText(data, shown, all.length);
      if (shown < all.length || fetchable) panel.appendChild(button); else button.remove();
    }
    button.addEventListener("click", function () {
      if (shown < all.length) { render(shown + PAGE_GROUPS); return; }
      button.textContent = "Searching…";
      more(data).catch(function (err) { return { results: [], error: err }; }).then(function (next) {
        var seen = {};
        data.results.forEach(function (r) { seen[r.evidenceId] = true; });
        var fresh = next.results.filter(function (r) { return !seen[r.evidenceId]; });
        data = Object.assign({}, next, { results: data.results.concat(fresh) });
        if (!fresh.length) { data.nextOffset = null; data.total = data.results.length; data.totalIsLowerBound = false; }
        all = groups(data.results);
        button.textContent = "More results";
        render(shown + PAGE_GROUPS);
      });
    });
    render(PAGE_GROUPS);
  }

  function searchBox() {
    var form = document.querySelector("form.search");
    if (!form) return;
    var panel = document.createElement("div");
    panel.id = "search-results";
    panel.hidden = true;
    panel.setAttribute("aria-live", "polite");
    form.appendChild(panel);
    var input = form.querySelector("input"), kind = form.querySelector("select[name=kind]");

    function run() {
      var q = input.value.trim();
      if (!q) return;
      var kinds = kind && kind.value ? [kind.value] : [];
      if (window.location.protocol === "file:") { notice(FILE_HINT); return; }
      var request = { query: q, topK: FETCH, resourceKinds: kinds };
      var fetchMore = function (data) {  // both paths page with the answer's nextOffset (the same pages)
        return search(form, Object.assign({}, request, { offset: data.nextOffset }));
      };
      fetchMore.can = function (data) { return data.nextOffset != null; };
      panel.hidden = false;
      panel.textContent = "Searching…";
      search(form, request)
        .then(function (data) { showResults(panel, data, q, fetchMore); })
        .catch(function (err) { panel.textContent = "Search failed: " + err.message; });
    }
    form.addEventListener("submit", function (ev) { ev.preventDefault(); run(); });
    if (kind) kind.addEventListener("change", function () { if (input.value.trim()) run(); });
    var q = new URLSearchParams(window.location.search).get("q");  // the form's no-JavaScript submit lands here
    if (q) { input.value = q; run(); }
  }

  window.mnoteEvidence = Object.assign(window.mnoteEvidence || {}, {
    showResults: showResults,
    // What the box asks, as data (tests and benchmarks compare paths): an API request, or (query, kinds, topK).
    // searchExact: the static path with the server's totals too.
    search: function (request, kinds, topK) {
      if (typeof request === "string") request = { query: request, resourceKinds: kinds || [], topK: topK || FETCH };
      return search(document.querySelector("form.search"), request);
    },
    searchExact: function (request) { return search(document.querySelector("form.search"), request, true); },
    searchStats: function () {  // bytes and requests the static path has read (benchmarks, tests)
      return dbPromise ? dbPromise.then(function (h) {
        return h.worker.worker.getStats().then(function (s) {
          return Object.assign({ ranges: h.ranges, length: h.length }, s);
        });
      }) : Promise.resolve(null);
    }
  });
  document.addEventListener("DOMContentLoaded", searchBox);
})();
