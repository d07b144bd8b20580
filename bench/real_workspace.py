"""A workspace of real documents for the citation benchmarks (git-ignored, in bench/_work/real/).

    python bench/real_workspace.py          # assemble + build + ingest into a real lightrag-server

Sources (all freely licensed, none committed: see tests/real_documents/ for the small committed set):
- Debian documentation PDFs: the R manuals (r-doc-pdf, when installed), libtasn1-doc, shared-mime-info,
  and gnuplot.pdf from `apt-get download gnuplot-doc` + `dpkg-deb -x` (bench/_work/debs/);
- python-docx's own test .docx files (MIT), read from a local git mirror of python-openxml/python-docx
  (`PYTHON_DOCX_GIT`, default /work/.mirror/python-openxml+python-docx/repo) with `git show`;
- the repository's content_fixtures/ notes, PDFs, DOCX and OCR'd image.
The LightRAG working directory persists in bench/_work/real/lightrag/, so a second run re-uses the ingest.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from mnote_evidence.build.knowledge.lightrag import LightRagConfig
from mnote_evidence.build.pipeline import BuildOptions, build
from tests.knowledge.harness import LightRag

HERE = Path(__file__).resolve().parent
WORK = HERE / "_work" / "real"
REPO = HERE.parent
SYSTEM_PDFS = [
    "/usr/share/R/doc/manual/R-FAQ.pdf",
    "/usr/share/R/doc/manual/R-data.pdf",
    "/usr/share/R/doc/manual/R-intro.pdf",
    "/usr/share/R/doc/manual/R-lang.pdf",
    "/usr/share/R/doc/manual/R-admin.pdf",
    "/usr/share/R/doc/manual/R-ints.pdf",
    "/usr/share/doc/libtasn1-doc/libtasn1.pdf",
    "/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf",
]
DOCX_GIT = os.environ.get("PYTHON_DOCX_GIT", "/work/.mirror/python-openxml+python-docx/repo")


def gnuplot_pdf() -> Path | None:
    debs = HERE / "_work" / "debs"
    target = debs / "x/usr/share/doc/gnuplot/gnuplot.pdf"
    if target.exists():
        return target
    debs.mkdir(parents=True, exist_ok=True)
    if subprocess.run(["apt-get", "download", "gnuplot-doc"], cwd=debs, capture_output=True).returncode:
        return None
    deb = next(debs.glob("gnuplot-doc_*.deb"))
    subprocess.run(["dpkg-deb", "-x", str(deb), str(debs / "x")], check=True)
    return target if target.exists() else None


def docx_files() -> dict[str, bytes]:
    if not Path(DOCX_GIT).exists():
        return {}
    names = subprocess.run(
        ["git", "--git-dir", DOCX_GIT, "ls-tree", "-r", "--name-only", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return {
        n: subprocess.run(
            ["git", "--git-dir", DOCX_GIT, "show", f"HEAD:{n}"], capture_output=True, check=True
        ).stdout
        for n in names
        if n.endswith(".docx") and "test_files" in n
    }


def assemble(ws: Path) -> int:
    if ws.exists():
        return sum(
            1 for p in ws.rglob("*") if p.is_file() and ".ocr" not in p.parts and ".mnote" not in p.parts
        )
    shutil.copytree(REPO / "content_fixtures", ws)
    manuals = ws / "Manuals"
    manuals.mkdir()
    for src in SYSTEM_PDFS + [str(gnuplot_pdf() or "")]:
        if src and Path(src).exists():
            shutil.copy(Path(src).resolve(), manuals / Path(src).name)
    for name, data in docx_files().items():
        dest = ws / "python-docx" / name.replace("/", "__")
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)
    return assemble(ws)


def main() -> None:
    ws, out = WORK / "ws", WORK / "out"
    count = assemble(ws)
    server = LightRag(WORK / "lightrag")
    server.start()
    try:
        report = build(
            ws, BuildOptions(out=out, jobs=2, site=True, lightrag=LightRagConfig(server.url, timeout=120))
        )
        print({"files": count, "knowledge": report.knowledge})
    finally:
        server.close()


if __name__ == "__main__":
    main()
