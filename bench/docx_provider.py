"""DOCX provider on a >= 2,000-paragraph document against the floor: zipfile + lxml iterparse.

    python bench/docx_provider.py [--paragraphs N]

The floor reads `word/document.xml` once with `iterparse` and collects every
paragraph's text: no styles, no heading paths, no ids. Target: ours <= 5x.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import zipfile
from pathlib import Path

import docx
from lxml import etree

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench._util import interleaved, machine
from mnote_evidence.build.parse.providers.base import ParseInput
from mnote_evidence.build.parse.providers.docx import DocxProvider

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


def make_docx(path: Path, paragraphs: int) -> None:
    document = docx.Document()
    n = 0
    while n < paragraphs:
        document.add_heading(f"Chapter {n // 100 + 1}", level=1)
        for sub in range(4):
            document.add_heading(f"Section {n // 100 + 1}.{sub + 1} 溶剂", level=2)
            for i in range(24):
                document.add_paragraph(f"Paragraph {n} about 吡咯烷 and reagent number {i}; " * 3)
                n += 1
        table = document.add_table(rows=3, cols=3)
        for row in table.rows:
            for cell in row.cells:
                cell.text = f"cell {n}"
    document.save(str(path))


def floor(path: Path) -> int:
    count = 0
    with zipfile.ZipFile(path) as zf, zf.open("word/document.xml") as f:
        for _, el in etree.iterparse(f, tag=f"{W}p"):
            "".join(el.itertext())
            count += 1
            el.clear()
    return count


def ours(path: Path) -> int:
    art = DocxProvider().parse(ParseInput(path.parent, path.name, "sha256:bench"))
    return len(art.blocks)


def naive_python_docx(path: Path) -> int:
    """What we avoid: python-docx's public API with a style-name lookup per paragraph."""
    document = docx.Document(str(path))
    return sum(1 for p in document.paragraphs if p.style.name.startswith("Heading") or p.text)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--paragraphs", type=int, default=2400)
    args = ap.parse_args()
    path = Path(tempfile.mkdtemp()) / "long.docx"
    make_docx(path, args.paragraphs)
    start = machine()
    rows = interleaved({"floor": lambda: floor(path), "ours": lambda: ours(path)}, 7)
    rows.update(interleaved({"naive": lambda: naive_python_docx(path)}, 2))
    t_floor, t_ours, t_naive = (rows[k]["min_s"] for k in ("floor", "ours", "naive"))
    print(
        json.dumps(
            {
                "paragraphs_in_body": floor(path),
                "blocks": ours(path),
                "machine_start": start,
                "machine_end": machine(),
                "floor_zipfile_lxml_iterparse_s": round(t_floor, 4),
                "ours_s": round(t_ours, 4),
                "ours_vs_floor": round(t_ours / t_floor, 2),
                "ours_vs_floor_cpu": round(rows["ours"]["cpu_min_s"] / rows["floor"]["cpu_min_s"], 2),
                "naive_python_docx_style_name_s": round(t_naive, 4),
                "naive_vs_floor": round(t_naive / t_floor, 2),
                "runs": rows,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
