"""Regenerate `content_fixtures/`: a realistic sample workspace (committed as files).

    python tests/make_fixtures.py

Real PDFs are laid out by PyMuPDF's Story (HTML -> PDF, real fonts incl. CJK),
the Word file is written by python-docx (plus `w14:paraId`s, as Word writes),
the screenshot is rendered with PyMuPDF's CJK font. Facts the tests rely on
(where the image text was drawn, ...) are written to `tests/fixture_facts.json`.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import docx
import pymupdf
from docx.shared import Pt

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent / "content_fixtures"
W14 = "{http://schemas.microsoft.com/office/word/2010/wordml}paraId"

CSS = """
body { font-family: sans-serif; font-size: 10.5pt; line-height: 1.35; }
h1 { font-size: 20pt; } h2 { font-size: 15pt; } h3 { font-size: 12.5pt; }
table { border-collapse: collapse; } td, th { border: 1px solid #888; padding: 2px 4px; font-size: 9.5pt; }
"""

LOREM = (
    "Every evidence block keeps the page it was found on and the box it occupies, so a reader "
    "can jump from a citation to the exact place in the original document instead of a file name. "
)


def write_story_pdf(path: Path, html: str, toc: bool) -> None:
    story = pymupdf.Story(html=html, user_css=CSS)
    writer = pymupdf.DocumentWriter(str(path))
    media = pymupdf.paper_rect("a4")
    more = 1
    while more:
        device = writer.begin_page(media)
        more, _ = story.place(media + (56, 56, -56, -56))
        story.draw(device)
        writer.end_page()
    writer.close()
    doc = pymupdf.open(str(path))
    doc.set_metadata(
        {
            "title": "Evidence Kernel Specification",
            "producer": "mnote-evidence fixtures",
            "creationDate": "D:20261101000000",
            "modDate": "D:20261101000000",
        }
    )
    if toc:
        entries = []
        for level, title in TOC:
            for pno, page in enumerate(doc, start=1):
                if page.search_for(title):
                    entries.append([level, title, pno])
                    break
        doc.set_toc(entries)
    doc.subset_fonts()  # embed only the glyphs used (the CJK font is megabytes otherwise)
    tmp = path.with_suffix(".tmp")
    doc.save(str(tmp), garbage=3, deflate=True, no_new_id=True)
    doc.close()
    tmp.replace(path)


TOC = [
    (1, "1 Introduction"),
    (1, "2 Architecture"),
    (2, "2.1 Providers"),
    (2, "2.2 The evidence index"),
    (1, "3 Retention policy"),
    (1, "4 Provider matrix"),
    (1, "5 线程作用域与并发"),
]


def spec_pdf_html() -> str:
    rows = "".join(
        f"<tr><td>format-{i:02d}</td><td>{'PyMuPDF' if i % 3 else 'python-docx'}</td>"
        f"<td>{['bbox', 'paragraph', 'line'][i % 3]}</td><td>{10 + i * 7} ms</td></tr>"
        for i in range(1, 41)
    )
    return (
        f"""
<h1>Evidence Kernel Specification</h1>
<p>Version 1.0, November 2026. Internal design document.</p>
<h2>1 Introduction</h2>
<p>{LOREM * 3}</p>
<p>{LOREM * 2}</p>
<h2>2 Architecture</h2>
<p>The kernel reads a workspace of notes and attachments and produces one parsed artifact per resource.</p>
<h3>2.1 Providers</h3>
<p>{LOREM * 3}</p>
<p>A provider never writes the index; it returns an artifact that the indexer consumes.</p>
<h3>2.2 The evidence index</h3>
<p>{LOREM * 4}</p>
<p>{LOREM * 3}</p>
<h2>3 Retention policy</h2>
<p>The retention period for audit evidence is seven years from the end of the fiscal year.</p>
<p>{LOREM * 2}</p>
<h2>4 Provider matrix</h2>
<p>The matrix below lists every format with its provider, locator precision and median parse time.</p>
<table><tr><th>Format</th><th>Provider</th><th>Precision</th><th>Median time</th></tr>{rows}</table>
<h2>5 线程作用域与并发</h2>
<p>线程作用域（Thread scope）保证在作用域结束前，所有借用局部变量的线程都已结束，"""
        """因此可以安全地借用栈上的数据。</p>
<p>Scoped threads may borrow local variables because the scope joins every thread before it returns.</p>
"""
    )


def orphan_pdf_html() -> str:
    return f"""
<h1>Quarterly Storage Report</h1>
<p>This report was exported from the storage dashboard and never linked from a note.</p>
<h2>Capacity</h2>
<p>Total capacity grew to 48 TiB; the archive tier holds 61 percent of all evidence files.</p>
<h2>Incidents</h2>
<p>One incident: a nightly job skipped encrypted PDFs for three days before the alert fired.</p>
<p>{LOREM}</p>
"""


def write_docx(path: Path) -> None:
    document = docx.Document()
    document.core_properties.author = "fixtures"
    style = document.styles["Normal"]
    style.font.size = Pt(11)
    document.add_heading("溶剂与杂环化合物笔记", level=1)
    document.add_paragraph("本文记录实验室常用溶剂与含氮杂环的性质，供检索与引用测试使用。")
    document.add_heading("含氮杂环", level=2)
    document.add_heading("吡咯烷", level=3)
    document.add_paragraph(
        "吡咯烷（pyrrolidine，又称四氢吡咯）是含一个氮原子的五元饱和杂环，沸点 87 °C。"
        "吡咯烷碱性较强，常作为有机合成中的仲胺试剂，例如与环己酮缩合生成烯胺。"
    )
    document.add_heading("极性溶剂", level=3)
    document.add_paragraph(
        "N-甲基吡咯烷酮（NMP）是一种强极性非质子溶剂，沸点 202 °C，能与水混溶，"
        "广泛用于锂电池正极浆料和聚合物加工。使用 N-甲基吡咯烷酮时应注意其生殖毒性。"
    )
    document.add_heading("吗啉", level=3)
    document.add_paragraph("吗啉是一种同时含氧和氮的六元杂环，常用作溶剂、缓蚀剂和橡胶助剂。")
    document.add_heading("有机硅试剂", level=2)
    document.add_paragraph(
        "三乙基硅烷（Et3SiH，三乙基硅）是温和的负氢供体，常与三氟乙酸配合用于还原碳正离子。"
    )
    document.add_paragraph("三甲基硅基（TMS，三甲基硅）常用作醇羟基的保护基，可用四丁基氟化铵在室温下脱除。")
    document.add_paragraph("")  # an empty paragraph still counts in paragraph ordinals
    document.add_heading("常用数据表", level=2)
    table = document.add_table(rows=1, cols=3)
    for cell, text in zip(table.rows[0].cells, ["名称", "沸点 (°C)", "用途"]):
        cell.text = text
    for name, bp, use in [
        ("吡咯烷", "87", "仲胺试剂"),
        ("N-甲基吡咯烷酮", "202", "极性溶剂"),
        ("吗啉", "129", "缓蚀剂"),
        ("三乙基硅烷", "107", "还原剂"),
    ]:
        cells = table.add_row().cells
        cells[0].text, cells[1].text, cells[2].text = name, bp, use
    document.add_paragraph("表中沸点为常压数据，来源于供应商安全技术说明书。")
    for n, p in enumerate(
        document.element.body.iter("{http://schemas.openxmlformats.org/wordprocessingml/2006/main}p"), start=1
    ):
        p.set(W14, f"{0x1A2B0000 + n:08X}")
    document.save(str(path))


def write_image(path: Path) -> dict:
    """A 'screenshot' with 线程作用域 Thread scope; returns where the text was drawn (pixels)."""
    doc = pymupdf.open()
    page = doc.new_page(width=800, height=180)
    page.draw_rect(page.rect, color=None, fill=(1, 1, 1))
    page.insert_text(
        (24, 40), "Rust 并发笔记 — screenshot", fontname="china-s", fontsize=16, color=(0.3, 0.3, 0.3)
    )
    origin = (24, 110)
    page.insert_text(origin, "线程作用域 Thread scope", fontname="china-s", fontsize=36)
    box = page.search_for("线程作用域")[0]
    pix = page.get_pixmap(dpi=72)
    pix.save(str(path))
    return {
        "width": pix.width,
        "height": pix.height,
        "text": "线程作用域",
        "bbox": [round(v, 1) for v in (box.x0, box.y0, box.x1, box.y1)],
    }


def write_encrypted_pdf(path: Path) -> None:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "Confidential salary table.")
    doc.save(
        str(path), encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="secret", owner_pw="owner", no_new_id=True
    )


NOTES = {
    "README.md": """# Welcome to the evidence workspace

This folder is a realistic sample for mnote-evidence. Start with [[Evidence Kernel]] or the
chemistry notes in [化学笔记](研究/化学笔记.md).

- Daily logs: [[2026-11-02]] and [[2026-11-03]]
- Concurrency notes: [Rust 并发](研究/Rust%20并发.md)
- Old material lives in [the archive](Archive/Old%20Ideas.md).
""",
    "Projects/Evidence Kernel.md": """# Evidence Kernel

The kernel specification is attached: [spec](Evidence%20Kernel.assets/evidence-kernel-spec.pdf).

## Decisions

- Sidecars are the truth for parse results; the index is a cache.
- The retention period for audit evidence comes from section 3 of the spec.

## Related

See the [[Kickoff]] meeting and the [[README|workspace home]].
""",
    "Projects/Meeting Notes/Kickoff.md": """# Kickoff meeting

Attendees agreed to cite the spec by page and box. Back to [Evidence Kernel](../Evidence%20Kernel.md).

> Decision: every citation must open the exact place in the static site.

| Owner | Action |
|-------|--------|
| Lin | Build the PDF provider |
| Sam | Write the DOCX provider |
""",
    "研究/化学笔记.md": """# 化学笔记

实验记录附件：[溶剂与杂环](化学笔记.assets/溶剂与杂环.docx)。

## 待办

1. 核对吡咯烷与 N-甲基吡咯烷酮的沸点。
2. 补充吗啉的毒理数据。

另见 [[Rust 并发]]（无关，但在同一文件夹）。
""",
    "研究/Rust 并发.md": """# Rust 并发

![线程作用域截图](Rust%20并发.assets/thread-scope.png)

`std::thread::scope` 创建线程作用域：作用域结束前所有线程都会被 join。

```rust
std::thread::scope(|s| {
    s.spawn(|| println!("hello from a scoped thread"));
});
```
""",
    "Daily/2026-11-02.md": """# 2026-11-02

Read the [[Evidence Kernel]] spec; the provider matrix table spans a page break.
""",
    "Daily/2026-11-03.md": """# 2026-11-03

Follow-up to [[2026-11-02]]: chemistry notes moved to [[化学笔记]].
Broken files for testing are collected in [[Broken Files]].
""",
    "Archive/Old Ideas.md": """# Old ideas

An early idea was to OCR every PDF. Text PDFs do not need OCR: their text layer has positions.

## Rejected

- Storing citations as file names only.
""",
    # Obsidian-flavoured Markdown: every construct docs/guides/obsidian.md lists
    "Obsidian/Project Plan.md": """---
title: Project Plan 2027
aliases: [Roadmap, The Plan]
tags: [planning, project/alpha]
---
# Plan

The kernel ships in March. ^ship-date

> [!warning] Budget risk
> Storage costs may double #risk
> if OCR runs twice.

> [!tip]- Folded hint
> Open me for the ==one rule== of the plan.

- [x] Write the spec ^spec-task
- [ ] Review the parser

Energy is $E = mc^2$ and the fit is:

$$
\\sigma = \\sqrt{\\frac{1}{n}\\sum_i x_i^2}
$$

A claim with a source.[^src]

## Open questions

- Which pages need OCR? #research
- Is `#not-a-tag` in code left alone?

[^src]: The source is the kickoff meeting.
""",
    "Obsidian/Review.md": """# Review

Dates come from [[Project Plan#^ship-date]], questions from [[Project Plan#Open questions]],
and the [[Roadmap|roadmap alias]] resolves too. #planning

![[Project Plan#Open questions]]

![[Project Plan#^spec-task]]

![[thread-scope.png]]

![[evidence-kernel-spec.pdf#page=2]]

Broken on purpose: [[No Such Note]] and [[Project Plan#No such heading]] and [[Project Plan#^nope]].

Back to the top of this note: [[#Review]].
""",
    "Inbox/Broken Files.md": """# Broken files

Each of these must become a recorded error, never a crash:

- [corrupt](Broken%20Files.assets/corrupt.pdf)
- [encrypted](Broken%20Files.assets/encrypted.pdf)
- [empty](Broken%20Files.assets/empty.pdf)
- [html posing as pdf](Broken%20Files.assets/not-really.pdf)
- [not a zip](Broken%20Files.assets/not-a-zip.docx)
- [outside the root](../../etc/passwd)
""",
}


def main() -> None:
    if ROOT.exists():
        shutil.rmtree(ROOT)
    for rel, text in NOTES.items():
        path = ROOT / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    # A note saved in Latin-1 by an old editor: decoded with replacement + a warning.
    (ROOT / "Inbox/Legacy Note.md").write_bytes(
        "# Café notes\n\nCrème brûlée recipe, 1998.\n".encode("latin-1")
    )

    spec = ROOT / "Projects/Evidence Kernel.assets/evidence-kernel-spec.pdf"
    spec.parent.mkdir(parents=True, exist_ok=True)
    write_story_pdf(spec, spec_pdf_html(), toc=True)
    orphan = ROOT / "Unfiled/orphan-report.pdf"
    orphan.parent.mkdir(parents=True, exist_ok=True)
    write_story_pdf(orphan, orphan_pdf_html(), toc=False)
    (ROOT / "Unfiled/budget.csv").write_text("item,amount\nstorage,1200\n", encoding="utf-8")

    chem = ROOT / "研究/化学笔记.assets/溶剂与杂环.docx"
    chem.parent.mkdir(parents=True, exist_ok=True)
    write_docx(chem)

    image = ROOT / "研究/Rust 并发.assets/thread-scope.png"
    image.parent.mkdir(parents=True, exist_ok=True)
    image_facts = write_image(image)

    broken = ROOT / "Inbox/Broken Files.assets"
    broken.mkdir(parents=True, exist_ok=True)
    (broken / "corrupt.pdf").write_bytes(spec.read_bytes()[:4000])  # truncated mid-stream
    write_encrypted_pdf(broken / "encrypted.pdf")
    (broken / "empty.pdf").write_bytes(b"")
    (broken / "not-really.pdf").write_text("<html><body><h1>404 Not Found</h1></body></html>\n")
    (broken / "not-a-zip.docx").write_text("This was saved as plain text with a .docx name.\n")

    facts = {"image": {"path": str(image.relative_to(ROOT).as_posix()), **image_facts}}
    (HERE / "fixture_facts.json").write_text(json.dumps(facts, ensure_ascii=False, indent=1) + "\n")
    print(f"wrote {sum(1 for p in ROOT.rglob('*') if p.is_file())} files under {ROOT}")


if __name__ == "__main__":
    main()
