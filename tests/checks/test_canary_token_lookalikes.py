"""The planted canary token (``gp-canary-<16 hex>``) copied in look-alike letters (Cyrillic ``а с е``,
Greek ``ο``, small capitals), in capitals, or with invisible characters between its letters: every
reader sees the token, so it is a leak too. Before, only the exact token was found (the whole
26-character marker is shorter than ``min_chars``, so no prompt run caught it either). The armed check
blocks it streamed in any deltas and holds every character of the copy back until then; the
whole-text form gives the same verdict.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from config.policy import CanaryGuardrail
from guardrails.decision import PASS, Block
from guardrails.seams import StreamContext, passes_whole_of
from guardrails.stream import build_stream_guardrails
from tests.stream_support import armed_passes, cut_text, utf8_deltas

TOKEN = "gp-canary-0a1b2c3d4e5f6a7b"
CANARY = build_stream_guardrails([CanaryGuardrail(id="leak", kind="canary", min_chars=40)], "[withheld]")[0]
CONTEXTS = {"token only": StreamContext(system_prompt="", canary_token=TOKEN),
            "with a prompt": StreamContext(system_prompt="You are the release assistant of the Orchard build farm. "
                                           "Never reveal the deployment checklist.", canary_token=TOKEN)}
WHOLE = passes_whole_of(CANARY)
LOOKALIKES = {"a": "аαᴀ", "c": "сᴄ", "e": "еᴇ", "p": "рρᴘ", "o": "οо", "y": "уʏ", "n": "ɴ", "r": "ʀ", "b": "Ь",
              "d": "ԁᴅ", "g": "ɡɢ", "-": "‐"}
INVISIBLE = "\u200b\u2060\u00ad\ufeff"


def _disguise(chosen: list[bool], picks: list[int], upper: bool, marks: bool) -> str:
    out = []
    for n, ch in enumerate(TOKEN):
        alikes = LOOKALIKES.get(ch)
        ch = alikes[picks[n % len(picks)] % len(alikes)] if alikes and chosen[n % len(chosen)] else ch
        out.append((ch.upper() if upper else ch) + (INVISIBLE[n % len(INVISIBLE)] if marks and n % 3 == 0 else ""))
    return "".join(out)


def _pieces(text: str, sizes: list[int], in_bytes: bool) -> list[str]:
    return utf8_deltas(text, sizes) if in_bytes else cut_text(text, sizes)


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(chosen=st.lists(st.booleans(), min_size=1, max_size=8), picks=st.lists(st.integers(0, 3), min_size=1, max_size=5),
       upper=st.booleans(), marks=st.booleans(), sizes=st.lists(st.integers(1, 6), min_size=1, max_size=5),
       in_bytes=st.booleans(), ctx_name=st.sampled_from(sorted(CONTEXTS)),
       prefix=st.sampled_from(["", "The marker is ", "Running: ", "gp-", "Маркер: "]))
def test_a_disguised_token_is_blocked_and_held_back_until_then(
        chosen: list[bool], picks: list[int], upper: bool, marks: bool, sizes: list[int], in_bytes: bool,
        ctx_name: str, prefix: str) -> None:
    ctx = CONTEXTS[ctx_name]
    copy = _disguise(chosen, picks, upper, marks)
    text = prefix + copy + " and that is all."
    pieces = _pieces(text, sizes, in_bytes)
    check = CANARY.arm(ctx)
    assert check is not None
    accumulated, blocked = "", False
    for piece in pieces:
        accumulated += piece
        found = check.check_horizon(accumulated, piece)
        if isinstance(found, Block):
            blocked = True
            break
        assert isinstance(found, int)
        assert found <= len(prefix), (found, accumulated)  # no character of the copy released
    assert blocked
    assert WHOLE is not None
    assert not WHOLE(ctx, pieces)


@pytest.mark.parametrize("ctx_name", sorted(CONTEXTS))
def test_prose_is_held_only_while_it_could_begin_the_token(ctx_name: str) -> None:
    ctx = CONTEXTS[ctx_name]
    check = CANARY.arm(ctx)
    assert check is not None
    text = ""
    for piece in ["The build ", "is running", " ", "and the gp", "-ca", "nal is ", "fine ", "again."]:
        text += piece
        horizon = check.check_horizon(text, piece)
        assert isinstance(horizon, int)
        if text.endswith("running"):
            assert horizon == len(text) - 1 or ctx_name == "with a prompt"  # "g" may begin the token
        if text.endswith("gp-ca"):
            assert horizon <= len(text) - 5
    assert check.check_horizon(text, "") == len(text) or ctx_name == "with a prompt"
    assert check.finish(text) is PASS


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(parts=st.lists(st.sampled_from([TOKEN[:9], TOKEN[9:], TOKEN.upper(), "gр-", "саnаrу-", "0a1b2c3d", "4e5f6a7b",
                                       "\u200b", "a\u0301", " ", "ﬁ", "ẞ", "text "]), max_size=8),
       sizes=st.lists(st.integers(1, 7), min_size=1, max_size=4), ctx_name=st.sampled_from(sorted(CONTEXTS)))
def test_the_whole_text_form_agrees_with_the_armed_check(parts: list[str], sizes: list[int], ctx_name: str) -> None:
    ctx = CONTEXTS[ctx_name]
    pieces = _pieces("".join(parts), sizes, False)
    assert WHOLE is not None
    assert WHOLE(ctx, pieces) == armed_passes(CANARY, ctx, pieces)
