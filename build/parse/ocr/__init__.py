"""OCR: engines (local RapidOCR / Tesseract, remote MinerU), CJK normalisation, caching."""
