// mnote-evidence: the static search index (`_search/`, build/render/search_index.py) read in the browser.
// `mnoteSearchIndex.open(manifestUrl)` answers what search_query.js asks of an index: the FTS matches of an
// expression ranked as FTS5's bm25 ranks them (ORDER BY bm25, rowid), their rowids, the light columns of
// rows, their text and locators, and the flank weight of CJK terms (the ranking's term precision).
// Invariants: a query word becomes the index's tokens exactly as `porter unicode61 remove_diacritics 2` makes
// them (search_fold.js, read from FTS5 itself; SQLite's porter steps below); bm25 is FTS5's, operation for
// operation, over the index's own statistics; only the shards a query's words need are fetched, each once.
(function () {
  "use strict";
  var T = null, folds = null;  // search_fold.js's table, read at the first word (the two load in any order)

  // -- tokenizer: unicode61 (remove_diacritics 2), then porter ----------------------------------------------
  function inRanges(ranges, cp) {
    var lo = 0, hi = ranges.length - 1;
    while (lo <= hi) {
      var mid = (lo + hi) >> 1, r = ranges[mid];
      if (cp < r[0]) hi = mid - 1; else if (cp > r[1]) lo = mid + 1; else return true;
    }
    return false;
  }
  function table() {
    if (T) return;
    T = window.mnoteSearchFold;
    if (!T) throw new Error("search_fold.js is not loaded");
    folds = new Map();
    T.fold.forEach(function (run) {
      for (var i = 0; i < run[1]; i++) {
        var cp = run[0] + i * run[2];
        folds.set(cp, run[3] === null ? 0 : cp + run[3]);
      }
    });
  }
  function asciiAlnum(cp) { return (cp >= 48 && cp <= 57) || (cp >= 65 && cp <= 90) || (cp >= 97 && cp <= 122); }
  function isAlnum(cp) { return cp < 128 ? asciiAlnum(cp) : inRanges(T.alnum, cp); }
  function fold(cp) {
    if (cp < 128) return cp >= 65 && cp <= 90 ? cp + 32 : cp;
    var f = folds.get(cp);
    return f === undefined ? cp : f;
  }

  function tokens(text) {  // the stemmed tokens of `text`, in order
    table();
    var out = [], word = null;
    for (var ch of text) {
      var cp = ch.codePointAt(0);
      if (word === null) {
        if (!isAlnum(cp)) continue;
        word = [];
      } else if (!(isAlnum(cp) || (cp >= 128 && inRanges(T.diacritic, cp)))) {
        out.push(stem(String.fromCodePoint.apply(null, word)));
        word = null;
        continue;
      }
      var f = fold(cp);
      if (f) word.push(f);
    }
    if (word !== null) out.push(stem(String.fromCodePoint.apply(null, word)));
    return out;
  }

  // SQLite's fts5_porter.c, on the token's UTF-8 bytes (one char per byte): the same steps, in the same
  // order; a rule's suffix is tested before its condition, and the first suffix that matches decides.
  function vowel(c, yIsVowel) { return c === "a" || c === "e" || c === "i" || c === "o" || c === "u" || (yIsVowel && c === "y"); }
  function gobbleVC(z, from, n, prevCons) {  // the length of z[from..n) up to its first VC, or 0
    var cons = prevCons, i;
    for (i = from; i < n; i++) { cons = !vowel(z[i], cons); if (!cons) break; }
    for (i++; i < n; i++) { cons = !vowel(z[i], cons); if (cons) return i + 1 - from; }
    return 0;
  }
  function mGt0(z, n) { return gobbleVC(z, 0, n, false) > 0; }
  function mGt1(z, n) { var k = gobbleVC(z, 0, n, false); return k > 0 && gobbleVC(z, k, n, true) > 0; }
  function mEq1(z, n) { var k = gobbleVC(z, 0, n, false); return k > 0 && gobbleVC(z, k, n, true) === 0; }
  function oStar(z, n) {
    var last = z[n - 1];
    if (last === "w" || last === "x" || last === "y") return false;
    var mask = 0, cons = false;
    for (var i = 0; i < n; i++) { cons = !vowel(z[i], cons); mask = ((mask << 1) | (cons ? 1 : 0)) & 7; }
    return mask === 5;
  }
  function mGt1ST(z, n) { return (z[n - 1] === "s" || z[n - 1] === "t") && mGt1(z, n); }
  function hasVowel(z, n) { for (var i = 0; i < n; i++) if (vowel(z[i], i > 0)) return true; return false; }

  // [suffix, condition, replacement]
  var STEP1B = [["eed", mGt0, "ee", 0], ["ed", hasVowel, "", 1], ["ing", hasVowel, "", 1]];
  var STEP1B2 = [["at", null, "ate"], ["bl", null, "ble"], ["iz", null, "ize"]];
  var STEP2 = [["ational", mGt0, "ate"], ["tional", mGt0, "tion"], ["enci", mGt0, "ence"], ["anci", mGt0, "ance"],
    ["izer", mGt0, "ize"], ["logi", mGt0, "log"], ["bli", mGt0, "ble"], ["alli", mGt0, "al"], ["entli", mGt0, "ent"],
    ["eli", mGt0, "e"], ["ousli", mGt0, "ous"], ["ization", mGt0, "ize"], ["ation", mGt0, "ate"], ["ator", mGt0, "ate"],
    ["alism", mGt0, "al"], ["iveness", mGt0, "ive"], ["fulness", mGt0, "ful"], ["ousness", mGt0, "ous"],
    ["aliti", mGt0, "al"], ["iviti", mGt0, "ive"], ["biliti", mGt0, "ble"]];
  var STEP3 = [["ical", mGt0, "ic"], ["ness", mGt0, ""], ["icate", mGt0, "ic"], ["iciti", mGt0, "ic"], ["ful", mGt0, ""],
    ["ative", mGt0, ""], ["alize", mGt0, "al"]];
  var STEP4 = [["al", mGt1, ""], ["ance", mGt1, ""], ["ence", mGt1, ""], ["er", mGt1, ""], ["ic", mGt1, ""],
    ["able", mGt1, ""], ["ible", mGt1, ""], ["ant", mGt1, ""], ["ement", mGt1, ""], ["ment", mGt1, ""], ["ent", mGt1, ""],
    ["ion", mGt1ST, ""], ["ou", mGt1, ""], ["ism", mGt1, ""], ["ate", mGt1, ""], ["iti", mGt1, ""], ["ous", mGt1, ""],
    ["ive", mGt1, ""], ["ize", mGt1, ""]];

  // Applies the first rule whose suffix ends z[0..n) (z longer than it): [new length, whether it applied].
  function apply(z, n, rules) {
    for (var r = 0; r < rules.length; r++) {
      var suf = rules[r][0], len = suf.length;
      if (n <= len || z.slice(n - len, n).join("") !== suf) continue;
      if (rules[r][1] && !rules[r][1](z, n - len)) return [n, false, rules[r]];
      for (var i = 0; i < rules[r][2].length; i++) z[n - len + i] = rules[r][2][i];
      return [n - len + rules[r][2].length, true, rules[r]];
    }
    return [n, false, null];
  }

  var utf8 = new TextEncoder(), fromUtf8 = new TextDecoder();
  function stem(token) {
    var bytes = utf8.encode(token), n = bytes.length;
    if (n > 64 || n < 3) return token;
    var z = Array.from(bytes, function (b) { return String.fromCharCode(b); }), r;
    if (z[n - 1] === "s") {  // step 1a
      if (z[n - 2] === "e") n = (n > 4 && z[n - 4] === "s" && z[n - 3] === "s") || (n > 3 && z[n - 3] === "i") ? n - 2 : n - 1;
      else if (z[n - 2] !== "s") n -= 1;
    }
    r = apply(z, n, STEP1B);
    n = r[0];
    if (r[1] && r[2][3]) {  // step 1b's "ed" or "ing" removed
      r = apply(z, n, STEP1B2);
      n = r[0];
      if (!r[1]) {
        var c = z[n - 1];
        if (!vowel(c, false) && c !== "l" && c !== "s" && c !== "z" && c === z[n - 2]) n--;
        else if (mEq1(z, n) && oStar(z, n)) z[n++] = "e";
      }
    }
    if (z[n - 1] === "y" && hasVowel(z, n - 1)) z[n - 1] = "i";  // step 1c
    n = apply(z, n, STEP2)[0];
    n = apply(z, n, STEP3)[0];
    n = apply(z, n, STEP4)[0];
    if (z[n - 1] === "e" && (mGt1(z, n - 1) || (mEq1(z, n - 1) && !oStar(z, n - 1)))) n--;  // step 5a
    if (n > 1 && z[n - 1] === "l" && z[n - 2] === "l" && mGt1(z, n - 1)) n--;  // step 5b
    return fromUtf8.decode(Uint8Array.from(z.slice(0, n), function (c) { return c.charCodeAt(0); }));
  }

  // -- FTS5 expressions: the subset search_query.js writes -------------------------------------------------
  // "phrase" [*] joined by AND, OR, NOT, with parentheses; NOT binds tightest, then AND, then OR.
  function parse(expr) {
    var parts = expr.match(/"(?:[^"]|"")*"|\*|\(|\)|[^\s()"*]+/g) || [], at = 0, phrases = [];
    function primary() {
      var t = parts[at++];
      if (t === "(") { var e = or(); at++; return e; }
      if (!t || t[0] !== '"') throw new Error("unsupported search expression");
      var node = { phrase: tokens(t.slice(1, -1).replace(/""/g, '"')), prefix: parts[at] === "*", n: phrases.length };
      if (node.prefix) at++;
      phrases.push(node);
      return node;
    }
    function not() { var e = primary(); while (parts[at] === "NOT") { at++; e = { op: "NOT", l: e, r: primary() }; } return e; }
    function and() { var e = not(); while (parts[at] === "AND") { at++; e = { op: "AND", l: e, r: not() }; } return e; }
    function or() { var e = and(); while (parts[at] === "OR") { at++; e = { op: "OR", l: e, r: and() }; } return e; }
    var tree = or();
    return { tree: tree, phrases: phrases };
  }

  // -- the index -------------------------------------------------------------------------------------------
  function varints(bytes) {
    var at = 0;
    return {
      more: function (end) { return at < end; },
      at: function () { return at; },
      skip: function (n) { at += n; },
      next: function () {
        var n = 0, mul = 1, b;
        do { b = bytes[at++]; n += (b & 0x7f) * mul; mul *= 128; } while (b >= 0x80);
        return n;
      }
    };
  }

  function open(manifestUrl) {
    var stats = { requests: 0, bytes: 0 };
    var files = new Map(), terms = new Map(), phrases = new Map(), ranked = new Map();
    var manifestPromise = get(manifestUrl, { cache: "no-store" }).then(function (b) {
      return JSON.parse(fromUtf8.decode(b));
    });

    function get(url, options) {
      stats.requests++;
      return fetch(url, options).then(function (resp) {
        if (!resp.ok) throw new Error("the search index (_search/) is not on this host (HTTP " + resp.status + ")");
        return resp.arrayBuffer();
      }).then(function (buf) {
        var bytes = new Uint8Array(buf);
        stats.bytes += bytes.length;
        if (bytes[0] !== 0x1f || bytes[1] !== 0x8b) return bytes;  // the host already took the gzip off
        var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
        return new Response(stream).arrayBuffer().then(function (b) { return new Uint8Array(b); });
      });
    }

    function file(name) {  // `_search/<name>`, fetched once
      if (!files.has(name)) {
        var p = get(new URL(name, manifestUrl).href);
        p.catch(function () { files.delete(name); });
        files.set(name, p);
      }
      return files.get(name);
    }
    function json(name) {
      return file(name).then(function (b) { return JSON.parse(fromUtf8.decode(b)); });
    }

    // The shards of `list` that may hold `tok` (or, with `prefix`, the terms starting with it): from the last
    // whose first term is at most tok (back over the shards a term continues from) to the last whose first
    // term is at most tok or starts with it.
    function shardsFor(list, tok, prefix) {
      var start = 0, end = -1;
      for (var j = 0; j < list.length; j++) {
        var c = cmp(list[j][0], tok);
        if (c <= 0) start = j;
        if (c <= 0 || (prefix && list[j][0].startsWith(tok))) end = j;
      }
      while (start > 0 && list[start][2] && cmp(list[start][0], tok) >= 0) start--;
      return end < start ? [] : list.slice(start, end + 1);
    }

    // term -> postings {ids, sizes, pos: [positions]} of `tok` (with `prefix`: of every term starting with it),
    // rowids ascending: the term shards' (less the rows the delta replaces) and the delta's
    function postingsIn(tok, prefix) {
      var wanted = prefix ? function (t) { return t.startsWith(tok); } : function (t) { return t === tok; };
      return manifestPromise.then(function (m) {
        var delta = m.delta || { terms: [], dead: [] };
        return Promise.all([m.terms, delta.terms].map(function (list) {
          return Promise.all(shardsFor(list, tok, prefix).map(function (s) { return file(s[1]); }));
        })).then(function (both) {
          var out = new Map(), dead = delta.dead;
          read(both[0], wanted, out, function (id) { return inSpans(dead, id); });
          if (!both[1].length) return out;
          read(both[1], wanted, out, function () { return false; });
          out.forEach(function (p) {
            var order = p.ids.map(function (_, i) { return i; }).sort(function (a, b) { return p.ids[a] - p.ids[b]; });
            ["ids", "sizes", "pos"].forEach(function (k) { var v = p[k]; p[k] = order.map(function (i) { return v[i]; }); });
          });
          return out;
        });
      });
    }

    function read(shards, wanted, out, dropped) {  // the records of `shards` for the wanted terms into `out`
      shards.forEach(function (bytes) {
        var r = varints(bytes);
        while (r.more(bytes.length)) {
          var n = r.next(), term = fromUtf8.decode(bytes.subarray(r.at(), r.at() + n));
          r.skip(n);
          var len = r.next(), end = r.at() + len;
          if (wanted(term)) {
            var p = out.get(term) || { ids: [], sizes: [], pos: [] };
            out.set(term, p);
            var cjk = isCjkChar(term), last = 0;
            while (r.more(end)) {
              last += r.next();
              var size = r.next(), count = r.next(), prev = 0, list = new Array(count);
              for (var i = 0; i < count; i++) { prev += r.next(); list[i] = prev; }
              if (dropped(last)) continue;
              p.ids.push(last);
              p.sizes.push(size);
              p.pos.push(cjk ? list : list.map(function (v) { return v << 2; }));
            }
          }
          r.skip(end - r.at());
        }
      });
    }

    // One token's postings as rowid -> {size, pos: sorted `position << 3 | single << 2 | flags`} (single: the
    // token is one CJK character); a prefix: every term that starts with it, merged.
    function token(tok, prefix) {
      var key = (prefix ? "*" : "=") + tok;
      if (!terms.has(key)) {
        terms.set(key, postingsIn(tok, prefix).then(function (found) {
          var rows = new Map();
          found.forEach(function (p, term) {
            if (!prefix && term !== tok) return;
            var single = isCjkChar(term) && Array.from(term).length === 1 ? 4 : 0;
            for (var i = 0; i < p.ids.length; i++) {
              var pos = p.pos[i].map(function (v) { return ((v >> 2) << 3) | single | (v & 3); });
              var row = rows.get(p.ids[i]);
              if (!row) rows.set(p.ids[i], { size: p.sizes[i], pos: pos });
              else row.pos = row.pos.concat(pos);
            }
          });
          if (prefix) rows.forEach(function (row) { row.pos.sort(function (a, b) { return a - b; }); });
          return rows;
        }));
      }
      return terms.get(key);
    }

    // A phrase's instances: rowid -> {size, starts: [[position of its first token, that token's
    // `single << 2 | flags`, the flags of its last token]]}.
    function phrase(node) {
      var key = (node.prefix ? "*" : "=") + JSON.stringify(node.phrase);
      if (!phrases.has(key)) {
        var toks = node.phrase;
        phrases.set(key, Promise.all(toks.map(function (t, i) {
          return token(t, node.prefix && i === toks.length - 1);
        })).then(function (lists) {
          var out = new Map();
          if (!lists.length) return out;
          var smallest = lists.reduce(function (a, b) { return b.size < a.size ? b : a; });
          smallest.forEach(function (_, id) {
            var rows = lists.map(function (l) { return l.get(id); });
            if (rows.some(function (r) { return !r; })) return;
            var starts = [];
            if (rows.length === 1) {
              rows[0].pos.forEach(function (v) { starts.push([v >> 3, v & 7, v & 3]); });
            } else {
              var sets = rows.map(function (r) {
                var m = new Map();
                r.pos.forEach(function (v) { m.set(v >> 3, v & 7); });
                return m;
              });
              sets[0].forEach(function (bits, p) {
                for (var k = 1; k < sets.length; k++) if (!sets[k].has(p + k)) return;
                starts.push([p, bits, sets[sets.length - 1].get(p + sets.length - 1) & 3]);
              });
              starts.sort(function (a, b) { return a[0] - b[0]; });
            }
            if (starts.length) out.set(id, { size: rows[0].size, starts: starts });
          });
          return out;
        }));
      }
      return phrases.get(key);
    }

    function rowsOf(tree, found) {  // the rowids matching `tree`, a Set
      if (!tree.op) return new Set(found[tree.n].keys());
      var l = rowsOf(tree.l, found), r = rowsOf(tree.r, found), out = new Set();
      if (tree.op === "OR") { l.forEach(function (id) { out.add(id); }); r.forEach(function (id) { out.add(id); }); }
      else if (tree.op === "AND") l.forEach(function (id) { if (r.has(id)) out.add(id); });
      else l.forEach(function (id) { if (!r.has(id)) out.add(id); });
      return out;
    }

    // Every match of `expr`, best first: [{id, rank}], rank = bm25(evidence_fts) (fts5_aux.c: k1 1.2,
    // b 0.75; IDF log((N - n + 0.5) / (n + 0.5)), at least 1e-6; phrases summed in the expression's order).
    function rank(expr) {
      if (!ranked.has(expr)) {
        var parsed = parse(expr);
        ranked.set(expr, Promise.all([manifestPromise].concat(parsed.phrases.map(phrase))).then(function (all) {
          var m = all[0], found = all.slice(1), k1 = 1.2, b = 0.75;
          var avgdl = m.tokens / m.rows;
          var idf = found.map(function (rows) {
            var v = Math.log((m.rows - rows.size + 0.5) / (rows.size + 0.5));
            return v <= 0 ? 1e-6 : v;
          });
          var out = [];
          rowsOf(parsed.tree, found).forEach(function (id) {
            var score = 0, size = null;
            found.forEach(function (rows) { var r = rows.get(id); if (r && size === null) size = r.size; });
            for (var i = 0; i < found.length; i++) {
              var r = found[i].get(id), freq = r ? r.starts.length : 0;
              score += idf[i] * ((freq * (k1 + 1.0)) / (freq + k1 * (1 - b + b * size / avgdl)));
            }
            out.push({ id: id, rank: -1.0 * score });
          });
          out.sort(function (x, y) { return (x.rank - y.rank) || (x.id - y.id); });
          return out;
        }));
        ranked.get(expr).catch(function () { ranked.delete(expr); });
      }
      return ranked.get(expr);
    }

    // rowid -> the best flank weight of a CJK term's occurrences (fts.term_precision): 1.0 standing alone,
    // 0.6 with a CJK neighbour on one side, 0.25 on both. `expr`: the term's phrase (its bigrams) or, for
    // one character, its prefix, which matches the bigrams it starts and a run's last character.
    function flankWeights(expr) {
      var node = parse(expr).phrases[0];
      return phrase(node).then(function (rows) {
        var out = new Map();
        rows.forEach(function (r, id) {
          var best = 0;
          r.starts.forEach(function (s) {
            var sides;
            if (s[1] & 4) sides = s[1] & 1 ? 0 : 1;  // a run's last character: alone, or after its run
            else if (node.prefix && node.phrase.length === 1) sides = 1 + (s[1] & 1 ? 0 : 1);  // starts a bigram
            else sides = (s[1] & 1 ? 0 : 1) + (s[2] & 2 ? 0 : 1);
            best = Math.max(best, FLANK[sides]);
          });
          out.set(id, best);
        });
        return out;
      });
    }

    // bucket k -> {rows: Map rowid -> light columns, fragments: Map fragment -> name}
    var buckets = new Map();
    function bucket(k) {
      if (!buckets.has(k)) {
        buckets.set(k, manifestPromise.then(function (m) {
          var name = m.buckets[String(k)];
          if (!name) return { rows: new Map(), fragments: new Map() };
          return json(name).then(function (b) {
            var rows = new Map(), id = k * m.bucket;
            for (var i = 0; i < b.id.length; i++) {
              id += b.id[i];
              var res = b.resources[b.res[i]];
              rows.set(id, { id: id, path: res[0], kind: res[1], status: res[2], rid: res[3], lo: res[3], hi: res[4],
                             role: b.roles[b.role[i]], ordinal: b.ordinal[i], page: b.page[i],
                             sid: b.section[i] === null ? null : id - b.section[i] });
            }
            return { rows: rows, fragments: new Map(b.fragments) };
          });
        }));
      }
      return buckets.get(k);
    }

    function info(ids) {  // rowid -> light columns, for the rows that exist
      return manifestPromise.then(function (m) {
        return Promise.all(ids.map(function (id) { return bucket(Math.floor(id / m.bucket)); })).then(function (bs) {
          var out = {};
          ids.forEach(function (id, i) { var r = bs[i].rows.get(id); if (r) out[id] = r; });
          return out;
        });
      });
    }

    function texts(ids) {  // rowid -> {block_id, text, loc (the locator)}
      return manifestPromise.then(function (m) {
        return Promise.all(ids.map(function (id) {
          var f = Math.floor(id / m.fragment);
          return bucket(Math.floor(f * m.fragment / m.bucket)).then(function (b) {
            var name = b.fragments.get(f);
            return name ? json(name) : [];
          }).then(function (rows) {
            for (var i = 0; i < rows.length; i++) if (rows[i][0] === id) return rows[i];
            return null;
          });
        }));
      }).then(function (rows) {
        var out = {};
        rows.forEach(function (r) { if (r) out[r[0]] = { block_id: r[1], text: r[2], loc: r[3] }; });
        return out;
      });
    }

    return {
      ready: manifestPromise, rank: rank, info: info, texts: texts, flankWeights: flankWeights, stats: stats,
      rowids: function (expr) {  // every match's rowid, ascending
        return rank(expr).then(function (rows) {
          return rows.map(function (r) { return r.id; }).sort(function (a, b) { return a - b; });
        });
      }
    };
  }

  function cmp(a, b) {  // the order of terms: Unicode code points (FTS5's), not UTF-16 code units
    var n = Math.min(a.length, b.length), i = 0;
    while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
    return i === n ? a.length - b.length : a.codePointAt(i) - b.codePointAt(i);
  }

  function inSpans(spans, id) {  // whether `id` lies in one of the sorted [first, last] spans
    var lo = 0, hi = spans.length;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (spans[mid][1] < id) lo = mid + 1; else hi = mid; }
    return lo < spans.length && spans[lo][0] <= id;
  }

  var FLANK = [1.0, 0.6, 0.25];
  var CJK_CHAR = /[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]/;  // build/core/text.py
  function isCjkChar(term) { return CJK_CHAR.test(term[0] || ""); }

  window.mnoteSearchIndex = { open: open, tokens: tokens, stem: stem, parse: parse };
})();
