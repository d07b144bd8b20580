"""Response headers of the site, defined once for static hosts (`_headers`) and `serve` (SPEC §8).

Attachments a browser would execute (HTML, SVG, XML, scripts: `ACTIVE_SUFFIXES`) are copied under
`_file/` (`urls.copy_path`), never beside our pages, so one rule makes every such copy inert:
downloaded, sandboxed, never sniffed. Every response carries `nosniff` and the site CSP (our pages load
only their own scripts and styles; inline style attributes position the PDF boxes). `_headers` is the
format of Netlify and Cloudflare Pages; other hosts need the same headers (docs/security.md).
"""

from __future__ import annotations

from mnote_evidence.build.core.urls import MOVED_FILES_DIR

# every page's <meta> CSP (a <meta> cannot say frame-ancestors); 'wasm-unsafe-eval' compiles the SQLite wasm
PAGE_CSP = (
    "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self' 'unsafe-inline'; img-src "
    "'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'"
)
SITE_CSP = PAGE_CSP + "; frame-ancestors 'self'"
ATTACHMENT_CSP = "sandbox; default-src 'none'"
COMMON = {"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}
ATTACHMENT = {"Content-Disposition": "attachment", "Content-Security-Policy": ATTACHMENT_CSP}
HEADERS_FILE = "_headers"


def headers_file(base: str = "/") -> str:
    """The `_headers` file for a site published at `base`."""
    base = "/" + base.strip("/") + "/" if base.strip("/") else "/"
    lines = [f"{base}*"] + [f"  {k}: {v}" for k, v in {**COMMON, "Content-Security-Policy": SITE_CSP}.items()]
    lines += [f"{base}{MOVED_FILES_DIR}/*"] + [f"  {k}: {v}" for k, v in ATTACHMENT.items()]
    return "\n".join(lines) + "\n"
