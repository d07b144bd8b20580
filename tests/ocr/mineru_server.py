"""A small local stand-in for the MinerU v4 API (loopback only), speaking its documented shapes.

It records every request (path, whether it carried the Authorization header) so
tests can check the token only ever goes to the API endpoints.
"""

from __future__ import annotations

import io
import json
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOKEN = "test-mineru-token-5f9c2e"


class MinerUStub:
    def __init__(self, content_list: list[dict], fail: str | None = None):
        self.content_list = content_list
        self.fail = fail  # None | "state" | "http"
        self.requests: list[tuple[str, str, bool]] = []
        self.uploaded: bytes | None = None
        self.polls = 0
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def _json(self, status: int, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _record(self) -> bool:
                authed = self.headers.get("Authorization") == f"Bearer {TOKEN}"
                stub.requests.append((self.command, self.path, "Authorization" in self.headers))
                return authed

            def do_POST(self):
                authed = self._record()
                length = int(self.headers.get("Content-Length", 0))
                self.rfile.read(length)
                if self.path != "/api/v4/file-urls/batch":
                    return self._json(404, {"code": -1, "msg": "not found"})
                if not authed:
                    return self._json(401, {"code": -10001, "msg": "unauthorized"})
                if stub.fail == "http":
                    return self._json(500, {"code": -1, "msg": "boom"})
                base = f"http://127.0.0.1:{stub.port}"
                self._json(
                    200,
                    {
                        "code": 0,
                        "msg": "ok",
                        "data": {"batch_id": "batch-1", "file_urls": [base + "/upload/one"]},
                    },
                )

            def do_PUT(self):
                self._record()
                stub.uploaded = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_GET(self):
                authed = self._record()
                if self.path.startswith("/api/v4/extract-results/batch/"):
                    if not authed:
                        return self._json(401, {"code": -10001, "msg": "unauthorized"})
                    stub.polls += 1
                    if stub.fail == "state":
                        result = {"state": "failed", "err_msg": "unreadable file"}
                    elif stub.polls < 2:
                        result = {"state": "running"}
                    else:
                        result = {"state": "done", "full_zip_url": f"http://127.0.0.1:{stub.port}/result.zip"}
                    return self._json(
                        200, {"code": 0, "data": {"batch_id": "batch-1", "extract_result": [result]}}
                    )
                if self.path == "/result.zip":
                    buf = io.BytesIO()
                    with zipfile.ZipFile(buf, "w") as zf:
                        zf.writestr("full.md", "# ignored")
                        zf.writestr(
                            "abc_content_list.json", json.dumps(stub.content_list, ensure_ascii=False)
                        )
                    data = buf.getvalue()
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                self._json(404, {"code": -1})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> MinerUStub:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
