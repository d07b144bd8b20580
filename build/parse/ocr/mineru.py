"""MinerU (remote OCR / layout service), used only when configured and uploads are allowed.

Its "precision extract" flow for a local file (API v4):
1. `POST {url}/api/v4/file-urls/batch` (`Authorization: Bearer <MINERU_TOKEN>`, `{"files": [{"name",
   "is_ocr": true, "data_id"}], "language": "ch"}`) -> `data.batch_id`, `data.file_urls`;
2. `PUT <upload url>` with the file's bytes;
3. poll `GET {url}/api/v4/extract-results/batch/{batch_id}` until `data.extract_result[0].state` is
   `done` (`failed` -> error), then download `full_zip_url`;
4. read its `*content_list.json`: items `{"type", "text", "text_level"?, "page_idx" (0-based), "bbox"}`,
   `bbox` on a 0-1000 grid over the page (top-left origin), converted to the page's own units.
The token is read from the environment only, sent only to the API host (never to the presigned
upload or download URLs), and never written to a file, a log line or an error message.
"""

from __future__ import annotations

import io
import json
import os
import time
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

from mnote_evidence.build.core.model import ProviderError
from mnote_evidence.build.parse.ocr.normalize import OcrLine, normalize_line
from mnote_evidence.build.parse.ocr.settings import OcrSettings

if TYPE_CHECKING:
    import httpx

TOKEN_ENV = "MINERU_TOKEN"
URL_ENV = "MINERU_URL"
VERSION = "mineru-api-v4"
POLL_SECONDS = 1.0
TIMEOUT_SECONDS = 600
GRID = 1000.0


def _config(settings: OcrSettings) -> tuple[str, str]:
    token = os.environ.get(TOKEN_ENV, "").strip()
    if not token:
        raise ProviderError(
            "mineru_token_missing",
            f"MinerU was requested but {TOKEN_ENV} is not set; set it in "
            "the environment (it is never stored) or choose a local OCR engine",
        )
    url = (settings.mineru_url or os.environ.get(URL_ENV, "")).rstrip("/")
    if not url:
        raise ProviderError(
            "mineru_url_missing", f"MinerU was requested but no URL is configured (--mineru-url or {URL_ENV})"
        )
    if not settings.allow_upload:
        raise ProviderError(
            "mineru_upload_not_allowed",
            "MinerU would upload this file to a remote service; pass --allow-upload to permit it",
        )
    return url, token


def _check(resp: httpx.Response, step: str) -> dict:
    if resp.status_code != 200:
        raise ProviderError("mineru_failed", f"MinerU {step}: HTTP {resp.status_code}")
    try:
        body = resp.json()
    except ValueError as exc:
        raise ProviderError("mineru_failed", f"MinerU {step}: response is not JSON") from exc
    if body.get("code") != 0:
        raise ProviderError(
            "mineru_failed", f"MinerU {step}: code {body.get('code')}: {str(body.get('msg'))[:200]}"
        )
    return body.get("data") or {}


def extract(
    path: Path, settings: OcrSettings, page_sizes: dict[int, tuple[float, float]]
) -> dict[int, list[OcrLine]]:
    """OCR lines per 1-based page, boxes in each page's own units."""
    url, token = _config(settings)
    import httpx  # only when MinerU is used: every build imports this module

    try:
        with (
            httpx.Client(base_url=url, timeout=60, headers={"Authorization": f"Bearer {token}"}) as api,
            httpx.Client(timeout=120) as plain,
        ):
            data = _check(
                api.post(
                    "/api/v4/file-urls/batch",
                    json={
                        "files": [{"name": path.name, "is_ocr": True, "data_id": path.name}],
                        "language": "ch",
                    },
                ),
                "upload request",
            )
            batch, upload = data.get("batch_id"), (data.get("file_urls") or [None])[0]
            if not batch or not upload:
                raise ProviderError("mineru_failed", "MinerU upload request: no batch_id or upload URL")
            put = plain.put(upload, content=path.read_bytes())
            if put.status_code not in (200, 201, 204):
                raise ProviderError("mineru_failed", f"MinerU upload: HTTP {put.status_code}")
            zip_url = _wait(api, batch)
            archive = plain.get(zip_url)
            if archive.status_code != 200:
                raise ProviderError("mineru_failed", f"MinerU result download: HTTP {archive.status_code}")
    except httpx.HTTPError as exc:
        raise ProviderError("mineru_failed", f"MinerU unreachable: {type(exc).__name__}") from None
    return _content_lines(archive.content, page_sizes)


def _wait(api: httpx.Client, batch: str) -> str:
    deadline = time.monotonic() + TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        data = _check(api.get(f"/api/v4/extract-results/batch/{batch}"), "status")
        result = (data.get("extract_result") or [{}])[0]
        state = result.get("state")
        if state == "done" and result.get("full_zip_url"):
            return result["full_zip_url"]
        if state == "failed":
            raise ProviderError(
                "mineru_failed", f"MinerU could not parse the file: {str(result.get('err_msg'))[:200]}"
            )
        time.sleep(POLL_SECONDS)
    raise ProviderError("mineru_timeout", f"MinerU did not finish within {TIMEOUT_SECONDS} s")


def _content_lines(zip_bytes: bytes, page_sizes: dict[int, tuple[float, float]]) -> dict[int, list[OcrLine]]:
    try:
        with zipfile.ZipFile(io.BytesIO(zip_bytes)) as zf:
            name = next(n for n in zf.namelist() if n.endswith("content_list.json"))
            items = json.loads(zf.read(name))
    except (zipfile.BadZipFile, StopIteration, ValueError) as exc:
        raise ProviderError("mineru_bad_result", "MinerU result has no readable content_list.json") from exc
    out: dict[int, list[OcrLine]] = {}
    for item in items:
        text = normalize_line(str(item.get("text") or ""))
        page = int(item.get("page_idx", 0)) + 1
        bbox = item.get("bbox")
        if not text or page not in page_sizes or not (isinstance(bbox, list) and len(bbox) == 4):
            continue
        w, h = page_sizes[page]
        box = [
            round(bbox[0] / GRID * w, 2),
            round(bbox[1] / GRID * h, 2),
            round(bbox[2] / GRID * w, 2),
            round(bbox[3] / GRID * h, 2),
        ]
        out.setdefault(page, []).append(OcrLine(text, box, 1.0))
    return out
