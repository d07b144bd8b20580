"""A small, strict client for the LightRAG server API (lightrag-hku 1.5.x).

Every failure becomes a `LightRagError` with a reason code of SPEC §11: `knowledge_rag_unavailable`,
`knowledge_rag_timeout`, `knowledge_rag_bad_response` (5xx, non-JSON, unexpected shape or types) or
`knowledge_rag_rejected`. The API key comes from `LIGHTRAG_API_KEY` only, is sent as `X-API-Key`, and
never appears in an error message. Transport: httpx, imported by the first request; one pooled
`httpx.Client` per configuration and process, reused by every `LightRag` of that configuration.
`timeout` bounds connecting (10 s at most), each read, and the whole call: httpx has no overall
timeout, so the body is streamed and the deadline checked after every chunk, and a server that drips
bytes cannot hold a call open. No proxy variables are read; certificates are loaded only for https.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from mnote_evidence.build.core.redact import redact

if TYPE_CHECKING:
    import httpx

URL_ENV = "LIGHTRAG_URL"
KEY_ENV = "LIGHTRAG_API_KEY"
_CONNECT_TIMEOUT = 10.0


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


class _DeadlinePassed(Exception):
    pass


_POOLS: dict[tuple[LightRagConfig, int], httpx.Client] = {}
_POOLS_LOCK = threading.Lock()


def _pool(config: LightRagConfig, tls: bool) -> httpx.Client:
    """The process's one `httpx.Client` for `config` (a forked child gets its own)."""
    key = (config, os.getpid())
    with _POOLS_LOCK:
        client = _POOLS.get(key)
        if client is None:
            import ssl

            import httpx

            # for a plain-http URL: no CA bundle to load, and any certificate offered would be refused
            verify = ssl.create_default_context() if tls else ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            timeout = httpx.Timeout(config.timeout, connect=min(config.timeout, _CONNECT_TIMEOUT))
            client = _POOLS[key] = httpx.Client(timeout=timeout, verify=verify, trust_env=False)
        return client


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
        self.base = f"{url.scheme}://{url.netloc.rpartition('@')[2]}{url.path.rstrip('/')}"

    def close(self) -> None:
        """Nothing to release: the connections stay in the process's pool for the next call."""

    def __enter__(self) -> LightRag:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _send(self, method: str, path: str, payload: Any = None) -> _Response:
        deadline = time.monotonic() + self.config.timeout
        client = _pool(self.config, self.tls)
        import httpx  # loaded by _pool: only its exception types are needed here

        headers = {**self.headers, "Accept": "application/json"}
        body = None
        if payload is not None:
            body = json.dumps(payload).encode("utf-8")
            headers["Content-Type"] = "application/json"
        try:
            with client.stream(method, self.base + path, content=body, headers=headers) as resp:
                chunks = []
                for chunk in resp.iter_bytes():
                    chunks.append(chunk)
                    if time.monotonic() > deadline:
                        raise _DeadlinePassed
                if time.monotonic() > deadline:
                    raise _DeadlinePassed
                return _Response(resp.status_code, b"".join(chunks))
        except (httpx.TimeoutException, _DeadlinePassed):
            raise LightRagError(
                "knowledge_rag_timeout", f"LightRAG did not answer {path} within {self.config.timeout:g} s"
            ) from None
        except httpx.DecodingError:
            raise LightRagError(
                "knowledge_rag_bad_response", f"LightRAG answered {path} with an undecodable body"
            ) from None
        except httpx.TransportError as exc:
            # refused, reset, or a malformed reply: as unreachable as a refused connect
            raise LightRagError(
                "knowledge_rag_unavailable", f"cannot reach LightRAG ({type(exc).__name__})"
            ) from None

    def _call(self, method: str, path: str, payload: Any = None) -> dict[str, Any]:
        resp = self._send(method, path, payload)
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
        body = self._call("GET", "/health")
        _typed(body, "/health", configuration=dict, rerank_queue_status=dict)
        return body

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
        data = _typed(body, "/query/data", data=dict)["data"]
        return _typed(data, "/query/data", chunks=list, references=list, entities=list, relationships=list)

    def answer(self, query: str, mode: str, top_k: int) -> dict[str, Any]:
        body = self._call(
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
        _typed(body, "/query", response=str, references=list)
        if not all(isinstance(r, dict) for r in body.get("references") or []):
            raise _bad_type("/query", "references", "a list of objects")
        return body

    def insert_texts(self, texts: list[str], sources: list[str]) -> str:
        body = self._call("POST", "/documents/texts", payload={"texts": texts, "file_sources": sources})
        track = _typed(body, "/documents/texts", track_id=str).get("track_id")
        if not track:
            raise LightRagError("knowledge_rag_bad_response", "LightRAG returned no track_id for the insert")
        return track

    def wait_track(self, track_id: str, expected: int, timeout: float) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while True:
            path = f"/documents/track_status/{track_id}"
            docs = _typed(self._call("GET", path), path, documents=list).get("documents") or []
            if not all(isinstance(d, dict) for d in docs):
                raise _bad_type(path, "documents", "a list of objects")
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


_KINDS = {dict: "an object", list: "a list", str: "a string"}


def _bad_type(path: str, key: str, kind: str) -> LightRagError:
    return LightRagError("knowledge_rag_bad_response", f"LightRAG answered {path}: '{key}' is not {kind}")


def _typed(body: dict[str, Any], path: str, **kinds: type) -> dict[str, Any]:
    """`body`, checked: each named key is absent, null, or of its kind (else a bad response)."""
    for key, kind in kinds.items():
        if body.get(key) is not None and not isinstance(body[key], kind):
            raise _bad_type(path, key, _KINDS[kind])
    return body


def _message(resp: _Response) -> str:
    try:
        body = resp.json()
    except ValueError:
        return f"HTTP {resp.status_code}"
    if not isinstance(body, dict):
        return str(body)[:300]
    detail = body.get("message") or body.get("detail") or body
    return str(detail)[:300]
