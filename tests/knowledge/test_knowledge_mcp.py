"""knowledge_query and knowledge_status as MCP tools over stdio, against a real lightrag-server:
cited passages with `citationMarkdown` links in the text, the same citations as the handler."""

from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from mnote_evidence.build.knowledge.lightrag import LightRagConfig
from mnote_evidence.functions.core.contracts import Context
from mnote_evidence.functions.core.db import EvidenceDB
from mnote_evidence.functions.handlers.knowledge import query
from tests.conftest import CHEM_DOCX
from tests.knowledge.conftest import API_KEY

SITE_URL = "https://kb.example.org/"
QUESTION = {"query": "吡咯烷", "mode": "naive", "topK": 8}


def test_cited_retrieval_over_mcp(knowledge_site, lightrag, tmp_path):
    _, out, _ = knowledge_site
    env = {
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
        "LIGHTRAG_URL": lightrag.url,
        "LIGHTRAG_API_KEY": API_KEY,
    }
    params = StdioServerParameters(
        command=sys.executable,
        env=env,
        args=["-m", "mnote_evidence", "mcp", str(out), "--site-url", SITE_URL],
    )

    async def go():
        with open(tmp_path / "stderr", "w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                return (
                    await session.call_tool("knowledge_status", {}),
                    await session.call_tool("knowledge_query", QUESTION),
                )

    with ThreadPoolExecutor(
        1
    ) as pool:  # a thread of its own: another test may leave an event loop running here
        status, answer = pool.submit(anyio.run, go).result()
    assert status.is_error is False and status.structured_content["healthy"] is True
    assert answer.is_error is False
    body = answer.structured_content
    assert body["ok"] and body["degraded"] is False and body["citations"]
    direct = query(
        QUESTION, Context(EvidenceDB(out / "evidence.sqlite"), SITE_URL, LightRagConfig(lightrag.url, 20))
    )
    assert [c["citationId"] for c in body["citations"]] == [c["citationId"] for c in direct["citations"]]
    text = answer.content[0].text
    for c in body["citations"]:
        assert c["citationUrl"].startswith(SITE_URL) and c["citationMarkdown"] in text
    assert any(c["sourcePath"] == CHEM_DOCX for c in body["citations"])
    assert API_KEY not in text and API_KEY not in (tmp_path / "stderr").read_text()
