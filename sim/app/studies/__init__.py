"""Reproducible studies behind the docs: each writes its data and figures, then the doc cites them."""
