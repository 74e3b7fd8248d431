"""The anchored scanners decide exactly as the plain tail scanners they replaced.

(The secrets check no longer runs on a tail scanner: tests/checks/test_secrets_streaming.py holds it to
a whole-text oracle instead.)

``Reference*`` below is the previous implementation, kept here only as an oracle: every check ran
its whole regex over the last ``window`` characters on every delta. The new checks run it only
from where an anchor says a match may begin; on any text and any chunking, every call must
return the same decision (same Block, same Redact offsets, same Pass).
"""

from __future__ import annotations

import random
import re
import string
from collections.abc import Callable, Iterable

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from config.policy import PiiGuardrail, RegexGuardrail
from guardrails.decision import PASS, PATTERN_MATCH, PII, Block, Decision, Redact
from guardrails.seams import DeltaCheck, StreamContext
from guardrails.stream import pii
from guardrails.stream._scan import Anchors, literal_prefix, split_lookbehinds
from guardrails.stream.patterns import RegexProvider
from guardrails.stream.pii import PiiProvider
from tests.checks.test_stream_guardrails_pii import NEAR_MISSES, POSITIVES
from tests.checks.test_stream_guardrails_secrets import FALSE_POSITIVES, SAMPLES
from tests.stream_support import random_chunks

CTX = StreamContext(system_prompt="")


class ReferenceScanner:
    """The previous ``TailScanner``: the regex over ``text[floor:]`` on every call."""

    def __init__(self, pattern: re.Pattern[str], window: int, *, slack: int = 0,
                 is_final: Callable[[re.Match[str]], bool] | None = None, end_sensitive: bool = False) -> None:
        self.pattern, self.window, self.slack, self._is_final, self._floor = pattern, window, slack, is_final, 0
        self._by_length = not end_sensitive
        """A pattern that reads past its match (``$``, ``\\b``) never settles by length alone (d25d3fe)."""

    def next(self, text: str, *, final: bool = False) -> re.Match[str] | None:
        end = len(text)
        for match in self.pattern.finditer(text, self._floor):
            if match.end() == match.start():
                continue
            settled = (final or match.end() + self.slack < end
                       or (self._by_length and end - match.start() >= self.window)
                       or (self._is_final is not None and self._is_final(match)))
            if not settled:
                break
            self._floor = match.end()
            return match
        self._floor = max(self._floor, end - self.window)
        return None


_VALID = PiiProvider(PiiGuardrail(id="pii", kind="pii"), "")
"""The checks a match passes (nine digits in a row are an SSN only after its name), as the check's."""


class ReferencePii(DeltaCheck):
    def __init__(self, redact: bool = True) -> None:
        self.window = pii.PII_WINDOW
        parts = {k: split_lookbehinds(rx) for k, rx in pii._PATTERNS.items()}
        pattern = re.compile("|".join(f"(?P<{k}>{rest})" for k, (_, rest) in parts.items()))
        self._before = {k: re.compile(lb) for k, (lb, _) in parts.items()}
        self._scanner = ReferenceScanner(pattern, self.window, slack=pii.PII_SLACK)
        self._redact = redact

    def check(self, accumulated: str, delta: str) -> Decision:
        return self._next(accumulated, final=False)

    def finish(self, accumulated: str) -> Decision:
        return self._next(accumulated, final=True)

    def _next(self, text: str, *, final: bool) -> Decision:
        while (match := self._scanner.next(text, final=final)) is not None:
            kind, found = match.lastgroup or "", match.group()
            if not self._before[kind].match(text, match.start()) or not _VALID.valid(kind, found, text, match.start()):
                continue
            # An IBAN is redacted up to its longest valid prefix (a word after it is not part of it).
            end = match.start() + pii.iban_end(found) if kind == "iban" else match.end()
            if self._redact:
                return Redact(PII, match.start(), end, pii.MASKS[kind])
            return Block(PII, "[withheld]",
                         f"The answer contained personal data (category: {kind}). Do not repeat "
                         "personal data such as emails, phone numbers, card or account numbers.")
        return PASS


