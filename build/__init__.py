"""mnote-evidence build step: scan -> providers -> sidecars -> index (-> render)."""

__version__ = "0.1.0"
