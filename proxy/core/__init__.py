"""The sans-IO core: the turn machine (``turn``), the per-lane stream guards, what is held back,
whole-answer checks and the bounds on an answer. Events in, commands out: no sockets, no clocks.

Imports only the wire contract, ``guardrails`` and ``config``; raises only ``config.errors``."""
