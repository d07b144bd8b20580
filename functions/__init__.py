"""Query-side functions over `evidence.sqlite` (pure: request in, response out)."""
