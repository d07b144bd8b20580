"""The section tree every provider builds the same way: a stack of open headings."""

from __future__ import annotations

from mnote_evidence.build.core.ids import SectionIdAllocator
from mnote_evidence.build.core.model import Block, Section


class SectionTree:
    def __init__(self, resource_path: str):
        self._new_id = SectionIdAllocator(resource_path)
        self._stack: list[Section] = []
        self.sections: list[Section] = []

    @property
    def current(self) -> Section | None:
        return self._stack[-1] if self._stack else None

    def open(self, level: int, title: str, page: int | None = None) -> Section:
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
