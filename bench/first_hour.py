"""The first hour with a real vault: what a new user sees when one checkout builds an Obsidian vault of real
documents with the default options.

    python bench/first_hour.py --baseline-ref REF    # the release REF (a worktree) and this checkout
    python bench/first_hour.py                       # the same, the worktree bench/_work/first_hour/base kept
    python bench/first_hour.py --tree PATH           # one checkout (repeat --tree; LABEL=PATH names it)

The vault (bench/_work/first_hour/<label>/vault, git-ignored) holds 25 notes written for it (5 in Chinese:
callouts, tasks, note and image embeds, links in properties, %%comments%%, daily notes, a dataview block,
`publish: false` and `draft: true` notes, a folder listed in .mnoteignore, Home.md and no index.md) and 14
real attachments: Debian documentation PDFs (libtasn1-doc, shared-mime-info and, from `apt-get download` +
`dpkg-deb -x` into bench/_work/debs/, maint-guide, maint-guide-zh-cn, debmake-doc), a scanned Chinese PDF,
python-docx's and mammoth's test DOCX and a page rendered as a scan, from tests/real_documents/.

Each tree's `mnote-evidence` CLI (PYTHONPATH = that tree, or this checkout's editable install) builds the
vault into an output folder outside it, then the bench reports, each figure with its denominator:
1. files and folders the build adds to the vault outside dot folders (what a note editor lists), and
   whether `build VAULT --out VAULT/site` is refused, or how many resources the build after it indexes;
2. each canary word's occurrences in the whole output (site, evidence.sqlite, every sidecar), per place
   it was hidden; a control canary in published text must be found;
3. natural-language questions through `search --json` and `ask --json` (no LightRAG), English word-form
   pairs (recall of the other form's hits) and Chinese queries (ids compared between trees);
4. Obsidian syntax on the pages; 5. navigation: explorer, folder pages, favicon, fixture-free placeholders.
Results: bench/results/first_hour.json (one run per label, with its commit), merged with earlier runs;
one JSON on stdout and a short table on stderr.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import posixpath
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from html.parser import HTMLParser
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from bench._util import machine, results_path, wheel_layout  # noqa: E402

WORK = REPO / "bench" / "_work" / "first_hour"
DEBS = REPO / "bench" / "_work" / "debs"
DOCS = REPO / "tests" / "real_documents"
BASE = WORK / "base"  # a git worktree of the release measured beside this checkout
BUILD_TIMEOUT_S = 480

# where each attachment comes from: a system path, or (Debian package, path inside it)
PDFS = {
    "libtasn1.pdf": "/usr/share/doc/libtasn1-doc/libtasn1.pdf",
    "shared-mime-info-spec.pdf": "/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf",
    "maint-guide.en.pdf": ("maint-guide", "usr/share/doc/maint-guide/maint-guide.en.pdf"),
    "maint-guide.zh-cn.pdf": ("maint-guide-zh-cn", "usr/share/doc/maint-guide-zh-cn/maint-guide.zh-cn.pdf"),
    "debmake-doc.en.pdf": ("debmake-doc", "usr/share/doc/debmake-doc/debmake-doc.en.pdf"),
    "gnupg-help-zh_CN.pdf": str(DOCS / "ocr" / "gnupg-help-zh_CN.pdf"),
}
OTHER = {
    "blk-paras-and-tables.docx": DOCS / "python-docx" / "blk-paras-and-tables.docx",
    "par-hlink-frags.docx": DOCS / "python-docx" / "par-hlink-frags.docx",
    "txt-font-props.docx": DOCS / "python-docx" / "txt-font-props.docx",
    "comments-rich-para.docx": DOCS / "python-docx" / "comments-rich-para.docx",
    "footnotes.docx": DOCS / "docx" / "footnotes.docx",
    "mammoth-text-box.docx": DOCS / "docx" / "mammoth-text-box.docx",
    "mammoth-endnotes.docx": DOCS / "docx" / "mammoth-endnotes.docx",
    "shared-mime-info-spec-p2.png": DOCS / "scans" / "shared-mime-info-spec-p2.png",
}

# canary words, each hidden in one place; CONTROL is in published text and must be found
CANARIES = {
    "inline_comment": "quokkainlinecomment",
    "multiline_comment": "quokkablockcomment",
    "publish_false": "quokkaunpublished",
    "draft_true": "quokkadraftnote",
    "ignored_folder": "quokkaignoredfolder",
    "control": "quokkapublishedcontrol",
}
HOME_TEXT = "Welcome to the packaging lab notebook"
EMBEDDED_HEADING = "Distinguished encoding in practice"

NOTES = {
    "Home.md": f"""# Home

{HOME_TEXT}: notes on building Debian packages, ASN.1 and the MIME database.

- [[Packaging]] and the [[Release Checklist]]
- [[ASN.1 Notes]], [[MIME Database]], [[Word Documents]]
- Reading: [[Maint Guide Summary]], [[Glossary]]
- 中文笔记: [[打包笔记]], [[维护者指南]]
- [[Dashboard]] lists the open tasks.
""",
    "Dashboard.md": """---
tags: [dashboard]
---
# Dashboard

```dataview
TASK FROM "Projects" WHERE !completed
```

```dataview
TABLE file.mtime AS "Edited" FROM "Daily" SORT file.name DESC LIMIT 5
```

