"""What the derived data depends on, and what a change of each redoes (SPEC §6).

Every index write records these `build_meta` keys; the next build compares them with what this code
would produce and redoes exactly what they affect:

| key                    | value                       | a change redoes                                 |
| ---------------------- | --------------------------- | ----------------------------------------------- |
| `schema_version`       | `schema.SCHEMA_VERSION`     | the whole index, from sidecars and files        |
| `segmentation_version` | `text.SEGMENTATION_VERSION` | every FTS row, from the stored block text       |
| `provider_versions`    | `{kind: provider.version()}`| that kind's resources (each row's version)      |
| `ocr_engine`           | engine version, or `none`   | in the pdf/image provider versions: those       |
| `page_images`          | format, quality, zoom       | every page image and the PDF pages showing them |

A schema change does not read the old file; a segmentation change re-parses no file; old page images
are removed. Invariants: a reader accepts an index only if its schema and segmentation are this
code's (`index/meta.py: reader_problem`); `page_images` is recorded only by builds that render the site.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mnote_evidence.build.core import text
from mnote_evidence.build.index.meta import LEGACY_SEGMENTATION
from mnote_evidence.build.index.schema import SCHEMA_VERSION

if TYPE_CHECKING:
    from mnote_evidence.build.index.previous import PreviousBuild
    from mnote_evidence.build.index.writer import IndexChanges, ResourceUpdate
    from mnote_evidence.build.parse.ocr.settings import OcrSettings
    from mnote_evidence.build.render.page_images import PageImageSettings
    from mnote_evidence.build.render.site import RenderReport


def current(ocr: OcrSettings, images: PageImageSettings | None) -> dict[str, str]:
    """The `build_meta` version keys this code writes (`images` None: no site rendered)."""
    from mnote_evidence.build.parse.ocr.run import engine_version
    from mnote_evidence.build.parse.providers import provider_versions

    now = {
        "schema_version": SCHEMA_VERSION,
        "segmentation_version": text.SEGMENTATION_VERSION,
        "provider_versions": json.dumps(provider_versions(ocr), sort_keys=True),
        "ocr_engine": engine_version(ocr) if ocr.enabled else "none",
    }
    if images is not None:
        now["page_images"] = json.dumps(images.to_json(), sort_keys=True)
    return now


@dataclass
class Plan:
    """This build's versions against the previous build's, and what the difference redoes."""

    before: dict[str, str]  # the previous build_meta ({} if there was no index)
    now: dict[str, str]
    rebuild_from: str | None  # the other schema version found: the index is rebuilt

    @classmethod
    def for_build(cls, prev: PreviousBuild, ocr: OcrSettings, images: PageImageSettings | None) -> Plan:
        return cls(prev.meta, current(ocr, images), prev.incompatible_schema)

    @property
    def resegment(self) -> bool:
        """The stored FTS rows were segmented by another version (and are kept)."""
        if not self.before or self.rebuild_from is not None:
            return False
        return (
            self.before.get("segmentation_version", LEGACY_SEGMENTATION) != self.now["segmentation_version"]
        )

    @property
    def meta_changed(self) -> bool:
        return any(self.before.get(k) != v for k, v in self.now.items())

    def apply(self, changes: IndexChanges) -> None:
        changes.rebuild = self.rebuild_from is not None
        changes.resegment = self.resegment
        changes.meta.update(self.now)

    def redone(self, prev: PreviousBuild, updates: list[ResourceUpdate], resegmented: int) -> dict[str, Any]:
        """What was redone because a version changed: the build report's `redone`."""
        out: dict[str, Any] = {}
        if self.rebuild_from is not None:
            out["schema"] = {"from": self.rebuild_from, "to": SCHEMA_VERSION, "resources": len(updates)}
        if self.resegment:
            out["segmentation"] = {
                "from": self.before.get("segmentation_version", LEGACY_SEGMENTATION),
                "to": self.now["segmentation_version"],
                "fts_rows": resegmented,
            }
        providers = self._providers(prev, updates) if self.rebuild_from is None else {}
        if providers:
            out["providers"] = providers
        for key, name in (("ocr_engine", "ocr_engine"), ("page_images", "page_images")):
            old, new = self.before.get(key), self.now.get(key)
            if old is not None and new is not None and old != new and self.rebuild_from is None:
                out[name] = (
                    {"from": json.loads(old), "to": json.loads(new)}
                    if key == "page_images"
                    else {"from": old, "to": new}
                )
        return out

    def _providers(self, prev: PreviousBuild, updates: list[ResourceUpdate]) -> dict[str, Any]:
        """Per kind: resources re-parsed only because their provider's version changed."""
        counts: Counter[str] = Counter()
        for u in updates:
            row = u.row
            p = prev.resources.get(row.path)
            if (
                p
                and p.source_hash == row.source_hash
                and p.owner == row.owner
                and p.provider_version
                and row.provider_version
                and p.provider_version != row.provider_version
            ):
                counts[row.kind] += 1
        old = json.loads(self.before.get("provider_versions") or "{}")
        new = json.loads(self.now["provider_versions"])
        kinds = set(counts) | {k for k in old if k in new and old[k] != new[k]}
        return {k: {"from": old.get(k), "to": new[k], "resources": counts[k]} for k in sorted(kinds)}


def describe(redone: dict[str, Any], site: RenderReport | None) -> list[str]:
    """One human line per thing redone (the CLI's summary)."""
    lines = []
    if "schema" in redone:
        s = redone["schema"]
        lines.append(
            f"index rebuilt: schema {s['from']} -> {s['to']} "
            f"({s['resources']} resources re-indexed from sidecars and files)"
        )
    if "segmentation" in redone:
        s = redone["segmentation"]
        lines.append(
            f"re-segmented {s['fts_rows']} FTS rows from the stored text: "
            f"segmentation {s['from']} -> {s['to']}"
        )
    for kind, p in redone.get("providers", {}).items():
        lines.append(
            f"{kind}: {p['resources']} resources re-parsed: provider {p['from'] or '?'} -> {p['to']}"
        )
    if "ocr_engine" in redone:
        o = redone["ocr_engine"]
        lines.append(f"OCR engine {o['from']} -> {o['to']} (its pdf and image resources are counted above)")
    if "page_images" in redone:
        i = redone["page_images"]
        done = f": {site.page_images} rendered, {site.images_removed} old files removed" if site else ""
        lines.append(f"page images {_images(i['from'])} -> {_images(i['to'])}{done}")
    return lines


def _images(settings: dict[str, Any]) -> str:
    return f"{settings['format']} q{settings['quality']} zoom {settings['zoom']:g}"
