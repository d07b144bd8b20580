"""Two stateless `serve` replicas on one `evidence.sqlite` answer alike, through the roll-out of a new index.

The read side scales out as N replicas behind a load balancer, each reading the same immutable index;
a new index is rolled out by renaming a complete `evidence.sqlite` into place (`mnote-evidence build`
does so itself; a copy built elsewhere is renamed in the same way). Two real `serve` processes read one
built site; while a rebuild with one edited note lands, clients ask both the same questions without a
pause. Every answer is exactly the old index's answer or the new one's, never an error or a mix of
the two; a replica that has answered from the new index never answers from the old one again; after
the roll-out both give the new answers, byte for byte.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time

import httpx
import pytest

from tests.conftest import copy_workspace
from tests.servers import start_serve, stop

EDITED = "Projects/Evidence Kernel.md"
OLD_WORD, NEW_WORD = "retention", "zqxjreplica"
QUERIES = [
    ("/-/evidence/search", {"q": OLD_WORD, "topK": "20"}),
    ("/-/evidence/search", {"q": NEW_WORD, "topK": "20"}),
    ("/-/evidence/search", {"q": "kernel spec", "topK": "20"}),
    (
        "/evidence.json",
        {"sql": "select count(*) as n, group_concat(text, '|') as t from evidence_block", "_shape": "array"},
    ),
]
WAIT_SECONDS = 120  # failure detection only


def cli_build(root, out) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "mnote_evidence",
            "build",
            str(root),
            "--out",
            str(out),
            "--no-ocr",
            "--jobs",
            "1",
        ],
        check=True,
        capture_output=True,
    )


def answer(base: str, client: httpx.Client, i: int) -> str:
    path, params = QUERIES[i]
    r = client.get(base + path, params=params, timeout=30)
    assert r.status_code == 200, (base, path, r.status_code, r.text[:300])
    return r.text


def answers(base: str, client: httpx.Client) -> list[str]:
    return [answer(base, client, i) for i in range(len(QUERIES))]


@pytest.fixture
def replicas(tmp_path):
    root = copy_workspace(tmp_path / "ws")
    out = tmp_path / "site"
    cli_build(root, out)
    procs = [start_serve(out) for _ in range(2)]
    yield root, out, [base for _, base in procs]
    for proc, _ in procs:
        stop(proc)


def roll_out_in_place(root, out, tmp_path) -> None:
    """The build renames its new index into the folder the replicas read."""
    cli_build(root, out)


def roll_out_built_copy(root, out, tmp_path) -> None:
    """A build machine builds a copy of the site; its index is renamed over the served one."""
    staged = tmp_path / "staged"
    shutil.copytree(out, staged)
    cli_build(root, staged)
    os.replace(staged / "evidence.sqlite", out / "evidence.sqlite")


@pytest.mark.parametrize("roll_out", [roll_out_in_place, roll_out_built_copy])
def test_replicas_answer_old_or_new_never_a_mix(replicas, tmp_path, roll_out):
    root, out, bases = replicas
    with httpx.Client() as c:
        old = [answers(base, c) for base in bases]
    assert old[0] == old[1]
    old = old[0]
    assert '"total": 0' in old[1]  # the new word is in no block of the old index

    note = root / EDITED
    note.write_text(note.read_text().replace(OLD_WORD, NEW_WORD))
    seen: dict[str, list[tuple[int, str]]] = {base: [] for base in bases}  # per replica, in order
    failures: list[str] = []
    done = threading.Event()

    def ask(base: str) -> None:
        with httpx.Client() as c:
            while not done.is_set():
                for i in range(len(QUERIES)):
                    try:
                        seen[base].append((i, answer(base, c, i)))
                    except (AssertionError, httpx.HTTPError) as exc:
                        failures.append(f"{base}: {exc!r}"[:500])

    askers = [threading.Thread(target=ask, args=(base,)) for base in bases]
    for t in askers:
        t.start()
    try:
        roll_out(root, out, tmp_path)
        time.sleep(0.5)  # some rounds on the new index too
    finally:
        done.set()
        for t in askers:
            t.join(WAIT_SECONDS)

    with httpx.Client() as c:
        new = [answers(base, c) for base in bases]
    assert new[0] == new[1], "the replicas disagree after the roll-out"
    new = new[0]
    assert '"total": 0' not in new[1]  # the edit is in the new index
    assert not failures, failures[:3]
    for base, got in seen.items():
        assert len(got) >= len(QUERIES), f"{base} answered too little during the roll-out"
        mixed = [(QUERIES[i], text[:300]) for i, text in got if text not in (old[i], new[i])]
        assert not mixed, f"{base}: answers that are neither index's: {mixed[:2]}"
        # only the answers that differ between the indexes tell which one was read
        kinds = [text == new[i] for i, text in got if old[i] != new[i]]
        assert kinds == sorted(kinds), f"{base} answered from the old index after the new one"
        assert False in kinds and True in kinds, f"{base} was not asked across the roll-out"
