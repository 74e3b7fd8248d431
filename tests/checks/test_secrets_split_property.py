"""Stream equals whole (#32): for every catalog rule's sample in prose, glued to its neighbours, and
every precision near miss, any split of the text into deltas gives the ``secrets`` check the verdict
the whole text gets; with ``action = "redact"`` the client gets the same text whatever the split, and
it never holds the sample's random part. (``bench.detect_trips`` runs the same comparison over every
labelled public sample: 0 disagreements.)"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tests.checks.test_secrets_precision as precision
from tests.checks.test_secrets_catalog import blocked_category
from tests.checks.test_secrets_redact import masked
from tests.secret_samples import TEMPLATES, fill
from tests.stream_support import split_deltas

_NEAR = next(mark.args[1] for mark in precision.test_ordinary_code_and_docs_pass.pytestmark
             if mark.name == "parametrize")
SAMPLES = [f"Here it is:\n{fill(t, random.Random(i))}\nDone." for i, t in enumerate(TEMPLATES.values())]
SAMPLES += [f"x{fill(TEMPLATES[r], random.Random(7))}7 end" for r in ("github-token", "gitlab-token", "stripe-key")]
TEXTS = SAMPLES + list(_NEAR)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_any_split_gives_the_whole_texts_verdict(data: st.DataObject) -> None:
    text = data.draw(st.sampled_from(TEXTS))
    deltas = data.draw(split_deltas(text))
    assert (blocked_category(text, deltas) is None) == (blocked_category(text, [text]) is None), deltas


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_a_redacted_answer_is_the_same_whatever_the_split(data: st.DataObject) -> None:
    text = data.draw(st.sampled_from(SAMPLES))
    deltas = data.draw(split_deltas(text))
    # The same masks and the same rule in each: where a provider's rule and the assignment rule both
    # match one key, the match the whole text settles first wins in every split.
    assert masked(text, deltas) == masked(text, [text]), deltas


_CONTEXTS = ('api_key = "{}"\n', "export SECRET_TOKEN={}\n", "password: {} ok", "{}")


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_a_key_in_an_assignment_is_masked_under_one_rule_whatever_the_split(data: st.DataObject) -> None:
    """A provider's key as an assignment's value matches two rules (the provider's and the assignment
    rule, or the provider's keyed form); the mask names the same one in every split."""
    rule = data.draw(st.sampled_from(sorted(TEMPLATES)))
    context = data.draw(st.sampled_from(_CONTEXTS))
    text = "x " + context.format(fill(TEMPLATES[rule], random.Random(rule))) + " Done."
    deltas = data.draw(split_deltas(text))
    assert masked(text, deltas) == masked(text, [text]), deltas


@pytest.mark.parametrize("rule", sorted(TEMPLATES))
def test_one_character_at_a_time_masks_as_the_whole_text_does(rule: str) -> None:
    text = f"Here it is:\n{fill(TEMPLATES[rule], random.Random(3))}\nDone."
    assert masked(text, list(text)) == masked(text, [text])


# url-credentials masks the password, not the host after it; a 1Password service token's sample is
# base64 of a JSON object only for some draws (the catalog test draws its own).
@pytest.mark.parametrize("rule", sorted(set(TEMPLATES) - {"url-credentials", "1password-token"}))
def test_a_redacted_answer_never_holds_the_secret(rule: str) -> None:
    secret = fill(TEMPLATES[rule], random.Random(11))
    text = f"Here it is:\n{secret}\nDone."
    out, rules = masked(text, list(text))
    tail = secret[-12:]
    assert rules and tail not in out, (rule, out)
