"""Response headers of the site, defined once for static hosts (`_headers`) and `serve` (SPEC §8).

Attachments are an allowlist: those of a known inert type (`urls.INLINE_TYPES`: PDF, raster images,
audio, video, plain text) are copied beside our pages and sent inline by that type; every other one is
copied under `_file/` (`urls.copy_path`), so one rule makes each such copy inert: an
`application/octet-stream` download, sandboxed, never sniffed. `serve` applies the same allowlist to
every file of the site (`site_file_headers`), so a file no build placed is a download too. Every
response carries `nosniff` and the site CSP (our pages load only their own scripts and styles; inline
style attributes position the PDF boxes). `_headers` is the format of Netlify and Cloudflare Pages;
other hosts need the same headers (docs/security.md).
"""

from __future__ import annotations

from mnote_evidence.build.core.urls import MOVED_FILES_DIR, STATIC_DIR, inline_type

# every page's <meta> CSP (a <meta> cannot say frame-ancestors); 'wasm-unsafe-eval' compiles the SQLite wasm
PAGE_CSP = (
    "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self' 'unsafe-inline'; img-src "
    "'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'"
)
SITE_CSP = PAGE_CSP + "; frame-ancestors 'self'"
ATTACHMENT_CSP = "sandbox; default-src 'none'"
COMMON = {"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}
ATTACHMENT = {
    "Content-Type": "application/octet-stream",
    "Content-Disposition": "attachment",
    "Content-Security-Policy": ATTACHMENT_CSP,
}
HEADERS_FILE = "_headers"


def headers_file(base: str = "/") -> str:
    """The `_headers` file for a site published at `base`."""
    base = "/" + base.strip("/") + "/" if base.strip("/") else "/"
    lines = [f"{base}*"] + [f"  {k}: {v}" for k, v in {**COMMON, "Content-Security-Policy": SITE_CSP}.items()]
    lines += [f"{base}{MOVED_FILES_DIR}/*"] + [f"  {k}: {v}" for k, v in ATTACHMENT.items()]
    return "\n".join(lines) + "\n"


def site_file_headers(site_path: str) -> dict[str, str]:
    """Headers that decide how the site file at root-relative `site_path` (the file itself, after
    `..` and symlinks are resolved) is sent: none for our own files (pages, `_static/`), the inline type
    of an attachment of a known inert type, `ATTACHMENT` for anything else (all of `_file/` included).
    Folder names compare case-blind: on a case-insensitive disk `_FILE/x.html` is `_file/x.html`."""
    first = site_path.partition("/")[0].lower()
    if first == MOVED_FILES_DIR:
        return dict(ATTACHMENT)
    if first == STATIC_DIR or site_path.endswith(".html"):
        return {}  # ours: the build writes every .html outside _file/ (attachments' copies are under it)
    inline = inline_type(site_path)
    return {"Content-Type": inline} if inline else dict(ATTACHMENT)
