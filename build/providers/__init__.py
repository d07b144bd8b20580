"""Providers: one module per format, each implementing `base.Provider` (SPEC §3).

Which provider reads which suffix is decided in one place, `build/formats.py`; this package
only holds the implementations (imported lazily from there).
"""

from mnote_evidence.build.providers.base import ParseInput, Provider

__all__ = ["ParseInput", "Provider"]
