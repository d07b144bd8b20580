// mnote-evidence: the search query, ranking and snippets of `functions/search/fts.py` + `build/core/text.py`,
// in the browser, for the static host (SPEC §9: "the static site searches on any static host without our
// server").
// Invariants: ftsQuery/queryTerms build exactly what build/core/text.py's fts_query/query_terms build (a
// Chromium test compares them on a list of inputs); staticSearch ports functions/search/fts.py's `rank` (bm25
// window of 250, re-ranking in fixed chunks, ties by path, page, position) and functions/search/results.py's
// `fts_page` (offset/nextOffset, total/totalIsLowerBound, groupBy document) over the static index
// (`_search/`, read by search_index.js: the same bm25 over the same tokens), so both paths answer the same
// request with the same page (a Chromium test compares them, pages and groups).
// Snippet highlights are UTF-16 offsets of the snippet text (the API's contract); CJK segmentation never
// reaches a snippet.
(function () {
  "use strict";
  var CJK_CLASS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff";  // build/core/text.py _CJK_CLASS
  var CJK_RUN = new RegExp("[" + CJK_CLASS + "]+", "g");
  var CJK_CHAR = new RegExp("[" + CJK_CLASS + "]");
  var WORD = /[\p{L}\p{N}_]+/gu;  // Python's \w+ (letters, digits, underscore)
  var CANDIDATES_PER_RESULT = 5, MIN_CANDIDATES = 50, MAX_WINDOW = 50000;
  var FLANK_WEIGHT = [1.0, 0.6, 0.25];

  function isCjk(ch) { return !!ch && CJK_CHAR.test(ch); }

  function normalised(query) { return (query || "").normalize("NFKC").replace(/\0/g, " "); }

  function pieces(query) { return query.split(new RegExp("[" + CJK_CLASS + "]+")); }

  var PREFIX_MIN = 3;  // build/core/text.py PREFIX_MIN

  function ftsQuery(raw, prefixLast) {
    var query = normalised(raw), terms = [], parts = pieces(query);
    parts.forEach(function (piece) {
      (piece.match(WORD) || []).forEach(function (w) { terms.push('"' + w + '"'); });
    });
    var lastWords = /[\p{L}\p{N}_]$/u.test(query) ? parts[parts.length - 1].match(WORD) : null;
    if (prefixLast && lastWords && Array.from(lastWords[lastWords.length - 1]).length >= PREFIX_MIN) {
      terms[terms.length - 1] += " *";  // the query's last word is the last of the words
    }
    (query.match(CJK_RUN) || []).forEach(function (run) {
      var chars = Array.from(run);
      if (chars.length === 1) { terms.push('"' + run + '" *'); return; }
      var grams = [];
      for (var i = 0; i < chars.length - 1; i++) grams.push(chars[i] + chars[i + 1]);
      terms.push('"' + grams.join(" ") + '"');
    });
    if (!terms.length) throw new Error("query has no searchable words");
    return terms.join(" AND ");
  }

  // build/core/text.py EN_STOPWORDS, ZH_STOPWORDS, ZH_FINAL, meaning_terms, fts_any_query: any-term matching
  // of a question's meaning-bearing terms (the fallback when no block holds every term).
  var EN_STOPWORDS = ("a about above after again against all am an and any are as at be because been before being below " +
    "between both but by can could did do does doing down during each few for from further had has have " +
    "having he her here hers herself him himself his how i if in into is it its itself just me more most " +
    "my myself no nor not of off on once only or other our ours ourselves out over own same she should so " +
    "some such than that the their theirs them themselves then there these they this those through to too " +
    "under until up very was we were what when where which while who whom why will with would you your " +
    "yours yourself yourselves").split(" ");
  var ZH_STOPWORDS = ["为什么", "是什么", "有没有", "怎么样", "什么", "多少", "哪些", "哪个", "哪里", "怎么", "怎样", "如何",
    "是否", "请问", "能否", "的", "是", "和", "与", "及", "或"];
  var ZH_FINAL = ["吗", "呢", "吧", "啊", "呀"];
  var ZH_CUT = new RegExp(ZH_STOPWORDS.join("|")), ZH_END = new RegExp("[" + ZH_FINAL.join("") + "]+$");
  var STOP = {};
  EN_STOPWORDS.forEach(function (w) { STOP[w] = true; });

  function meaningTerms(raw) {
    var query = normalised(raw), out = [], runs = query.match(CJK_RUN) || [];
    pieces(query).forEach(function (piece, n) {
      (piece.match(WORD) || []).forEach(function (w) { if (!STOP[w.toLowerCase()]) out.push(w); });
      var run = runs[n];
      if (run === undefined) return;
      if (Array.from(run).length === 1) { out.push(run); return; }  // a character typed on its own
      run.replace(ZH_END, "").split(ZH_CUT).forEach(function (p) { if (Array.from(p).length > 1) out.push(p); });
    });
    var seen = {};
    out = out.filter(function (t) { var k = t.toLowerCase(); if (seen[k]) return false; seen[k] = true; return true; });
    return out.length ? out : queryTerms(raw);
  }

  function matchTerm(term) {
    if (!isCjk(term[0])) return '"' + term + '"';
    var chars = Array.from(term);
    if (chars.length === 1) return '"' + term + '" *';
    var grams = [];
    for (var i = 0; i < chars.length - 1; i++) grams.push(chars[i] + chars[i + 1]);
    return '"' + grams.join(" ") + '"';
  }

  function ftsAnyQuery(raw) {
    var terms = meaningTerms(raw);
    if (!terms.length) throw new Error("query has no searchable words");
    return terms.map(matchTerm).join(" OR ");
  }

  // fts.match_of: [the FTS expression, the terms that highlight and re-rank] of the query in `mode`.
  function matchOf(query, mode, prefixLast) {
    return mode === "any" ? [ftsAnyQuery(query), meaningTerms(query)] : [ftsQuery(query, prefixLast), queryTerms(query)];
  }

  // fts.phrase_of: the FTS phrase of a query of two or more words and no CJK, or null.
  function phraseOf(query, prefixLast) {
    var terms = ftsQuery(query, prefixLast).split(" AND ");
    if (terms.length < 2 || terms.some(function (t) { return isCjk(t[1]); })) return null;
    var words = terms.map(function (t) { return t.split('"')[1]; });
    return '"' + words.join(" ") + '"' + (/ \*$/.test(terms[terms.length - 1]) ? " *" : "");
  }

  function queryTerms(raw) {
    var query = (raw || "").normalize("NFKC");
    var terms = (query.match(CJK_RUN) || []).slice();
    pieces(query).forEach(function (piece) { terms = terms.concat(piece.match(WORD) || []); });
    return terms.filter(function (t) { return t.trim(); });
  }

  function flankWeight(text, start, end) {  // code-unit offsets; CJK classes are all in the BMP
    return FLANK_WEIGHT[(start > 0 && isCjk(text[start - 1]) ? 1 : 0) + (end < text.length && isCjk(text[end]) ? 1 : 0)];
  }

  function termPrecision(text, terms) {
    var weights = [];
    terms.forEach(function (term) {
      if (!isCjk(term[0])) return;
      var best = 0, start = text.indexOf(term);
      while (start >= 0 && best < 1) {
        best = Math.max(best, flankWeight(text, start, start + term.length));
        start = text.indexOf(term, start + 1);
      }
      weights.push(best);
    });
    return weights.length ? weights.reduce(function (a, b) { return a + b; }, 0) / weights.length : 1;
  }

  function round6(x) { return Math.round(x * 1e6) / 1e6; }

  // -- the static path: functions/search/fts.py `rank` + functions/search/results.py `fts_page`, on `_search/`
  // read by range requests. Same constants, same chunked re-ranking, same tie order, totals and groups.
  var RANK_WINDOW = 250, MAX_DEPTH = 1000, COUNT_CAP = 1000, MAX_TOP_K = 50, UNIT_TERM_CAP = 1000;
  var DEFAULT_TOP_K = 10, DEFAULT_PER_DOCUMENT = 3, MAX_PER_DOCUMENT = 5;
  var BODY = "body";

  function chunkSize(topK) { return Math.max(MIN_CANDIDATES, topK * CANDIDATES_PER_RESULT); }

  function cmpStr(a, b) {  // Python's str order (code points), not UTF-16 units: they differ past U+E000
    if (a === b) return 0;
    var x = Array.from(a), y = Array.from(b), n = Math.min(x.length, y.length);
    for (var i = 0; i < n; i++) {
      if (x[i] !== y[i]) return x[i].codePointAt(0) - y[i].codePointAt(0);
    }
    return x.length - y.length;
  }

  function passes(f, row) {  // fts.Filters.passes
    var path = row.path;
    return row.status === "ok" && (f.includeFurniture || row.role === BODY) &&
      (!f.kinds || !f.kinds.length || f.kinds.indexOf(row.kind) >= 0) &&
      (!f.pathPrefix || path.indexOf(f.pathPrefix) === 0) &&
      (!f.folder || path.indexOf(f.folder.replace(/\/+$/, "") + "/") === 0) &&
      (!f.resourcePath || path === f.resourcePath);
  }

  // fts._ranked_rows: the `win` best FTS matches (ties by rowid) with their light columns; win < 0: all.
  async function rankedRows(db, match, win) {
    var ranked = await db.rank(match);
    if (win >= 0) ranked = ranked.slice(0, win);
    var info = await db.info(ranked.map(function (r) { return r.id; }));
    return ranked.filter(function (r) { return info[r.id]; }).map(function (r) {
      return Object.assign({ rank: r.rank }, info[r.id]);
    });
  }

  // fts.term_precision of each of `ids` (a function of the rowid), from the index's CJK flank bits.
  async function precision(db, terms, ids) {
    var cjk = terms.filter(function (t) { return isCjk(t[0]); });
    if (!cjk.length || !ids.length) return function () { return 1; };
    var weights = await Promise.all(cjk.map(function (t) { return db.flankWeights(matchTerm(t)); }));
    return function (id) {
      return weights.reduce(function (a, w) { return a + (w.get(id) || 0); }, 0) / weights.length;
    };
  }

  // fts.unit_hits: pages (sections) holding every term across blocks none of which holds them all.
  async function unitHits(db, termMatches, filters) {
    if (termMatches.length < 2) return [];
    var sets = [];
    for (var t = 0; t < termMatches.length; t++) {
      var ids = (await db.rowids(termMatches[t])).slice(0, UNIT_TERM_CAP + 1);
      if (ids.length > UNIT_TERM_CAP || !ids.length) return [];
      sets.push(ids);
    }
    var rarest = 0;
    sets.forEach(function (ids, n) { if (ids.length < sets[rarest].length) rarest = n; });
    var info = await db.info(sets[rarest]), spans = [];
    Object.keys(info).forEach(function (k) { spans.push([info[k].lo, info[k].hi]); });
    var wanted = {};
    sets.forEach(function (ids) {
      ids.forEach(function (id) {
        if (!info[id] && spans.some(function (s) { return s[0] <= id && id <= s[1]; })) wanted[id] = true;
      });
    });
    Object.assign(info, await db.info(Object.keys(wanted).map(Number).sort(function (a, b) { return a - b; })));
    var held = {};
    sets.forEach(function (ids, n) {
      ids.forEach(function (id) {
        if (info[id] && passes(filters, info[id])) (held[id] = held[id] || []).push(n);
      });
    });
    var units = {}, order = [];
    Object.keys(held).map(Number).sort(function (a, b) { return a - b; }).forEach(function (id) {
      var r = info[id], key = r.page != null ? r.rid + "\u0000page\u0000" + r.page : r.rid + "\u0000section\u0000" + (r.sid || "");
      if (!units[key]) { units[key] = { level: r.page != null ? "page" : "section", ids: [] }; order.push(key); }
      units[key].ids.push(id);
    });
    var sizes = sets.map(function (ids) { return ids.length; }), found = [];
    order.forEach(function (key) {
      var u = units[key], covered = {};
      u.ids.forEach(function (id) { held[id].forEach(function (n) { covered[n] = true; }); });
      if (Object.keys(covered).length < sets.length || u.ids.some(function (id) { return held[id].length === sets.length; })) return;
      var rare = function (id) { return held[id].reduce(function (a, n) { return a + sizes[n]; }, 0); };
      var best = u.ids.reduce(function (b, id) {
        return (held[id].length - held[b].length || rare(b) - rare(id) || info[b].ordinal - info[id].ordinal) > 0 ? id : b;
      });
      found.push({ count: u.ids.length, best: best, level: u.level, ids: u.ids });
    });
    found.sort(function (a, b) {
      var x = info[a.best], y = info[b.best];
      return (a.count - b.count) || cmpStr(x.path, y.path) || ((x.page || 0) - (y.page || 0)) || (x.ordinal - y.ordinal);
    });
    var bestIds = found.map(function (f) { return f.best; });
    var alsoIds = [].concat.apply([], found.map(function (f) { return f.ids.filter(function (id) { return id !== f.best; }); }));
    var texts = await db.texts(bestIds.concat(alsoIds));
    return found.map(function (f) {
      var r = info[f.best], t = texts[f.best];
      return { id: f.best, blockId: t.block_id, path: r.path, kind: r.kind, text: t.text, loc: t.loc, role: r.role,
               rid: r.rid, lo: r.lo, hi: r.hi,
               ordinal: r.ordinal, page: r.page, score: round6(held[f.best].length / sets.length / f.count),
               level: f.level, also: f.ids.filter(function (id) { return id !== f.best; })
                 .map(function (id) { return texts[id].block_id; }) };
    });
  }

  function rowsForDocuments(passing, documents, perDocument, chunk) {  // fts._rows_for_documents
    var counts = {}, files = 0, end = 0;
    passing.forEach(function (row, n) {
      var seen = counts[row.path];
      if (seen === undefined && files === documents) return;
      if ((seen || 0) < perDocument) {
        if (seen === undefined) files++;
        counts[row.path] = (seen || 0) + 1;
        end = n + 1;
      }
    });
    return { want: Math.ceil(end / chunk) * chunk, found: files >= documents };
  }

  // fts.rank: {hits, total, exhausted, match, perPath}: the tiers (exact phrase, every term, pages and
  // sections) one after another, a tier reached once those above it are exhausted.
  // `minWindow`: RANK_WINDOW as on the server; 0 (lean) ranks only as deep as the page needs: the same
  // hits (they depend on the chunks, not on the window), a total counted among fewer matches.
  async function rank(db, query, depth, chunk, filters, documents, perDocument, minWindow, mode, prefixLast) {
    var m = matchOf(query, mode, prefixLast), match = m[0], terms = m[1];
    var phrase = mode === "all" ? phraseOf(query, prefixLast) : null;
    var tiers = phrase ? [phrase, "(" + match + ") NOT " + phrase] : [match];
    var hits = [], total = 0, exhausted = true, perPath = {};
    for (var t = 0; t < tiers.length; t++) {
      var left = exhausted ? Math.max(0, depth - hits.length) : 0;
      // lean: a tier the page needs nothing of is asked for one row (is there more?)
      var win = minWindow === undefined ? RANK_WINDOW : (minWindow || (left || documents != null ? 0 : 1));
      var part = await rankTier(db, tiers[t], terms, left, chunk, filters, documents, perDocument, win);
      if (exhausted) hits = hits.concat(part.hits);
      total += part.total;
      exhausted = exhausted && part.exhausted;
      Object.keys(part.perPath).forEach(function (p) { perPath[p] = (perPath[p] || 0) + part.perPath[p]; });
    }
    if (exhausted && mode === "all" && meaningTerms(query).length === queryTerms(query).length) {  // not a question
      var units = await unitHits(db, ftsQuery(query, prefixLast).split(" AND "), filters);
      hits = hits.concat(units);
      total += units.length;
      units.forEach(function (h) { perPath[h.path] = (perPath[h.path] || 0) + 1; });
    }
    return { hits: hits, total: total, exhausted: exhausted, match: match, perPath: perPath, terms: terms };
  }

  async function rankTier(db, match, terms, depth, chunk, filters, documents, perDocument, minWindow) {  // fts._rank_tier
    var want = Math.ceil(depth / chunk) * chunk, passing, exhausted;
    var win = Math.max(minWindow, want);
    for (;;) {
      var rows = await rankedRows(db, match, win), found;
      passing = rows.filter(function (r) { return passes(filters, r); });
      exhausted = win < 0 || rows.length < win;
      if (documents != null) {
        var d = rowsForDocuments(passing, documents, perDocument || 1, chunk);
        want = d.want; found = d.found;
      } else {
        found = passing.length >= want;
      }
      if (exhausted || found) break;
      win = win * 8 <= MAX_WINDOW ? win * 8 : -1;
    }
    var chosen = passing.slice(0, want);
    var prec = await precision(db, terms, chosen.map(function (r) { return r.id; }));
    var hits = [];
    for (var c = 0; c < chosen.length; c += chunk) {
      var part = chosen.slice(c, c + chunk).map(function (r) {
        return { id: r.id, path: r.path, kind: r.kind, role: r.role, rid: r.rid, lo: r.lo, hi: r.hi,
                 ordinal: r.ordinal, page: r.page, score: round6(-r.rank * (0.5 + prec(r.id))) };
      });
      part.sort(function (a, b) {  // ties in document order: path, page (numerically), position (unique in a file)
        return (b.score - a.score) || cmpStr(a.path, b.path) || ((a.page || 0) - (b.page || 0)) ||
          (a.ordinal - b.ordinal);
      });
      hits = hits.concat(part);
    }
    var perPath = {};
    passing.forEach(function (r) { perPath[r.path] = (perPath[r.path] || 0) + 1; });
    return { hits: hits, total: passing.length, exhausted: exhausted, perPath: perPath };
  }

  // fts.count_in_resource: matches of `match` in the file of `row` (a hit: its resource's rowid span) passing
  // the role filter, at most `cap`.
  async function countInResource(db, match, row, filters, cap) {
    var ids = (await db.rowids(match)).filter(function (id) { return id >= row.lo && id <= row.hi; });
    var info = await db.info(ids), n = 0;
    ids.forEach(function (id) {
      var r = info[id];
      if (r && r.rid === row.rid && (filters.includeFurniture || r.role === BODY)) n++;
    });
    return Math.min(n, cap);
  }

  // functions/core/cleaning.py quote_window: up to 280 characters (code points) around the first term found.
  function quoteWindow(raw, terms, maxChars) {
    maxChars = maxChars || 280;
    var text = Array.from((raw || "").split(/\s+/).filter(Boolean).join(" "));
    if (text.length <= maxChars) return text.join("");
    var lower = Array.from(text.join("").toLowerCase()), centre = null;
    terms.forEach(function (t) {
      if (!t) return;
      var needle = Array.from(t.toLowerCase());
      for (var i = 0; i + needle.length <= lower.length; i++) {
        var k = 0;
        while (k < needle.length && lower[i + k] === needle[k]) k++;
        if (k === needle.length) { if (centre === null || i < centre) centre = i; break; }
      }
    });
    centre = centre === null ? 0 : centre;
    var start = Math.max(0, Math.min(centre - Math.floor(maxChars / 3), text.length - maxChars)), end = start + maxChars;
    if (start && text[start - 1] !== " " && !isCjk(text[start])) {
      var cut = indexOfIn(text, " ", start, centre > start ? centre : start + 20);
      start = cut >= 0 ? cut + 1 : start;
    }
    if (end < text.length && text[end] !== " " && !isCjk(text[end - 1])) {
      var back = lastIndexOfIn(text, " ", Math.max(start, end - 20), end);
      end = back > start ? back : end;
    }
    return (start ? ELLIPSIS : "") + text.slice(start, end).join("").trim() + (end < text.length ? ELLIPSIS : "");
  }

  // The block id, text and locator of the hits shown (a fragment of `_search/` each), read for those only.
  async function withTexts(db, hits) {
    var texts = await db.texts(hits.map(function (h) { return h.id; }));
    hits.forEach(function (h) { var t = texts[h.id]; h.blockId = t.block_id; h.text = t.text; h.loc = t.loc; });
    return hits;
  }

  function resultOf(h, terms, siteRoot) {  // search_results.result
    var loc = JSON.parse(JSON.stringify(h.loc));  // the index's copy stays as read
    loc.openAction.url = siteRoot + loc.openAction.url;
    var out = { evidenceId: h.blockId, quote: quoteWindow(h.text, terms), snippet: snippet(h.text, terms), score: Math.round(h.score * 1e4) / 1e4,
                matchSource: "fts", source: loc };
    if (h.level) { out.matchLevel = h.level; out.alsoMatched = h.also; }
    if (h.role !== BODY) out.role = h.role;
    return out;
  }

  function intIn(v, dflt, lo, hi, name) {
    if (v === undefined || v === null || v === "") return dflt;
    var n = Number(v);
    if (!Number.isInteger(n) || n < lo || n > hi) throw new Error("'" + name + "' must be an integer from " + lo + " to " + hi);
    return n;
  }

  // The API's `evidence.search` (mode fts) on the static host: the same request fields (query, topK, offset,
  // groupBy, perDocument, resourceKinds, pathPrefix, folder, resourcePath, includeFurniture, prefixLast) and the
  // same answer: matchMode, results, offset, total, totalIsLowerBound, nextOffset, groups. `options.lean` (the search box,
  // ungrouped pages): the same results and nextOffset, but the total is counted only among the matches the
  // page needed ranked (a lower bound sooner than the server's 250): each row ranked costs a range request.
  async function staticSearch(db, request, siteRoot, options) {
    var topK = intIn(request.topK, DEFAULT_TOP_K, 1, MAX_TOP_K, "topK");
    var offset = intIn(request.offset, 0, 0, MAX_DEPTH - 1, "offset");
    var perDocument = intIn(request.perDocument, DEFAULT_PER_DOCUMENT, 1, MAX_PER_DOCUMENT, "perDocument");
    var grouped = request.groupBy === "document";
    if (!grouped && offset + topK > MAX_DEPTH) throw new Error("'offset' + 'topK' must be at most " + MAX_DEPTH);
    var filters = { kinds: request.resourceKinds || null, pathPrefix: request.pathPrefix || null,
                    folder: request.folder || null, resourcePath: request.resourcePath || null,
                    includeFurniture: !!request.includeFurniture };
    var lean = !!(options && options.lean), prefixLast = !!request.prefixLast, out;
    for (var m = 0; m < MATCH_MODES.length; m++) {  // results.fts_page: any-term matching when nothing holds all
      out = await searchPage(db, request, siteRoot, topK, offset, perDocument, grouped, filters, lean,
                             MATCH_MODES[m], prefixLast);
      if (out.total || ftsAnyQuery(request.query) === out.match) break;
    }
    delete out.match;
    return out;
  }

  var MATCH_MODES = ["all", "any"];

  async function searchPage(db, request, siteRoot, topK, offset, perDocument, grouped, filters, lean, mode, prefixLast) {
    var query = request.query, r;
    var out = { ok: true, query: query, mode: "fts", matchMode: mode, offset: offset };
    if (!grouped) {
      r = await rank(db, query, offset + topK, chunkSize(topK), filters, null, 1, lean ? 0 : RANK_WINDOW, mode, prefixLast);
      out.match = r.match;
      var hits = await withTexts(db, r.hits.slice(offset, offset + topK)), end = offset + hits.length;
      out.results = hits.map(function (h) { return resultOf(h, r.terms, siteRoot); });
      out.total = r.total; out.totalIsLowerBound = !r.exhausted;
      if (hits.length === topK && (end < r.total || (lean && !r.exhausted)) && end < MAX_DEPTH) out.nextOffset = end;
      return out;
    }
    r = await rank(db, query, 0, chunkSize(topK), filters, offset + topK + 1, perDocument, RANK_WINDOW, mode, prefixLast);
    out.match = r.match;
    var byPath = {}, order = [];
    r.hits.forEach(function (h) {
      if (!byPath[h.path]) { byPath[h.path] = []; order.push(h.path); }
      byPath[h.path].push(h);
    });
    out.results = []; out.groups = [];
    var shownPaths = order.slice(offset, offset + topK);
    await withTexts(db, [].concat.apply([], shownPaths.map(function (p) { return byPath[p].slice(0, perDocument); })));
    for (var i = offset; i < Math.min(order.length, offset + topK); i++) {
      var path = order[i], shown = byPath[path].slice(0, perDocument), found = r.perPath[path], exact = r.exhausted;
      if (!exact) {
        found = Math.max(found, await countInResource(db, r.match, byPath[path][0], filters, COUNT_CAP + 1));
        exact = found <= COUNT_CAP;
        found = Math.min(found, COUNT_CAP);
      }
      out.groups.push({ resourcePath: path, resourceKind: shown[0].kind, first: out.results.length, count: shown.length,
                        more: Math.max(0, found - shown.length), moreIsLowerBound: !exact, expand: { resourcePath: path } });
      shown.forEach(function (h) { out.results.push(resultOf(h, r.terms, siteRoot)); });
    }
    out.total = r.total; out.totalIsLowerBound = !r.exhausted;
    if (order.length > offset + topK && offset + topK < MAX_DEPTH) out.nextOffset = offset + topK;
    return out;
  }

  // -- snippets: the API's (functions/search/snippet.py on the search-api side), ported: a window of the block's
  // own unsegmented text around the terms; highlights are [start, end) in UTF-16 units of the snippet text.
  var SNIPPET_CHARS = 160, ELLIPSIS = "\u2026", WORD_CUT = 15, MAX_LEADS = 64;
  var folds = {};

  function fold(ch) {  // NFKC, case-folded, without combining marks: what the index compares
    if (folds[ch] !== undefined) return folds[ch];
    var out = ch.normalize("NFKC").toLowerCase().replace(/\u00df/g, "ss");
    if (!/^[\x00-\x7f]*$/.test(out)) out = out.normalize("NFD").replace(/\p{M}/gu, "");
    folds[ch] = out;
    return out;
  }

  function isWordChar(ch) { return !!ch && /[\p{L}\p{N}]/u.test(ch) && !isCjk(ch); }

  var ENDINGS = ["ing", "ies", "ied", "es", "ed", "s"];  // snippet.py _ENDINGS

  // snippet.py word_forms: a folded ASCII word of 3+ letters and its English inflections.
  function wordForms(term) {
    if (term.length < 3 || !/^[a-z]+$/i.test(term)) return [term];
    var base = term;
    for (var i = 0; i < ENDINGS.length; i++) {
      var end = ENDINGS[i];
      if (term.slice(-end.length) === end && term.length - end.length >= 3 && !(end === "s" && term.slice(-2) === "ss")) {
        base = term.slice(0, -end.length) + (end === "ies" || end === "ied" ? "y" : "");
        break;
      }
    }
    var root = base.slice(-1) === "e" ? base.slice(0, -1) : base, forms = {};
    [term, base, root + "e", root + "ing", root + "ed", base + "s", base + "es", root + "s", root + "es"]
      .forEach(function (f) { forms[f] = true; });
    if (base.slice(-1) === "y") { forms[base.slice(0, -1) + "ies"] = true; forms[base.slice(0, -1) + "ied"] = true; }
    return Object.keys(forms).filter(function (f) { return f.length >= 3; }).sort();
  }

  // [[start, end, termIndex], ...] in code points of `chars`, sorted, overlaps merged.
  function findTerms(chars, terms) {
    var folded = "", owner = [];
    chars.forEach(function (c, i) {
      var f = fold(c);
      folded += f;
      for (var k = 0; k < f.length; k++) owner.push(i);
    });
    var spans = [];
    terms.forEach(function (term, n) {
      var needle = Array.from(term).map(fold).join("");
      if (!needle) return;
      var wholeWord = !isCjk(needle[0]);
      (wholeWord ? wordForms(needle) : [needle]).forEach(function (form) {
        var at = folded.indexOf(form);
        while (at >= 0) {
          var end = at + form.length;
          if (!wholeWord || ((at === 0 || !isWordChar(folded[at - 1])) && (end === folded.length || !isWordChar(folded[end])))) {
            spans.push([owner[at], owner[end - 1] + 1, n]);
          }
          at = folded.indexOf(form, at + 1);
        }
      });
    });
    spans.sort(function (x, y) { return x[0] - y[0] || x[1] - y[1] || x[2] - y[2]; });
    var merged = [];
    spans.forEach(function (sp) {
      var last = merged[merged.length - 1];
      if (last && sp[0] < last[1]) last[1] = Math.max(last[1], sp[1]); else merged.push(sp.slice());
    });
    return merged;
  }

  function bestStart(spans, length, width) {
    var best = 0, key = [-1, -1, 0];
    spans.slice(0, MAX_LEADS).forEach(function (sp) {
      var start = Math.max(0, Math.min(sp[0] - Math.floor(width / 4), length - width));
      var inside = spans.filter(function (x) { return x[0] >= start && x[1] <= start + width; });
      var distinct = {};
      inside.forEach(function (x) { distinct[x[2]] = true; });
      var k = [Object.keys(distinct).length, inside.length, -start];
      if (k[0] > key[0] || (k[0] === key[0] && (k[1] > key[1] || (k[1] === key[1] && k[2] > key[2])))) {
        best = start; key = k;
      }
    });
    return best;
  }

  function indexOfIn(chars, ch, from, to) { for (var i = from; i < to; i++) if (chars[i] === ch) return i; return -1; }
  function lastIndexOfIn(chars, ch, from, to) { for (var i = to - 1; i >= from; i--) if (chars[i] === ch) return i; return -1; }
  function utf16(cps, index) { return cps.slice(0, index).join("").length; }

  // {text, highlights}: up to `width` characters of `text` around the terms, "…" at cuts.
  function snippet(raw, terms, width) {
    width = width || SNIPPET_CHARS;
    var chars = Array.from((raw || "").split(/\s+/).filter(Boolean).join(" "));
    var spans = findTerms(chars, terms), start = 0, end = chars.length;
    if (chars.length > width) {
      start = spans.length ? bestStart(spans, chars.length, width) : 0;
      end = start + width;
      var firstHit = end;
      for (var i = 0; i < spans.length; i++) if (spans[i][0] >= start) { firstHit = spans[i][0]; break; }
      if (start && isWordChar(chars[start - 1]) && isWordChar(chars[start])) {
        var cut = indexOfIn(chars, " ", start, Math.min(start + WORD_CUT, firstHit));
        start = cut >= 0 ? cut + 1 : start;
      }
      if (end < chars.length && isWordChar(chars[end - 1]) && isWordChar(chars[end])) {
        var lastHit = start;
        spans.forEach(function (x) { if (x[1] <= end) lastHit = Math.max(lastHit, x[1]); });
        var back = lastIndexOfIn(chars, " ", Math.max(start, end - WORD_CUT, lastHit), end);
        end = back > start ? back : end;
      }
    }
    var slice = chars.slice(start, end), lead = 0, trail = slice.length;
    while (lead < trail && slice[lead] === " ") lead++;
    while (trail > lead && slice[trail - 1] === " ") trail--;
    var body = slice.slice(lead, trail), base = start + lead;
    var prefix = start > 0 ? [ELLIPSIS] : [];
    var out = prefix.concat(body, base + body.length < chars.length ? [ELLIPSIS] : []);
    var highlights = [];
    spans.forEach(function (x) {
      var s0 = Math.max(x[0], base), e0 = Math.min(x[1], base + body.length);
      if (s0 < e0) highlights.push([utf16(out, prefix.length + s0 - base), utf16(out, prefix.length + e0 - base)]);
    });
    return { text: out.join(""), highlights: highlights };
  }

  // The search box's count (search.js): the passages and files matching `request` (query, resourceKinds,
  // includeFurniture, prefixLast, topK) in `mode` ("all" or "any", the answer's matchMode) among the bm25-best
  // chunkSize(topK) matches: the rows the box's ask has just ranked, so a static host has their pages already
  // (counting every match reads a block row per match: megabytes for a frequent word). `matched` over `cap`:
  // more matched, both counts are lower bounds. One statement with named parameters ({sql, params, cap}):
  // Datasette's JSON API runs it when served; on a static host staticCount answers the same from the index.
  function countQuery(request, mode) {
    var cap = chunkSize(request.topK || DEFAULT_TOP_K);
    var params = { match: matchOf(request.query, mode, !!request.prefixLast)[0] };
    var where = ["r.status = 'ok'"];
    if (!request.includeFurniture) where.push("b.role = '" + BODY + "'");
    var kinds = (request.resourceKinds || []).map(function (k, i) { params["k" + i] = k; return ":k" + i; });
    if (kinds.length) where.push("r.kind IN (" + kinds.join(", ") + ")");
    return { cap: cap, params: params, sql: "SELECT count(*) AS passages, count(DISTINCT b.resource_id) AS files, " +
      "(SELECT count(*) FROM (SELECT 1 FROM evidence_fts WHERE evidence_fts MATCH :match LIMIT " + (cap + 1) +
      ")) AS matched FROM (SELECT rowid AS id FROM evidence_fts WHERE evidence_fts MATCH :match " +
      "ORDER BY bm25(evidence_fts), rowid LIMIT " + cap + ") f CROSS JOIN evidence_block_row b ON b.id = f.id " +
      "CROSS JOIN evidence_resource r ON r.resource_id = b.resource_id WHERE " + where.join(" AND ") };
  }

  // countQuery's answer on the static index: the same counts ({passages, files, matched}) from the same
  // ranked matches.
  async function staticCount(db, request, mode) {
    var cap = chunkSize(request.topK || DEFAULT_TOP_K), kinds = request.resourceKinds || [];
    var ranked = await db.rank(matchOf(request.query, mode, !!request.prefixLast)[0]);
    var top = ranked.slice(0, cap).map(function (r) { return r.id; }), info = await db.info(top), files = {}, passages = 0;
    top.forEach(function (id) {
      var r = info[id];
      if (!r || r.status !== "ok" || (!request.includeFurniture && r.role !== BODY) ||
          (kinds.length && kinds.indexOf(r.kind) < 0)) return;
      passages++;
      files[r.rid] = true;
    });
    return { cap: cap, passages: passages, files: Object.keys(files).length, matched: Math.min(ranked.length, cap + 1) };
  }

  window.mnoteSearchQuery = {
    ftsQuery: ftsQuery, queryTerms: queryTerms, ftsAnyQuery: ftsAnyQuery, meaningTerms: meaningTerms,
    termPrecision: termPrecision, snippet: snippet, isCjk: isCjk, phraseOf: phraseOf,
    findTerms: function (text, terms) { return findTerms(Array.from(text), terms); }, wordForms: wordForms,
    staticSearch: staticSearch, countQuery: countQuery, staticCount: staticCount
  };
})();
