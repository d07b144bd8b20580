"""The query side: pure handlers over `evidence.sqlite` and the adapters that serve them."""
