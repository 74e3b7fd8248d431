"""``StreamGuard`` alone: frames in, steps out (what may be released, a trip, redactions). No codec,
no sockets: frames are built by hand, their bytes are labels."""

from __future__ import annotations

from config.policy import PiiGuardrail, RegexGuardrail
from guardrails.datamodel import (
    Finish,
    Frame,
    StreamError,
    TextDelta,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
)
from guardrails.seams import StreamContext
from guardrails.stream import ArmedSet, build_stream_guardrails
from proxy.core.stream_guard import StreamGuard

CTX = StreamContext(system_prompt="")


def armed(*, action: str = "replace", window: int = 8) -> ArmedSet:
    spec = RegexGuardrail(id="words", kind="regex", patterns=["FORBIDDEN"], action=action,  # type: ignore[arg-type]
                          window=window)
    return ArmedSet.arm(build_stream_guardrails([spec], "[x]"), CTX)


def t(label: str, text: str) -> Frame:
    return Frame(label.encode(), (TextDelta(text),))


def labels(frames: list[Frame]) -> list[str]:
    return [f.raw.decode() for f in frames]


def test_text_is_released_once_no_check_can_still_need_it_and_never_out_of_order() -> None:
    g = StreamGuard(armed(), holdback=0)
    assert labels(g.push(t("a", "plain words that cannot match, ")).send) == ["a"]
    assert labels(g.push(t("b", "then FORB")).send) == []  # may become FORBIDDEN: held
    assert labels(g.push(t("c", "ID")).send) == []
    assert labels(g.push(t("d", "EN? no: FORBIDEN typo, long tail of words")).send) == ["b", "c", "d"]


def test_holdback_is_a_minimum_even_with_nothing_to_match() -> None:
    g = StreamGuard(armed(), holdback=10)
    assert labels(g.push(t("a", "12345")).send) == []
    assert labels(g.push(t("b", "1234567890123")).send) == ["a"]


def test_a_trip_clears_what_was_held_and_ends_the_guard() -> None:
    g = StreamGuard(armed(), holdback=0)
    g.push(t("a", "clean start. "))
    step = g.push(t("b", "the FORBIDDEN word and more"))
    assert step.trip is not None and step.trip.guardrail_id == "words" and step.send == []
    assert g.push(t("c", "anything")).send == [] and g.release_all() == [] and not g.held


def test_the_finish_the_terminator_and_an_error_wait_for_release_all() -> None:
    for last in (Frame(b"fin", (TextDelta("done."), Finish("stop"))), Frame(b"[DONE]", last=True),
                 Frame(b"err", (StreamError("overloaded"),))):
        g = StreamGuard(None, holdback=0)
        assert labels(g.push(t("a", "hello")).send) == ["a"]
        assert g.push(last).send == []
        assert g.push(Frame(b"after")).send == []
        assert g.end().send == []
        assert labels(g.release_all()) == [last.raw.decode(), "after"]


def test_from_the_first_tool_call_on_nothing_is_released_until_the_message_is_vetted() -> None:
    g = StreamGuard(None, holdback=0)
    assert labels(g.push(t("a", "I'll run it.")).send) == ["a"]
    assert g.push(Frame(b"start", (ToolCallStart("0", "call_1", "Bash"),))).send == []
    assert g.push(Frame(b"args", (ToolCallArgsDelta("0", '{"command": "ls"}'),))).send == []
    assert g.push(t("b", "more text")).send == []
    assert g.push(Frame(b"end", (ToolCallEnd("0"),))).send == []
    assert g.end().trip is None
    assert g.message().tool_calls[0].arguments == '{"command": "ls"}'
    assert labels(g.release_all()) == ["start", "args", "b", "end"]


def test_tool_arguments_are_checked_whole_at_the_end() -> None:
    g = StreamGuard(armed(), holdback=0, rearm=lambda _call=None: armed())
    g.push(Frame(b"start", (ToolCallStart("0", "call_1", "Write"),)))
    g.push(Frame(b"a1", (ToolCallArgsDelta("0", '{"text": "FORBI'),)))
    g.push(Frame(b"a2", (ToolCallArgsDelta("0", 'DDEN"}'),)))
    g.push(Frame(b"end", (ToolCallEnd("0"),)))
    step = g.end()
    assert step.trip is not None and g.release_all() == []


def test_buffered_delivery_releases_nothing_before_release_all() -> None:
    g = StreamGuard(armed(), holdback=0, buffered=True)
    assert g.push(t("a", "plain words that cannot match at all")).send == []
    assert g.end().trip is None
    assert labels(g.release_all()) == ["a"]


