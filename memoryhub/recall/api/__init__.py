"""Recall's REST API, one module per capability (search, recall, instructions, injection…)."""
