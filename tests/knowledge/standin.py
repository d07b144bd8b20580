"""A small local stand-in for the model endpoints a real `lightrag-server` calls (loopback only).

No hosted model is reachable here, so the test suite runs LightRAG against this:
- `POST /v1/embeddings`: deterministic vectors: hashed bag of words plus CJK
  characters and bigrams, L2-normalised; base64 little-endian float32 by default
  (what LightRAG asks for) or float lists;
- `POST /v1/chat/completions`: keyword-extraction prompts (`---Output---`) get
  the query's words back as keywords; entity-extraction prompts (an
  `---Input Text---` block) get one entity per capitalised word or CJK run, so
  graph modes have something to traverse; anything else gets a fixed answer that
  cites reference [1] and a reference [9] that does not exist (the Ask page
  must drop invented ids).
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import struct
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DIM = 64
ANSWER = "Stand-in answer: see the cited passage [1]; a model-invented reference [9] must not become a badge."
_WORD = re.compile(r"[A-Za-z0-9]+")
_CJK = re.compile(r"[\u4e00-\u9fff]+")


def embed(text: str) -> list[float]:
    features = [w.lower() for w in _WORD.findall(text)]
    for run in _CJK.findall(text):
        features.extend(run)
        features.extend(run[i : i + 2] for i in range(len(run) - 1))
    vec = [0.0] * DIM
    for f in features or ["<empty>"]:
        h = int(hashlib.md5(f.encode()).hexdigest(), 16)
        vec[h % DIM] += 1.0 if (h >> 8) & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vec)) or 1.0
    return [v / norm for v in vec]


def _keywords(prompt: str) -> str:
    query = prompt.rsplit("---Output---", 1)[0]
    # the query itself, not the prompt's template words (`Output`, `Format`, `JSON`) before it
    query = query.rsplit("User Query:", 1)[1] if "User Query:" in query else query[-400:]
    words = sorted({w for w in _WORD.findall(query) if len(w) > 3} | set(_CJK.findall(query)))[:8]
    return json.dumps({"high_level_keywords": words[:3], "low_level_keywords": words})


def _entities(prompt: str) -> str:
    # the last `---Input Text---` is the chunk's (the system prompt's examples hold one too), up to its
    # `---Output---`: the names are the chunk's own words
    text = prompt.rsplit("---Input Text---", 1)[1].split("---Output---", 1)[0][:4000]
    names = sorted({w for w in re.findall(r"\b[A-Z][a-zA-Z]{3,}\b", text)} | set(_CJK.findall(text)[:5]))[:6]
    rows = [f"entity<|#|>{n}<|#|>concept<|#|>{n} appears in the text." for n in names]
    if len(names) >= 2:
        rows.append(
            f"relation<|#|>{names[0]}<|#|>{names[1]}<|#|>mentions<|#|>{names[0]} and {names[1]} co-occur."
        )
    return "\n".join(rows + ["<|COMPLETE|>"])


def reply_for(messages: list[dict]) -> str:
    prompt = "\n".join(str(m.get("content", "")) for m in messages)
    if "---Input Text---" in prompt:
        return _entities(prompt)
    if "---Output---" in prompt and "keywords" in prompt.lower():
        return _keywords(prompt)
    return ANSWER


class StandIn:
    def __init__(self):
        self.calls = {"embeddings": 0, "chat": 0}
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):
                req = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                if self.path.endswith("/embeddings"):
                    owner.calls["embeddings"] += 1
                    inputs = req.get("input")
                    inputs = [inputs] if isinstance(inputs, str) else inputs
                    b64 = req.get("encoding_format", "base64") == "base64"
                    data = []
                    for i, text in enumerate(inputs):
                        vec = embed(text)
                        value = base64.b64encode(struct.pack(f"<{DIM}f", *vec)).decode() if b64 else vec
                        data.append({"object": "embedding", "index": i, "embedding": value})
                    return self._send(
                        {
                            "object": "list",
                            "data": data,
                            "model": req.get("model"),
                            "usage": {"prompt_tokens": 1, "total_tokens": 1},
                        }
                    )
                if self.path.endswith("/chat/completions"):
                    owner.calls["chat"] += 1
                    content = reply_for(req.get("messages", []))
                    if req.get("stream"):
                        chunk = {
                            "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": "stop"}]
                        }
                        data = f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode()
                        self.send_response(200)
                        self.send_header("Content-Type", "text/event-stream")
                        self.send_header("Content-Length", str(len(data)))
                        self.end_headers()
                        self.wfile.write(data)
                        return
                    return self._send(
                        {
                            "id": "standin",
                            "object": "chat.completion",
                            "model": req.get("model"),
                            "choices": [
                                {
                                    "index": 0,
                                    "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": content},
                                }
                            ],
                            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                        }
                    )
                self.send_response(404)
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
