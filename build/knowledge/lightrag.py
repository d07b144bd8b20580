"""A small, strict client for the LightRAG server API (lightrag-hku 1.5.x).

Every failure becomes a `LightRagError` with a reason code of SPEC §11: `knowledge_rag_unavailable`,
`knowledge_rag_timeout`, `knowledge_rag_bad_response` (5xx, non-JSON, unexpected shape) or
`knowledge_rag_rejected`. The API key comes from `LIGHTRAG_API_KEY` only, is sent as `X-API-Key`, and
never appears in an error message. Transport: the standard library's `http.client` (imported by the
first request), one connection per request; `timeout` bounds each socket operation; no proxy
variables are read; TLS only for https URLs.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from mnote_evidence.build.core.redact import redact

URL_ENV = "LIGHTRAG_URL"
KEY_ENV = "LIGHTRAG_API_KEY"


class LightRagError(Exception):
    def __init__(self, reason: str, message: str):
        message = redact(message)  # LightRAG may echo a credential; this is stored and answered
        super().__init__(message)
        self.reason = reason
        self.message = message


@dataclass(frozen=True)
class LightRagConfig:
    url: str
    timeout: float = 30.0

    @classmethod
    def from_env(cls, url: str | None = None, timeout: float = 30.0) -> LightRagConfig | None:
        url = (url or os.environ.get(URL_ENV, "")).rstrip("/")
        return cls(url, timeout) if url else None


class _Response:
    def __init__(self, status_code: int, content: bytes):
        self.status_code = status_code
        self.content = content

    def json(self) -> Any:
        return json.loads(self.content)


class LightRag:
    def __init__(self, config: LightRagConfig):
        key = os.environ.get(KEY_ENV, "").strip()
        self.headers = {"X-API-Key": key} if key else {}
        self.config = config
        url = urlsplit(config.url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise LightRagError(
                "knowledge_rag_unavailable", "LightRAG URL must be http(s)://host[:port][/prefix]"
            )
        try:
            self.port = url.port
        except ValueError:
            raise LightRagError("knowledge_rag_unavailable", "LightRAG URL has an invalid port") from None
        self.tls = url.scheme == "https"
        self.host, self.prefix = url.hostname, url.path.rstrip("/")

    def close(self) -> None:
        pass

    def __enter__(self) -> LightRag:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _send(self, method: str, path: str, payload: Any = None) -> _Response:
        # loaded by the first request: most commands import this module and never talk HTTP
        import http.client

        headers = {**self.headers, "Accept": "application/json"}
        body = None
        if payload is not None:
            body = json.dumps(payload).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if self.tls:
            import ssl  # only for https: loading the CA bundle costs start-up

            conn = http.client.HTTPSConnection(
                self.host, self.port, timeout=self.config.timeout, context=ssl.create_default_context()
            )
        else:
            conn = http.client.HTTPConnection(self.host, self.port, timeout=self.config.timeout)
        try:
            conn.request(method, self.prefix + path, body=body, headers=headers)
            resp = conn.getresponse()
            return _Response(resp.status, resp.read())
        except http.client.HTTPException as exc:  # a malformed reply: as unreachable as a refused connect
            raise LightRagError(
                "knowledge_rag_unavailable", f"cannot reach LightRAG ({type(exc).__name__})"
            ) from None
        finally:
            conn.close()

    def _call(self, method: str, path: str, payload: Any = None) -> dict[str, Any]:
        try:
            resp = self._send(method, path, payload)
        except TimeoutError:
            raise LightRagError(
                "knowledge_rag_timeout", f"LightRAG did not answer {path} within {self.config.timeout:g} s"
            ) from None
        except OSError as exc:
            raise LightRagError(
                "knowledge_rag_unavailable", f"cannot reach LightRAG ({type(exc).__name__})"
            ) from None
        if resp.status_code in (400, 422):
            raise LightRagError("knowledge_rag_rejected", f"LightRAG rejected the request: {_message(resp)}")
        if resp.status_code in (401, 403):
            raise LightRagError(
                "knowledge_rag_unavailable", "LightRAG refused the API key (set LIGHTRAG_API_KEY)"
            )
        if resp.status_code >= 400:
            raise LightRagError(
                "knowledge_rag_bad_response", f"LightRAG answered HTTP {resp.status_code} on {path}"
            )
        try:
            body = resp.json()
        except ValueError:
            raise LightRagError(
                "knowledge_rag_bad_response", f"LightRAG answered {path} with invalid JSON"
            ) from None
        if not isinstance(body, dict):
            raise LightRagError("knowledge_rag_bad_response", f"LightRAG answered {path} with a non-object")
        return body

    def health(self) -> dict[str, Any]:
        return self._call("GET", "/health")

    def query_data(self, query: str, mode: str, top_k: int) -> dict[str, Any]:
        body = self._call(
            "POST",
            "/query/data",
            payload={
                "query": query,
                "mode": mode,
                "top_k": top_k,
                "chunk_top_k": top_k,
                "enable_rerank": False,
            },
        )
        if body.get("status") == "failure" or not body.get("data"):
            return {"chunks": [], "references": [], "entities": [], "relationships": []}
        data = body["data"]
        if not isinstance(data.get("chunks", []), list):
            raise LightRagError("knowledge_rag_bad_response", "LightRAG /query/data: 'chunks' is not a list")
        return data

    def answer(self, query: str, mode: str, top_k: int) -> dict[str, Any]:
        return self._call(
            "POST",
            "/query",
            payload={
                "query": query,
                "mode": mode,
                "top_k": top_k,
                "include_references": True,
                "enable_rerank": False,
            },
        )

    def insert_texts(self, texts: list[str], sources: list[str]) -> str:
        body = self._call("POST", "/documents/texts", payload={"texts": texts, "file_sources": sources})
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
        self._call("DELETE", "/documents/delete_document", payload={"doc_ids": doc_ids})
        self.wait_idle(timeout)

    def wait_idle(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self._call("GET", "/documents/pipeline_status").get("busy"):
            if time.monotonic() > deadline:
                raise LightRagError(
                    "knowledge_rag_timeout", f"LightRAG pipeline still busy after {timeout:g} s"
                )
            time.sleep(0.3)


def _message(resp: _Response) -> str:
    try:
        body = resp.json()
    except ValueError:
        return f"HTTP {resp.status_code}"
    if not isinstance(body, dict):
        return str(body)[:300]
    detail = body.get("message") or body.get("detail") or body
    return str(detail)[:300]
