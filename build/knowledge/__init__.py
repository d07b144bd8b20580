"""LightRAG: the HTTP client and build-time ingest (the query side: functions/handlers/knowledge.py)."""
