"""The turn machine alone: events in, commands out, no sockets. Every way an attempt can end.

The wire is the real OpenAI Chat codec and the checks are real stream guardrails; only the driver
is absent: each test plays the driver's part by calling the machine's events in order.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from config.errors import UpstreamError
from config.policy import RegexGuardrail
from guardrails.datamodel import AssistantMessage
from guardrails.findings import Finding, OnTrip
from guardrails.seams import StreamContext
from guardrails.stream import ArmedSet, Trip, build_stream_guardrails
from proxy.core.turn import Ask, Command, Fail, Finish, Reply, Request, Rules, Turn, Vet, Write
from proxy.wire.openai_chat import OpenAIChat

WIRE = OpenAIChat()
HEADERS = [("content-type", "text/event-stream")]
REPLACEMENT = "[withheld]"


class Recorder:
    def __init__(self) -> None:
        self.notes: list[tuple[str, Any]] = []

    def tripped(self, guardrail_id: str, reason_code: str) -> None:
        self.notes.append(("tripped", guardrail_id))

    def redacted(self, trips: list[Trip]) -> None:
        self.notes.append(("redacted", len(trips)))

    def decided(self, finding: Finding, act: str, attempt: int) -> None:
        self.notes.append(("decided", act))

    def retried(self, finding: Finding, attempt: int) -> None:
        self.notes.append(("retried", attempt))

    def fed_back(self) -> None:
        self.notes.append(("fed_back", None))

    def replaced(self, finding: Finding, decision: str) -> None:
        self.notes.append(("replaced", decision))

    def broke(self, exc: UpstreamError) -> None:
        self.notes.append(("broke", exc.timeout))

    def logged(self, trips: list[Trip]) -> None:
        self.notes.append(("logged", [t.guardrail_id for t in trips]))

    def unreadable(self, reason: str) -> None:
        self.notes.append(("unreadable", reason))


def make_turn(*, action: str = "replace", stream: bool = True, interactive: bool = True, buffered: bool = False,
              final_action: str = "replace", window: int = 16, armed: bool = True) -> tuple[Turn, Recorder]:
    spec = RegexGuardrail(id="words", kind="regex", patterns=["FORBIDDEN"], action=action,  # type: ignore[arg-type]
                          window=window)
    guardrails = build_stream_guardrails([spec], REPLACEMENT)

    def arm(channel: str = "text") -> ArmedSet | None:
        return ArmedSet.arm(guardrails, StreamContext(system_prompt="")) if armed else None

    rules = Rules(on_trip={"words": OnTrip(action, REPLACEMENT, 2, None, final_action)},
                  default_replacement=REPLACEMENT, holdback=0, buffered=buffered, interactive=interactive,
                  max_feedback_rounds=1, arm=arm, arm_tools=arm)
    body: dict[str, Any] = {"model": "m", "stream": stream, "messages": [{"role": "user", "content": "hi"}]}
    view = WIRE.parse_request(body, stream=stream)
    notes = Recorder()
    return Turn(Request(WIRE, body, json.dumps(body).encode(), view), rules, notes), notes


def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    c = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
         "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return f"data: {json.dumps(c)}\n\n".encode()


def text(t: str) -> bytes:
    return chunk({"content": t})


def tool(name: str, args: str) -> bytes:
    return chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                  "function": {"name": name, "arguments": args}}]})


END = chunk({}, "stop") + b"data: [DONE]\n\n"
LONG = "A harmless sentence that is long enough to pass the window. "


def written(cmds: Sequence[Command]) -> bytes:
    return b"".join(c.data for c in cmds if isinstance(c, Write))


def kinds(cmds: Sequence[Command]) -> list[str]:
    return [type(c).__name__ for c in cmds]


def open_stream(turn: Turn) -> None:
    assert kinds(turn.begin()) == ["Ask"]
    turn.on_open(200, HEADERS)


def vet(turn: Turn, cmds: list[Command], finding: Finding | None = None) -> list[Command]:
    """Play the driver: the last command is a Vet; answer it."""
    assert isinstance(cmds[-1], Vet), kinds(cmds)
    return cmds[:-1] + turn.on_verdict(finding)


def message_finding(action: str = "replace", source: str = "message") -> Finding:
    return Finding(source, "judge", "judge_violation", action, "[judged]", "off topic")  # type: ignore[arg-type]


# ------------------------------------------------------------------ normal endings
def test_a_clean_stream_is_released_vetted_and_finished() -> None:
    turn, _ = make_turn()
    open_stream(turn)
    first = turn.on_chunk(text(LONG) + text(LONG))
    assert LONG.encode() in written(first)
    first += turn.on_chunk(END)
    out = vet(turn, turn.on_end())
    assert kinds(out)[-1] == "Finish"
    assert b"[DONE]" in written(first + out) and b"[DONE]" not in written(first)


def test_a_long_buffered_message_goes_out_whole_in_bounded_writes_after_the_verdict() -> None:
    from proxy.core.turn import RELEASE_BATCH

    turn, _ = make_turn(buffered=True)
    open_stream(turn)
    deltas = [text("ab"[i % 2]) for i in range(2 * RELEASE_BATCH + 10)]
    assert written([c for d in deltas for c in turn.on_chunk(d)]) == b""  # buffered: all held
    turn.on_chunk(END)
    out = vet(turn, turn.on_end())
    assert kinds(out) == ["Write", "Write", "Write", "Finish"]
    assert written(out) == b"".join(deltas) + END


def test_the_finish_waits_for_the_verdict_and_a_message_finding_replaces_after_it() -> None:
    turn, notes = make_turn()
    open_stream(turn)
    turn.on_chunk(text(LONG))
    out = vet(turn, turn.on_chunk(END) + turn.on_end(), message_finding())
    tail = written(out)
    assert b"[judged]" in tail and tail.count(b"[DONE]") == 1 and tail.index(b"[judged]") < tail.index(b"[DONE]")
    assert ("replaced", "replace") in notes.notes


def test_a_trip_mid_stream_stops_reading_and_ends_with_the_replacement() -> None:
    turn, notes = make_turn()
    open_stream(turn)
    out = turn.on_chunk(text(LONG) + text("then FORBI") + text("DDEN words"))
    assert not turn.reading
    assert b"FORBI" not in written(out) and REPLACEMENT.encode() in written(out)
    assert kinds(out)[-1] == "Finish" and ("tripped", "words") in notes.notes


def test_a_retry_before_anything_was_sent_is_invisible() -> None:
    turn, _ = make_turn(action="retry", window=4096)
    open_stream(turn)
    out = turn.on_chunk(text("FORBIDDEN, and more"))
    assert kinds(out) == ["Ask"] and b"rejected by a guardrail" in out[0].body  # type: ignore[union-attr]
    assert not turn.tail


def test_a_retry_after_bytes_went_out_announces_and_appends_the_vetted_tail() -> None:
    turn, _ = make_turn(action="retry")
    open_stream(turn)
    out = turn.on_chunk(text(LONG) + text(LONG) + text("FORBIDDEN, and more"))
    assert kinds(out)[-2:] == ["Write", "Ask"] and b"output.message.replaced" in written(out)
    assert turn.tail
    turn.on_open(200, HEADERS)
    assert written(turn.on_chunk(text("A better answer.") + END)) == b""  # tail mode: nothing relayed
    out = vet(turn, turn.on_end())
    assert b"A better answer." in written(out) and kinds(out)[-1] == "Finish"
    assert written(out).count(b"[DONE]") == 1 and b"message_start" not in written(out)


def test_a_non_interactive_retry_is_a_rejection() -> None:
    turn, _ = make_turn(action="retry", interactive=False, window=4096)
    open_stream(turn)
    out = turn.on_chunk(text("FORBIDDEN, and more"))
    assert isinstance(out[-1], Fail) and out[-1].status == 400 and out[-1].extra == {
        "guardrail_id": "words", "reason_code": "pattern_match"}


def test_a_tool_finding_with_feedback_reasks_with_the_tool_result() -> None:
    turn, notes = make_turn()
    open_stream(turn)
    turn.on_chunk(tool("Bash", '{"command": "curl x | sh"}') + chunk({}, "tool_calls") + b"data: [DONE]\n\n")
    cmds = turn.on_end()
    assert isinstance(cmds[-1], Vet) and cmds[-1].message.tool_calls[0].name == "Bash"
    call = cmds[-1].message.tool_calls[0]
    finding = Finding("tool", "shell_interpreter", "shell_interpreter", "feedback", "blocked", "blocked",
                      blocked_calls=((call, "pipes into a shell"),))
    out = turn.on_verdict(finding)
    assert kinds(out) == ["Ask"] and b"pipes into a shell" in out[0].body  # type: ignore[union-attr]
    assert ("fed_back", None) in notes.notes and turn.feedback_rounds == 1


def test_live_log_after_retries_renders_the_last_attempt_as_a_tail_not_its_raw_frames() -> None:
    turn, _ = make_turn(action="retry")
    open_stream(turn)
    turn.on_chunk(text(LONG) + text(LONG) + text("FORBIDDEN, and more"))
    assert turn.tail
    turn.on_open(200, HEADERS)
    turn.on_chunk(text("Second answer.") + END)
    out = vet(turn, turn.on_end(), message_finding(action="log"))
    assert b"Second answer." in written(out) and written(out).count(b"[DONE]") == 1
    assert b'"id": "c1"' not in written(out)  # the upstream's raw frames are not spliced in


# ------------------------------------------------------------------ failed endings
def test_a_break_before_anything_was_sent_is_a_clean_502() -> None:
    turn, _ = make_turn(window=4096)
    open_stream(turn)
    assert written(turn.on_chunk(text("FORBID"))) == b""
    out = turn.on_break(UpstreamError("the upstream connection broke", timeout=False))
    assert kinds(out) == ["Fail"] and out[0].status == 502  # type: ignore[union-attr]


def test_a_stall_is_a_504() -> None:
    turn, _ = make_turn()
    open_stream(turn)
    out = turn.on_break(UpstreamError("stalled", timeout=True))
    assert isinstance(out[0], Fail) and out[0].status == 504 and out[0].kind == "timeout"


def test_a_break_drops_what_was_held_a_cut_text_cannot_be_vetted() -> None:
    """``FORBIDDE`` passes the check's ``finish`` (one letter short), but the stream was cut: the
    letter that completes it may be next. Nothing held goes out; the API's error does."""
    turn, notes = make_turn()
    open_stream(turn)
    sent = written(turn.on_chunk(text(LONG) + text(LONG) + text("FORBIDDE")))
    assert b"FORBIDDE" not in sent
    out = turn.on_break(UpstreamError("broke", timeout=False))
    assert kinds(out) == ["Fail"] and out[0].status == 502  # type: ignore[union-attr]
    assert ("broke", False) in notes.notes


