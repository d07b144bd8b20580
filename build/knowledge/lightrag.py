"""A small, strict client for the LightRAG server API (lightrag-hku 1.5.x).

Every failure becomes a `LightRagError` with a reason code of SPEC §11: `knowledge_rag_unavailable`,
`knowledge_rag_timeout`, `knowledge_rag_bad_response` (5xx, non-JSON, unexpected shape or types) or
`knowledge_rag_rejected`. The API key comes from `LIGHTRAG_API_KEY` only, is sent as `X-API-Key`, and
never appears in an error message. Every reply is checked against the shape of the real API
(`HEALTH`, `QUERY_DATA`, ...) before it is returned, so callers meet only the types they expect, and
is read up to `MAX_REPLY_BYTES`. Transport: httpcore, imported by the first request; one connection
pool per configuration and process, reused by every `LightRag` of that configuration. `timeout` is
the whole call's deadline: every connect (10 s at most), write and read waits only for what is left
of it (`_left`), so a server that drips its status line, headers or body cannot hold a call open.
No proxy variables are read; certificates are loaded only for https.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from mnote_evidence.build.core.redact import redact

if TYPE_CHECKING:
    import httpcore

URL_ENV = "LIGHTRAG_URL"
KEY_ENV = "LIGHTRAG_API_KEY"
_CONNECT_TIMEOUT = 10.0
MAX_REPLY_BYTES = 16 << 20  # far above a top-k 50 retrieval; a reply beyond it is not read on
_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]|[\ud800-\udfff]")  # an escape of one, or one raw


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
        """The body decoded (as `json.loads` decodes bytes), every string valid Unicode: a lone
        surrogate, raw or an escape such as `\\ud800`, becomes U+FFFD, so no caller can meet a string
        that cannot be written out."""
        try:
            text = self.content.decode(json.detect_encoding(self.content), "surrogatepass")
            value = json.loads(text)
            if _SURROGATE.search(text):  # only such a body can decode to one: write it out and back
                valid = json.dumps(value, ensure_ascii=False).encode("utf-16", "surrogatepass")
                value = json.loads(valid.decode("utf-16", "replace"))
            return value
        except RecursionError:  # nesting deeper than the parser's stack: as unreadable as bad syntax
            raise ValueError("JSON nested too deeply") from None


class _TooLarge(Exception):
    pass


_CALL = threading.local()  # .deadline: time.monotonic() by which this thread's call must be over


def _left(timeout: float | None, expired: type[Exception]) -> float:
    """How long one socket operation may wait: `timeout`, cut to what the call has left. Every
    connect, read and write of a call shares its deadline, so the whole call ends by it however
    slowly the server sends its status line, headers or body."""
    left = _CALL.deadline - time.monotonic()
    if left <= 0:
        raise expired("the call's deadline passed")
    return left if timeout is None else min(timeout, left)


def _deadline_backend() -> Any:
    """An httpcore network backend whose streams wait at most until the calling thread's deadline."""
    import httpcore

    class Stream(httpcore.NetworkStream):
        def __init__(self, inner: httpcore.NetworkStream):
            self.inner = inner

        def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
            return self.inner.read(max_bytes, _left(timeout, httpcore.ReadTimeout))

        def write(self, buffer: bytes, timeout: float | None = None) -> None:
            self.inner.write(buffer, _left(timeout, httpcore.WriteTimeout))

        def close(self) -> None:
            self.inner.close()

        def start_tls(self, ssl_context, server_hostname=None, timeout=None) -> Stream:
            left = _left(timeout, httpcore.ConnectTimeout)
            return Stream(self.inner.start_tls(ssl_context, server_hostname, left))

        def get_extra_info(self, info: str) -> Any:
            return self.inner.get_extra_info(info)

    class Backend(httpcore.NetworkBackend):
        def __init__(self):
            self.inner = httpcore.SyncBackend()

        def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
            left = _left(timeout, httpcore.ConnectTimeout)
            return Stream(self.inner.connect_tcp(host, port, left, local_address, socket_options))

        def connect_unix_socket(self, path, timeout=None, socket_options=None):
            left = _left(timeout, httpcore.ConnectTimeout)
            return Stream(self.inner.connect_unix_socket(path, left, socket_options))

        def sleep(self, seconds: float) -> None:
            self.inner.sleep(seconds)

    return Backend()


_POOLS: dict[tuple[LightRagConfig, int], httpcore.ConnectionPool] = {}
_POOLS_LOCK = threading.Lock()


