"""LightRAG chunks turned into citations that open the exact place."""
