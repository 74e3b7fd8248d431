"""guardproxy's judgement: the seams, the built-in guardrails and the tool rules. No sockets here."""