Open the [[Home]] page for the map of the vault.
""",
    "Projects/Packaging.md": f"""---
tags: [debian, packaging]
related: "[[ASN.1 Notes]]"
status: active
---
# Packaging

> [!note] Where to start
> The maintainers' guide explains `dh_make`, the `debian/` folder and `dpkg-buildpackage`.

The word {CANARIES["control"]} marks published text. Private aside: %%{CANARIES["inline_comment"]} do not
publish this%% and the sentence goes on.

- [x] Read the New Maintainers' Guide: [[maint-guide.en.pdf]]
- [ ] Try debmake on a small upstream tarball: [[debmake-doc.en.pdf]]
- [ ] Check the copyright file format

![[maint-guide.en.pdf]]

See also [[Release Checklist]] and [[Maint Guide Summary]].
""",
    "Projects/ASN.1 Notes.md": f"""---
tags: [asn1]
aliases: [ASN1]
---
# ASN.1 Notes

Libtasn1 parses ASN.1 definitions and encodes values with DER: [[libtasn1.pdf]].

## {EMBEDDED_HEADING}

DER gives one encoding per value, which is what certificates need. The library does not handle the REAL
type.

> [!warning] Tags
> AUTOMATIC TAGS are not supported; write the tags out.

## Functions to remember

- `asn1_create_element`, `asn1_der_coding`, `asn1_der_decoding`
""",
    "Projects/MIME Database.md": """---
tags: [mime]
related: "[[Glossary]]"
---
# MIME Database

The shared MIME-info database spec: [[shared-mime-info-spec.pdf]]. A page of it, photographed:

![[shared-mime-info-spec-p2.png|400]]

> [!tip] Glob weights
> The default glob weight is 50; the highest is 100.

- [ ] Write an `Override.xml` for a local type
""",
    "Projects/Word Documents.md": """# Word Documents

Test documents from python-docx and mammoth, kept as examples of Word files:

- [[blk-paras-and-tables.docx]] (paragraphs and tables)
- [[par-hlink-frags.docx]] (hyperlinks)
- [[txt-font-props.docx]] (font properties)
- [[comments-rich-para.docx]] (comments)
- [[footnotes.docx]], [[mammoth-endnotes.docx]] and [[mammoth-text-box.docx]]
""",
    "Projects/Release Checklist.md": f"""---
tags: [debian, checklist]
---
# Release Checklist

%%
Reviewer notes, not for the site: {CANARIES["multiline_comment"]} the upload slot is not
confirmed yet.
%%

- [ ] Bump `debian/changelog` with `dch`
- [ ] Build in a clean chroot
- [x] Run lintian
- [ ] Sign and upload

> [!important]
> Keep [[Packaging]] open while doing this.
""",
    "Reading/Maint Guide Summary.md": """---
source: "[[maint-guide.en.pdf]]"
related: "[[Packaging]]"
---
# Maint Guide Summary

Chapter 1 lists the programs needed for development: build-essential, debhelper, dh-make, devscripts,
fakeroot, lintian and pbuilder.

> [!quote]
> Making small test packages is a good way to learn the details of packaging.

The Chinese translation: [[maint-guide.zh-cn.pdf]].
""",
    "Reading/Glossary.md": """# Glossary

- **DER**: Distinguished Encoding Rules (see below).
- **glob**: a shell pattern that maps file names to MIME types.
- **quilt**: the patch system behind `debian/patches/`.

