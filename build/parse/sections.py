"""The section tree every provider builds the same way: a stack of open headings.

A resource has at most `MAX_SECTIONS_PER_RESOURCE` sections, nested at most `MAX_SECTION_DEPTH`
deep: a later heading is still a block (indexed, shown), in the section open before it, and the
count left out is the resource's `sections_capped` warning; a deeper one opens at the deepest level.
A section's path repeats its parents' titles, so the depth bound keeps each path short.
"""

from __future__ import annotations

from mnote_evidence.build.core.ids import SectionIdAllocator
from mnote_evidence.build.core.model import Block, Section, Warning_

MAX_SECTIONS_PER_RESOURCE = 10_000
MAX_SECTION_DEPTH = 32


class SectionTree:
    def __init__(self, resource_path: str):
        self._new_id = SectionIdAllocator(resource_path)
        self._stack: list[Section] = []
        self.sections: list[Section] = []
        self._left_out = 0

    @property
    def current(self) -> Section | None:
        return self._stack[-1] if self._stack else None

    def open(self, level: int, title: str, page: int | None = None) -> Section | None:
        """Open a section at `level`; past the bound nothing opens and the current section is returned."""
        if len(self.sections) >= MAX_SECTIONS_PER_RESOURCE:
            self._left_out += 1
            return self.current
        level = min(level, MAX_SECTION_DEPTH)
        while self._stack and self._stack[-1].level >= level:
            self._stack.pop()
        parent = self.current
        path = (parent.path if parent else []) + [title]
        section = Section(
            self._new_id(path),
            title,
            path,
            parent.id if parent else None,
            level,
            page_start=page,
            page_end=page,
        )
        self.sections.append(section)
        self._stack.append(section)
        return section

    @property
    def warnings(self) -> list[Warning_]:
        """`sections_capped` when headings were left out of the tree (none otherwise)."""
        if not self._left_out:
            return []
        return [
            Warning_(
                "sections_capped",
                f"{self._left_out:,} headings are kept as text in the section before them: a resource "
                f"has at most {MAX_SECTIONS_PER_RESOURCE:,} sections",
            )
        ]

    def add(self, block: Block) -> Block:
        """Put `block` in the current section (and extend open sections' page span)."""
        section = self.current
        if section is None:
            return block
        block.section_id = section.id
        section.block_ids.append(block.id)
        if block.page is not None:
            for open_section in self._stack:
                open_section.page_end = block.page
        return block
