"""The one redaction of secrets from text we store, print or return (SPEC §9, §11).

`redact(text)` removes, from any message before it is stored in
`evidence.sqlite`, rendered into a page, printed or answered by the API:
- credentials in URLs (`http://user:pass@host` -> `http://***@host`);
- the values of the secret environment variables (`SECRET_ENVS`), raw or
  percent-encoded, wherever an upstream service echoed them;
- bearer tokens (`Authorization: Bearer <token>`).
It is applied where messages are made (`ProviderError`, `LightRagError`) and
where configuration is shown; it depends on nothing else in the project.
"""

from __future__ import annotations

import os
import re
from urllib.parse import quote

SECRET_ENVS = ("LIGHTRAG_API_KEY", "MINERU_TOKEN")
MASK = "***"
_URL_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s@?#\"'<>]+@")
_BEARER = re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=\-]{4,}")
_MIN_SECRET = 4  # shorter values would mask ordinary words


def redact(text: str) -> str:
    """`text` with URL credentials, bearer tokens and the secret environment values masked."""
    if not text:
        return text
    for name in SECRET_ENVS:
        value = os.environ.get(name, "").strip()
        if len(value) >= _MIN_SECRET:
            for form in {value, quote(value, safe="")}:
                text = text.replace(form, MASK)
    text = _URL_CREDENTIALS.sub(lambda m: m.group(1) + MASK + "@", text)
    return _BEARER.sub(lambda m: m.group(1) + MASK, text)
