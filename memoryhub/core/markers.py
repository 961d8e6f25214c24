"""Markers shared by what MemoryHub injects into agents and what it ingests back from them."""

# Every injection payload is wrapped in this tag. When an agent's transcript comes back with
# the block still in it, ingestion flags the record so extraction never re-learns our output.
INJECTION_TAG = "memoryhub-context"
INJECTION_OPEN = f"<{INJECTION_TAG}>"
INJECTION_CLOSE = f"</{INJECTION_TAG}>"
