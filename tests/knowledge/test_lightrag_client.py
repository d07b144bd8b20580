"""The LightRAG client against a tiny loopback server: the deadline per call, wrong JSON types,
the pooled connection and the API key kept out of errors (no lightrag-server needed)."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from mnote_evidence.build.knowledge.lightrag import LightRag, LightRagConfig, LightRagError
from mnote_evidence.functions.core.contracts import Context
from mnote_evidence.functions.core.db import EvidenceDB
from mnote_evidence.functions.handlers.knowledge import ask, query, status

DRIP_INTERVAL = 0.5
MARGIN = 0.75  # one drip interval plus scheduling slack


class Scripted:
    """A loopback HTTP/1.1 server answering each path from `replies` (path -> (status, JSON value)).
    `drip=True` sends the body one byte every DRIP_INTERVAL seconds."""

    def __init__(self, replies: dict, drip: bool = False):
        self.ports: set[int] = set()  # the client ports seen: one per connection
        self.seen: list[dict] = []  # each request's headers
        self.stop = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, so a pooled connection is reused

            def log_message(self, *args):
                pass

            def _reply(self):
                server.ports.add(self.client_address[1])
                server.seen.append(dict(self.headers))
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                code, value = replies[self.path]
                body = value if isinstance(value, bytes) else json.dumps(value).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if not drip:
                    self.wfile.write(body)
                    return
                for i in range(len(body)):
                    if server.stop.wait(DRIP_INTERVAL):
                        return
                    try:
                        self.wfile.write(body[i : i + 1])
                        self.wfile.flush()
                    except OSError:  # the client gave up: what the deadline is for
                        return

            do_GET = do_POST = do_DELETE = _reply

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def scripted():
    servers = []

    def start(replies, drip=False):
        servers.append(Scripted(replies, drip))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


HEALTHY = {"status": "healthy", "configuration": {"llm_model": "m"}}
# over 40 s of dripping at one byte per DRIP_INTERVAL: longer than any deadline below
LONG = {"status": "healthy", "padding": "x" * 80}


@pytest.mark.parametrize("timeout", [1.0, 2.0])
def test_a_server_dripping_bytes_cannot_hold_a_call_past_its_deadline(scripted, timeout):
    server = scripted({"/health": (200, LONG)}, drip=True)
    client = LightRag(LightRagConfig(server.url, timeout=timeout))
    started = time.monotonic()
    with pytest.raises(LightRagError) as caught:
        client.health()
    elapsed = time.monotonic() - started
    assert caught.value.reason == "knowledge_rag_timeout"
    assert caught.value.message == f"LightRAG did not answer /health within {timeout:g} s"
    assert timeout <= elapsed < timeout + MARGIN, elapsed


def test_the_handlers_answer_a_dripping_server_within_the_timeout(scripted, built):
    server = scripted({"/query/data": (200, LONG), "/query": (200, LONG)}, drip=True)
    ctx = Context(EvidenceDB(built[1] / "evidence.sqlite"), "", LightRagConfig(server.url, timeout=2.0))
    started = time.monotonic()
    body = ask({"query": "吡咯烷"}, ctx)  # two calls, side by side
    assert time.monotonic() - started < 2.0 + MARGIN
    assert body["ok"] is False and body["degradedReason"] == "knowledge_rag_timeout"
    assert body["passages"]["results"]  # the evidence that matches, without LightRAG's answer


WRONG_TYPES = [
    ("/health", [1, 2], "LightRAG answered /health with a non-object"),
    ("/health", {"status": "healthy", "configuration": "x"}, "'configuration' is not an object"),
    ("/health", {"status": "healthy", "rerank_queue_status": [1]}, "'rerank_queue_status' is not an object"),
    ("/query/data", {"status": "success", "data": ["chunk"]}, "'data' is not an object"),
    ("/query/data", {"status": "success", "data": {"chunks": {"a": 1}}}, "'chunks' is not a list"),
    ("/query/data", {"status": "success", "data": {"references": "r"}}, "'references' is not a list"),
    ("/query", {"response": 42}, "'response' is not a string"),
    ("/query", {"response": "ok", "references": ["r"]}, "'references' is not a list of objects"),
    ("/documents/texts", {"track_id": 7}, "'track_id' is not a string"),
    ("/documents/track_status/t", {"documents": {"d": 1}}, "'documents' is not a list"),
    ("/documents/track_status/t", {"documents": ["d"]}, "'documents' is not a list of objects"),
]


def _call(client: LightRag, path: str):
    return {
        "/health": client.health,
        "/query/data": lambda: client.query_data("吡咯烷", "mix", 3),
        "/query": lambda: client.answer("吡咯烷", "mix", 3),
        "/documents/texts": lambda: client.insert_texts(["t"], ["s"]),
        "/documents/track_status/t": lambda: client.wait_track("t", 1, 1.0),
    }[path]()


@pytest.mark.parametrize("path, reply, message", WRONG_TYPES)
def test_a_wrong_json_type_is_a_bad_response_that_says_which_field(scripted, path, reply, message):
    server = scripted({path: (200, reply)})
    with pytest.raises(LightRagError) as caught:
        _call(LightRag(LightRagConfig(server.url, timeout=2.0)), path)
    assert caught.value.reason == "knowledge_rag_bad_response"
    assert message in caught.value.message and path in caught.value.message


def test_the_handlers_turn_wrong_types_into_reasons_not_tracebacks(scripted, built):
    server = scripted(
        {
            "/health": (200, {"status": "healthy", "configuration": ["x"]}),
            "/query/data": (200, {"status": "success", "data": ["chunk"]}),
            "/query": (200, {"response": "ok", "references": ["r"]}),
        }
    )
    ctx = Context(EvidenceDB(built[1] / "evidence.sqlite"), "", LightRagConfig(server.url, timeout=2.0))
    health = status({}, ctx)
    assert health["healthy"] is False and health["reason"] == "knowledge_rag_bad_response"
    retrieved = query({"query": "吡咯烷"}, ctx)
    assert retrieved["ok"] is False and retrieved["degradedReason"] == "knowledge_rag_bad_response"
    asked = ask({"query": "吡咯烷"}, ctx)
    assert asked["ok"] is False and asked["answer"] is None


def test_one_pooled_connection_serves_every_client_of_a_configuration(scripted):
    server = scripted({"/health": (200, HEALTHY)})
    config = LightRagConfig(server.url, timeout=2.0)
    for _ in range(3):
        with LightRag(config) as client:
            assert client.health()["status"] == "healthy"
    assert len(server.seen) == 3 and len(server.ports) == 1


def test_the_api_key_is_sent_and_never_appears_in_an_error(scripted, monkeypatch):
    key = "lrk-secret-5be0c1"
    monkeypatch.setenv("LIGHTRAG_API_KEY", key)
    server = scripted({"/query/data": (422, {"detail": f"bad query for key {key}"})})
    with pytest.raises(LightRagError) as caught:
        LightRag(LightRagConfig(server.url, timeout=2.0)).query_data("吡咯烷", "mix", 3)
    assert caught.value.reason == "knowledge_rag_rejected"
    assert key not in str(caught.value) and "***" in caught.value.message
    assert server.seen[0]["X-API-Key"] == key


def test_an_unreachable_server_is_unavailable_and_named_without_its_credentials():
    config = LightRagConfig("http://user:hunter22@127.0.0.1:9", timeout=1.0)  # the discard port: closed
    with pytest.raises(LightRagError) as caught:
        LightRag(config).health()
    assert caught.value.reason == "knowledge_rag_unavailable"
    assert caught.value.message == "cannot reach LightRAG (ConnectError)"
