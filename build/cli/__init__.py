"""The `mnote-evidence` command line: one module per command, on top of everything."""
