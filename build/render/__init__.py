"""Stage 5: the static evidence site (Jinja2 templates in site_templates/)."""