_END_SENSITIVE = re.compile(r"\\[bBZ]|\$")
"""Assertions that read the character after a match (enough for ``DENY`` below)."""


class ReferenceRegex(DeltaCheck):
    def __init__(self, patterns: list[re.Pattern[str]], window: int) -> None:
        self.window = window
        self._scanners = [ReferenceScanner(p, window, end_sensitive=_END_SENSITIVE.search(p.pattern) is not None)
                          for p in patterns]

    def check(self, accumulated: str, delta: str) -> Decision:
        return self._scan(accumulated, final=False)

    def finish(self, accumulated: str) -> Decision:
        return self._scan(accumulated, final=True)

    def _scan(self, text: str, *, final: bool) -> Decision:
        for number, scanner in enumerate(self._scanners, start=1):
            if scanner.next(text, final=final) is not None:
                return Block(PATTERN_MATCH, "[withheld]",
                             f"The answer matched deny pattern #{number} of the policy. Rephrase "
                             "without that content.")
        return PASS


def decisions(check: DeltaCheck, chunks: Iterable[str]) -> list[tuple[int, Decision]]:
    """Every decision of every call, driven like the pipeline but on past a Block."""
    acc, out = "", []
    for delta in chunks:
        acc += delta
        decision = check.check(acc, delta)
        out.append((len(acc), decision))
        while isinstance(decision, Redact):
            decision = check.check(acc, "")
            out.append((len(acc), decision))
    decision = check.finish(acc)
    out.append((-1, decision))
    while isinstance(decision, Redact):
        decision = check.finish(acc)
        out.append((-1, decision))
    return out


_rng = random.Random(7)
B62 = string.ascii_letters + string.digits
# Pieces that open, almost complete or complete every anchor and rule, plus noise rich in the
# characters the anchors are made of.
PIECES = [
    *SAMPLES.values(), *FALSE_POSITIVES, *(v for v, _ in POSITIVES), *NEAR_MISSES,
    "sk-", "sk-ant-", "AKIA", "ASIA", "AIza", "GOCSPX-", "ya29.", "ghp_", "github_pat_", "glpat-", "xoxb-",
    "hooks.slack.com/services/T", "sk_live_", "rk_live_", "-----BEGIN", " PRIVATE KEY-----\n", "eyJ", ".eyJ",
    "aws_secret_access_key", "AWS_SECRET_KEY", "api_key", "password", "Token", "SECRET", "pwd", "credentials",
    " = ", "=", ":", ":=", "=>", '"', "'", " ", "\n", "\t", "@", "+", "(", ")", "-", ".", "/", "_",
    "a@b.io", "x.y@corp-mail.co.uk", "+44", " 20 ", "(415) ", "555-", "0100", "4111 1111 ", "DE89", " 3704",
    "AB 12 ", "34 56 C", "123-45-", "6789", "06 12 34", "020 7946", "project", " nightingale", "Project  Night",
    "someone.with.a.long.name@mail.department.university.edu", "x" * 31 + "@corp.io", "y" * 33 + "@corp.io",
    "gale", "internal use", " only", "BEGIN CERT", "order #12", "34", "bad",
    *("".join(_rng.choice(B62) for _ in range(n)) for n in (4, 8, 16, 24, 32, 36, 40)),
    *("".join(_rng.choice(string.digits) for _ in range(n)) for n in (2, 3, 4, 9, 13, 16)),
]
NOISE = st.text(alphabet=string.ascii_letters[:8] + "AKIZJNz09@+-_.:=/>() \n'\"", max_size=12)
TEXT = st.lists(st.one_of(st.sampled_from(PIECES), NOISE), max_size=14).map("".join)
CHUNKS = st.tuples(st.integers(0, 10_000), st.integers(1, 14))


