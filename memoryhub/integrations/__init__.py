"""Faces that let existing agents use MemoryHub unmodified: protocols other tools already
speak (the Hindsight memory API, MCP), each built on the same services and selectors as the
REST API."""
