// mnote-evidence: the local graph of a page: the page, the pages it links to and those that link to it
// (one hop), drawn as inline SVG in a radial layout, each node a link to its page. Everything comes from
// the page itself (the links in <main> and its Backlinks list), so no page depends on another note's
// data: an edit still rewrites only the pages it changes. Without JavaScript the Backlinks list stays.
(function () {
  "use strict";
  var SVG = "http://www.w3.org/2000/svg";
  var MAX_NODES = 20, W = 300, H = 230, RX = 96, RY = 80, NODE_R = 6, LABEL_CHARS = 16;

  function svg(name, attrs, parent) {
    var el = document.createElementNS(SVG, name);
    Object.keys(attrs || {}).forEach(function (k) { el.setAttribute(k, attrs[k]); });
    if (parent) parent.appendChild(el);
    return el;
  }

  function pageKey(url) {
    url.hash = "";
    url.search = "";
    return url.href;
  }

  // A link to another page of the site: {key, href (without its fragment), name}, or null.
  function pageLink(a) {
    var href = a.getAttribute("href");
    if (!href || a.hasAttribute("download") || a.matches(".tag, .overlay, .embed-source")) return null;
    var url;
    try { url = new URL(href, document.baseURI); } catch (e) { return null; }
    if (url.protocol !== location.protocol || url.host !== location.host) return null;
    var last = url.pathname.split("/").pop();
    if (!/\.html$/.test(last) || last === "index.html") return null; // the front page and folder pages are not notes
    var key = pageKey(url);
    if (key === pageKey(new URL(location.href))) return null;
    var name = decodeURIComponent(last).replace(/\.html$/, "");
    return { key: key, href: href.split("#")[0], name: name };
  }

  function neighbours(side) {
    var byKey = {}, order = [];
    function add(link, title, dir) {
      if (!link) return;
      var n = byKey[link.key];
      if (!n) { n = byKey[link.key] = { href: link.href, name: link.name, out: false, in: false }; order.push(n); }
      n[dir] = true;
      if (title) n.name = title; // a backlink names its page by title
    }
    document.querySelectorAll("main a[href]").forEach(function (a) { add(pageLink(a), "", "out"); });
    side.querySelectorAll(".backlinks li").forEach(function (li) {
      var a = li.querySelector("a[href]");
      if (a) add(pageLink(a), a.textContent.trim(), "in");
    });
    var rank = function (n) { return n.out && n.in ? 0 : n.out ? 1 : 2; };
    return order.map(function (n, i) { n.i = i; return n; })
      .sort(function (a, b) { return rank(a) - rank(b) || a.i - b.i; });
  }

  // A long name keeps its start and its end (a file's extension): "shared-m…spec.pdf".
  function short(name) {
    if (name.length <= LABEL_CHARS) return name;
    var tail = Math.floor((LABEL_CHARS - 1) / 2);
    return name.slice(0, LABEL_CHARS - 1 - tail) + "\u2026" + name.slice(-tail);
  }

  // Centred on its node, below it (above for the nodes at the top), so no label leaves the picture.
  function label(parent, text, x, y, dy) {
    var t = svg("text", { x: x, y: dy < -0.5 ? y - 10 : y + 18, "text-anchor": "middle" }, parent);
    t.textContent = short(text);
  }

  function draw(nodes, title) {
    var shown = nodes.slice(0, MAX_NODES), few = shown.length <= 2; // one or two: a flat picture
    var h = few ? 150 : H, ry = few ? 45 : RY, cx = W / 2, cy = h / 2;
    var root = svg("svg", { viewBox: "0 0 " + W + " " + h, role: "img", "aria-label": "Links of this page" });
    var defs = svg("defs", {}, root);
    var marker = svg("marker", { id: "graph-arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 6,
                                 markerHeight: 6, orient: "auto-start-reverse" }, defs);
    svg("path", { d: "M0,0 L10,5 L0,10 z" }, marker);
    var edges = svg("g", {}, root);
    shown.forEach(function (n, i) {
      var angle = -Math.PI / 2 + (2 * Math.PI * i) / shown.length;
      var dx = Math.cos(angle), dy = Math.sin(angle);
      var x = cx + RX * dx, y = cy + ry * dy;
      var len = Math.hypot(x - cx, y - cy), ux = (x - cx) / len, uy = (y - cy) / len, gap = NODE_R + 2;
      var from = [cx + gap * ux, cy + gap * uy], to = [x - gap * ux, y - gap * uy];
      var line = svg("line", { x1: from[0], y1: from[1], x2: to[0], y2: to[1],
                               class: "edge " + (n.out && n.in ? "both" : n.out ? "out" : "in") }, edges);
      if (n.out) line.setAttribute("marker-end", "url(#graph-arrow)");
      if (n.in) line.setAttribute("marker-start", "url(#graph-arrow)");
      var kind = /\.[A-Za-z0-9]{1,5}$/.test(n.name) ? "file" : "note";
      var a = svg("a", { href: n.href, class: "node " + kind, "aria-label": n.name }, root);
      svg("circle", { cx: x, cy: y, r: NODE_R }, a);
      label(a, n.name, x, y, dy);
    });
    var me = svg("g", { class: "node current" }, root);
    svg("circle", { cx: cx, cy: cy, r: NODE_R + 2 }, me);
    label(me, title, cx, cy, 0);
    return root;
  }

  document.addEventListener("DOMContentLoaded", function () {
    var side = document.querySelector(".side");
    var heads = side ? Array.prototype.filter.call(side.querySelectorAll("section > h2"), function (h) {
      return h.textContent.trim() === "Backlinks";
    }) : [];
    if (!heads.length) return; // not a page of a file: no graph
    var nodes = neighbours(side);
    if (!nodes.length) return;
    var section = document.createElement("section");
    section.className = "local-graph";
    var h2 = document.createElement("h2");
    h2.textContent = "Graph";
    section.appendChild(h2);
    var cut = document.title.lastIndexOf(" \u00b7 "); // "<title> · <workspace>"
    section.appendChild(draw(nodes, cut > 0 ? document.title.slice(0, cut) : document.title));
    if (nodes.length > MAX_NODES) {
      var more = document.createElement("p");
      more.className = "muted";
      more.textContent = "and " + (nodes.length - MAX_NODES) + " more (Backlinks and the page's links list them all)";
      section.appendChild(more);
    }
    var backlinks = heads[0].parentElement;
    backlinks.parentElement.insertBefore(section, backlinks);
  });
})();
