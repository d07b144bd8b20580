// mnote-evidence: the search query, ranking and snippets of `functions/fts.py` + `build/text.py`, in the
// browser, for the static host (SPEC §9: "the static site searches on any static host without our server").
// Invariants: ftsQuery/queryTerms build exactly what build/text.py's fts_query/query_terms build (a Chromium
// test compares them on a list of inputs); staticSearch runs the SQL of functions/fts.py's _candidates on
// the same evidence.sqlite and re-ranks with the same term precision, so both paths give the same order.
// Snippet highlights are UTF-16 offsets of the snippet text (the API's contract); CJK segmentation never
// reaches a snippet.
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
        return { evidenceId: s.row.block_id, quote: s.row.text, score: s.score, source: loc,
                 snippet: snippet(s.row.text, terms) };
      })
    };
  }

  // -- snippets: the API's (functions/snippet.py on the search-api side), ported: a window of the block's
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
      var wholeWord = !isCjk(needle[0]), at = folded.indexOf(needle);
      while (at >= 0) {
        var end = at + needle.length;
        if (!wholeWord || ((at === 0 || !isWordChar(folded[at - 1])) && (end === folded.length || !isWordChar(folded[end])))) {
          spans.push([owner[at], owner[end - 1] + 1, n]);
        }
        at = folded.indexOf(needle, at + 1);
      }
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

  window.mnoteSearchQuery = {
    ftsQuery: ftsQuery, queryTerms: queryTerms, termPrecision: termPrecision, snippet: snippet,
    findTerms: function (text, terms) { return findTerms(Array.from(text), terms); },
    staticSearch: staticSearch
  };
})();
