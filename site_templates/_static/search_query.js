// mnote-evidence: the search query, ranking and snippets of `functions/fts.py` + `build/text.py`, in the
// browser, for the static host (SPEC §9: "the static site searches on any static host without our server").
// Invariants: ftsQuery/queryTerms build exactly what build/text.py's fts_query/query_terms build (a Chromium
// test compares them on a list of inputs); staticSearch runs the SQL of functions/fts.py's _candidates on
// the same evidence.sqlite and re-ranks with the same term precision, so both paths give the same order.
// Snippet offsets are code points (as Python's), never UTF-16 units; CJK segmentation never reaches them.
(function () {
  "use strict";
  var CJK_CLASS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff";  // build/text.py _CJK_CLASS
  var CJK_RUN = new RegExp("[" + CJK_CLASS + "]+", "g");
  var CJK_CHAR = new RegExp("[" + CJK_CLASS + "]");
  var WORD = /[\p{L}\p{N}_]+/gu;  // Python's \w+ (letters, digits, underscore)
  var CANDIDATES_PER_RESULT = 5, MIN_CANDIDATES = 50, MAX_WINDOW = 50000;
  var FLANK_WEIGHT = [1.0, 0.6, 0.25];

  function isCjk(ch) { return !!ch && CJK_CHAR.test(ch); }

  function normalised(query) { return (query || "").normalize("NFKC").replace(/\0/g, " "); }

  function pieces(query) { return query.split(new RegExp("[" + CJK_CLASS + "]+")); }

  function ftsQuery(raw) {
    var query = normalised(raw), terms = [];
    pieces(query).forEach(function (piece) {
      (piece.match(WORD) || []).forEach(function (w) { terms.push('"' + w + '"'); });
    });
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

  // -- the static path: the SQL of functions/fts.py over evidence.sqlite read by range requests ----------
  var SELECT = "WITH ranked AS (SELECT rowid, bm25(evidence_fts) AS rank FROM evidence_fts " +
    "WHERE evidence_fts MATCH ? ORDER BY rank LIMIT ?) " +
    "SELECT b.block_id, r.source_root_relative_path AS path, r.kind AS rkind, b.text, b.locator_json, " +
    "ranked.rank, b.ordinal FROM ranked JOIN evidence_block b ON b.id = ranked.rowid " +
    "JOIN evidence_resource r ON r.resource_id = b.resource_id WHERE ";

  async function candidates(db, match, win, kinds) {
    var where = ["r.status = 'ok'", "b.role = 'body'"], params = [match, win];
    if (kinds && kinds.length) {
      where.push("r.kind IN (" + kinds.map(function () { return "?"; }).join(",") + ")");
      params = params.concat(kinds);
    }
    var rows = await db.query(SELECT + where.join(" AND ") + " ORDER BY ranked.rank", params);
    if (win < 0 || rows.length >= win) return { rows: rows, ranked: win };
    var n = await db.query("SELECT count(*) AS n FROM (SELECT rowid FROM evidence_fts WHERE evidence_fts MATCH ? " +
      "LIMIT ?)", [match, win]);
    return { rows: rows, ranked: n[0].n };
  }

  // {results: [...same shape as the API's...], total, more}: `total` counts matching passages when every
  // match was ranked; otherwise it is the FTS match count (an upper bound: stale files and page furniture too).
  async function staticSearch(db, query, topK, kinds, siteRoot) {
    var match = ftsQuery(query), terms = queryTerms(query);
    var win = Math.max(MIN_CANDIDATES, topK * CANDIDATES_PER_RESULT), got;
    for (;;) {
      got = await candidates(db, match, win, kinds);
      if (got.rows.length >= topK || got.ranked < win || win < 0) break;
      win = win * 8 <= MAX_WINDOW ? win * 8 : -1;
    }
    var scored = got.rows.map(function (row) {
      return { row: row, score: round6(-row.rank * (0.5 + termPrecision(row.text, terms))) };
    });
    scored.sort(function (a, b) {
      return (b.score - a.score) || (a.row.path < b.row.path ? -1 : a.row.path > b.row.path ? 1 : 0) ||
        (a.row.ordinal - b.row.ordinal);
    });
    var total = scored.length, exact = got.ranked < win || win < 0;
    if (!exact) total = (await db.query("SELECT count(*) AS n FROM evidence_fts WHERE evidence_fts MATCH ?", [match]))[0].n;
    return {
      ok: true, total: total, totalExact: exact,
      results: scored.slice(0, topK).map(function (s) {
        var loc = JSON.parse(s.row.locator_json);
        loc.openAction.url = siteRoot + loc.openAction.url;
        var snip = snippet(s.row.text, terms);
        return { evidenceId: s.row.block_id, quote: s.row.text, score: s.score, source: loc,
                 snippet: snip.snippet, highlights: snip.highlights };
      })
    };
  }

  // -- snippets: a window of the block's own (unsegmented) text around the first matched term ------------
  function termSpans(chars, terms) {
    var text = chars.join(""), lower = text.toLowerCase(), spans = [];
    if (lower.length !== text.length) lower = text;  // a case fold that changes length: match as is
    terms.forEach(function (term) {
      var cjk = isCjk(term[0]), needle = cjk ? term : term.toLowerCase(), at = lower.indexOf(needle);
      while (at >= 0) {
        var end = at + needle.length;
        var wordStart = cjk || at === 0 || !/[\p{L}\p{N}_]/u.test(text[at - 1]);
        var wordEnd = cjk || end >= text.length || !/[\p{L}\p{N}_]/u.test(text[end]);
        if (wordStart && wordEnd) spans.push([Array.from(text.slice(0, at)).length, Array.from(text.slice(0, end)).length]);
        at = lower.indexOf(needle, at + 1);
      }
    });
    spans.sort(function (a, b) { return a[0] - b[0] || b[1] - a[1]; });
    var merged = [];
    spans.forEach(function (s) {
      var last = merged[merged.length - 1];
      if (last && s[0] <= last[1]) last[1] = Math.max(last[1], s[1]); else merged.push(s.slice());
    });
    return merged;
  }

  // {snippet, highlights: [[start, end], ...]} in code points of `snippet`; `before`/`after` in characters.
  function snippet(text, terms, before, after) {
    before = before || 40; after = after || 160;
    var chars = Array.from(text || ""), spans = termSpans(chars, terms);
    var start = spans.length ? Math.max(0, spans[0][0] - before) : 0;
    var end = Math.min(chars.length, start + before + after);
    if (end - start < before + after) start = Math.max(0, end - before - after);
    var lead = start > 0 ? "…" : "", tail = end < chars.length ? "…" : "";
    var out = lead + chars.slice(start, end).join("") + tail, shift = lead.length - start;
    var highlights = spans.filter(function (s) { return s[0] >= start && s[1] <= end; })
      .map(function (s) { return [s[0] + shift, s[1] + shift]; });
    return { snippet: out, highlights: highlights };
  }

  window.mnoteSearchQuery = {
    ftsQuery: ftsQuery, queryTerms: queryTerms, termPrecision: termPrecision, snippet: snippet,
    termSpans: function (text, terms) { return termSpans(Array.from(text), terms); },
    staticSearch: staticSearch
  };
})();
