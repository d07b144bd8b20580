"""LightRAG: the HTTP client and build-time ingest (the query side lives in functions/handlers/knowledge.py)."""
