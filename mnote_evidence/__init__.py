"""mnote-evidence: every fact in a folder of notes traced to the place it came from.

The one import namespace. Its subpackages live in the repository's stage folders
(the layout the product's design card fixes), mapped by `pyproject.toml`:

    mnote_evidence.build      <- build/       scan -> providers -> sidecars -> index -> render
    mnote_evidence.functions  <- functions/   pure query handlers and their adapters

so nothing installs a top-level module called `build` or `functions` (PyPA's `build`
is in most environments). See ARCHITECTURE.md for the data flow.
"""

__version__ = "0.2.0"

# In a source checkout the stage folders sit beside this one: make them importable as
# subpackages even without an install (an editable install maps them the same way).
import os as _os

_checkout = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
if _os.path.isfile(_os.path.join(_checkout, "build", "pipeline.py")) and _checkout not in __path__:
    __path__.append(_checkout)
del _os, _checkout
