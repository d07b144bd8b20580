"""Images: validated with Pillow, text from the OCR engine (SPEC §3).

Every recognised line is an `ocr_line` block on page 1 with its box in pixels of
the image as displayed (EXIF orientation applied, as browsers show it) and the
engine's confidence. The text goes to `*.ocr.md`. With OCR off (`--no-ocr`) an
image is an `ok` resource with its size and no blocks. Pillow, not PyMuPDF,
opens images: PyMuPDF cannot read WebP.
"""

from __future__ import annotations

import warnings

from mnote_evidence.build.core.formats import format_named
from mnote_evidence.build.core.ids import BlockIdAllocator
from mnote_evidence.build.core.model import (
    KIND_IMAGE,
    Block,
    Page,
    ParsedResourceArtifact,
    ProviderError,
    Warning_,
)
from mnote_evidence.build.parse.libraries import image_ops, pillow
from mnote_evidence.build.parse.ocr.run import engine_version, image_lines
from mnote_evidence.build.parse.ocr.settings import OcrSettings
from mnote_evidence.build.parse.pixels import too_many_pixels
from mnote_evidence.build.parse.providers import provider_version
from mnote_evidence.build.parse.providers.base import ParseInput


def image_size(item: ParseInput) -> tuple[int, int]:
    """(width, height) as displayed; raises `image_too_large` from the header alone (before any
    decode) past `pixels.MAX_PIXELS`, `image_corrupt` for anything Pillow cannot decode."""
    Image = pillow()
    try:
        with warnings.catch_warnings():  # Pillow warns past its limit; we refuse with a clear error
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            im = Image.open(item.full_path)
        with im:
            refused = too_many_pixels(*im.size)
            if refused:
                raise ProviderError("image_too_large", refused)
            im.verify()
        with Image.open(item.full_path) as im:
            im.load()
            return image_ops().exif_transpose(im).size
    except (Image.UnidentifiedImageError, Image.DecompressionBombError) as exc:
        raise ProviderError("image_corrupt", f"not a readable image: {exc}") from exc
    except (OSError, SyntaxError, ValueError) as exc:
        raise ProviderError("image_corrupt", f"image data is damaged: {exc}") from exc


class ImageProvider:
    name = "pillow"
    kind = KIND_IMAGE

    def __init__(self, ocr: OcrSettings):
        self.ocr = ocr

    def version(self) -> str:
        return provider_version(format_named("image"), self.ocr)

    def parse(self, item: ParseInput) -> ParsedResourceArtifact:
        width, height = image_size(item)
        page = Page(1, width, height)
        if not self.ocr.enabled:
            return self._artifact(item, "", [], page, [], from_ocr=False)
        lines = image_lines(item.root, self.ocr, item.full_path, item.source_hash, (width, height))
        page.source = f"ocr:{engine_version(self.ocr)}"
        new_id = BlockIdAllocator(item.path)
        parts, blocks, length = [], [], 0
        for line in lines:
            start = length
            parts.append(line.text + "\n\n")
            length += len(line.text) + 2
            blocks.append(
                Block(
                    new_id("ocr_line", line.text),
                    "ocr_line",
                    line.text,
                    page=1,
                    bbox=line.bbox,
                    char_range=[start, start + len(line.text)],
                    confidence=line.confidence,
                )
            )
        warnings = [] if blocks else [Warning_("ocr_no_text", "OCR found no text in this image")]
        return self._artifact(item, "".join(parts), blocks, page, warnings, from_ocr=True)

    def _artifact(self, item, text, blocks, page, warnings, from_ocr) -> ParsedResourceArtifact:
        provider = self.ocr.engine if from_ocr else self.name
        return ParsedResourceArtifact(
            kind=KIND_IMAGE,
            provider=provider,
            provider_version=self.version(),
            source_path=item.path,
            source_hash=item.source_hash,
            text=text,
            blocks=blocks,
            sections=[],
            pages=[page],
            warnings=warnings,
            from_ocr=from_ocr,
        )
