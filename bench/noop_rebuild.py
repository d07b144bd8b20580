"""No-op rebuild against a full build on a workspace of >= 500 resources.

    python bench/noop_rebuild.py [--copies N]

The workspace is N copies of content_fixtures/ (20 files each, so 25 copies =
500 resources), each copy's binary files made distinct by a trailing comment
so nothing is deduplicated. Full build = empty output and no sidecars; no-op
rebuild = the same command again. Target: no-op <= 5 % of full.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from mnote_evidence.build.pipeline import BuildOptions, build

FIXTURES = Path(__file__).resolve().parent.parent / "content_fixtures"


def make_workspace(root: Path, copies: int) -> int:
    for i in range(copies):
        dest = root / f"copy-{i:03d}"
        shutil.copytree(FIXTURES, dest)
        for pdf in dest.rglob("*.pdf"):
            if pdf.stat().st_size > 100:
                pdf.write_bytes(pdf.read_bytes() + f"\n% copy {i}\n".encode())
    return sum(1 for p in root.rglob("*") if p.is_file())


def timed_build(root: Path, out: Path, jobs: int):
    t = time.perf_counter()
    report = build(root, BuildOptions(out=out, jobs=jobs))
    return time.perf_counter() - t, report


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", type=int, default=25)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp())
    root, out = base / "ws", base / "out"
    files = make_workspace(root, args.copies)
    full, report = timed_build(root, out, args.jobs)
    noops = [timed_build(root, out, args.jobs) for _ in range(3)]
    noop = min(t for t, _ in noops)
    assert not any(r.changed for _, r in noops)
    # one edited note: the incremental case
    note = root / "copy-000/Archive/Old Ideas.md"
    note.write_text(note.read_text("utf-8") + "\nOne more line.\n", "utf-8")
    edit, _ = timed_build(root, out, args.jobs)
    print(
        json.dumps(
            {
                "resources": files,
                "blocks_total": report.status_counts,
                "jobs": args.jobs,
                "full_build_s": round(full, 3),
                "noop_rebuild_s": round(noop, 3),
                "noop_vs_full_percent": round(noop / full * 100, 2),
                "one_note_edit_rebuild_s": round(edit, 3),
            },
            indent=2,
        )
    )
    shutil.rmtree(base)


if __name__ == "__main__":
    main()