def test_a_log_only_guardrail_notes_its_trip_and_the_stream_goes_on() -> None:
    g = StreamGuard(armed(action="log"), holdback=0, log_only=frozenset({"words"}))
    step = g.push(t("a", "the FORBIDDEN word, and then more words"))
    assert step.trip is None and [tr.guardrail_id for tr in g.logged] == ["words"]
    assert labels(step.send) == ["a"]
    assert g.push(t("b", " FORBIDDEN again")).trip is None  # disarmed: noted once
    assert g.end().trip is None and len(g.logged) == 1


def test_a_redaction_rewrites_the_held_frame_through_retext() -> None:
    spec = PiiGuardrail(id="pii", kind="pii", categories=["email"], action="redact")
    pii = ArmedSet.arm(build_stream_guardrails([spec], "[x]"), CTX)
    g = StreamGuard(pii, holdback=0, retext=lambda frame, text: text.encode())
    out = g.push(t("a", "write to bob.smith@acmecorp.io today, thanks")).send
    g.end()
    out += g.release_all()
    sent = b"".join(f.raw for f in out)
    assert b"bob.smith@acmecorp.io" not in sent and g.redaction_log


def test_drop_held_forgets_what_was_not_released() -> None:
    g = StreamGuard(armed(), holdback=100)
    g.push(t("a", "short"))
    assert g.held
    g.drop_held()
    assert not g.held and g.release_all() == []


def _frames_alive() -> int:
    import gc

    return sum(1 for o in gc.get_objects() if type(o) is Frame)


def test_a_long_buffered_message_is_held_without_an_object_per_frame_and_released_as_pushed() -> None:
    g = StreamGuard(armed(), holdback=0, buffered=True)
    texts = [chr(ord("a") + i % 26) for i in range(5000)]
    before = _frames_alive()
    for i, text in enumerate(texts):
        assert g.push(t(f"<{i}>", text)).send == []
    assert _frames_alive() - before < 100  # held as bytes and offsets, not as frames
    out: list[Frame] = []
    while batch := g.release_all(at_most=700):
        assert len(batch) <= 700
        out += batch
    assert out == [t(f"<{i}>", text) for i, text in enumerate(texts)]
    assert not g.held


def test_a_redaction_reaches_frames_held_in_the_compact_form() -> None:
    spec = PiiGuardrail(id="pii", kind="pii", categories=["email"], action="redact")
    g = StreamGuard(ArmedSet.arm(build_stream_guardrails([spec], "[x]"), CTX), holdback=0, buffered=True,
                    retext=lambda frame, text: text.encode())
    message = "padding words. " * 10 + "write to bob.smith@acmecorp.io today, thanks"
    for i, ch in enumerate(message):
        g.push(t(f"<{i}>", ch))
    assert g.end().trip is None
    sent = b"".join(f.raw for f in g.release_all())
    at = message.index("bob")
    assert sent.startswith(b"<0><1>") and f"<{at - 1}>[email]<{at + 21}>".encode() in sent and g.redaction_log


def test_held_frames_in_the_compact_form_keep_their_redaction_when_a_second_lane_begins() -> None:
    from guardrails.datamodel import PRIMARY, Lane
    from proxy.core.choice_guard import ChoiceGuard

    spec = PiiGuardrail(id="pii", kind="pii", categories=["email"], action="redact")
    providers = build_stream_guardrails([spec], "[x]")

    def retext(frame: Frame, texts: dict[Lane, str]) -> bytes:
        return texts.get(PRIMARY, "").encode()

    guard = ChoiceGuard(lambda _: ArmedSet.arm(providers, CTX), holdback=0, buffered=True, retext=retext)
    message = "padding words. " * 4 + "mail bob.smith@acmecorp.io"
    for i, ch in enumerate(message):  # past the frames kept as pushed: the rest is held compactly
        assert guard.push(t(f"<{i}>", ch)).trip is None
    assert guard.push(Frame(b"<other>", (TextDelta("hello", choice=1),))).trip is None  # now two lanes
    assert guard.push(t("<end>", " today")).trip is None
    assert guard.end().trip is None
    sent = b"".join(f.raw for f in guard.release_all())
    at = message.index("bob")
    assert f"<{at - 1}>[email]".encode() in sent and b"bob.smith" not in sent and sent.endswith(b"<other><end>")
