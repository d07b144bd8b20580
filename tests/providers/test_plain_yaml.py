"""The plain front-matter reader gives what PyYAML gives, or declines (build/markdown/plain_yaml.py)."""

from __future__ import annotations

import random
import subprocess
import sys

import yaml

from mnote_evidence.build.markdown.plain_yaml import plain_mapping
from mnote_evidence.build.markdown.properties import read_properties

KEYS = [
    "title",
    "tags",
    "aliases",
    "date",
    "x_y",
    "a-b",
    "Title",
    "yes",
    "No",
    "on",
    "null",
    "NULL",
    "y",
    "1a",
    "k:",
    "-k",
    "key ",
    " key",
    "é",
    "_k",
]
SCALARS = [
    "Project Plan 2027",
    "项目 计划",
    "Hello, world",
    "it's",
    'say "hi"',
    "http://example.com/a?b=c",
    "a: b",
    "a:",
    ":a",
    "#x",
    "a #x",
    "a#x",
    "1",
    "1.5",
    "-3",
    "+3",
    ".5",
    "0x1F",
    "1_000",
    "2024-01-01",
    "1:20",
    "yes",
    "Yes",
    "YES",
    "yEs",
    "no",
    "on",
    "Off",
    "true",
    "False",
    "null",
    "~",
    "<<",
    "=",
    "",
    "[a]",
    "{a: b}",
    "*ref",
    "&anchor x",
    "!tag x",
    "|",
    ">",
    "%x",
    "@x",
    "`x",
    "?x",
    "a?",
    "a - b",
    "a, b",
    "e",
    "inf",
    ".inf",
    "nan",
    ".nan",
    "a\u2028b",
    "a\x85b",
    "a\u00a0b",
    "a\ufeffb",
    "a\x7fb",
    "\U0001f600",
    "a  b",
    "a\\b",
    "a/b",
    "v1.0",
    "_1",
    "a\tb",
    "'quoted'",
    '"quoted"',
    "a]",
    "a}",
    "a,b",
    "#tag",
    "project/alpha",
    "🙂 emoji",
]


def _random_front_matter(rng: random.Random) -> str:
    lines = []
    for _ in range(rng.randint(0, 5)):
        key = rng.choice(KEYS)
        form = rng.random()
        if form < 0.45:
            lines.append(f"{key}: {rng.choice(SCALARS)}" + rng.choice(["", " ", "  "]))
        elif form < 0.7:
            items = [rng.choice(SCALARS) for _ in range(rng.randint(0, 3))]
            lines.append(f"{key}: [{rng.choice([', ', ',', ' , ']).join(items)}]")
        elif form < 0.9:
            lines.append(f"{key}:")
            indent = rng.choice(["", "  ", "    "])
            for _ in range(rng.randint(0, 3)):
                lines.append(f"{rng.choice([indent, indent, ' '])}- {rng.choice(SCALARS)}")
        else:
            lines.append(
                rng.choice(
                    [
                        "",
                        "  ",
                        "# comment",
                        "---",
                        "key:value",
                        "  nested: x",
                        "- item",
                        f"{key}: |",
                        "  block",
                    ]
                )
            )
    return rng.choice(["\n", "\r\n"] if rng.random() < 0.05 else ["\n"]).join(lines)


def test_whatever_it_accepts_loads_the_same_with_pyyaml():
    rng = random.Random(17)
    accepted = 0
    for _ in range(20_000):
        raw = _random_front_matter(rng)
        fast = plain_mapping(raw)
        if fast is None:
            continue
        accepted += 1
        try:
            expected = yaml.safe_load(raw) if raw.strip() else {}
        except yaml.YAMLError as exc:
            raise AssertionError(f"accepted {raw!r}, which PyYAML refuses: {exc}") from None
        assert fast == expected, raw
        assert all(type(v) in (str, list, type(None)) for v in fast.values())
    assert accepted > 2_000, accepted  # the comparison covers many accepted inputs, not a handful


def test_the_usual_forms_are_read_without_pyyaml():
    usual = {
        "title: Project Plan 2027\naliases: [Roadmap, The Plan]\ntags: [planning, project/alpha]\n": {
            "title": "Project Plan 2027",
            "aliases": ["Roadmap", "The Plan"],
            "tags": ["planning", "project/alpha"],
        },
        "tags: [t1]": {"tags": ["t1"]},
        "tags:\n  - a\n  - 中文\naliases:\n- x\n": {"tags": ["a", "中文"], "aliases": ["x"]},
        "title: Hello, world\nempty:\n": {"title": "Hello, world", "empty": None},
        "": {},
    }
    for raw, expected in usual.items():
        assert plain_mapping(raw) == expected == (yaml.safe_load(raw) or {}), raw


def test_what_it_declines_pyyaml_reads_with_the_same_properties_and_warnings():
    # numbers, dates, booleans, quotes, nesting, comments: PyYAML's reading, its error message kept
    assert plain_mapping("date: 2024-01-01") is None
    assert read_properties("date: 2024-01-01").text == "date: 2024-01-01"
    assert read_properties("draft: yes").text == "draft: True"
    assert plain_mapping("a: [b") is None
    assert read_properties("a: [b").warning.code == "front_matter_invalid"
    assert read_properties("title: 'Quoted: yes'").title == "Quoted: yes"
    assert read_properties("- a\n- b").warning.code == "front_matter_invalid"  # not a mapping


def test_a_plain_front_matter_note_is_parsed_without_importing_pyyaml(tmp_path):
    note = tmp_path / "n.md"
    note.write_text("---\ntitle: T\ntags: [a, b]\n---\n# Heading\n\nText.\n", encoding="utf-8")
    code = (
        "import sys, pathlib; from mnote_evidence.build.parse.providers.markdown import MarkdownProvider; "
        "from mnote_evidence.build.parse.providers.base import ParseInput; "
        "from mnote_evidence.build.workspace.scan import file_sha256; "
        f"p = pathlib.Path({str(note)!r}); "
        "a = MarkdownProvider().parse(ParseInput(p.parent, p.name, file_sha256(p))); "
        "print('yaml' in sys.modules, a.title)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == ["False", "T"], out
