"""The Hindsight-compatible HTTP API under /v1/default/banks/{bank_id}/… (oh-my-pi's
`memory.backend: hindsight` and every Hindsight client), on MemoryHub's own services."""
