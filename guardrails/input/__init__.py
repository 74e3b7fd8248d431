"""Input guardrails: checks on what a request carries into the model (``[[input_guardrails]]``).

``finders`` find spans in one text (secrets, PII, deny patterns, hidden characters), cached by the
text's digest; ``build`` turns the policy's entries into them and into the message checks they
reuse (judge, webhook, moderation). The request side (which texts, rewriting the body, answering a
reject) is ``proxy.input_guard``'s.
"""
