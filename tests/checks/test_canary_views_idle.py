"""The canary views' whole-text form skips building ``Views`` for a text on which no view would start
(``_canary_views._stays_idle``). That shortcut is only sound if it never says "idle" for pieces on
which ``Views`` starts a view: drawn texts rich in what starts one (markup openers, digits beside
letters, base64 and hex runs, Caesar-shifted prose, non-ASCII letters), cut into drawn pieces, are
fed to ``Views`` piece by piece, and wherever a view started, ``_stays_idle`` must have said no. The
whole-text verdict is the full ``Views`` run's on the encoded copies of ``test_canary_encodings``
(blocked) and on ordinary prose (the shortcut's case: it must say idle, or it saves nothing).
"""

from __future__ import annotations

import codecs

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from config.policy import CanaryGuardrail
from guardrails.stream._canary_views import (
    GATE_EVERY,
    GATE_WINDOW,
    Matcher,
    Views,
    _any_shifted,
    _shifted,
    _stays_idle,
    passes_views,
)
from guardrails.stream.canary import CanaryProvider
from tests.checks.test_canary_encodings import ORDINARY, VARIANTS
from tests.checks.test_canary_spelled import AGENT_PROMPT, EXCERPT, MIN_CHARS

_PROSE = ("The deployment finished in a few minutes, and the health checks went green right after. "
          "If the cache misses again, restart the worker before the nightly job runs.")
_SHIFTED = codecs.encode(_PROSE, "rot13")
_ATOMS = [
    "the ", "deployment ", "cache ", "went ", "green. ", "\n", " ", "a", "b9", "9b", "7", "42 ",
    "<b>", "&amp;", "%20", "\\u0041", "<", "&", "%", "\\", "été ", "Ωμέγα ", "\u200b",
    "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo=", "deadbeefcafebabe0123", "de ad be ef ", "0a:1b:2c:",
    "abcdefghijklmnopqrstuvwxyz_", "ZmlsZQ", _SHIFTED[:40], _SHIFTED[40:90], "xqzvkw jpbgyf ",
]


class _Watched(Views):
    """``Views`` that notes every view it starts (a run's view may start and end in one delta)."""

    __slots__ = ("starts",)

    def __init__(self, *args: object) -> None:
        super().__init__(*args)  # type: ignore[arg-type]
        self.starts = 0

    def _matcher(self, seed: str, origin: int) -> Matcher:
        self.starts += 1
        return super()._matcher(seed, origin)


def _ever_started(pieces: list[str], shingles: frozenset[int], qgrams: frozenset[int]) -> bool:
    view = _Watched(shingles, qgrams, SHINGLE, 1)
    accumulated = ""
    for piece in pieces:
        if piece:
            accumulated += piece
            view.check(accumulated, piece, 0, False)
            if view.starts or view.found or view._b64.decoding() or view._hex.decoding():
                return True
    return False


def _index() -> tuple[frozenset[int], frozenset[int], int]:
    provider = CanaryProvider(CanaryGuardrail(id="leak", kind="canary", min_chars=MIN_CHARS), "[withheld]")
    squeezed = provider.index_of(AGENT_PROMPT).squeezed
    assert squeezed is not None
    return squeezed.shingles, squeezed.qgrams, provider._shingle


SHINGLES, QGRAMS, SHINGLE = _index()


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_ATOMS), max_size=40), st.lists(st.integers(0, 70), max_size=12))
def test_idle_is_said_only_where_no_view_starts(atoms: list[str], cuts: list[int]) -> None:
    text = "".join(atoms)
    pieces, at = [], 0
    for cut in cuts:
        pieces.append(text[at:at + cut])
        at += cut
    pieces.append(text[at:])
    if _stays_idle(pieces):
        assert not _ever_started(pieces, SHINGLES, QGRAMS), pieces


def _full_passes(pieces: list[str]) -> bool:
    """``passes_views`` without the shortcut: ``Views`` fed every piece."""
    view = Views(SHINGLES, QGRAMS, SHINGLE, 1)
    accumulated = ""
    for piece in pieces:
        if piece:
            accumulated += piece
            view.check(accumulated, piece, 0, False)
            if view.found:
                return False
    return True


@pytest.mark.parametrize("how", VARIANTS)
def test_an_encoded_copy_gets_the_full_verdict(how: str) -> None:
    text = f"Sure:\n{VARIANTS[how](EXCERPT)}\nThat is all."
    for pieces in ([text], [text[i:i + 5] for i in range(0, len(text), 5)]):
        assert passes_views(SHINGLES, QGRAMS, pieces, SHINGLE) == _full_passes(pieces)
    if not _full_passes([text]):
        assert not _stays_idle([text])


def test_a_shifted_copy_after_a_long_prose_prefix_is_not_idle() -> None:
    """The gate's windows after a long delta reach the end of the text (its last window is short)."""
    copy = codecs.encode(EXCERPT, "rot13")
    for prefix in (_PROSE * 3, _PROSE * 3 + "é"):
        for pieces in ([prefix + copy], [prefix, copy], list(prefix + copy)):
            assert not _stays_idle(pieces)
            assert not passes_views(SHINGLES, QGRAMS, pieces, SHINGLE)


@pytest.mark.parametrize("text", [_PROSE, _PROSE * 20, "Réponse : le déploiement est terminé. " * 4,
                                  "Run `make test`, then read the report; the fix is in `cache.py`."])
def test_ordinary_prose_is_idle(text: str) -> None:
    assert _stays_idle([text])
    assert _stays_idle([text[i:i + 7] for i in range(0, len(text), 7)])
    assert not _ever_started([text], SHINGLES, QGRAMS)


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_passes_either_way(text: str) -> None:
    assert passes_views(SHINGLES, QGRAMS, [text], SHINGLE)
    assert passes_views(SHINGLES, QGRAMS, list(text), SHINGLE)


_GATE_PARTS = ["eat ", "on the ", "in", "s", "xq", "zk", "vy", "bj", "wp ", " ", ".", "é", "1", "\n"]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(_GATE_PARTS), max_size=120), st.data())
def test_the_gate_reads_a_long_delta_as_window_by_window(parts: list[str], data: st.DataObject) -> None:
    """``_any_shifted`` (classes counted in place) says what ``_shifted`` of each window says."""
    text = "".join(parts)
    start = data.draw(st.integers(0, len(text)))
    end = len(text)
    windows = [text[max(0, at - GATE_WINDOW):at] for at in range(start + GATE_EVERY, end + GATE_EVERY, GATE_EVERY)]
    assert _any_shifted(text, start, end) == any(map(_shifted, windows))


@pytest.mark.parametrize("run", ["thequickbrownfoxjumpsoverthelazydog", "UmVhZE_-YWJvdXQgYmFzZUNvbnRlbnQ",
                                 "deadbeefcafebabefacefeedbeadfaded"])
@pytest.mark.parametrize("length", range(20, 29))
def test_a_run_starts_a_view_from_the_length_idle_says(run: str, length: int) -> None:
    """Never idle where a run starts a view (a run it cannot decode, such as 25 base64 digits, is
    not idle either: the shortcut needs no decoder)."""
    text = f"The hash ({run[:length]}) is all."
    assert not _stays_idle([text]) or not _ever_started([text], SHINGLES, QGRAMS)
    pieces = [text[i:i + 3] for i in range(0, len(text), 3)]  # (``Views`` may follow a split run less far)
    assert not _stays_idle(pieces) or not _ever_started(pieces, SHINGLES, QGRAMS)
