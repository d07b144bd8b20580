"""Images: validated with Pillow and recorded with their pixel size.

Text comes from the OCR provider (see README, "OCR"); until an OCR engine is
configured an image is an `ok` resource with one page, its pixel size and no
blocks, so it has a page in the site and a locator at file precision.
Pillow (not PyMuPDF) opens images: PyMuPDF cannot read WebP.
"""

from __future__ import annotations

import PIL
from PIL import Image, UnidentifiedImageError

from build.model import KIND_IMAGE, Page, ParsedResourceArtifact, ProviderError
from build.providers.base import ParseInput

REVISION = "1"
Image.MAX_IMAGE_PIXELS = 200_000_000  # above this Pillow raises DecompressionBombError


def image_size(item: ParseInput) -> tuple[int, int]:
    try:
        with Image.open(item.full_path) as im:
            im.verify()
        with Image.open(item.full_path) as im:
            im.load()
            return im.size
    except (UnidentifiedImageError, Image.DecompressionBombError) as exc:
        raise ProviderError("image_corrupt", f"not a readable image: {exc}") from exc
    except (OSError, SyntaxError, ValueError) as exc:
        raise ProviderError("image_corrupt", f"image data is damaged: {exc}") from exc


class ImageProvider:
    name = "pillow"
    kind = KIND_IMAGE

    def version(self) -> str:
        return f"{PIL.__version__}+m{REVISION}"

    def parse(self, item: ParseInput) -> ParsedResourceArtifact:
        width, height = image_size(item)
        return ParsedResourceArtifact(
            kind=KIND_IMAGE, provider=self.name, provider_version=self.version(),
            source_path=item.path, source_hash=item.source_hash, text="",
            blocks=[], sections=[], pages=[Page(1, width, height)],
        )
