// mnote-evidence: the site's search box (SPEC §9), one UI over two transports.
// Served (`mnote-evidence serve`, a page under /-/evidence/site/): the search API. Any other http(s) host:
// the search index in `_search/` (term shards, block buckets and text fragments, fetched whole, only those a
// query needs: search_index.js), on which search_query.js runs the API's query and ranking. From file://
// browsers allow neither: the box says what to run instead.
// Results are grouped by file (best passage first, "n more in this file"), show a snippet with the matched
// terms highlighted, the page and section path, a count and "more results", and open the same anchors.
// The box searches as you type (debounced; the latest ask's answer wins), `/` and Ctrl-K (Cmd-K) focus it,
// Escape clears it, arrow keys and Enter move through the results (a combobox and listbox for screen
// readers), and the count is of every matching file and passage (one count statement on either transport).
(function () {
  "use strict";
  // Files shown per "More results"; passages asked for at first and added per fetch (the API re-ranks 5 x
  // topK candidates; on a static host each passage shown is a small fragment file).
  var PAGE_GROUPS = 10, FETCH = 20;
  // While typing: an ask once the keys pause this long, and only for this many letters or digits (or one CJK
  // character: a Chinese word is often one).
  var DEBOUNCE_MS = 200, MIN_CHARS = 2;
  var FILE_HINT = "Search needs a web server (browsers do not let a page opened from disk read its index): " +
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
  function apiSearch(form, request, signal) {
    var url = form.dataset.endpoint + "?" + Object.keys(request).filter(function (k) {
      var v = request[k];
      return v !== undefined && v !== null && v !== "" && !(Array.isArray(v) && !v.length);
    }).map(function (k) {
      var v = request[k];
      return k + "=" + encodeURIComponent(Array.isArray(v) ? v.join(",") : String(v));
    }).join("&");
    return fetch(url, { signal: signal }).then(function (resp) {
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

  // The search index (`_search/`, build/render/search_index.py) is opened once per page: its manifest (never
  // cached: it names this build's files), then the files a query needs, each named by its content.
  function openDb(form) {
    if (dbPromise) return dbPromise;
    var manifestUrl = new URL(form.dataset.search, document.baseURI).href;
    var base = new URL(form.dataset.static + "/", document.baseURI).href;
    var scripts = [loadScript(base + "search_fold.js"), loadScript(base + "search_index.js")];
    dbPromise = Promise.all(scripts).then(function () {
      var index = window.mnoteSearchIndex.open(manifestUrl);
      return index.ready.then(function (m) {
        if (m.format !== "mnote-search-3") throw new Error("the search index (_search/) is of another version");
        return index;
      });
    });
    dbPromise.catch(function () { dbPromise = null; });
    return dbPromise;
  }

  // `exact`: rank the server's 250-row window for the server's totals (tests); the box ranks only what a
  // page needs (docs/performance.md).
  function staticSearch(form, request, exact) {
    return openDb(form).then(function (index) {
      var root = form.dataset.search.replace(/_search\/manifest\.json$/, "");
      return Q.staticSearch(index, request, root, { lean: !exact });
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
    var a = option(document.createElement("a")), s = r.source;
    a.href = s.openAction.url;
    if (r.alsoMatched && r.alsoMatched.length) {  // a page (section) hit: site.js's ?hl= marks all its blocks
      var at = a.href.indexOf("#"), url = at < 0 ? a.href : a.href.slice(0, at), hash = at < 0 ? "" : a.href.slice(at);
      a.href = url + (url.indexOf("?") < 0 ? "?" : "&") + "hl=" +
        [r.evidenceId].concat(r.alsoMatched).map(encodeURIComponent).join(",") + hash;
    }
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
    g.setAttribute("role", "group");
    g.setAttribute("aria-label", list[0].source.resourcePath);
    g.appendChild(resultLink(list[0], terms));
    if (list.length > 1) {
      var rest = document.createElement("div");
      rest.className = "group-rest";
      rest.hidden = true;
      list.slice(1).forEach(function (r) { rest.appendChild(resultLink(r, terms)); });
      var more = option(document.createElement("button"));
      more.type = "button";
      more.className = "more-in-file";
      more.textContent = (list.length - 1) + " more in this file";
      more.addEventListener("click", function () { rest.hidden = false; more.remove(); });
      g.appendChild(more);
      g.appendChild(rest);
    }
    return g;
  }

  // -- counts: every matching file and passage (search_query.js countQuery), not only those loaded -------------
  // Served, Datasette's JSON API runs the statement (data-sql); on a static host the index answers the same.
  function sqlJson(form, q) {
    var url = form.dataset.sql + "?" + new URLSearchParams(Object.assign({ sql: q.sql, _shape: "array" }, q.params));
    return fetch(url).then(function (resp) {
      if (!resp.ok || (resp.headers.get("content-type") || "").indexOf("json") < 0) throw new Error("no SQL here");
      return resp.json();
    });
  }

  // {passages, files, more}: `more` when more matched than were counted (both counts are then lower bounds).
  function countMatches(form, request, mode) {
    var q = Q.countQuery(request, mode);
    var rows = served(form) ? sqlJson(form, q) : openDb(form).then(function (index) {
      return Q.staticCount(index, request, mode).then(function (r) { return [r]; });
    });
    return rows.then(function (r) {
      return { passages: r[0].passages, files: r[0].files, more: r[0].matched > q.cap };
    });
  }

  function plural(n, plus, one, many) { return n + (plus ? "+" : "") + " " + (n === 1 && !plus ? one : many); }

  // "5 files, showing 3 · 12 matching passages": `counted` (countMatches) when the count query answered;
  // without it (a server without SQL, the Ask page) the answer's own total and the files it loaded.
  function countText(data, shown, files, counted) {
    var total = typeof data.total === "number" ? data.total : data.results.length;
    var c = counted ? { files: Math.max(counted.files, files), filesMore: counted.more,
                        passages: Math.max(counted.passages, data.results.length), passagesMore: counted.more }
      : { files: files, filesMore: data.nextOffset != null, passages: total, passagesMore: !!data.totalIsLowerBound };
    var head = plural(c.files, c.filesMore, "file", "files");
    if (shown < c.files || c.filesMore) head += ", showing " + shown;
    return head + " · " + plural(c.passages, c.passagesMore, "matching passage", "matching passages");
  }

  // Renders `data` (the API's answer) into `panel` as a listbox of options (results, "n more in this file",
  // "More results"); `more(n)` fetches further results when all are shown; `counted`: countMatches' answer.
  // Fires "mnote-drawn" on `panel` after each drawing (the box keeps its keyboard selection).
  function showResults(panel, data, query, more, counted) {
    var terms = Q.queryTerms(query || data.query || "");
    panel.textContent = "";
    if (!data.results.length) { panel.textContent = "No evidence matches."; return; }
    var all = groups(data.results), shown = 0;
    var count = document.createElement("div");
    count.className = "result-count";
    panel.appendChild(count);
    var list = document.createElement("div");
    list.setAttribute("role", "listbox");
    list.setAttribute("aria-label", "Search results");
    if (panel.id === "search-results") list.id = "search-list";
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
      count.textContent = countText(data, shown, all.length, counted);
      if (shown < all.length || fetchable) list.appendChild(option(button)); else button.remove();
      panel.dispatchEvent(new Event("mnote-drawn"));
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

  var optionIds = 0;
  function option(el) {  // one choice of the listbox: the box's arrow keys move through these
    el.setAttribute("role", "option");
    el.setAttribute("aria-selected", "false");
    if (!el.id) el.id = "search-option-" + (++optionIds);
    return el;
  }

  function editable(el) {
    return !!el && (el.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName));
  }

  // Enough to search while typing: a CJK character, or two letters or digits of other text.
  function longEnough(q) {
    var terms = Q.queryTerms(q), text = terms.join("");
    return terms.some(function (t) { return Q.isCjk(t[0]); }) || Array.from(text).length >= MIN_CHARS;
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
    var key = form.querySelector(".search-key");
    input.setAttribute("role", "combobox");
    input.setAttribute("aria-autocomplete", "list");
    input.setAttribute("aria-controls", "search-list");
    input.setAttribute("aria-expanded", "false");
    input.setAttribute("aria-keyshortcuts", "/ Control+K Meta+K");
    input.setAttribute("autocomplete", "off");
    if (key) key.hidden = false;
    // `seq` numbers the asks: an answer that is not the latest ask's is dropped. Served, a newer ask also
    // aborts the older fetch; on a static host asks wait their turn in the one worker and a stale one is skipped.
    var timer = null, seq = 0, controller = null, turn = Promise.resolve(), current = null, keepAt = -1;

    function options() {
      return Array.prototype.filter.call(panel.querySelectorAll("[role=option]"), function (el) {
        return el.getClientRects().length > 0;
      });
    }
    function select(el) {
      if (current) { current.classList.remove("active"); current.setAttribute("aria-selected", "false"); }
      current = el || null;
      if (!current) { input.removeAttribute("aria-activedescendant"); return; }
      current.classList.add("active");
      current.setAttribute("aria-selected", "true");
      input.setAttribute("aria-activedescendant", current.id);
      current.scrollIntoView({ block: "nearest" });
    }
    function move(by) {
      var list = options(), at = list.indexOf(current) + by;
      if (!list.length) return;
      if (list.indexOf(current) < 0 && by < 0) at = list.length - 1;
      select(at < 0 ? null : list[Math.min(at, list.length - 1)]);
    }
    function open() {
      if (!panel.childNodes.length) return;
      panel.hidden = false;
      input.setAttribute("aria-expanded", "true");
    }
    function close() {
      panel.hidden = true;
      input.setAttribute("aria-expanded", "false");
      select(null);
    }
    function clear() {
      clearTimeout(timer);
      seq++;
      if (controller) controller.abort();
      close();
      panel.textContent = "";
    }
    panel.addEventListener("mnote-drawn", function () {  // after "More results": the option where it was
      var list = options();
      if (keepAt >= 0 && list.length) select(list[Math.min(keepAt, list.length - 1)]);
      keepAt = -1;
    });

    // `typed`: the box is being typed in (the last word also matches as a prefix); Enter asks for the words.
    function run(typed) {
      clearTimeout(timer);
      var q = input.value.trim();
      if (!q) return;
      if (window.location.protocol === "file:") { notice(FILE_HINT); return; }
      var kinds = kind && kind.value ? [kind.value] : [];
      var request = { query: q, topK: FETCH, resourceKinds: kinds };
      if (typed) request.prefixLast = true;
      var mine = ++seq, isServed = served(form), signal;
      if (controller) controller.abort();
      controller = isServed && window.AbortController ? new AbortController() : null;
      signal = controller ? controller.signal : undefined;
      var fetchMore = function (data) {  // both paths page with the answer's nextOffset (the same pages)
        return search(form, Object.assign({}, request, { offset: data.nextOffset }));
      };
      fetchMore.can = function (data) { return data.nextOffset != null; };
      if (!panel.querySelector(".result")) { panel.textContent = "Searching…"; open(); }
      var ask = function () {
        if (mine !== seq) return null;  // a newer ask is waiting
        var found = isServed ? apiSearch(form, request, signal) : search(form, request);
        return found.then(function (data) {
          return countMatches(form, request, data.matchMode).catch(function () { return null; })
            .then(function (counted) { return { data: data, counted: counted }; });
        });
      };
      var answered = isServed ? ask() : (turn = turn.then(ask, ask));
      answered.then(function (a) {
        if (!a || mine !== seq) return;
        select(null);
        showResults(panel, a.data, q, fetchMore, a.counted);
        open();
      }).catch(function (err) {
        if (mine !== seq) return;
        panel.textContent = "Search failed: " + err.message;
        open();
      });
    }

    input.addEventListener("input", function () {
      clearTimeout(timer);
      if (!longEnough(input.value.trim())) { clear(); return; }
      timer = setTimeout(function () { run(true); }, DEBOUNCE_MS);
    });
    input.addEventListener("focus", function () {
      open();
      // on a static host, the index's engine and manifest load while the query is typed
      if (!served(form) && window.location.protocol !== "file:") openDb(form).catch(function () {});
    });
    input.addEventListener("keydown", function (ev) {
      if (ev.key === "ArrowDown" || ev.key === "ArrowUp") {
        if (panel.hidden) open();
        move(ev.key === "ArrowDown" ? 1 : -1);
        ev.preventDefault();
      } else if (ev.key === "Enter" && current && !ev.isComposing) {
        ev.preventDefault();
        keepAt = options().indexOf(current);
        var el = current;
        el.click();  // a result: its exact anchor opens; a button: it acts as clicked
        if (el.tagName === "BUTTON" && !el.isConnected) {  // "n more in this file": its first hidden passage
          var list = options();
          select(list[Math.min(keepAt, list.length - 1)]);
          keepAt = -1;
        }
      } else if (ev.key === "Escape") {
        ev.preventDefault();
        if (input.value || !panel.hidden) { input.value = ""; clear(); } else input.blur();
      }
    });
    form.addEventListener("submit", function (ev) { ev.preventDefault(); run(false); });
    if (kind) kind.addEventListener("change", function () { if (input.value.trim()) run(true); });
    document.addEventListener("click", function (ev) {  // elsewhere (not a button the results just removed)
      if (ev.target.isConnected && !form.contains(ev.target)) close();
    });
    // `/` and Ctrl-K (Cmd-K) focus the box from anywhere but another field being typed in
    document.addEventListener("keydown", function (ev) {
      var slash = ev.key === "/" && !ev.ctrlKey && !ev.metaKey && !ev.altKey;
      var k = (ev.ctrlKey || ev.metaKey) && !ev.altKey && !ev.shiftKey && (ev.key === "k" || ev.key === "K");
      if (!(slash || k) || ev.defaultPrevented || ev.isComposing) return;
      if (editable(ev.target) && (ev.target !== input || slash)) return;
      ev.preventDefault();
      input.focus();
      input.select();
    });
    var q = new URLSearchParams(window.location.search).get("q");  // the form's no-JavaScript submit lands here
    if (q) { input.value = q; run(false); }
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
    // {passages, files, more} for a request and match mode, as the box counts (benchmarks, tests)
    countMatches: function (request, mode) { return countMatches(document.querySelector("form.search"), request, mode); },
    searchStats: function () {  // bytes and requests the static path has read (benchmarks, tests)
      return dbPromise ? dbPromise.then(function (index) {
        return { requests: index.stats.requests, bytes: index.stats.bytes };
      }) : Promise.resolve(null);
    }
  });
  document.addEventListener("DOMContentLoaded", searchBox);
})();
