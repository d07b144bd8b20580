"""A plain static file server that behaves like the hosts people publish on: GitHub Pages, S3, nginx, Netlify.

`python -m http.server` (Python 3.11) ignores `Range` and sends whole files; static hosts answer
`206 Partial Content`. Tests and benches run this one as a real process to measure the site's static
search on such hosts: `python -m tests.range_server DIR PORT [--max-file-bytes N] [--no-ranges] [--gzip]`.

- Ranges: one range per request (what sql.js-httpvfs asks for); a range that runs past a file's end gets
  the bytes up to the end (206), one that starts past it 416, as real hosts answer.
- `--max-file-bytes N`: a file larger than N bytes is not there (404, with a body naming the limit), which
  is what a host that refused it at deploy time serves.
- `--no-ranges`: `Range` is ignored and no `Accept-Ranges` is sent: whole files, like `python -m http.server`.
- `--gzip`: whole-file answers are sent gzip-compressed (`Content-Encoding: gzip`) to clients that accept it,
  like a host or CDN that compresses every response.
"""

from __future__ import annotations

import argparse
import functools
import gzip
import io
import os
import re
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

_RANGE = re.compile(r"bytes=(\d*)-(\d*)$")
OVER_LIMIT = "over this host's per-file limit ({limit} bytes): not deployed\n"


class RangeHandler(SimpleHTTPRequestHandler):
    def __init__(
        self, *args, max_file_bytes: int | None = None, ranges: bool = True, gzip: bool = False, **kw
    ):
        self.max_file_bytes, self.ranges, self.gzip = max_file_bytes, ranges, gzip
        self._remaining = None
        super().__init__(*args, **kw)

    def end_headers(self) -> None:
        if self.ranges:
            self.send_header("Accept-Ranges", "bytes")
        super().end_headers()

    def send_head(self):
        path = self.translate_path(self.path)
        if not os.path.isfile(path):
            return super().send_head()
        size = os.path.getsize(path)
        if self.max_file_bytes is not None and size > self.max_file_bytes:
            return self._refused()
        match = _RANGE.match(self.headers.get("Range", "").strip()) if self.ranges else None
        if match:
            return self._range(path, size, *match.groups())
        if self.gzip and "gzip" in self.headers.get("Accept-Encoding", ""):
            return self._gzipped(path)
        return super().send_head()

    def _refused(self):
        body = OVER_LIMIT.format(limit=self.max_file_bytes).encode()
        self.send_response(404)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self._remaining = len(body)
        return io.BytesIO(body)

    def _range(self, path: str, size: int, first: str, last: str):
        start = int(first) if first else max(0, size - int(last or 0))
        end = min(int(last), size - 1) if first and last else size - 1
        if start > end or start >= size:
            self.send_error(416, "Requested Range Not Satisfiable")
            return None
        f = open(path, "rb")
        f.seek(start)
        self.send_response(206)
        self.send_header("Content-Type", self.guess_type(path))
        self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.send_header("Content-Length", str(end - start + 1))
        self.end_headers()
        self._remaining = end - start + 1
        return f

    def _gzipped(self, path: str):
        with open(path, "rb") as f:
            body = gzip.compress(f.read())
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(path))
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self._remaining = len(body)
        return io.BytesIO(body)

    def copyfile(self, source, outputfile) -> None:
        remaining = self._remaining
        if remaining is None:
            return super().copyfile(source, outputfile)
        while remaining > 0:
            chunk = source.read(min(65536, remaining))
            if not chunk:
                break
            outputfile.write(chunk)
            remaining -= len(chunk)
        self._remaining = None

    def log_message(self, format, *args) -> None:  # quiet: tests read stdout for failures only
        pass


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.range_server", description=__doc__.split("\n")[0])
    parser.add_argument("folder")
    parser.add_argument("port", type=int)
    parser.add_argument("--max-file-bytes", type=int, default=None)
    parser.add_argument("--no-ranges", action="store_true")
    parser.add_argument("--gzip", action="store_true")
    args = parser.parse_args()
    handler = functools.partial(
        RangeHandler,
        directory=args.folder,
        max_file_bytes=args.max_file_bytes,
        ranges=not args.no_ranges,
        gzip=args.gzip,
    )
    with ThreadingHTTPServer(("127.0.0.1", args.port), handler) as httpd:
        httpd.serve_forever()


if __name__ == "__main__":
    main()
