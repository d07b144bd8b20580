// mnote-evidence: link previews. Hovering (with a mouse) or focusing a link to a page of the site shows a
// card with the target's title and its first blocks, or exactly the block a #b-… / #^id anchor names (a
// heading: its section). The card is read from the target page itself (same origin, the site's CSP
// connect-src 'self'), parsed with DOMParser (nothing in it runs) and copied node by node into an
// allowlist of our own markup: text, a few inline and block tags, class names, same-origin images; no
// ids, no attributes, no links. A link into the same page needs no fetch; from file:// other pages are
// not fetched (browsers refuse it), so there only same-page links preview.
(function () {
  "use strict";
  var SHOW_MS = 300, HIDE_MS = 250, MAX_BLOCKS = 6, MAX_CHARS = 1200;
  var SCOPE = "main, .backlinks, .local-graph";
  var KEEP = {};
  ("P UL OL LI BLOCKQUOTE PRE CODE EM STRONG B I U MARK DEL S SUB SUP KBD BR SPAN DIV TABLE THEAD TBODY TR TD TH " +
   "H1 H2 H3 H4 H5 H6 DL DT DD HR FIGURE FIGCAPTION").split(" ").forEach(function (t) { KEEP[t] = true; });
  var DROPPED = /^(SCRIPT|STYLE|LINK|META|TEMPLATE|NOSCRIPT|IFRAME|FRAME|OBJECT|EMBED|FORM|BUTTON|SELECT|TEXTAREA|ANNOTATION|ANNOTATION-XML)$/;
  var DROPPED_CLASSES = { hl: true, successor: true, alias: true };
  var pages = {}; // page URL -> Promise of its parsed document, for this page view
  var card = null, current = null, showTimer = null, hideTimer = null;

  function workspaceSuffix() {
    var parts = document.title.split(" \u00b7 ");
    return " \u00b7 " + parts[parts.length - 1];
  }

  function titleOf(doc) {
    var title = doc.title || "", suffix = workspaceSuffix();
    if (title.length > suffix.length && title.slice(-suffix.length) === suffix) title = title.slice(0, -suffix.length);
    return title;
  }

  // What `link` points at: {url, id, doc?}, or null for links that get no preview.
  function targetOf(link) {
    if (!link.closest(SCOPE) || link.closest(".preview-card, #search-results") || link.hasAttribute("download") ||
        link.classList.contains("overlay")) return null;
    var href = link.getAttribute("href");
    if (!href) return null;
    var url;
    try { url = new URL(href, document.baseURI); } catch (e) { return null; }
    if (url.protocol !== location.protocol || url.host !== location.host) return null;
    var id = url.hash ? decodeURIComponent(url.hash.slice(1)) : "";
    url.hash = "";
    if (url.pathname === location.pathname) return id ? { url: url.href, id: id, doc: document } : null;
    if (location.protocol === "file:" || !/(\.html|\/)$/.test(url.pathname)) return null;
    return { url: url.href, id: id };
  }

  function load(target) {
    if (target.doc) return Promise.resolve(target.doc);
    if (!pages[target.url]) {
      pages[target.url] = fetch(target.url, { credentials: "same-origin" }).then(function (r) {
        if (!r.ok) throw new Error("HTTP " + r.status);
        return r.text();
      }).then(function (text) {
        return new DOMParser().parseFromString(text, "text/html");
      });
      pages[target.url].catch(function () { delete pages[target.url]; });
    }
    return pages[target.url];
  }

  // -- the allowlist copy ---------------------------------------------------------------
  function copy(node, base, budget) {
    if (node.nodeType === 3) {
      budget.chars -= node.nodeValue.length;
      return document.createTextNode(node.nodeValue);
    }
    if (node.nodeType !== 1) return null;
    var tag = node.tagName.toUpperCase();
    if (DROPPED.test(tag) || node.classList.contains("alias")) return null;
    if (tag === "IMG") return image(node.getAttribute("src"), base, node.getAttribute("alt"));
    if (tag === "INPUT") {
      if (node.getAttribute("type") !== "checkbox") return null;
      var box = document.createElement("input");
      box.type = "checkbox";
      box.disabled = true;
      box.checked = node.hasAttribute("checked");
      return box;
    }
    var out = KEEP[tag] ? document.createElement(tag) : tag === "A" ? document.createElement("span") : null;
    if (out) {
      node.classList.forEach(function (c) { if (!DROPPED_CLASSES[c]) out.classList.add(c); });
      if (tag === "A") out.classList.add("preview-link");
    } else {
      out = document.createDocumentFragment(); // an element we do not copy: its contents only
    }
    for (var child = node.firstChild; child; child = child.nextSibling) {
      var copied = copy(child, base, budget);
      if (copied) out.appendChild(copied);
    }
    return out;
  }

  function image(src, base, alt) {
    var url;
    try { url = new URL(src || "", base); } catch (e) { return null; }
    if (url.origin !== location.origin || !/^https?:$/.test(url.protocol)) return null;
    var img = document.createElement("img");
    img.src = url.href;
    img.alt = alt || "";
    return img;
  }

  function heading(el) {
    var m = /^H([1-6])$/.exec(el.tagName.toUpperCase());
    return m ? Number(m[1]) : 0;
  }

  // What to show of `doc` for anchor `id`: {nodes, from (the element they are in), note?, list?}.
  function excerpt(doc, id) {
    var main = doc.querySelector("main") || doc.body;
    var el = id ? doc.getElementById(id) : null;
    if (el && el.classList.contains("alias") && !el.classList.contains("overlay")) el = window.mnote.successorOf(el); // site.js
    if (el && el.classList.contains("overlay")) {
      var quote = doc.createElement("blockquote");
      quote.textContent = el.getAttribute("title") || "";
      return { nodes: [quote], from: el, note: "page " + (el.dataset.page || "") };
    }
    var page = el && el.classList.contains("page") ? el : !el ? main.querySelector(".page") : null;
    if (page) {
      var img = page.querySelector("img");
      return { nodes: img ? [img] : [], from: page, note: "page " + page.dataset.page };
    }
    if (el) {
      var level = heading(el), nodes = [el];
      if (level) {
        for (var sib = el.nextElementSibling; sib && nodes.length < MAX_BLOCKS; sib = sib.nextElementSibling) {
          var l = heading(sib);
          if (l && l <= level) break;
          nodes.push(sib);
        }
      }
      return { nodes: nodes, from: el, list: el.tagName.toUpperCase() === "LI" };
    }
    var article = main.querySelector("article") || main;
    var blocks = [], title = titleOf(doc);
    for (var child = article.firstElementChild; child && blocks.length < MAX_BLOCKS; child = child.nextElementSibling) {
      if (!blocks.length && heading(child) === 1 && child.textContent.trim() === title) continue; // shown as the title
      blocks.push(child);
    }
    return { nodes: blocks, from: article };
  }

  function render(doc, target, link) {
    var part = excerpt(doc, target.id), budget = { chars: MAX_CHARS };
    var body = document.createElement("div");
    var article = part.from.closest("article"); // its class (note, docx) styles the blocks as on their page
    body.className = "preview-body" + (article ? " " + article.className : "");
    var into = body;
    if (part.list) { into = document.createElement("ul"); body.appendChild(into); }
    for (var i = 0; i < part.nodes.length && budget.chars > 0; i++) {
      var copied = copy(part.nodes[i], target.url, budget);
      if (copied) into.appendChild(copied);
    }
    if (budget.chars <= 0 || (!target.id && part.nodes.length >= MAX_BLOCKS)) {
      var more = document.createElement("p");
      more.className = "preview-more";
      more.textContent = "\u2026";
      body.appendChild(more);
    }
    if (!body.firstChild) return false;
    var head = document.createElement("a");
    head.className = "preview-title";
    head.href = link.getAttribute("href");
    head.textContent = titleOf(doc);
    card.replaceChildren(head);
    if (part.note) {
      var note = document.createElement("small");
      note.className = "preview-note";
      note.textContent = part.note;
      card.appendChild(note);
    }
    card.appendChild(body);
    return true;
  }

  // -- the card --------------------------------------------------------------------------
  function ensureCard() {
    if (card) return card;
    card = document.createElement("div");
    card.className = "preview-card";
    card.id = "mnote-preview";
    card.setAttribute("role", "tooltip");
    card.hidden = true;
    card.addEventListener("pointerenter", function () { clearTimeout(hideTimer); });
    card.addEventListener("pointerleave", function () { scheduleHide(); });
    document.body.appendChild(card);
    return card;
  }

  function place(link) {
    var r = link.getBoundingClientRect(), view = document.documentElement.clientWidth;
    card.style.visibility = "hidden";
    card.hidden = false;
    var w = card.offsetWidth, h = card.offsetHeight, gap = 6;
    var left = Math.max(8, Math.min(r.left, view - w - 8));
    var below = r.bottom + gap + h <= window.innerHeight || r.top < h + gap;
    card.style.left = (left + window.scrollX) + "px";
    card.style.top = ((below ? r.bottom + gap : r.top - gap - h) + window.scrollY) + "px";
    card.style.visibility = "";
  }

  function show(link) {
    var target = targetOf(link);
    if (!target) return;
    current = link;
    load(target).then(function (doc) {
      if (current !== link) return;
      ensureCard();
      if (!render(doc, target, link)) { hide(); return; }
      link.setAttribute("aria-describedby", card.id);
      place(link);
    }).catch(function () { /* unreachable page (offline, removed): no card */ });
  }

  function hide() {
    clearTimeout(showTimer);
    clearTimeout(hideTimer);
    if (current) current.removeAttribute("aria-describedby");
    current = null;
    if (card) card.hidden = true;
  }

  function scheduleShow(link, ms) {
    clearTimeout(showTimer);
    clearTimeout(hideTimer);
    if (link === current && card && !card.hidden) return;
    showTimer = setTimeout(function () { show(link); }, ms);
  }

  function scheduleHide() {
    clearTimeout(showTimer);
    clearTimeout(hideTimer);
    hideTimer = setTimeout(hide, HIDE_MS);
  }

  function linkIn(event) {
    var el = event.target;
    return el && el.closest ? el.closest("a[href]") : null;
  }

  document.addEventListener("pointerover", function (event) {
    if (event.pointerType !== "mouse") return; // a tap follows the link; no card flashes first
    var link = linkIn(event);
    if (link && targetOf(link)) scheduleShow(link, SHOW_MS);
  });
  document.addEventListener("pointerout", function (event) {
    var link = linkIn(event);
    if (link && !link.contains(event.relatedTarget)) scheduleHide();
  });
  document.addEventListener("focusin", function (event) {
    var link = linkIn(event);
    if (link && targetOf(link)) scheduleShow(link, 0);
  });
  document.addEventListener("focusout", function (event) {
    if (linkIn(event) && !(card && card.contains(event.relatedTarget))) scheduleHide();
  });
  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && card && !card.hidden) hide();
  });
})();