def check_same(new: DeltaCheck, old: DeltaCheck, text: str, seed: int, hi: int,
               old_whole: DeltaCheck | None = None) -> None:
    """Every call decides as the reference's. ``old_whole``, a fresh reference: where the reference
    fed in pieces finds other matches than it finds in the whole text (its floor passed the start of
    a match it had not seen complete yet), the new check must find what the whole text holds."""
    chunks = list(random_chunks(text, seed, 1, hi))
    got, want = decisions(new, chunks), decisions(old, chunks)
    if got != want and old_whole is not None:
        whole = decisions(old_whole, [text])
        if findings(want) != findings(whole):  # the reference contradicts itself: the whole text rules
            assert findings(got) == findings(whole)
            return
        # The same findings, each decided no earlier: a match the reference settled while another
        # could still begin at its start (and run on past it) waits until that one is ruled out.
        assert findings(got) == findings(want)
        assert all(g >= w for g, w in zip(found_at(got), found_at(want), strict=True))
        return
    assert got == want


def findings(calls: list[tuple[int, Decision]]) -> list[Decision]:
    """The blocks and redactions of a run, whichever calls made them."""
    return [d for _, d in calls if d is not PASS]


def found_at(calls: list[tuple[int, Decision]]) -> list[float]:
    """How much text each finding had arrived when it was decided (the end of the text: infinite)."""
    return [float("inf") if at < 0 else float(at) for at, d in calls if d is not PASS]


def new_pii(action: str) -> DeltaCheck:
    check = PiiProvider(PiiGuardrail(id="p", kind="pii", action=action), "[withheld]").arm(CTX)  # type: ignore[arg-type]
    assert check is not None
    return check


DENY = [r"project\s+nightingale", r"internal\s+use\s+only", r"\bBEGIN CERT\b", r"order #\d+", r"bad",
        r"[Ss]k-\w{4}", r"(?i)aws_(?:secret|key)", r"^key", r"=\s*'"]


def new_regex(window: int) -> DeltaCheck:
    spec = RegexGuardrail(id="r", kind="regex", patterns=DENY, flags=["i"], window=window)
    check = RegexProvider(spec, "[withheld]").arm(CTX)
    assert check is not None
    return check


@settings(max_examples=400, deadline=None)
@given(TEXT, CHUNKS, st.booleans())
# One character at a time the reference passes a phone candidate it rejects and its floor with it,
# past the email that begins the text; whole, it finds the email (as the new check does either way).
@example("AKIAH526QP3UM3YEW2SV-alice.smith@corp-mail.co.uk", (0, 1), False)
@example("5500-0000-0000-0004-alice.smith@corp-mail.co.uk", (0, 1), True)
@example("5500-0000-0000-0004+AKIAH526QP3UM3YEW2SV", (0, 1), False)
def test_pii_decides_as_before(text: str, chunking: tuple[int, int], redact: bool) -> None:
    check_same(new_pii("redact" if redact else "replace"), ReferencePii(redact), text, *chunking,
               old_whole=ReferencePii(redact))


@settings(max_examples=300, deadline=None)
@given(TEXT, CHUNKS, st.sampled_from([8, 16, 64, 256]))
@example("password = os.environ['DB_PASSWORD']\nBEGIN CERT", (0, 4), 8)  # a \b match as long as the window, at the end
def test_regex_decides_as_before(text: str, chunking: tuple[int, int], window: int) -> None:
    old = ReferenceRegex([re.compile(p, re.IGNORECASE) for p in DENY], window)
    check_same(new_regex(window), old, text, *chunking)


def anchored(rest: str, parts: list[tuple[str, int]], quick: str, text: str) -> bool:
    """Whether the first match of ``rest`` in ``text`` holds, ``back`` or fewer characters in, a
    whole anchor whose last character ``quick`` accepts (what the scanners rely on)."""
    match = re.compile(rest).search(text)
    if match is None or match.end() == match.start():
        return True
    for at in range(match.start(), match.end()):
        for part, back in parts:
            found = re.compile(part).match(text, at, match.end())
            if at - match.start() <= back and found and found.end() > at and re.fullmatch(quick, found.group()[-1]):
                return True
    return False


