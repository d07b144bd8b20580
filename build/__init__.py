"""The build step: workspace -> parse -> index -> render, run by `pipeline.build` (docs/architecture.md)."""
