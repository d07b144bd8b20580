"""mnote-evidence: every fact in a folder of notes traced to the place it came from.

The one import namespace over the repository's stage folders, mapped by `pyproject.toml`:

    mnote_evidence.build      <- build/       workspace -> parse -> index -> render (docs/architecture.md)
    mnote_evidence.functions  <- functions/   pure query handlers and their adapters

so nothing installs a top-level module called `build` or `functions` (PyPA's `build`).
"""

__version__ = "0.2.0"
