"""The LLM provider layer: prompts in, text or JSON out, and a log of every call.

Callers use `from memoryhub.llm import client as llm` and nothing else from this package.
It imports no domain app (memories, sessions, pipeline, recall, integrations): the prompt and
the deterministic offline answer come from the caller.
"""
