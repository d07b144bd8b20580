"""Stage 2: one file in, one artifact out (providers, OCR, budgets, workers, sidecars)."""
