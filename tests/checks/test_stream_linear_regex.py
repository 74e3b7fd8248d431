"""Deny patterns run on RE2 (linear time) with Python's syntax and meaning; what RE2 cannot run is
refused when the policy loads, naming the pattern."""

from __future__ import annotations

import pytest

from config.policy import RegexGuardrail
from guardrails.decision import Block
from guardrails.seams import StreamContext
from guardrails.stream.linear import LinearPattern
from guardrails.stream.patterns import RegexProvider
from tests.stream_support import one_char, random_chunks, run

CTX = StreamContext(system_prompt="")


def _provider(patterns: list[str], flags: list[str] | None = None) -> RegexProvider:
    return RegexProvider(RegexGuardrail(id="deny", kind="regex", patterns=patterns,  # type: ignore[arg-type]
                                        flags=flags or []), "[x]")


@pytest.mark.parametrize("pattern", [r"(a+)+$", r"(a|aa)+b", r"(\w+\s?)+$", r"([a-zA-Z0-9._%+-]+)+@x\.com"])
def test_catastrophic_patterns_finish_on_the_inputs_that_stall_a_backtracking_engine(pattern: str) -> None:
    # 2**34 steps for a backtracking engine on each of these; RE2 reads each character a bounded
    # number of times. The test would hang, not fail, if a backtracking engine ran them.
    check = _provider([pattern]).arm(CTX)
    assert check is not None
    text = "a" * 34 + "!"
    out = run(check, random_chunks(text, 7))
    assert out.block is None or isinstance(out.block, Block)
    long = "a" * 5_000 + "!"
    run(_provider([pattern]).arm(CTX), [long])  # type: ignore[arg-type]


@pytest.mark.parametrize(("pattern", "what"), [(r"(?<=secret )plan", "lookaround"), (r"(\w)\1", "backreference"),
                                               (r"(?>ab)c", "atomic"), (r"a++b", "possessive"),
                                               (r"foo(?!bar)", "lookaround")])
def test_patterns_the_linear_engine_cannot_run_are_refused_at_load_naming_them(pattern: str, what: str) -> None:
    with pytest.raises(ValueError, match=what) as caught:
        _provider(["fine", pattern])
    assert "pattern #2" in str(caught.value) and repr(pattern) in str(caught.value)


def test_python_meaning_is_kept_for_unicode_classes_and_flags() -> None:
    assert [(m.start(), m.end()) for m in LinearPattern(r"\w+").finditer("été 42")] == [(0, 3), (4, 6)]
    assert [(m.start(), m.end()) for m in LinearPattern(r"\d+").finditer("x٣٤y")] == [(1, 3)]
    verbose = _provider([r"secret \s+ plan  # the verbose flag"], ["x", "i"]).arm(CTX)
    assert verbose is not None and run(verbose, one_char("The SECRET  Plan!")).block is not None


def test_offsets_are_those_of_the_whole_text_when_searching_from_a_start() -> None:
    pattern = LinearPattern(r"\bcat\b")
    text = "concatenate the cat"
    assert [(m.start(), m.end()) for m in pattern.finditer(text, 4)] == [(16, 19)]
    assert list(LinearPattern(r"^cat").finditer("a cat", 2)) == []


@pytest.mark.parametrize(("pattern", "text", "blocked"), [
    (r"(a+)+$", "a" * 300 + "!", False),          # as long as the window, but '!' follows: no match
    (r"(a+)+$", "a" * 300, True),                 # the answer ends there: a match
    (r"secret$", "my secret continues", False),
    (r"secret$", "my secret", True),
    (r"secret$", "my secret\nand more", False),
    (r"secret$", "my secret\nand more", True),    # with flag m (below) "$" matches before a newline
    (r"x{200,}\b", "x" * 400 + "yz", False),      # '\b' needs a non-word character after the run
    (r"x{200,}\b", "x" * 400 + " yz", True),
    (r"\w{300}\Z", "w" * 300 + ".", False),
])
def test_a_pattern_that_reads_past_its_match_trips_only_where_the_whole_answer_matches(
        pattern: str, text: str, blocked: bool) -> None:
    # A long match at the end of the text so far is reported at the window's length for ordinary
    # patterns; for one whose '$', '\Z' or '\b' depends on what comes next it must wait for that.
    flags = ["m"] if text == "my secret\nand more" and blocked else []
    for chunks in (one_char(text), random_chunks(text, 11), [text]):
        check = _provider([pattern], flags).arm(CTX)
        assert check is not None
        out = run(check, chunks)
        assert (out.block is not None) is blocked, (pattern, text[-20:], len(chunks))
