"""The one Markdown dialect (Obsidian-flavoured), shared by parse and render."""