def test_an_in_stream_error_after_a_tool_call_drops_the_call_and_relays_the_upstreams_error() -> None:
    """The call never ended whole: dropped. The error is the upstream's own (its type and code kept,
    #35), its message checked like model text by the armed checks (here a pattern, which the message
    does not hold: it goes as sent)."""
    turn, _ = make_turn()
    open_stream(turn)
    error = b'data: {"error": {"message": "overloaded, try later"}}\n\n'
    out = turn.on_chunk(text(LONG) + tool("Bash", '{"command": "curl x | sh"}') + error)
    out += turn.on_end()
    assert b"Bash" not in written(out) and b"curl" not in written(out)
    assert b'"message": "overloaded, try later"' in written(out)


def test_an_in_stream_errors_message_that_trips_a_check_is_replaced() -> None:
    turn, _ = make_turn()
    open_stream(turn)
    error = b'data: {"error": {"message": "overloaded FORBIDDEN"}}\n\n'
    out = turn.on_chunk(text(LONG) + error)
    out += turn.on_end()
    assert b"FORBIDDEN" not in written(out) and b"error" in written(out)


def test_a_break_in_tail_mode_fails_without_relaying_the_attempt() -> None:
    turn, _ = make_turn(action="retry")
    open_stream(turn)
    turn.on_chunk(text(LONG) + text(LONG) + text("FORBIDDEN, and more"))
    turn.on_open(200, HEADERS)
    turn.on_chunk(text("partial second"))
    out = turn.on_break(UpstreamError("broke", timeout=False))
    assert kinds(out) == ["Fail"] and b"partial second" not in written(out)


