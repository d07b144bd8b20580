"""What this installation wrote: a per-installation key and the MAC that marks a cache file as its own
(SPEC §2: sidecars and caches are input, not truth).

A workspace can carry sidecars and OCR cache entries made anywhere; their hashes prove nothing (anyone
with the source file knows its hash). So the build seals each cache file it writes with an HMAC-SHA256
of its bytes under a key kept outside the workspace, and reuses only files whose seal it can check.
The key file: `$MNOTE_EVIDENCE_KEY_FILE`, else `$XDG_STATE_HOME/mnote-evidence/cache.key`, else
`~/.local/state/mnote-evidence/cache.key`, made with mode 0600 on first use. Without a key (it cannot
be made: a read-only home) nothing is sealed and nothing is trusted: every file is parsed again.
Invariants: the same bytes and key give the same seal (byte-identical files on one installation); a
seal binds a `context` (what kind of file, and for an OCR entry its cache key).
"""

from __future__ import annotations

import hashlib
import hmac
import os
from functools import cache
from pathlib import Path

KEY_FILE_ENV = "MNOTE_EVIDENCE_KEY_FILE"
KEY_BYTES = 32
# the seal is the JSON object's last member, of fixed length: `"mac": "hmac-sha256:<64 hex>"`
_HEAD = ',\n "mac": "hmac-sha256:'
_TAIL = '"\n}\n'
_END = "\n}\n"  # how a sealable JSON text ends (one member per line: `sidecars.dumps`)
_SEALED = len(_HEAD) + 64 + len(_TAIL)


def key_file() -> Path:
    """Where this installation's key is (see the module docstring)."""
    named = os.environ.get(KEY_FILE_ENV)
    if named:
        return Path(named)
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(state) / "mnote-evidence" / "cache.key"


def installation_key() -> bytes | None:
    """This installation's key, made on first use; None when it can be neither read nor made."""
    return _key_at(str(key_file()))


@cache
def _key_at(path: str) -> bytes | None:
    try:
        return _read_or_make(Path(path))
    except (OSError, ValueError):
        return None


def _read_or_make(path: Path) -> bytes:
    try:
        return _read_key(path)
    except FileNotFoundError:
        pass
    import secrets  # only when the key is made: once per installation

    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="ascii") as f:
            f.write(secrets.token_hex(KEY_BYTES) + "\n")
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(tmp, path)  # whole or not at all; a build racing this one keeps the key it made
        except FileExistsError:
            pass
    finally:
        tmp.unlink(missing_ok=True)
    return _read_key(path)


def _read_key(path: Path) -> bytes:
    key = bytes.fromhex(path.read_text("ascii").strip())
    if len(key) < KEY_BYTES:
        raise ValueError(f"{path}: a key of {len(key)} bytes")
    return key


def key_problem() -> str | None:
    """The build's warning when there is no key (nothing from the workspace is trusted); else None."""
    if installation_key() is not None:
        return None
    return (
        "this installation's key can be neither read nor made: no sidecar or OCR cache entry is "
        f"reused, every file is parsed again (set {KEY_FILE_ENV} to a writable path)"
    )


def _mac(key: bytes, context: str, body: bytes) -> str:
    return hmac.new(key, context.encode("utf-8") + b"\0" + body, hashlib.sha256).hexdigest()


def seal(body: str, context: str) -> str:
    """JSON object text `body` (ending in a line `}`) with its seal as last member; `body` unchanged
    without a key."""
    key = installation_key()
    if key is None or not body.endswith(_END):
        return body
    return body[: -len(_END)] + _HEAD + _mac(key, context, body.encode("utf-8")) + _TAIL


def is_sealed(raw: bytes, context: str) -> bool:
    """Whether `raw` is a text `seal` made with this installation's key for `context`."""
    key = installation_key()
    if key is None or len(raw) < _SEALED + len(_END):
        return False
    body, tail = raw[:-_SEALED], raw[-_SEALED:]
    head, end = _HEAD.encode(), _TAIL.encode()
    if not (tail.startswith(head) and tail.endswith(end)):
        return False
    mac = tail[len(head) : -len(end)]
    return hmac.compare_digest(mac, _mac(key, context, body + _END.encode()).encode())
