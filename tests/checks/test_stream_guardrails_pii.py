"""The ``pii`` stream guardrail: redaction offsets, blocking, near misses and chunking invariance."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from config.policy import PiiGuardrail
from guardrails.decision import PII, Redact
from guardrails.seams import DeltaCheck, StreamContext
from guardrails.stream.pii import PII_WINDOW, PiiCheck, PiiProvider, iban_ok, luhn_ok
from tests.stream_support import one_char, random_chunks, run, summary

CTX = StreamContext(system_prompt="")


def arm(action: str = "redact", **spec: object) -> DeltaCheck:
    provider = PiiProvider(PiiGuardrail(id="pii", kind="pii", action=action, **spec), "[withheld]")  # type: ignore[arg-type]
    check = provider.arm(CTX)
    assert check is not None
    return check


POSITIVES = [
    ("alice.smith@corp-mail.co.uk", "[email]"),
    ("bob+news@mail.stanford.edu", "[email]"),
    ("+1 415 555 0100", "[phone]"),
    ("+44 20 7946 0958", "[phone]"),
    ("+49 (30) 901820", "[phone]"),
    ("(415) 555-0100", "[phone]"),
    ("415-555-0100", "[phone]"),
    ("415.555.0100", "[phone]"),
    ("020 7946 0958", "[phone]"),
    ("06 12 34 56 78", "[phone]"),
    ("4111 1111 1111 1111", "[card]"),
    ("5500-0000-0000-0004", "[card]"),
    ("378282246310005", "[card]"),
    ("DE89 3704 0044 0532 0130 00", "[iban]"),
    ("GB82WEST12345698765432", "[iban]"),
    ("123-45-6789", "[ssn]"),
    ("AB 12 34 56 C", "[nino]"),
]

NEAR_MISSES = [
    "Released on 2024-01-15 as version 1.2.3.4 (build 20240115).",
    "The server at 192.168.100.200 answered in 1234567890 ns; ts=1700000000000.",
    "Order 4111 1111 1111 1112 failed the checksum.",
    "Request id 550e8400-e29b-41d4-a716-446655440000.",
    "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "Invalid SSNs: 000-12-3456, 666-12-3456, 912-34-5678, 123-00-4567.",
    "Pi is 3.14159265358979 and e is 2.718281828459045.",
    "Call 555-123-4567 (not a NANP exchange) or dial 12345.",
    "IBAN-like DE00 1234 5678 9012 3456 78 fails mod-97.",
    "for (i = 0; i < 10; i++) { total += a[i] * 100; }",
    "The range is 10-20-30 and the ratio is 3:4.",
]


@pytest.mark.parametrize(("value", "mask"), POSITIVES)
def test_redacts_each_category_with_its_mask_and_exact_offsets(value: str, mask: str) -> None:
    text = f"Contact: {value}. Thanks!"
    out = run(arm(), one_char(text))
    assert out.redactions == [(text.index(value), text.index(value) + len(value), mask)]


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_near_misses_pass(text: str) -> None:
    assert run(arm(), one_char(text)).redactions == []
    assert run(arm(action="replace"), [text]).block is None


def test_addresses_at_example_domains_are_emails_unless_the_policy_lets_them_pass() -> None:
    text = "Write to john@mail.eu.west.example.com or test@example.org in the docs."
    spans = [(text.index(v), text.index(v) + len(v), "[email]") for v in ("john@mail.eu.west.example.com",
                                                                         "test@example.org")]
    assert run(arm(), one_char(text)).redactions == spans
    assert run(arm(example_emails=False), one_char(text)).redactions == []


def test_block_actions_block_with_the_pii_reason() -> None:
    out = run(arm(action="replace"), one_char("mail me at carol@corp.io please"))
    assert out.block is not None and out.block.reason_code == PII
    assert "carol" not in out.block.rationale


def test_several_redactions_in_one_delta_come_one_per_call_earliest_first() -> None:
    text = "a@corp.io, b@corp.io and c@corp.io. "
    out = run(arm(), [text])
    assert out.redacted == ["a@corp.io", "b@corp.io", "c@corp.io"]


def test_a_match_is_reported_only_once_it_can_no_longer_grow() -> None:
    check = arm()
    acc = ""
    for delta in ["mail a@corp.co", "m", ".", "a", "u and more text"]:
        acc += delta
        decision = check.check(acc, delta)
        if len(acc) < len("mail a@corp.com.au and"):
            assert decision.__class__.__name__ == "Pass"
    assert run(arm(), ["mail a@corp.com.au and more text"]).redacted == ["a@corp.com.au"]


def test_finish_reports_matches_that_end_the_message() -> None:
    out = run(arm(), one_char("reach me at dana@corp.io or +1 415 555 0100"))
    assert out.redacted == ["dana@corp.io", "+1 415 555 0100"]


def test_the_window_holds_every_match_start_when_it_is_reported() -> None:
    text = "x " * 50 + "someone.with.a.long.name@mail.department.university.edu" + " y" * 50
    check = arm()
    acc = ""
    for delta in one_char(text):
        acc += delta
        decision = check.check(acc, delta)
        if decision.__class__.__name__ == "Redact":
            assert decision.start >= len(acc) - PII_WINDOW  # type: ignore[union-attr]


def test_allow_and_categories() -> None:
    text = "ops@corp.io and +1 415 555 0100 then"
    assert run(arm(allow=["ops@corp.io"]), [text]).redacted == ["+1 415 555 0100"]
    assert run(arm(categories=["email"]), [text]).redacted == ["ops@corp.io"]


def test_checksums() -> None:
    assert luhn_ok("4111111111111111") and not luhn_ok("4111111111111112")
    assert iban_ok("DE89 3704 0044 0532 0130 00") and not iban_ok("DE88 3704 0044 0532 0130 00")


FRAGMENTS = [v for v, _ in POSITIVES] + NEAR_MISSES + [
    " ", ". ", "\n", "see ", "call ", "-", "0", "7", "@", "x", "A", "and then ", "(", ")"]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=10), st.integers(0, 10_000), st.integers(1, 12))
def test_redactions_are_the_same_whatever_the_chunking(parts: list[str], seed: int, hi: int) -> None:
    text = "".join(parts)
    expected = summary(run(arm(), [text]))
    assert summary(run(arm(), random_chunks(text, seed, 1, hi))) == expected
    assert summary(run(arm(action="replace"), random_chunks(text, seed, 1, hi)))[0] == \
        summary(run(arm(action="replace"), [text]))[0]


def test_a_number_that_runs_on_into_another_is_read_as_the_two_a_stream_sees() -> None:
    # The phone grammar reads all of it as one (invalid) number; one character at a time the first
    # number settles before the second arrives. Both readings must redact both.
    text = "+1 415 555 0100)415-555-0100"
    expected = [(0, 15, "[phone]"), (16, 28, "[phone]")]
    assert summary(run(arm(), [text]))[1] == expected
    assert summary(run(arm(), one_char(text)))[1] == expected


def test_a_card_that_opens_an_email_is_read_as_the_email_one_character_at_a_time() -> None:
    # "5500-0000-0000-0004" is a whole card once "-a" follows it, and an email's local part may
    # still be starting at the same offset. Settling the card there released the rest of the email
    # unredacted ("-alice.smith@..." is no email of its own: a "-" precedes it). Found by
    # test_redactions_are_the_same_whatever_the_chunking, which drew it now and then.
    text = "5500-0000-0000-0004-alice.smith@corp-mail.co.uk"
    assert summary(run(arm(), [text]))[1] == [(0, 47, "[email]")]
    assert summary(run(arm(), one_char(text)))[1] == [(0, 47, "[email]")]
    assert summary(run(arm(action="replace"), one_char(text)))[0] is not None


def test_an_email_after_a_digit_run_is_found_one_character_at_a_time() -> None:
    # One character at a time, "700000000000" (a number, rejected: a digit precedes it) is found
    # while the email that starts one character earlier is not complete yet.
    text = "ts=1700000000000.-alice.smith@corp-mail.co.uk"
    assert summary(run(arm(), [text]))[1] == [(3, 45, "[email]")]
    assert summary(run(arm(), one_char(text)))[1] == [(3, 45, "[email]")]


@pytest.mark.parametrize("line", [
    'authors = [{name = "Jane Roe", email = "jane.roe@corp-mail.net"}]\n',
    "Signed-off-by: Jane Roe <jane.roe@corp-mail.net>\n",
    "Co-authored-by: Jane Roe <jane.roe@corp-mail.net>\n",
    '  "author": "Jane Roe <jane.roe@corp-mail.net>",\n',
    "    author_email='jane.roe@corp-mail.net',\n",
    'authors = [\n  {name = "Ann Lee", email = "ann@corp-mail.net"},\n  {name = "Jane Roe", email = "jane.roe@corp-mail.net"},\n]\n',
    '  "contributors": [\n    {\n      "name": "Jane Roe",\n      "email": "jane.roe@corp-mail.net"\n    }\n  ],\n',
    'authors = ["Jane Roe <jane.roe@corp-mail.net>"]\n',
    '  spec.email = ["jane.roe@corp-mail.net"]\n',
])
def test_metadata_emails_pass_in_code_metadata_by_default(line: str) -> None:
    """#32: by default (``metadata_emails = false``) an email named as a package's author or a
    commit trailer's passes, on its own line or in a list an authors key opened; the same email in
    prose on the next line is still redacted. ``metadata_emails = true`` redacts them all."""
    text = line + "Write to jane.roe@corp-mail.net for access.\n"
    passed = PiiGuardrail(id="p", kind="pii", action="redact", categories=["email"])
    checked = PiiGuardrail(id="p", kind="pii", action="redact", categories=["email"], metadata_emails=True)
    assert _email_redactions(passed, text) == 1
    assert _email_redactions(checked, text) == text.count("@")


def _email_redactions(spec: PiiGuardrail, text: str) -> int:
    check = PiiProvider(spec, "[x]").arm(StreamContext(system_prompt=""))
    assert check is not None
    return len(run(check, one_char(text)).redactions)


@pytest.mark.parametrize("text", [
    "The author, jane.roe@corp-mail.net, wrote the guide.\n",      # the word, not a key
    'users = [{"name": "Jane Roe", "email": "jane.roe@corp-mail.net"}]\n',  # a record, not metadata
    'authors = ["Ann Lee"]\nsupport = "jane.roe@corp-mail.net"\n',  # the authors list has closed
    "Reviewed it, she said: reach me at jane.roe@corp-mail.net\n",
    "x" * 600 + " authors = [ " + "y " * 300 + "jane.roe@corp-mail.net\n",  # the key beyond the reach
])
def test_emails_outside_code_metadata_are_redacted_by_default(text: str) -> None:
    spec = PiiGuardrail(id="p", kind="pii", action="redact", categories=["email"])
    assert _email_redactions(spec, text) == 1


@pytest.mark.parametrize("text", ["pay with 4111.1111.1111.1111 today", "card 5500.0000.0000.0004 ok"])
def test_a_card_grouped_with_dots_is_redacted(text: str) -> None:
    """#32: a card number a person writes in groups of four joined by dots; a dotted number that
    fails the Luhn check (a version, an address) passes."""
    provider = PiiProvider(PiiGuardrail(id="p", kind="pii", action="redact", categories=["card"]), "[x]")
    check = provider.arm(StreamContext(system_prompt=""))
    assert check is not None
    decision = check.finish(text)
    assert isinstance(decision, Redact) and decision.mask == "[card]"
    other = provider.arm(StreamContext(system_prompt=""))
    assert other is not None and not isinstance(other.finish("version 4111.1111.1111.1112 ok"), Redact)


HORIZON_PIECES = [
    "The deployment finished. ", "def f(x):\n    return x\n", '"jane roe"@corp.io ', '"quoted text', '"', "(",
    "+", "AB ", "AB 12 ", "jane.roe", "@", "corp.io", " 415 ", "555-", "0100", "4111 1111", " ", "\n", "x" * 70,
    "naïve ", "SSN ", "123456789", "o'brien", "status=404)", "v1.2.3", "DE89 3704", "ts=17000",
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(HORIZON_PIECES), max_size=12), st.integers(0, 10_000), st.integers(1, 9))
def test_the_quick_horizon_never_passes_the_closures(parts: list[str], seed: int, hi: int) -> None:
    """``PiiCheck``'s horizon from the text's last characters (while no anchor is pending) holds at
    least what the lead closure's search holds: it is never above it."""
    class Exact(PiiCheck):
        def _update_horizon(self, text: str) -> None:
            self._horizon.update(self._scanner, text)

    quick = arm()
    exact = Exact(PiiProvider(PiiGuardrail(id="pii", kind="pii", action="redact"), "[withheld]"))
    acc = ""
    for delta in random_chunks("".join(parts), seed, 1, hi):
        acc += delta
        for check in (quick, exact):
            decision = check.check(acc, delta)
            while isinstance(decision, Redact):
                decision = check.check(acc, "")
        assert quick.horizon(acc) <= exact.horizon(acc), acc
