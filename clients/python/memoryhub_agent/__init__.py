"""memoryhub-agent: connects hook-based coding agents to a MemoryHub server."""

__version__ = "0.1.0"