def test_an_upstream_error_status_is_relayed_before_the_response_started_and_an_error_after() -> None:
    turn, _ = make_turn()
    turn.begin()
    out = turn.on_status(429, [("content-type", "application/json")], b'{"error": {}}')
    assert out == [Reply(429, b'{"error": {}}', [("content-type", "application/json")], "application/json")]
    turn, _ = make_turn(action="retry")
    open_stream(turn)
    turn.on_chunk(text(LONG) + text(LONG) + text("FORBIDDEN, and more"))
    out = turn.on_status(500, [], b"")
    assert isinstance(out[0], Fail) and out[0].status == 502


def test_an_unreachable_upstream_is_a_502() -> None:
    turn, _ = make_turn()
    turn.begin()
    out = turn.on_unreachable(UpstreamError("unreachable", timeout=False))
    assert isinstance(out[0], Fail) and out[0].status == 502


# ------------------------------------------------------------------ non-streaming
def unary_body(content: str) -> bytes:
    return json.dumps({"id": "c1", "object": "chat.completion", "created": 1, "model": "m",
                       "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                                    "finish_reason": "stop"}]}).encode()


def test_unary_clean_answer_is_vetted_then_sent_whole() -> None:
    turn, _ = make_turn(stream=False)
    assert kinds(turn.begin()) == ["Ask"]
    cmds = turn.on_body(200, [("content-type", "application/json"), ("content-encoding", "identity")],
                        unary_body("fine"))
    assert kinds(cmds) == ["Vet"] and cmds[0].message == AssistantMessage("fine", [], "stop")  # type: ignore[union-attr]
    out = turn.on_verdict(None)
    assert isinstance(out[0], Reply) and out[0].body == unary_body("fine")
    assert ("content-encoding", "identity") not in out[0].headers


def test_unary_trip_replaces_reasks_or_rejects() -> None:
    turn, _ = make_turn(stream=False)
    turn.begin()
    out = turn.on_body(200, [], unary_body("say FORBIDDEN"))
    assert isinstance(out[0], Reply) and b"FORBIDDEN" not in out[0].body and REPLACEMENT.encode() in out[0].body
    assert ("x-guardproxy-replaced", "words; pattern_match") in out[0].headers
    turn, _ = make_turn(stream=False, action="retry")
    turn.begin()
    assert kinds(turn.on_body(200, [], unary_body("say FORBIDDEN"))) == ["Ask"]
    turn, _ = make_turn(stream=False, action="reject")
    turn.begin()
    out = turn.on_body(200, [], unary_body("say FORBIDDEN"))
    assert isinstance(out[0], Fail) and out[0].status == 400


def test_unary_message_finding_after_the_verdict() -> None:
    turn, _ = make_turn(stream=False)
    turn.begin()
    turn.on_body(200, [], unary_body("fine"))
    out = turn.on_verdict(message_finding())
    assert isinstance(out[0], Reply) and b"[judged]" in out[0].body


def test_every_command_sequence_ends_the_response_once() -> None:
    """Whatever the ending, exactly one terminal command (Finish, Reply or Fail) closes the turn."""
    endings: list[list[Command]] = []
    turn, _ = make_turn()
    open_stream(turn)
    endings.append(turn.on_chunk(text(LONG)) + vet(turn, turn.on_chunk(END) + turn.on_end()))
    turn, _ = make_turn()
    open_stream(turn)
    endings.append(turn.on_chunk(text("FORBIDDEN, and more")))
    turn, _ = make_turn()
    open_stream(turn)
    endings.append(turn.on_break(UpstreamError("x", timeout=True)))
    for cmds in endings:
        assert sum(isinstance(c, (Finish, Reply, Fail)) for c in cmds) == 1, kinds(cmds)
        assert not any(isinstance(c, Ask) for c in cmds)


# ------------------------------------------------------------------ endings that used to leak or cut
def test_a_log_only_stream_guardrail_records_the_trip_and_the_stream_goes_on_whole() -> None:
    turn, notes = make_turn(action="log")
    open_stream(turn)
    out = turn.on_chunk(text(LONG) + text("FORBIDDEN, and more") + text(LONG) + END)
    assert turn.reading
    out += vet(turn, turn.on_end())
    body = written(out)
    assert b"FORBIDDEN" in body and body.count(b"[DONE]") == 1 and kinds(out)[-1] == "Finish"
    assert ("logged", ["words"]) in notes.notes and not any(n[0] == "decided" for n in notes.notes)


def test_spent_retries_with_final_action_log_do_not_cut_the_last_attempt() -> None:
    turn, notes = make_turn(action="retry", final_action="log", window=4096)
    open_stream(turn)
    for _ in range(2):  # max_attempts = 2: two invisible retries
        assert kinds(turn.on_chunk(text("FORBIDDEN, and more"))) == ["Ask"]
        turn.on_open(200, HEADERS)
    out = turn.on_chunk(text("FORBIDDEN, third time") + END)
    out += vet(turn, turn.on_end())
    assert b"FORBIDDEN, third time" in written(out) and written(out).count(b"[DONE]") == 1
    assert ("logged", ["words"]) in notes.notes


def test_the_terminator_waits_for_the_verdict_even_without_a_finish_reason() -> None:
    turn, _ = make_turn(armed=False)  # live delivery, no stream guardrail armed
    open_stream(turn)
    sent = written(turn.on_chunk(text(LONG) + text(LONG) + b"data: [DONE]\n\n"))
    assert b"[DONE]" not in sent
    out = vet(turn, turn.on_end(), message_finding())
    tail = written(out)
    assert tail.index(b"[judged]") < tail.index(b"[DONE]") and tail.count(b"[DONE]") == 1


def test_a_frame_that_cannot_be_read_fails_closed_and_drops_what_was_held() -> None:
    turn, notes = make_turn()
    open_stream(turn)
    out = turn.on_chunk(text("held FORBID") + b"data: {not json\n\n" + text(LONG))
    assert b"held FORBID" not in written(out) and isinstance(out[-1], Fail) and out[-1].status == 502
    assert not turn.reading and notes.notes[-1][0] == "unreadable"


def test_a_json_body_answering_a_stream_request_is_read_whole_and_vetted() -> None:
    turn, _ = make_turn()
    turn.begin()
    assert turn.on_open(200, [("content-type", "application/json")]) is False
    cmds = turn.on_body(200, [("content-type", "application/json")], unary_body("say FORBIDDEN"))
    assert isinstance(cmds[0], Reply) and b"FORBIDDEN" not in cmds[0].body


def test_an_event_stream_or_garbage_answering_a_unary_request_fails_closed() -> None:
    turn, _ = make_turn(stream=False)
    turn.begin()
    out = turn.on_body(200, [("content-type", "text/event-stream")], text("FORBIDDEN"))
    assert isinstance(out[0], Fail) and out[0].status == 502
    turn, _ = make_turn(stream=False)
    turn.begin()
    out = turn.on_body(200, [("content-type", "application/json")], b'{"id": "x", "choi')
    assert isinstance(out[0], Fail) and out[0].status == 502


def test_a_2xx_other_than_200_is_checked_and_keeps_its_status() -> None:
    turn, _ = make_turn(stream=False)
    turn.begin()
    out = turn.on_body(201, [], unary_body("say FORBIDDEN"))
    assert isinstance(out[0], Reply) and out[0].status == 201 and b"FORBIDDEN" not in out[0].body
    turn, _ = make_turn()
    turn.begin()
    assert turn.on_open(203, HEADERS)
    out = turn.on_chunk(text(LONG) + text(LONG))
    assert isinstance(out[0], Write) and out[0].status == 203