def _pool(config: LightRagConfig, tls: bool) -> httpcore.ConnectionPool:
    """The process's one connection pool for `config` (a forked child gets its own)."""
    key = (config, os.getpid())
    with _POOLS_LOCK:
        pool = _POOLS.get(key)
        if pool is None:
            import ssl

            import httpcore

            # for a plain-http URL: no CA bundle to load, and any certificate offered would be refused
            verify = ssl.create_default_context() if tls else ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            pool = _POOLS[key] = httpcore.ConnectionPool(
                ssl_context=verify, network_backend=_deadline_backend()
            )
        return pool


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
        pool = _pool(self.config, self.tls)
        import httpcore  # loaded by _pool: only its exception types are needed here

        headers = {**self.headers, "Accept": "application/json"}
        body = None
        if payload is not None:
            body = json.dumps(payload).encode("utf-8")
            headers["Content-Type"] = "application/json"
        timeout = self.config.timeout
        waits = {
            "connect": min(timeout, _CONNECT_TIMEOUT),
            "read": timeout,
            "write": timeout,
            "pool": timeout,
        }
        _CALL.deadline = time.monotonic() + timeout
        try:
            with pool.stream(
                method,
                self.base + path,
                headers=list(headers.items()),
                content=body,
                extensions={"timeout": waits},
            ) as resp:
                declared = (int(v) for k, v in resp.headers if k.lower() == b"content-length")
                if max(declared, default=0) > MAX_REPLY_BYTES:
                    raise _TooLarge
                chunks, size = [], 0
                for chunk in resp.iter_stream():
                    size += len(chunk)
                    if size > MAX_REPLY_BYTES:
                        raise _TooLarge
                    chunks.append(chunk)
                return _Response(resp.status, b"".join(chunks))
        except httpcore.TimeoutException:
            raise LightRagError(
                "knowledge_rag_timeout", f"LightRAG did not answer {path} within {timeout:g} s"
            ) from None
        except _TooLarge:
            raise LightRagError(
                "knowledge_rag_bad_response",
                f"LightRAG answered {path} with more than {MAX_REPLY_BYTES >> 20} MiB",
            ) from None
        except (httpcore.NetworkError, httpcore.ProtocolError) as exc:
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
        return _shaped(self._call("GET", "/health"), HEALTH, "/health")

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
        if body.get("status") == "failure":  # how LightRAG says "nothing found"
            return {"chunks": [], "references": [], "entities": [], "relationships": []}
        return _shaped(body, QUERY_DATA, "/query/data")["data"]

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
        return _shaped(body, ANSWER, "/query")

    def insert_texts(self, texts: list[str], sources: list[str]) -> str:
        body = self._call("POST", "/documents/texts", payload={"texts": texts, "file_sources": sources})
        track = _shaped(body, INSERTED, "/documents/texts").get("track_id")
        if not track:
            raise LightRagError("knowledge_rag_bad_response", "LightRAG returned no track_id for the insert")
        return track

    def wait_track(self, track_id: str, expected: int, timeout: float) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while True:
            path = f"/documents/track_status/{track_id}"
            docs = _shaped(self._call("GET", path), TRACKED, path)["documents"]
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
        path = "/documents/pipeline_status"
        while _shaped(self._call("GET", path), PIPELINE, path)["busy"]:
            if time.monotonic() > deadline:
                raise LightRagError(
                    "knowledge_rag_timeout", f"LightRAG pipeline still busy after {timeout:g} s"
                )
            time.sleep(0.3)


@dataclass(frozen=True)
class Needed:
    """A key the reply must hold (not null)."""

    shape: Any


# The shapes of lightrag-hku 1.5's replies, as far as they are read: a type; an object, `{key: shape}`
# (a key absent or null unless `Needed`, other keys ignored); or a list of objects, `[shape]`. What the
# client returns has been checked against its shape, so no caller meets a value of another type.
REFERENCE = {"reference_id": str, "file_path": str}
HEALTH = {
    "status": str,
    "core_version": str,
    "pipeline_busy": bool,
    "configuration": {
        "llm_model": str,
        "embedding_model": str,
        "enable_rerank": bool,
        "rerank_binding": str,
        "rerank_model": str,
    },
    "rerank_queue_status": {"available": bool},
}
QUERY_DATA = {
    "data": Needed(
        {
            "chunks": [{"reference_id": str, "content": str, "file_path": str, "chunk_id": str}],
            "references": [REFERENCE],
            "entities": [{}],
            "relationships": [{}],
        }
    )
}
ANSWER = {"response": Needed(str), "references": [REFERENCE]}
INSERTED = {"track_id": Needed(str)}
TRACKED = {"documents": Needed([{"id": str, "status": str, "file_path": str}])}
PIPELINE = {"busy": Needed(bool)}
_KINDS = {dict: "an object", list: "a list", str: "a string", bool: "true or false"}


def _shaped(body: Any, shape: Any, path: str) -> Any:
    """`body` if it has `shape`, else a bad response naming the first key that does not."""
    _check(body, shape, path, "")
    return body


def _check(value: Any, shape: Any, path: str, key: str) -> None:
    if isinstance(shape, dict):
        if not isinstance(value, dict):
            raise _bad_type(path, key, "an object")
        for name, inner in shape.items():
            needed = isinstance(inner, Needed)
            inner = inner.shape if needed else inner
            if value.get(name) is None:
                if needed:
                    raise LightRagError(
                        "knowledge_rag_bad_response", f"LightRAG answered {path} without '{name}'"
                    )
                continue
            _check(value[name], inner, path, name)
    elif isinstance(shape, list):  # of objects
        if not isinstance(value, list) or not all(isinstance(element, dict) for element in value):
            raise _bad_type(path, key, "a list of objects" if isinstance(value, list) else "a list")
        for element in value:
            _check(element, shape[0], path, key)
    elif not isinstance(value, shape) or (shape is not bool and isinstance(value, bool)):
        raise _bad_type(path, key, _KINDS[shape])


def _bad_type(path: str, key: str, kind: str) -> LightRagError:
    if not key:
        return LightRagError("knowledge_rag_bad_response", f"LightRAG answered {path} with a non-object")
    return LightRagError("knowledge_rag_bad_response", f"LightRAG answered {path}: '{key}' is not {kind}")


def _message(resp: _Response) -> str:
    try:
        body = resp.json()
    except ValueError:
        return f"HTTP {resp.status_code}"
    if not isinstance(body, dict):
        return str(body)[:300]
    detail = body.get("message") or body.get("detail") or body
    return str(detail)[:300]
