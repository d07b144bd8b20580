"""The pure query handlers and the one route table."""
