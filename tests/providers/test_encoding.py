"""Notes that are not UTF-8 keep their text: BOM first, then UTF-8, then a named detection, then counted
U+FFFD."""

from __future__ import annotations

import codecs

from mnote_evidence.build.markdown.encoding import decode_note
from mnote_evidence.build.parse.providers.base import ParseInput
from mnote_evidence.build.parse.providers.markdown import MarkdownProvider
from mnote_evidence.build.workspace.scan import file_sha256
from tests.conftest import REPO

GB2312_NOTE = REPO / "tests/real_documents/encodings/vimtutor-zh-gb2312.md"
TUTOR_LINE = "Vim 是一个具有很多命令的功能非常强大的编辑器。"
FRENCH = "# Réunion\n\nLes élèves ont déjà vu « l’été » – naïve café, coûte 5 €.\nÀ bientôt, garçon.\n"


def test_notepad_unicode_note_is_read_through_its_bom(tmp_path):
    text = GB2312_NOTE.read_bytes().decode("gb2312").replace("\n", "\r\n")
    (tmp_path / "note.md").write_bytes(codecs.BOM_UTF16_LE + text.encode("utf-16-le"))  # what Notepad writes
    art = MarkdownProvider().parse(ParseInput(tmp_path, "note.md", file_sha256(tmp_path / "note.md")))
    assert art.warnings == []
    assert any(TUTOR_LINE in b.text for b in art.blocks)


def test_every_bom_decides():
    for bom, codec in (
        (codecs.BOM_UTF16_BE, "utf-16-be"),
        (codecs.BOM_UTF32_LE, "utf-32-le"),
        (codecs.BOM_UTF32_BE, "utf-32-be"),
        (codecs.BOM_UTF8, "utf-8"),
    ):
        text, warnings = decode_note(bom + FRENCH.encode(codec))
        assert (text, warnings) == (FRENCH, []), codec


def test_legacy_chinese_note_is_detected_and_named():
    text, warnings = decode_note(GB2312_NOTE.read_bytes())
    assert TUTOR_LINE in text and "\ufffd" not in text
    assert [w.code for w in warnings] == ["non_utf8_text"]
    assert "decoded as gb18030" in warnings[0].message  # GB18030 is the superset of GB2312 and GBK


def test_windows_1252_note_is_detected_and_named():
    text, warnings = decode_note(FRENCH.encode("cp1252"))
    assert text == FRENCH
    assert "decoded as cp1252" in warnings[0].message


def test_replacement_only_when_nothing_decodes_and_counted():
    data = codecs.BOM_UTF8 + b"ok " + b"\xff\xfe\xfd" + b" fin"
    text, warnings = decode_note(data)
    assert text == "ok \ufffd\ufffd\ufffd fin"
    assert "3 undecodable" in warnings[0].message
    data = bytes(range(0x80, 0x100)) * 4  # no text encoding makes sense of this
    text, warnings = decode_note(data)
    assert f"{text.count(chr(0xFFFD))} undecodable" in warnings[0].message and text.count("\ufffd") > 0
