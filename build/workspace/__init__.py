"""Stage 1: what the workspace holds (scan) and how its notes link (links, owners)."""
