"""Stage 4: the evidence index (`evidence.sqlite`)."""