![[ASN.1 Notes#Distinguished encoding in practice]]

![[ASN.1 Notes]]
""",
    "Reading/Debian Tools.md": """# Debian Tools

| tool | what for |
| --- | --- |
| `dh_make` | the initial `debian/` folder |
| `debuild` | build and sign |
| `lintian` | policy checks |

Details in [[debmake-doc.en.pdf]] and [[maint-guide.en.pdf]].
""",
    "Reading/Scanned Help.md": """# Scanned Help

A scanned page of the GnuPG help in Chinese: [[gnupg-help-zh_CN.pdf]]. OCR makes it searchable.
""",
    "Meetings/Weekly Sync.md": """---
date: 2024-05-03
attendees: ["[[Home]]"]
---
# Weekly Sync

- [x] Agree on the package name
- [ ] Ask debian-mentors about the watch file

> [!info] Decision
> Upload to mentors.debian.net first.
""",
    "Daily/2024-05-01.md": "# 2024-05-01\n\n- [x] Installed build-essential\n- Read [[Packaging]]\n",
    "Daily/2024-05-02.md": "# 2024-05-02\n\n- [ ] Write debian/watch\n- Notes in [[Release Checklist]]\n",
    "Daily/2024-05-03.md": "# 2024-05-03\n\nMeeting: [[Weekly Sync]]. #meeting\n",
    "Daily/2024-05-04.md": "# 2024-05-04\n\n- [ ] Read the ASN.1 DER section ([[ASN.1 Notes]])\n",
    "Daily/2024-05-05.md": "# 2024-05-05\n\n今天读了[[维护者指南]]的第一章。\n",
    "中文/打包笔记.md": """---
tags: [中文, 打包]
related: "[[维护者指南]]"
---
# 打包笔记

> [!note] 提示
> 制作小的测试软件包是学习打包细节的好方法。

- [ ] 阅读 [[maint-guide.zh-cn.pdf]] 第二章
- [x] 安装 build-essential
""",
    "中文/维护者指南.md": """# 维护者指南

《Debian 新维护者手册》的中文译本：[[maint-guide.zh-cn.pdf]]。遇到问题时可以在邮件列表提问。

![[maint-guide.zh-cn.pdf]]
""",
    "中文/GnuPG 帮助.md": """# GnuPG 帮助

扫描版的 GnuPG 帮助文档：[[gnupg-help-zh_CN.pdf]]，通过文字识别可以搜索。
""",
    "中文/术语表.md": """# 术语表

- **软件包**：Debian 分发软件的单位。
- **上游**：软件的原作者。
- **补丁**：对上游源代码的修改。

参见 [[打包笔记]]。
""",
    "中文/周报.md": """# 周报

本周完成：

- [x] 阅读维护者指南
- [ ] 提交第一个软件包

下周计划见 [[打包笔记]]。
""",
    "Drafts/Unpublished Idea.md": f"""---
publish: false
---
# Unpublished Idea

Not for the site: {CANARIES["publish_false"]} a plan that is not ready. Links to [[Packaging]].
""",
    "Drafts/Work in Progress.md": f"""---
draft: true
tags: [wip]
---
# Work in Progress

Draft text: {CANARIES["draft_true"]} still being written. See [[Glossary]].
""",
    "Private/Journal.md": f"""# Journal

Personal: {CANARIES["ignored_folder"]} stays out of the site. Mentions [[Home]].
""",
}
ATTACHMENT_DIR = "attachments"  # Obsidian's "Files and links > attachment folder"
IGNORE_FILE = "# folders kept out of the site\nPrivate/\n"

# questions whose words no one block holds all of (the release's all-terms search finds none of them)
QUESTIONS = [
    "What does dh_make create in the debian folder for a new package?",
    "Which packages must be installed before building a Debian package?",
    "How does a maintainer check a package with lintian before uploading it?",
    "What is the default weight of a glob pattern in the MIME database?",
    "Which command must an application run after installing its MIME XML file?",
    "How does libtasn1 decode a DER encoded certificate structure?",
    "Which ASN.1 types are not supported by the library?",
    "Where should a program install its executable files instead of /usr/local?",
    "How can I ask other Debian developers for help with packaging questions?",
    "What does debmake generate for the copyright file of an upstream tarball?",
]
# English word forms from the PDFs: the hits of one form that a search for the other finds
WORD_FORMS = [  # both forms together under 300 hits in the release's index, so 6 pages of 50 hold them all
    ("encode", "encoding"),
    ("decode", "decoding"),
    ("installing", "installed"),
    ("building", "builds"),
    ("maintainer", "maintainers"),
    ("patch", "patches"),
    ("upload", "uploaded"),
    ("compile", "compiled"),
    ("depend", "depends"),
    ("structure", "structures"),
    ("element", "elements"),
    ("define", "defined"),
    ("pattern", "patterns"),
    ("library", "libraries"),
    ("create", "creates"),
    ("generate", "generated"),
    ("option", "options"),
    ("change", "changes"),
    ("sign", "signed"),
    ("parse", "parsing"),
]
CHINESE_QUERIES = [
    "软件包",
    "维护者",
    "邮件列表",
    "上游",
    "补丁",
    "打包",
    "源代码",
    "文档",
    "安装",
    "帮助",
]
FIXTURE_WORDS = ["吡咯烷", "研究"]  # the fixtures' sample text, which a product page must not show


# ---------------------------------------------------------------- the vault


def deb_file(package: str, inner: str) -> Path | None:
    """`inner` from Debian `package`, fetched once (apt-get download, dpkg-deb -x) into bench/_work/debs/."""
    target = DEBS / "x" / inner
    if target.exists():
        return target
    DEBS.mkdir(parents=True, exist_ok=True)
    if not list(DEBS.glob(f"{package}_*.deb")):
        subprocess.run(["apt-get", "download", package], cwd=DEBS, capture_output=True, check=False)
    for deb in DEBS.glob(f"{package}_*.deb"):
        subprocess.run(["dpkg-deb", "-x", str(deb), str(DEBS / "x")], check=True)
    return target if target.exists() else None


def attachments() -> dict[str, Path]:
    found = {}
    for name, src in PDFS.items():
        path = deb_file(*src) if isinstance(src, tuple) else Path(src)
        if path and path.exists():
            found[name] = path
    found.update({name: p for name, p in OTHER.items() if p.exists()})
    return found


def assemble(vault: Path) -> dict:
    """A fresh vault at `vault`: the notes, .obsidian/, .mnoteignore and the attachments."""
    shutil.rmtree(vault, ignore_errors=True)
    for rel, text in NOTES.items():
        (vault / rel).parent.mkdir(parents=True, exist_ok=True)
        (vault / rel).write_text(text, "utf-8")
    (vault / ".mnoteignore").write_text(IGNORE_FILE, "utf-8")
    (vault / ".obsidian").mkdir()
    (vault / ".obsidian" / "app.json").write_text(
        json.dumps({"attachmentFolderPath": ATTACHMENT_DIR, "alwaysUpdateLinks": True}), "utf-8"
    )
    files = attachments()
    (vault / ATTACHMENT_DIR).mkdir()
    for name, src in files.items():
        shutil.copy(src, vault / ATTACHMENT_DIR / name)
    return {
        "notes": len(NOTES),
        "chineseNotes": sum(1 for r in NOTES if r.startswith("中文/")),
        "attachments": sorted(files),
        "attachmentBytes": sum(p.stat().st_size for p in files.values()),
    }


def snapshot(root: Path) -> dict[str, int]:
    """Every path under `root` (folders with -1) and its size."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            out[os.path.relpath(os.path.join(dirpath, d), root)] = -1
        for f in filenames:
            p = os.path.join(dirpath, f)
            out[os.path.relpath(p, root)] = os.lstat(p).st_size
    return out


def hidden(rel: str) -> bool:
    return any(part.startswith(".") for part in Path(rel).parts)


# ---------------------------------------------------------------- running a tree's CLI


class Tree:
    """One checkout's CLI: PYTHONPATH = the tree (wheel layout), or the editable install for this one."""

    def __init__(self, label: str, path: Path):
        self.label, self.path = label, path.resolve()
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("LIGHTRAG")}
        if self.path != REPO:
            wheel_layout(self.path)
            self.env["PYTHONPATH"] = str(self.path)
        else:
            self.env.pop("PYTHONPATH", None)
        where = self.python("import mnote_evidence.build as b; print(b.__file__)").stdout.strip()
        if not where.startswith(str(self.path)):
            raise SystemExit(f"{label}: mnote_evidence.build imports from {where}, not from {self.path}")
        git = ["git", "-C", str(self.path)]
        head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        self.commit = head.stdout.strip()
        dirty = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no"], capture_output=True)
        self.dirty = bool(dirty.stdout.strip())

    def python(self, code: str, stdin: str = "", timeout: float = 600) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-c", code],
            input=stdin,
            env=self.env,
            cwd=WORK,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def cli(self, *args: str, timeout: float = BUILD_TIMEOUT_S) -> dict:
        """One `mnote-evidence ARGS` process: exit code, wall time, stdout, stderr's last lines."""
        t = time.perf_counter()
        try:
            done = subprocess.run(
                [sys.executable, "-m", "mnote_evidence", *args],
                env=self.env,
                cwd=WORK,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            took = round(time.perf_counter() - t, 1)
            return {"exit": None, "timedOut": timeout, "seconds": took, "stdout": ""}
        err = [line for line in done.stderr.splitlines() if line.strip()]
        return {
            "exit": done.returncode,
            "seconds": round(time.perf_counter() - t, 1),
            "stdout": done.stdout,
            "stderr": err[-3:],
        }

    def many(self, argvs: list[list[str]]) -> list[dict]:
        """Many CLI calls in one process (click's CliRunner), each answer parsed as JSON when it is."""
        code = (
            "import json,sys\n"
            "from click.testing import CliRunner\n"
            "from mnote_evidence.build.cli.main import main\n"
            "out=[]\n"
            "for argv in json.load(sys.stdin):\n"
            "    r=CliRunner().invoke(main, argv, catch_exceptions=True)\n"
            "    out.append({'exit': r.exit_code, 'stdout': r.output})\n"
            "print(json.dumps(out))\n"
        )
        done = self.python(code, json.dumps(argvs))
        if done.returncode:
            raise RuntimeError(f"{self.label}: query runner failed: {done.stderr[-1500:]}")
        answers = json.loads(done.stdout.splitlines()[-1])
        for a in answers:
            try:
                a["json"] = json.loads(a["stdout"])
            except (json.JSONDecodeError, TypeError):
                a["json"] = None
        return answers


def build_json(run: dict) -> dict:
    try:
        return json.loads(run["stdout"])
    except (json.JSONDecodeError, TypeError):
        return {}


def resource_count(report: dict) -> int | None:
    """Resources the build indexed: the sum of its status counts."""
    counts = report.get("status_counts")
    return sum(counts.values()) if isinstance(counts, dict) else None


# ---------------------------------------------------------------- 1. what the build adds to the vault


def added_to_vault(before: dict[str, int], after: dict[str, int]) -> dict:
    new = {rel: size for rel, size in after.items() if rel not in before}
    shown = {rel: size for rel, size in new.items() if not hidden(rel)}
    files = sorted(rel for rel, size in shown.items() if size >= 0)
    return {
        "visibleFiles": len(files),
        "visibleFolders": sum(1 for size in shown.values() if size < 0),
        "visibleBytes": sum(size for size in shown.values() if size > 0),
        "visibleMarkdownFiles": sum(1 for rel in files if rel.endswith(".md")),
        "hiddenFiles": sum(1 for rel, size in new.items() if hidden(rel) and size >= 0),
        "vaultFilesBefore": sum(1 for size in before.values() if size >= 0),
        "examples": files[:5],
    }


def out_inside(tree: Tree, vault: Path, work: Path) -> dict:
    """`build VAULT --out VAULT/site` on a copy of the built vault: refused (exit, message), or accepted; then
    how many resources the next build of that vault into a folder outside it indexes (with --no-ocr
    --no-site: the count is the scan's, and OCR of the site's own page images takes many minutes)."""
    inside = work / "vault_inside"
    shutil.rmtree(inside, ignore_errors=True)
    shutil.copytree(vault, inside, symlinks=True)
    first = tree.cli("build", str(inside), "--out", str(inside / "site"), "--json")
    report = build_json(first)
    result = {
        "exit": first["exit"],
        "seconds": first["seconds"],
        "message": first.get("stderr", []),
        "refused": first["exit"] not in (0, None),
        "resourcesFirst": resource_count(report),
        "warnings": [str(w)[:300] for w in report.get("warnings") or []][:5],
    }
    nxt_out = work / "out_next"
    shutil.rmtree(nxt_out, ignore_errors=True)
    nxt = tree.cli(
        "build", str(inside), "--out", str(nxt_out), "--json", "--no-ocr", "--no-site", timeout=300
    )
    result["nextBuild"] = {"exit": nxt["exit"], "seconds": nxt["seconds"], "timedOut": nxt.get("timedOut")}
    result["resourcesNext"] = resource_count(build_json(nxt))
    shutil.rmtree(inside, ignore_errors=True)
    shutil.rmtree(nxt_out, ignore_errors=True)
    return result


# ---------------------------------------------------------------- 2. canaries


def output_files(out: Path, vault: Path, before: dict[str, int]) -> list[Path]:
    """The whole output: every file under OUT and every file the build added to the vault (sidecars)."""
    files = [p for p in out.rglob("*") if p.is_file()]
    added = [vault / rel for rel, size in snapshot(vault).items() if rel not in before and size >= 0]
    return files + added


def canaries(files: list[Path], out: Path, vault: Path) -> dict:
    words = {place: w.encode() for place, w in CANARIES.items()}
    counts = {place: 0 for place in words}
    in_files = {place: 0 for place in words}
    where: dict[str, list[str]] = {place: [] for place in words}
    scanned = 0
    for path in files:
        try:
            data = path.read_bytes()
        except OSError:
            continue
        if path.suffix == ".gz":
            try:
                data = gzip.decompress(data)
            except OSError:
                pass
        scanned += 1
        low = data.lower()
        for place, w in words.items():
            n = low.count(w)
            if n:
                counts[place] += n
                in_files[place] += 1
                inside = path.is_relative_to(out)
                rel = str(path.relative_to(out)) if inside else f"VAULT/{path.relative_to(vault)}"
                if len(where[place]) < 4:
                    where[place].append(rel)
    return {"filesScanned": scanned, "occurrences": counts, "files": in_files, "foundIn": where}


# ---------------------------------------------------------------- 3. questions, word forms, Chinese


def hit_ids(answer: dict) -> list[str]:
    data = answer.get("json") or {}
    rows = data.get("results") or data.get("hits") or []
    ids = []
    for r in rows:
        if isinstance(r, dict):
            ident = r.get("evidenceId") or (r.get("source") or {}).get("blockId")
            ids.append(str(ident) if ident is not None else json.dumps(r, sort_keys=True)[:200])
    return ids


def top_passage(answer: dict) -> str | None:
    """The first hit's file and quote, so a reader can judge whether it answers."""
    rows = (answer.get("json") or {}).get("results") or []
    if not rows or not isinstance(rows[0], dict):
        return None
    where = (rows[0].get("source") or {}).get("resourcePath") or ""
    return f"{where}: {' '.join(str(rows[0].get('quote', '')).split())[:140]}"


def match_mode(answer: dict) -> str | None:
    data = answer.get("json") or {}
    if not isinstance(data, dict):
        return None
    return data.get("matchMode") or (data.get("passages") or {}).get("matchMode")


def ask_passages(answer: dict) -> int:
    data = answer.get("json") or {}
    if not isinstance(data, dict):
        return 0
    passages = data.get("passages")  # an answer without LightRAG: the evidence search's passages
    if isinstance(passages, dict) and isinstance(passages.get("results"), list):
        return len(passages["results"])
    return len(data.get("citations") or [])


def queries(tree: Tree, out: Path) -> dict:
    site = ["--site", str(out)]
    q_search = [["search", q, *site, "--json", "--top", "10"] for q in QUESTIONS]
    q_ask = [["ask", q, *site, "--json"] for q in QUESTIONS]
    forms = [w for pair in WORD_FORMS for w in pair]
    pages = [0, 50, 100, 150, 200, 250]  # up to 300 hits a word
    q_forms = [
        ["search", w, *site, "--json", "--top", "50", "--offset", str(o)] for w in forms for o in pages
    ]
    q_zh = [["search", q, *site, "--json", "--top", "20"] for q in CHINESE_QUERIES]
    answers = tree.many(q_search + q_ask + q_forms + q_zh)
    a_search = answers[: len(q_search)]
    a_ask = answers[len(q_search) : len(q_search) + len(q_ask)]
    a_forms = answers[len(q_search) + len(q_ask) : len(q_search) + len(q_ask) + len(q_forms)]
    a_zh = answers[len(q_search) + len(q_ask) + len(q_forms) :]

    questions = []
    for q, s, a in zip(QUESTIONS, a_search, a_ask, strict=True):
        questions.append(
            {
                "q": q,
                "searchHits": len(hit_ids(s)),
                "searchMatchMode": match_mode(s),
                "searchTop": top_passage(s),
                "askExit": a["exit"],
                "askPassages": ask_passages(a),
                "askMatchMode": match_mode(a),
                "askSays": ((a["json"] or {}).get("message") or (a["stdout"] or "").strip()[-200:]),
            }
        )
    hits: dict[str, set[str]] = {}
    totals = {w: (a_forms[i * len(pages)]["json"] or {}).get("total") for i, w in enumerate(forms)}
    for i, w in enumerate(forms):
        ids: list[str] = []
        for a in a_forms[i * len(pages) : (i + 1) * len(pages)]:
            ids += hit_ids(a)
        hits[w] = set(ids)
    pairs, found, wanted = [], 0, 0
    for a, b in WORD_FORMS:
        ha, hb = hits[a], hits[b]
        # each form's query should find the other form's hits
        pair = {"pair": f"{a}/{b}", "hits": [len(ha), len(hb)], "shared": len(ha & hb)}
        pairs.append({**pair, "totals": [totals[a], totals[b]]})
        found += len(ha & hb) * 2
        wanted += len(ha) + len(hb)
    zh = {q: hit_ids(a) for q, a in zip(CHINESE_QUERIES, a_zh, strict=True)}
    return {
        "questions": {
            "total": len(QUESTIONS),
            "searchWithPassage": sum(1 for q in questions if q["searchHits"]),
            "searchSaysMatchMode": sum(1 for q in questions if q["searchMatchMode"]),
            "askWithPassage": sum(1 for q in questions if q["askPassages"]),
            "askSaysMatchMode": sum(1 for q in questions if q["askMatchMode"]),
            "each": questions,
        },
        "wordForms": {
            "pairs": len(WORD_FORMS),
            # of all hits of both forms, the share the other form's query also returns
            "recallOtherForm": round(found / wanted, 3) if wanted else None,
            "pairsFullyShared": sum(1 for p in pairs if p["hits"][0] == p["hits"][1] == p["shared"] > 0),
            "pairsWithZeroOnOneSide": sum(1 for p in pairs if 0 in p["hits"]),
            "each": pairs,
        },
        "chinese": {"queries": len(CHINESE_QUERIES), "ids": zh},
    }


# ---------------------------------------------------------------- 4 and 5. pages


class Page(HTMLParser):
    """What the bench reads from one page of OUT: tags with attributes, headings' text, the text, and each
    link as the OUT-relative file it opens (and whether it sits inside a `nav`)."""

    def __init__(self, out: Path, page: Path):
        super().__init__(convert_charrefs=True)
        self.base = page.parent.relative_to(out).as_posix()
        self.tags: list[tuple[str, dict]] = []
        self.headings: list[str] = []
        self.links: list[tuple[str, bool]] = []
        self.text: list[str] = []
        self._heading: list[str] | None = None
        self._nav = 0
        self.feed(page.read_text("utf-8"))

    def handle_starttag(self, tag, attrs):
        a = {k: v or "" for k, v in attrs}
        self.tags.append((tag, a))
        self._nav += tag == "nav"
        if tag in HEADINGS:
            self._heading = []
        if tag == "a" and a.get("href") and "://" not in a["href"]:
            target = urllib.parse.unquote(a["href"].split("#")[0].split("?")[0])
            if target:
                self.links.append((posixpath.normpath(posixpath.join(self.base, target)), self._nav > 0))

    def handle_endtag(self, tag):
        self._nav -= tag == "nav" and self._nav > 0
        if tag in HEADINGS and self._heading is not None:
            self.headings.append(" ".join("".join(self._heading).split()))
            self._heading = None

    def handle_data(self, data):
        self.text.append(data)
        if self._heading is not None:
            self._heading.append(data)

    def has_icon(self) -> bool:
        return any(t == "link" and "icon" in a.get("rel", "").split() for t, a in self.tags)

    def placeholders(self) -> list[str]:
        return [a["placeholder"] for _, a in self.tags if "placeholder" in a]


HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")


def page_of(out: Path, note: str) -> Path | None:
    """The HTML page of workspace note `note` (its path with .html, or .md.html, or a folder index)."""
    stem = note[: -len(".md")]
    for cand in (f"{stem}.html", f"{note}.html", f"{stem}/index.html"):
        if (out / cand).is_file():
            return out / cand
    return None


def links_to(out: Path, page: Path | None, note: str) -> int:
    """How many links on `page` outside its `nav`s (an explorer lists a folder's notes) open `note`'s page."""
    target = page_of(out, note)
    if page is None or target is None:
        return 0
    rel = target.relative_to(out).as_posix()
    return sum(1 for path, nav in Page(out, page).links if path == rel and not nav)


def property_link(out: Path, note: str, target: str, control: str) -> bool:
    """`note`'s front-matter link to `target` is an <a href>: its page links to `target` more often than
    `control`'s page (which does not link it) and does not show the raw [[target]]."""
    page = page_of(out, note)
    if page is None:
        return False
    raw = f"[[{Path(target).name}]]" in "".join(Page(out, page).text)
    return not raw and links_to(out, page, f"{target}.md") > links_to(
        out, page_of(out, control), f"{target}.md"
    )


def obsidian(out: Path) -> dict:
    result: dict = {}
    mime = page_of(out, "Projects/MIME Database.md")
    if mime:
        tags = Page(out, mime).tags
        imgs = [a for t, a in tags if t == "img" and "shared-mime-info-spec-p2" in a.get("src", "")]
        result["imageWidth400"] = any(a.get("width") == "400" for a in imgs)
        result["imageAttributes"] = [{k: a.get(k) for k in ("alt", "width")} for a in imgs][:2]
    control = "Daily/2024-05-03.md"  # links only to Weekly Sync
    result["propertyLinkAnchor"] = property_link(
        out, "Projects/Packaging.md", "Projects/ASN.1 Notes", control
    )
    result["propertyLinkAnchor2"] = property_link(
        out, "Projects/MIME Database.md", "Reading/Glossary", control
    )
    index = out / "index.html"
    result["landingShowsHome"] = index.is_file() and HOME_TEXT in "".join(Page(out, index).text)
    glossary = page_of(out, "Reading/Glossary.md")
    if glossary:
        result["embeddedHeadingIsHeading"] = any(EMBEDDED_HEADING in h for h in Page(out, glossary).headings)
    return result


def navigation(out: Path) -> dict:
    """Explorer: a `nav` on a note's page that links to every note page of the note's folder (the page
    itself included); `explorerListsMean` is how many note pages it links to, on average."""
    published = [rel for rel in NOTES if not rel.startswith(("Drafts/", "Private/"))]
    pages = {rel: page_of(out, rel) for rel in published}
    note_pages = {p.relative_to(out).as_posix() for p in pages.values() if p}
    with_nav, favicon, listed = 0, 0, []
    for page in pages.values():
        if page:
            p = Page(out, page)
            in_nav = {path for path, nav in p.links if nav} & note_pages
            here = page.relative_to(out).parent.as_posix()
            siblings = {n for n in note_pages if posixpath.dirname(n) == ("" if here == "." else here)}
            with_nav += bool(in_nav) and siblings <= in_nav
            listed.append(len(in_nav))
            favicon += p.has_icon()
    folders = sorted({str(Path(rel).parent) for rel in published if "/" in rel})
    keys = set()
    for html in out.rglob("*.html"):
        key = html.relative_to(out).as_posix().removesuffix(".html").removesuffix("/index")
        keys.add(key)
    # a folder's page: OUT/F.html, OUT/F/index.html or F under a folder of generated pages (not tag pages)
    folder_pages = [
        f
        for f in folders
        if f in keys
        or any(k.endswith("/" + f) and k.startswith("_") and not k.startswith("_tags/") for k in keys)
    ]
    index = out / "index.html"
    ask = next((p for p in (out / "ask.html", out / "ask" / "index.html") if p.is_file()), None)
    ask_placeholders = Page(out, ask).placeholders() if ask else None
    excluded = [rel for rel in NOTES if rel.startswith(("Drafts/", "Private/"))]
    return {
        "notePages": len(note_pages),
        "publishedNotes": len(published),
        "pagesWithExplorer": with_nav,
        "explorerListsMean": round(sum(listed) / len(listed), 1) if listed else 0,
        "folders": len(folders),
        "folderPages": len(folder_pages),
        "pagesWithFavicon": favicon,
        "indexFavicon": index.is_file() and Page(out, index).has_icon(),
        "excludedNotes": len(excluded),
        "excludedNotesWithPage": sum(1 for rel in excluded if page_of(out, rel)),
        "askPlaceholders": ask_placeholders,
        "askPlaceholderFixtureFree": None
        if ask_placeholders is None
        else not any(w in " ".join(ask_placeholders) for w in FIXTURE_WORDS),
    }


def datasette_placeholders(tree: Tree, out: Path) -> dict:
    """`serve OUT` and its Datasette search page's placeholders."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "mnote_evidence", "serve", str(out), "--port", str(port)],
        env=tree.env,
        cwd=WORK,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline, html = time.monotonic() + 60, None
        while time.monotonic() < deadline and html is None:
            try:
                url = f"http://127.0.0.1:{port}/-/evidence/search-page"
                with urllib.request.urlopen(url, timeout=5) as r:
                    html = r.read().decode("utf-8")
            except OSError:
                time.sleep(0.5)
        if html is None:
            return {"error": "serve gave no search page in 60 s"}
        page = WORK / f"search-page-{tree.label}.html"
        page.write_text(html, "utf-8")
        found = Page(WORK, page).placeholders()
        return {"placeholders": found, "fixtureFree": not any(w in " ".join(found) for w in FIXTURE_WORDS)}
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


# ---------------------------------------------------------------- one tree


def measure(tree: Tree, ocr: bool) -> dict:
    work = WORK / tree.label
    vault, out = work / "vault", work / "out"
    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    vault_info = assemble(vault)
    before = snapshot(vault)
    args = ["build", str(vault), "--out", str(out), "--json"] + ([] if ocr else ["--no-ocr"])
    built = tree.cli(*args)
    report = build_json(built)
    if built["exit"] != 0:
        raise SystemExit(f"{tree.label}: build failed ({built}): {built.get('stderr')}")
    added = added_to_vault(before, snapshot(vault))
    files = output_files(out, vault, before)
    result = {
        "commit": tree.commit,
        "dirty": tree.dirty,
        "tree": str(tree.path),
        "machine": machine(),
        "vault": vault_info,
        "build": {
            "command": " ".join(["mnote-evidence", *args[:1], "VAULT", "--out", "OUT", *args[4:]]),
            "seconds": built["seconds"],
            "resources": resource_count(report),
            "errors": len(report.get("errors") or []),
            "pageImages": (report.get("site") or {}).get("page_images"),
            "excluded": report.get("excluded"),
            "warnings": len(report.get("warnings") or []),
            "reportKeys": sorted(report)[:30],
        },
        "addedToVault": added,
        "canaries": canaries(files, out, vault),
        "queries": queries(tree, out),
        "obsidian": obsidian(out),
        "navigation": navigation(out),
        "datasette": datasette_placeholders(tree, out),
        "outInsideVault": out_inside(tree, vault, work),
    }
    result["seconds"] = round(time.perf_counter() - t0, 1)
    return result


def chinese_identical(runs: dict) -> dict:
    labels = [k for k in runs if "queries" in runs[k]]
    if len(labels) < 2:
        return {}
    a, b = (runs[k]["queries"]["chinese"]["ids"] for k in labels[:2])
    same = [q for q in CHINESE_QUERIES if q in a and q in b and a[q] == b[q]]
    return {"between": labels[:2], "identical": len(same), "of": len(CHINESE_QUERIES)}


def table(runs: dict) -> str:
    """One row per figure, one column per run."""

    def row(name, fn):
        cells = []
        for r in runs.values():
            try:
                cells.append(str(fn(r)))
            except (KeyError, TypeError, IndexError):
                cells.append("?")
        return f"| {name} | " + " | ".join(cells) + " |"

    def inside(r):
        o = r["outInsideVault"]
        said = f"refused (exit {o['exit']})" if o["refused"] else "accepted"
        return f"{said}; next build {o.get('resourcesNext')} resources"

    def q(r):
        qs = r["queries"]["questions"]
        return (
            "{searchWithPassage}/{total} · {askWithPassage}/{total} · matchMode {searchSaysMatchMode}".format(
                **qs
            )
        )

    def obs(r):
        keys = ("imageWidth400", "propertyLinkAnchor", "landingShowsHome", "embeddedHeadingIsHeading")
        return " · ".join(str(r["obsidian"].get(k)) for k in keys)

    def nav(r):
        n = r["navigation"]
        pages = n["notePages"]
        folders = f"{n['folderPages']}/{n['folders']}"
        return f"{n['pagesWithExplorer']}/{pages} · {folders} · {n['pagesWithFavicon']}/{pages}"

    added = "{visibleFiles} files, {visibleFolders} folders, {visibleMarkdownFiles} .md, {kb} KB"
    lines = [
        "| first hour | " + " | ".join(f"{k} ({r.get('commit')})" for k, r in runs.items()) + " |",
        "|---" * (len(runs) + 1) + "|",
        row("build s / resources", lambda r: f"{r['build']['seconds']} / {r['build']['resources']}"),
        row(
            "visible in the vault",
            lambda r: added.format(kb=r["addedToVault"]["visibleBytes"] // 1024, **r["addedToVault"]),
        ),
        row("--out VAULT/site", inside),
        row(
            "canary occurrences",
            lambda r: " ".join(f"{k}={v}" for k, v in r["canaries"]["occurrences"].items()),
        ),
        row(
            "excluded notes with a page",
            lambda r: "{excludedNotesWithPage}/{excludedNotes}".format(**r["navigation"]),
        ),
        row("questions: search · ask · says matchMode", q),
        row("word forms: recall of other form", lambda r: r["queries"]["wordForms"]["recallOtherForm"]),
        row("img width=400 · property link · Home · embed heading", obs),
        row("explorer · folder pages · favicon", nav),
        row(
            "placeholders fixture-free (ask · datasette)",
            lambda r: f"{r['navigation']['askPlaceholderFixtureFree']} · {r['datasette'].get('fixtureFree')}",
        ),
    ]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tree", action="append", help="[LABEL=]PATH of a checkout (repeatable)")
    ap.add_argument(
        "--baseline-ref",
        help="the release measured beside this checkout: (re)creates the worktree bench/_work/first_hour/"
        "base at REF (default: the worktree as it is)",
    )
    ap.add_argument("--no-ocr", action="store_true", help="build with --no-ocr")
    args = ap.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    if args.baseline_ref:
        git = ["git", "-C", str(REPO), "worktree"]
        if BASE.exists():
            subprocess.run([*git, "remove", "--force", str(BASE)], check=True)
        subprocess.run(
            [*git, "add", "--detach", str(BASE), args.baseline_ref], check=True, capture_output=True
        )
    specs = args.tree or [f"baseline={BASE}", f"current={REPO}"]
    trees = []
    for spec in specs:
        label, _, path = spec.rpartition("=")
        path = Path(path).resolve()
        if not path.exists():
            ap.error(f"{path} does not exist (the baseline: --baseline-ref REF makes it a worktree at REF)")
        trees.append(Tree(label or ("current" if path == REPO else "baseline"), path))
    dest = results_path("first_hour.json")
    saved = json.loads(dest.read_text("utf-8")) if dest.exists() else {}
    runs = saved.get("runs", {})
    for tree in trees:
        print(f"== {tree.label}: {tree.path} ({tree.commit})", file=sys.stderr, flush=True)
        runs[tree.label] = measure(tree, ocr=not args.no_ocr)
        runs[tree.label]["ocr"] = not args.no_ocr
    result = {
        "about": __doc__.split("\n")[0],
        "command": "python bench/first_hour.py " + " ".join(sys.argv[1:]),
        "runs": runs,
        "chineseIdenticalIds": chinese_identical(runs),
        "table": table(runs),
    }
    dest.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", "utf-8")
    print(json.dumps(result, ensure_ascii=False))
    print(result["table"], file=sys.stderr)
    print(f"chinese ids identical: {result['chineseIdenticalIds']}", file=sys.stderr)


if __name__ == "__main__":
    main()
