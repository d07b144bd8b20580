"""The evidence search page in Datasette (`/-/evidence/search-page`): `evidence.search` for readers (SPEC §9).

A thin HTML view over the pure handler, rendered in Datasette's own layout (its `base.html`, so the
menu, styles and CSP are Datasette's): a form (query, kind, folder, group by file), the total, each
result's snippet with the query's terms in `<mark>`, its locator (file · page · section) linking into
the site mounted by the plugin, and previous / next pages. Raw tables stay where they are.

Invariants: every text from the index or the request is HTML-escaped (Jinja autoescape; snippets
through `snippet.marked` with `markupsafe.escape`, only our `<mark>` tags are markup); a rejected
request is a 400 page carrying the handler's message; no query is a 200 form.
"""

from __future__ import annotations

import asyncio
from urllib.parse import urlencode

from datasette.utils.asgi import Response
from markupsafe import Markup, escape

from mnote_evidence.functions.adapters.datasette_compat import jinja_environment
from mnote_evidence.functions.core.contracts import Context
from mnote_evidence.functions.core.errors import call
from mnote_evidence.functions.handlers.evidence import DEFAULT_TOP_K, KINDS, SEARCH_REQUEST, search
from mnote_evidence.functions.search.results import SOME_WORDS, where
from mnote_evidence.functions.search.snippet import marked

PATH = "/-/evidence/search-page"
PARAMS = ("q", "kind", "folder", "file", "group", "offset", "topK")

# The template's lines are its output: the long ones are split across adjacent string literals.
TEMPLATE = (
    """{% extends "base.html" %}
{% block title %}{% if q %}{{ q }} · {% endif %}Search evidence{% endblock %}
{% block extra_head %}<style>
.ev-form { display: flex; flex-wrap: wrap; gap: .5em; align-items: center; margin-bottom: 1em; }
.ev-form input[type=search] { flex: 1 1 20em; font-size: 1.1em; padding: .3em; }
.ev-results { list-style: none; padding: 0; }
.ev-results li { margin: 0 0 1.1em; }
.ev-snippet { margin: .2em 0; line-height: 1.5; }
.ev-snippet mark { background: #ffe58a; padding: 0 .1em; }
.ev-where { color: #555; font-size: .9em; }
.ev-group { margin: 1.4em 0 .4em; }
.ev-more { font-size: .9em; }
.ev-error { color: #a00; }
</style>{% endblock %}
{% block crumbs %}<p class="crumbs"><a href="{{ urls.instance() }}">home</a>{% if database %} /
<a href="{{ urls.database(database) }}">{{ database }}</a>{% endif %}</p>{% endblock %}
{% block content %}
<h1>Search evidence</h1>
<form class="ev-form" action="{{ path }}" method="get" role="search">
  <input type="search" name="q" value="{{ q }}" placeholder="Search the evidence" autofocus>
  <label>kind <select name="kind"><option value="">any</option>
  {% for k in kinds %}<option value="{{ k }}"{% if k == kind %} selected{% endif %}>"""
    """{{ k }}</option>{% endfor %}
  </select></label>
  <label>folder <input type="text" name="folder" value="{{ folder }}" size="12"
    placeholder="all folders"></label>
  <label><input type="checkbox" name="group" value="1"{% if group %} checked{% endif %}> group by file</label>
  <button type="submit">Search</button>
</form>
{% if error %}<p class="ev-error">{{ error }}</p>{% endif %}
{% if answer %}
<p class="ev-total">{{ total_text }}</p>
{% for g in sections %}
  {% if g.path %}<h3 class="ev-group"><a href="{{ g.file_url }}">{{ g.path }}</a> """
    """<small>({{ g.kind }})</small></h3>{% endif %}
  <ol class="ev-results" start="{{ g.start }}">
  {% for r in g.results %}
    <li><div class="ev-where"><a href="{{ r.url }}">{{ r.where }}</a></div>
        <div class="ev-snippet">{{ r.snippet }}</div></li>
  {% endfor %}
  </ol>
  {% if g.more %}<p class="ev-more"><a href="{{ g.more_url }}">{{ g.more }} more in this file ▸</a></p>"""
    """{% endif %}
{% endfor %}
<p class="ev-pages">{% if prev_url %}<a href="{{ prev_url }}" rel="prev">◂ previous</a>{% endif %}
{% if next_url %}<a href="{{ next_url }}" rel="next">next ▸</a>{% endif %}</p>
{% endif %}
<p class="ev-raw">Power users: the raw tables, e.g. """
    """<a href="{{ urls.table(database, 'evidence_block') }}">evidence_block</a>
(its search box is CJK-aware), and the JSON API <code>/-/evidence/search</code>.</p>
{% endblock %}
"""
)


