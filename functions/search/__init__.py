"""Full-text search: ranking, result pages, snippets, quote checks."""