def rule_text(rest: str) -> st.SearchStrategy[str]:
    return st.from_regex(rest, fullmatch=False)


@settings(max_examples=40, deadline=None)
@given(st.data())
@pytest.mark.parametrize("kind", sorted(pii._PATTERNS))
def test_every_pii_match_holds_an_anchor(kind: str, data: st.DataObject) -> None:
    _, rest = split_lookbehinds(pii._PATTERNS[kind])
    assert anchored(rest, [pii._ANCHORS[kind]], pii._ANCHOR_ENDS, data.draw(rule_text(rest)))


def test_literal_prefix_follows_the_pattern() -> None:
    assert literal_prefix(re.compile(r"\bBEGIN CERT\b", re.IGNORECASE)) == r"(?i:BEGIN\ CERT)"
    assert literal_prefix(re.compile(r"(?i)abc+")) == "(?i:ab)"
    assert literal_prefix(re.compile(r"order #\d+")) == r"order\ \#"
    assert literal_prefix(re.compile(r"[Ss]k-")) is None
    assert literal_prefix(re.compile(r"a|b")) is None


def test_anchors_reject_what_they_cannot_bound() -> None:
    with pytest.raises(ValueError, match="bounded"):
        Anchors([("a+", 0)])


# Deny patterns that open with literal characters: with two or more of them the check runs a gate
# (``patterns.Gate``) that passes a delta concerning none of them in one search.
GATED = [r"project\s+nightingale", r"internal\s+use\s+only", r"\bBEGIN CERT\b", r"order #\d+", r"bad",
         r"drop\s+table\s+\w+", r"İstanbul", r"straße\b", r"🙂x+", r"a", r"key$", r"sk-\w{4}"]
GATE_TEXT = st.lists(st.one_of(st.sampled_from([*PIECES, "drop", " table ", "İ", "ß", "🙂", "é", "ı", "K", "\u212a",
                                                "straße", "stanbul", "sk-", "key"]), NOISE), max_size=14).map("".join)


def _deny(patterns: list[str], flags: list[str], window: int, *, gated: bool) -> DeltaCheck:
    provider = RegexProvider(RegexGuardrail(id="r", kind="regex", patterns=patterns, flags=flags,  # type: ignore[arg-type]
                                            window=window), "[withheld]")
    if not gated:
        provider._gate = None
    check = provider.arm(CTX)
    assert check is not None
    return check


def horizons_and_decisions(check: DeltaCheck, chunks: Iterable[str]) -> list[tuple[int, Decision, int]]:
    acc, out = "", []
    for delta in chunks:
        acc += delta
        decision = check.check(acc, delta)
        out.append((len(acc), decision, check.horizon(acc)))
        if decision is not PASS:
            return out
    return [*out, (-1, check.finish(acc), check.horizon(acc))]


@settings(max_examples=500, deadline=None)
@given(GATE_TEXT, CHUNKS, st.lists(st.sampled_from(GATED), min_size=2, max_size=5, unique=True),
       st.sampled_from([[], ["i"], ["i", "m"]]), st.sampled_from([8, 16, 64, 256]))
def test_gated_deny_patterns_decide_and_hold_as_one_by_one(text: str, chunking: tuple[int, int], patterns: list[str],
                                                          flags: list[str], window: int) -> None:
    """Same trips, same horizons after every delta (one-character deltas included), with or without the gate."""
    gated = _deny(patterns, flags, window, gated=True)
    assert gated._gate is not None  # type: ignore[attr-defined]
    chunks = list(random_chunks(text, chunking[0], 1, chunking[1]))
    assert horizons_and_decisions(gated, chunks) == horizons_and_decisions(
        _deny(patterns, flags, window, gated=False), chunks)
