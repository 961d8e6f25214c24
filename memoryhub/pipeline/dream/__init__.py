"""meow-memory's dream (seed-algorithms §5.9): a leased, round-based review of the memories one
agent session (a "window") wrote or was shown, run on a worker after the window went quiet.

Every change goes through the memory services and leaves a MemoryEvent by the actor "dream"
(user-scope creations carry the window's user too, as "dream:<username>"). Nothing is deleted:
memories are updated, marked stale (done or outdated) or archived (wrong, trivial, superseded).

  schedule    when a window is due (scheduled trigger) and the manual trigger
  window      what a run reads: the window's records and the memories each round reviews
  prompts     the LLM prompt of each round
  offline     the offline provider's answer: deterministic rules, nothing summarised
  operations  the answer contract: validation, then application as the actor "dream"
  runner      one run: the leased job, its rounds and finalisation
  selectors   reads for the API and the `bank_dream` command
"""