def request_from_params(args) -> tuple[dict, dict]:
    """(the handler request, the form's values) from the page's query string."""
    form = {k: (args.get(k) or "").strip() for k in PARAMS}
    request: dict = {"query": form["q"], "topK": DEFAULT_TOP_K}
    optional = {
        "resourceKinds": [form["kind"]] if form["kind"] else None,
        "folder": form["folder"],
        "resourcePath": form["file"],
        "groupBy": "document" if form["group"] else None,
    }
    request.update({k: v for k, v in optional.items() if v})
    for key in ("offset", "topK"):
        if form[key]:  # typed as the API's query strings are; the handler says why a value is refused
            request[key] = SEARCH_REQUEST.fields[key].from_text(form[key])
    return request, form


def _url(form: dict, **changes) -> str:
    params = {k: v for k, v in {**form, **changes}.items() if v not in ("", None, 0)}
    return PATH + "?" + urlencode(params)


def page_context(answer: dict, form: dict, row_url) -> dict:
    """The template's variables for one answer: sections (files when grouped), links, pages."""

    def item(r: dict) -> dict:
        snippet = Markup(marked(r["snippet"], Markup("<mark>"), Markup("</mark>"), escape))
        return {"where": where(r["source"]), "url": row_url(r), "snippet": snippet}

    results = answer["results"]
    if "groups" in answer:
        sections = [
            {
                "path": g["resourcePath"],
                "kind": g["resourceKind"],
                "start": g["first"] + 1,
                "file_url": row_url(results[g["first"]]).split("#")[0],
                "results": [item(r) for r in results[g["first"] : g["first"] + g["count"]]],
                "more": f"{g['more']}{'+' if g['moreIsLowerBound'] else ''}" if g["more"] else "",
                "more_url": _url({"q": form["q"], "kind": form["kind"]}, file=g["expand"]["resourcePath"]),
            }
            for g in answer["groups"]
        ]
    else:
        sections = [
            {"path": "", "start": answer["offset"] + 1, "results": [item(r) for r in results], "more": ""}
        ]
    total = f"{answer['total']}{'+' if answer['totalIsLowerBound'] else ''}"
    shown = len(answer.get("groups", results))
    unit = "files" if "groups" in answer else "results"
    first = answer["offset"] + 1
    scope = f" in {form['file']}" if form["file"] else ""
    total_text = (
        f"{total} matching blocks{scope} · {unit} {first}–{first + shown - 1}"
        if shown
        else f"{total} matching blocks{scope} · no {unit} here"
    )
    if shown and answer["matchMode"] == "any":
        total_text += f" ({SOME_WORDS})"
    top_k = int(form["topK"]) if form["topK"].isdigit() else DEFAULT_TOP_K
    return {
        "answer": answer,
        "sections": sections,
        "total_text": total_text,
        "next_url": _url(form, offset=answer["nextOffset"]) if "nextOffset" in answer else "",
        "prev_url": _url(form, offset=max(0, answer["offset"] - top_k)) if answer["offset"] > 0 else "",
    }


async def respond(request, datasette, database: str, ctx: Context, session, linked_site: bool):
    """The page for `request`: the form alone without a query, else the answer (or the handler's 4xx)."""
    req, form = request_from_params(request.args)
    values = {"path": PATH, "kinds": KINDS, "database": database, **form}
    status = 200
    if form["q"]:

        def in_session(r: dict) -> dict:
            with session():
                return search(r, ctx)

        status, answer = await asyncio.to_thread(call, in_session, req)
        if status == 200:
            table = datasette.urls.table(database, "evidence_block")

            def row_url(r: dict) -> str:
                if linked_site:
                    return r["source"]["openAction"]["url"]
                return table + "?" + urlencode({"block_id": r["evidenceId"]})

            values.update(page_context(answer, form, row_url))
        else:
            values["error"] = answer["error"]["message"]
    template = jinja_environment(datasette, request).from_string(TEMPLATE)
    html = await datasette.render_template(template, values, request=request)
    return Response.html(html, status=status, headers={"Cache-Control": "no-store"})
