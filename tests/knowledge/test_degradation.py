"""LightRAG down, slow, erroring or answering garbage: answers come back in time, with a reason."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from mnote_evidence.build.knowledge.lightrag import LightRagConfig
from mnote_evidence.functions.core.db import EvidenceDB
from mnote_evidence.functions.core.errors import call
from mnote_evidence.functions.handlers.evidence import Context, search
from mnote_evidence.functions.handlers.knowledge import ask, query, status


class FaultServer:
    """A loopback server that fails in one chosen way ("500", "garbage", "hang", "shape")."""

    def __init__(self, mode: str):
        self.release = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _reply(self):
                if mode == "hang":
                    server.release.wait(30)  # bounded: the test releases it
                    return
                body = {
                    "500": b'{"detail": "boom"}',
                    "garbage": b"<html>not json",
                    "shape": b'{"status": "success", "data": {"chunks": "not-a-list"}}',
                }[mode]
                self.send_response(500 if mode == "500" else 200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _reply

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.mark.parametrize(
    "mode, reason",
    [
        ("500", "knowledge_rag_bad_response"),
        ("garbage", "knowledge_rag_bad_response"),
        ("shape", "knowledge_rag_bad_response"),
        ("hang", "knowledge_rag_timeout"),
    ],
)
def test_fault_server_reason_codes(knowledge_site, mode, reason):
    _, out, _ = knowledge_site
    fault = FaultServer(mode)
    try:
        ctx = Context(EvidenceDB(out / "evidence.sqlite"), "", LightRagConfig(fault.url, timeout=1.0))
        started = time.monotonic()
        code, body = call(lambda r: query(r, ctx), {"query": "吡咯烷"})
        assert time.monotonic() - started < 5  # within the configured timeout (+ slack)
        assert code == 200 and body["ok"] is False and body["degradedReason"] == reason
        assert body["citations"] == []
        health = status({}, ctx)
        assert health["healthy"] is False
        assert health["reason"] in (reason, "knowledge_rag_bad_response", "knowledge_rag_unhealthy")
        local = search({"query": "吡咯烷", "topK": 3}, ctx)
        assert local["ok"] and local["results"]  # evidence search never depends on LightRAG
    finally:
        fault.close()


def test_lightrag_stopped_mid_suite(knowledge_site, lightrag):
    _, out, _ = knowledge_site
    ctx = Context(EvidenceDB(out / "evidence.sqlite"), "", LightRagConfig(lightrag.url, timeout=3))
    assert query({"query": "吡咯烷", "mode": "naive"}, ctx)["ok"]
    lightrag.stop()
    try:
        started = time.monotonic()
        down = query({"query": "吡咯烷", "mode": "naive"}, ctx)
        assert time.monotonic() - started < 5
        assert down["ok"] is False and down["degradedReason"] == "knowledge_rag_unavailable"
        asked = ask({"query": "吡咯烷"}, ctx)
        assert asked["ok"] is False and asked["answer"] is None
        mixed = search({"query": "吡咯烷", "topK": 50, "includeOcr": True}, ctx)
        assert mixed["ok"] and mixed["results"] and mixed["degraded"] is True
        assert mixed["degradedReason"] == "knowledge_rag_unavailable"
    finally:
        lightrag.start()
    assert query({"query": "吡咯烷", "mode": "naive"}, ctx)["ok"]


def test_unconfigured_and_rejected(knowledge_site, kctx):
    _, out, _ = knowledge_site
    bare = Context(EvidenceDB(out / "evidence.sqlite"), "", None)
    assert query({"query": "吡咯烷"}, bare)["degradedReason"] == "knowledge_rag_unconfigured"
    code, body = call(lambda r: query(r, kctx), {"query": "ab"})  # LightRAG rejects < 3 characters
    assert code == 400 and "rejected" in body["error"]["message"]
    code, body = call(lambda r: query(r, kctx), {"query": "x", "mode": "deep"})
    assert code == 400 and "mode" in body["error"]["message"]
