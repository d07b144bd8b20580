"""MCP `evidence_search` round trip over stdio vs the same handler called in-process, same queries, same run.

    python bench/mcp_roundtrip.py [--site SITE_DIR] [--rounds R] [--http]

Target: protocol overhead <= 5 ms p50 on stdio. The site is the sample workspace
(content_fixtures) built into bench/_work/mcp-site unless --site names a built site.
In-process = `routes.run(evidence_search route, ctx, request)` in this process: validation,
one DB session, the handler, `errors.call` (what every adapter runs). MCP = the SDK's stdio client
calling `evidence_search` on a real `mnote-evidence mcp SITE` process (one session, warmed up):
JSON-RPC framing, pydantic models both ends, a worker-thread hop, the same handler, the text
rendering. The two are interleaved query by query, so machine load hits both alike;
overhead = MCP p50 - in-process p50 (and per query, the median of the paired differences).
On a loaded machine wall time is mostly waiting for a core, so CPU time is reported too (it does
not depend on load): client + server process CPU per MCP call vs the handler's CPU in-process.
--http adds the streamable HTTP transport (a `mnote-evidence mcp --http` process) for comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from mnote_evidence.functions.core.contracts import Context
from mnote_evidence.functions.core.db import EvidenceDB
from mnote_evidence.functions.handlers.routes import BY_TOOL, run
from tests.conftest import copy_workspace, run_build
from tests.servers import free_port, wait_until_up

WORK = Path(__file__).resolve().parent / "_work"
QUERIES = [
    "retention period seven years",
    "吡咯烷",
    "线程作用域",
    "thread",
    "evidence",
    "吗啉",
    "borrow checker",
    "archive tier capacity",
    "溶剂",
    "citation",
]


def pct(samples: list[float], p: int) -> float:
    return round(statistics.quantiles(samples, n=100)[p - 1] * 1000, 2)


def site_dir(given: str | None) -> Path:
    if given:
        return Path(given)
    site, workspace = WORK / "mcp-site", WORK / "mcp-ws"
    if not workspace.is_dir():
        copy_workspace(workspace)
    run_build(
        workspace, site, site=True
    )  # incremental: a no-op when current, a rebuild after a schema change
    return site


def server_cpu() -> float:
    """CPU seconds used so far by this process's children (the MCP server)."""
    import psutil

    return sum(sum(c.cpu_times()[:2]) for c in psutil.Process().children(recursive=True))


async def measure(session, ctx: Context, rounds: int) -> tuple:
    route = BY_TOOL["evidence_search"]
    for q in QUERIES:  # warm-up: page cache, connections, imports on both sides
        await session.call_tool("evidence_search", {"query": q})
        run(route, ctx, {"query": q})
    mcp, local, paired = [], [], []
    mcp_cpu = local_cpu = 0.0
    server_before = server_cpu()
    for _ in range(rounds):
        for q in QUERIES:
            c, t = time.process_time(), time.perf_counter()
            result = await session.call_tool("evidence_search", {"query": q, "topK": 10})
            a, mcp_cpu = time.perf_counter() - t, mcp_cpu + time.process_time() - c
            assert not result.is_error, result.content
            c, t = time.process_time(), time.perf_counter()
            status, _ = run(route, ctx, {"query": q, "topK": 10})
            b, local_cpu = time.perf_counter() - t, local_cpu + time.process_time() - c
            assert status == 200
            mcp.append(a)
            local.append(b)
            paired.append(a - b)
    calls = len(mcp)
    cpu = {
        "client_per_call_ms": round(mcp_cpu / calls * 1000, 2),
        "server_per_call_ms": round((server_cpu() - server_before) / calls * 1000, 2),
        "handler_in_process_per_call_ms": round(local_cpu / calls * 1000, 2),
    }
    return mcp, local, paired, cpu


def summary(mcp: list[float], local: list[float], paired: list[float], cpu: dict) -> dict:
    cpu["overhead_per_call_ms"] = round(
        cpu["client_per_call_ms"] + cpu["server_per_call_ms"] - cpu["handler_in_process_per_call_ms"], 2
    )
    return {
        "mcp_ms": {"p50": pct(mcp, 50), "p95": pct(mcp, 95)},
        "in_process_ms": {"p50": pct(local, 50), "p95": pct(local, 95)},
        "overhead_p50_ms": round(pct(mcp, 50) - pct(local, 50), 2),
        "paired_overhead_ms": {"p50": pct(paired, 50), "p95": pct(paired, 95)},
        "cpu": cpu,
    }


def main() -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamable_http_client

    ap = argparse.ArgumentParser()
    ap.add_argument("--site")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--http", action="store_true")
    args = ap.parse_args()
    site = site_dir(args.site)
    ctx = Context(EvidenceDB(site / "evidence.sqlite"))
    env = {"PYTHONPATH": os.environ.get("PYTHONPATH", str(Path(__file__).resolve().parent.parent))}
    out: dict = {
        "site": str(site) if args.site else "content_fixtures (sample workspace)",
        "queries": len(QUERIES),
        "rounds": args.rounds,
        "calls": len(QUERIES) * args.rounds,
    }

    async def stdio() -> tuple:
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "mnote_evidence", "mcp", str(site)], env=env
        )
        async with stdio_client(params) as (r, w), ClientSession(r, w) as session:
            await session.initialize()
            return await measure(session, ctx, args.rounds)

    out["stdio"] = summary(*anyio.run(stdio))
    if args.http:
        port = free_port()
        proc = subprocess.Popen(
            [sys.executable, "-m", "mnote_evidence", "mcp", str(site), "--http", "--port", str(port)],
            env={**os.environ, **env},
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_until_up(f"http://127.0.0.1:{port}/mcp", proc)

            async def http() -> tuple:
                async with (
                    streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (r, w),
                    ClientSession(r, w) as session,
                ):
                    await session.initialize()
                    return await measure(session, ctx, args.rounds)

            out["streamable_http"] = summary(*anyio.run(http))
        finally:
            proc.terminate()
            proc.wait()
    out["load_average"] = [round(x, 1) for x in os.getloadavg()]
    out["target_met"] = out["stdio"]["overhead_p50_ms"] <= 5
    print(json.dumps(out, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
