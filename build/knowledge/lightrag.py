"""A small, strict client for the LightRAG server API (lightrag-hku 1.5.x).

Every failure becomes a `LightRagError` with one of the reason codes of SPEC §11:
`knowledge_rag_unavailable` (cannot connect), `knowledge_rag_timeout`,
`knowledge_rag_bad_response` (5xx, non-JSON, unexpected shape) or
`knowledge_rag_rejected` (LightRAG refused the request, e.g. a query under 3
characters). The API key comes from `LIGHTRAG_API_KEY` only, is sent as
`X-API-Key`, and never appears in an error message.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

import httpx

URL_ENV = "LIGHTRAG_URL"
KEY_ENV = "LIGHTRAG_API_KEY"


class LightRagError(Exception):
    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason
        self.message = message


@dataclass(frozen=True)
class LightRagConfig:
    url: str
    timeout: float = 30.0

    @classmethod
    def from_env(cls, url: str | None = None, timeout: float = 30.0) -> "LightRagConfig | None":
        url = (url or os.environ.get(URL_ENV, "")).rstrip("/")
        return cls(url, timeout) if url else None


class LightRag:
    def __init__(self, config: LightRagConfig):
        key = os.environ.get(KEY_ENV, "").strip()
        headers = {"X-API-Key": key} if key else {}
        self.config = config
        # Plain http (LightRAG on loopback or a private network) uses no TLS: skip loading the CA bundle,
        # which costs ~100 ms per client (measured in `ask`'s start-up, bench/citation_truth.py).
        tls = config.url.lower().startswith("https:")
        self.http = httpx.Client(base_url=config.url, timeout=config.timeout, headers=headers, trust_env=False,
                                 verify=True if tls else False)

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> "LightRag":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _call(self, method: str, path: str, **kw) -> dict[str, Any]:
        try:
            resp = self.http.request(method, path, **kw)
        except httpx.TimeoutException:
            raise LightRagError("knowledge_rag_timeout", f"LightRAG did not answer {path} within "
                                f"{self.config.timeout:g} s") from None
        except httpx.HTTPError as exc:
            raise LightRagError("knowledge_rag_unavailable", f"cannot reach LightRAG ({type(exc).__name__})") from None
        if resp.status_code in (400, 422):
            raise LightRagError("knowledge_rag_rejected", f"LightRAG rejected the request: {_message(resp)}")
        if resp.status_code in (401, 403):
            raise LightRagError("knowledge_rag_unavailable", "LightRAG refused the API key (set LIGHTRAG_API_KEY)")
        if resp.status_code >= 400:
            raise LightRagError("knowledge_rag_bad_response", f"LightRAG answered HTTP {resp.status_code} on {path}")
        try:
            body = resp.json()
        except ValueError:
            raise LightRagError("knowledge_rag_bad_response", f"LightRAG answered {path} with invalid JSON") from None
        if not isinstance(body, dict):
            raise LightRagError("knowledge_rag_bad_response", f"LightRAG answered {path} with a non-object")
        return body

    # -- queries ----------------------------------------------------------------------
    def health(self) -> dict[str, Any]:
        return self._call("GET", "/health")

    def query_data(self, query: str, mode: str, top_k: int) -> dict[str, Any]:
        body = self._call("POST", "/query/data", json={"query": query, "mode": mode, "top_k": top_k,
                                                       "chunk_top_k": top_k, "enable_rerank": False})
        if body.get("status") == "failure" or not body.get("data"):
            return {"chunks": [], "references": [], "entities": [], "relationships": []}
        data = body["data"]
        if not isinstance(data.get("chunks", []), list):
            raise LightRagError("knowledge_rag_bad_response", "LightRAG /query/data: 'chunks' is not a list")
        return data

    def answer(self, query: str, mode: str, top_k: int) -> dict[str, Any]:
        return self._call("POST", "/query", json={"query": query, "mode": mode, "top_k": top_k,
                                                  "include_references": True, "enable_rerank": False})

    # -- documents ---------------------------------------------------------------------
    def insert_texts(self, texts: list[str], sources: list[str]) -> str:
        body = self._call("POST", "/documents/texts", json={"texts": texts, "file_sources": sources})
        track = body.get("track_id")
        if not track:
            raise LightRagError("knowledge_rag_bad_response", "LightRAG returned no track_id for the insert")
        return track

    def wait_track(self, track_id: str, expected: int, timeout: float) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while True:
            docs = self._call("GET", f"/documents/track_status/{track_id}").get("documents") or []
            done = [d for d in docs if str(d.get("status", "")).lower() in ("processed", "failed")]
            if len(done) >= expected and len(done) == len(docs):
                return docs
            if time.monotonic() > deadline:
                raise LightRagError("knowledge_rag_timeout", f"documents not processed within {timeout:g} s")
            time.sleep(0.3)

    def delete_documents(self, doc_ids: list[str], timeout: float) -> None:
        if not doc_ids:
            return
        self.wait_idle(timeout)
        self._call("DELETE", "/documents/delete_document", json={"doc_ids": doc_ids})
        self.wait_idle(timeout)

    def wait_idle(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self._call("GET", "/documents/pipeline_status").get("busy"):
            if time.monotonic() > deadline:
                raise LightRagError("knowledge_rag_timeout", f"LightRAG pipeline still busy after {timeout:g} s")
            time.sleep(0.3)


def _message(resp: httpx.Response) -> str:
    try:
        body = resp.json()
    except ValueError:
        return f"HTTP {resp.status_code}"
    detail = body.get("message") or body.get("detail") or body
    return str(detail)[:300]
