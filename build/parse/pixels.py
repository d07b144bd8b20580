"""Pixel budgets, checked before any decode or render (SPEC §3, §8).

`MAX_PIXELS` (200 M) is the one limit for images: a file whose header declares
more is refused before a byte of it is decoded. PDF pages (page images, OCR
renders) are rendered at the requested scale unless the result would pass
`MAX_RENDER_PIXELS` or `MAX_RENDER_SIDE` on a side: then the scale shrinks to
fit, so a 14,400 pt page costs at most ~1/10 GB, never a crash or an OOM kill.
"""

from __future__ import annotations

import math

MAX_PIXELS = 200_000_000
MAX_RENDER_PIXELS = 40_000_000  # ~120 MB RGB: 4x an A4 page at 600 dpi
MAX_RENDER_SIDE = 16_000  # under the JPEG (65,535) and WebP (16,383) side limits


def capped_scale(width_pt: float, height_pt: float, scale: float) -> float:
    """The largest scale <= `scale` at which a `width_pt` x `height_pt` page fits the render budget."""
    if width_pt <= 0 or height_pt <= 0:
        return scale
    # a renderer rounds each side up: (w*s + 1) * (h*s + 1) <= budget, solved for s
    w, h = width_pt, height_pt
    by_area = (-(w + h) + math.sqrt((w + h) ** 2 + 4 * w * h * (MAX_RENDER_PIXELS - 1))) / (2 * w * h)
    by_side = (MAX_RENDER_SIDE - 1) / max(w, h)
    return min(scale, by_area, by_side)


def too_many_pixels(width: int, height: int) -> str | None:
    """Why an image of this size is refused, or None."""
    if width * height > MAX_PIXELS:
        return (
            f"{width} x {height} is {width * height / 1e6:.0f} megapixels, over the "
            f"{MAX_PIXELS / 1e6:.0f} megapixel limit; it was not decoded"
        )
    return None
