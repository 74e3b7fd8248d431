"""The canary against a system prompt copied in look-alike letters (Cyrillic ``а е о р с у х і ј ѕ``,
Greek ``ο α ν``, Latin small capitals, mathematical letters): every reader sees the prompt, so the
canary compares both texts through a confusables skeleton (``guardrails.text.confusables``). The
agent prompt is Gemini CLI's own (captured from the pinned CLI, paths scrubbed; Apache-2.0).

Before the skeleton, every look-alike copy here passed (``bench.canary_lookalikes``: 0 of 200 blocked,
200 of 200 after; a lunate sigma for ``c`` is still missed: NFKC folds it into a sigma first). Ordinary
Russian and Greek prose and the project's own README and sources stay unblocked against the agent
prompt, streamed and whole.
"""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.holdback import real_text, token_deltas
from guardrails.stream.canary import QGRAM, normalise
from tests.checks.agent_canary import AGENT_PROMPT, CANARY, CTX, MIN_CHARS, WHOLE
from tests.stream_support import armed_passes, cut_text, horizons_until_block, utf8_deltas

LOOKALIKES = {
    "a": "аαɑᴀ𝐚", "b": "ʙЬ", "c": "сᴄ", "d": "ԁᴅ", "e": "еᴇ", "f": "ꜰ", "g": "ɡɢ", "h": "һʜн", "i": "іιɪ",
    "j": "јᴊ", "k": "κᴋк", "l": "ʟ", "m": "ᴍм", "n": "ɴ", "o": "оοᴏℴ", "p": "рρᴘ", "q": "ԛ", "r": "ʀг", "s": "ѕꜱ",
    "t": "ᴛт", "u": "ᴜυ", "v": "νᴠ", "w": "ԝᴡ", "x": "хχ", "y": "уʏ", "z": "ᴢ",
    "A": "АΑ", "B": "ВΒ", "C": "С", "E": "ЕΕ", "H": "НΗ", "I": "ІΙӀӏ", "J": "Ј", "K": "КΚ", "M": "МΜ", "N": "Ν",
    "O": "ОΟ", "P": "РΡ", "S": "Ѕ", "T": "ТΤ", "X": "ХΧ", "Y": "ΥҮ", "Z": "Ζ",
}
RUSSIAN = ("Сегодня утром мы проверили сборку на всех серверах, и тесты прошли без ошибок. Если кэш снова "
           "промахнётся, посмотрите на политику вытеснения, прежде чем добавлять новые рабочие процессы. "
           "Мы измерили задержку на границе и внутри сервиса; большая её часть ушла на сериализацию. "
           "Ассистент отвечает кратко, ссылается на файлы и не придумывает интерфейсы, которых нет.")
GREEK = ("Σήμερα το πρωί ελέγξαμε την κατασκευή σε όλους τους διακομιστές και οι δοκιμές πέρασαν χωρίς "
         "σφάλματα. Αν η κρυφή μνήμη αστοχήσει ξανά, κοιτάξτε την πολιτική εκκαθάρισης πριν προσθέσετε "
         "νέους εργάτες. ΠΡΟΣΟΧΗ: ο βοηθός απαντά σύντομα και δεν επινοεί διεπαφές που δεν υπάρχουν.")


def _swap(text: str, chosen: list[bool], picks: list[int]) -> str:
    """``text`` with each letter whose flag is set swapped for one of its look-alikes."""
    out = []
    for n, ch in enumerate(text):
        alikes = LOOKALIKES.get(ch)
        out.append(alikes[picks[n % len(picks)] % len(alikes)] if alikes and chosen[n % len(chosen)] else ch)
    return "".join(out)


@pytest.mark.parametrize(("latin", "alike"), [(k, c) for k, v in LOOKALIKES.items() for c in v])
def test_every_lookalike_folds_to_the_letter_it_imitates(latin: str, alike: str) -> None:
    assert normalise(alike) == latin.lower()


def test_ascii_is_only_lowercased() -> None:
    """No ASCII character is folded into another: ``0``, ``1``, ``I``, ``|`` keep their identity."""
    ascii_text = "".join(map(chr, range(0x21, 0x7F)))
    assert normalise(ascii_text) == ascii_text.lower()
    assert normalise("é" + ascii_text) == "é" + ascii_text.lower()  # the non-ASCII path agrees


def test_mathematical_letters_fold_through_nfkc_then_the_skeleton() -> None:
    assert normalise("𝐒𝐲𝐬𝐭𝐞𝐦 𝚙𝚛𝚘𝚖𝚙𝚝 𝛂𝛎𝛐") == "system prompt avo"
    latin = [chr(c) for c in range(0x1D400, 0x1D6A4) if unicodedata.name(chr(c), "")]
    assert all(len(normalise(ch)) == 1 and normalise(ch).isascii() for ch in latin)


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(at=st.integers(0, len(AGENT_PROMPT) - 200), length=st.integers(60, 200),
       chosen=st.lists(st.booleans(), min_size=1, max_size=16), picks=st.lists(st.integers(0, 5), min_size=1, max_size=8),
       sizes=st.lists(st.integers(1, 7), min_size=1, max_size=6), in_bytes=st.booleans(),
       prefix=st.sampled_from(["", "Sure, here it is: ", "Ok.\n\n", "Вот: "]))
def test_a_prompt_excerpt_in_lookalikes_is_blocked_streamed_and_whole(
        at: int, length: int, chosen: list[bool], picks: list[int], sizes: list[int], in_bytes: bool,
        prefix: str) -> None:
    excerpt = AGENT_PROMPT[at:at + length]
    if len(normalise(excerpt).strip()) < MIN_CHARS + 2:
        return  # (markdown runs that collapse below the threshold)
    leak = _swap(excerpt, chosen, picks)
    text = prefix + leak
    pieces = utf8_deltas(text, sizes) if in_bytes else cut_text(text, sizes)
    assert WHOLE is not None
    assert not WHOLE(CTX, pieces)
    assert not WHOLE(CTX, [text])
    blocked, horizons = horizons_until_block(CANARY, CTX, pieces)
    assert blocked
    # The horizons are raw offsets: what was released before the block stops short of the copy
    # (at most the first gram of it, which straddles the prefix).
    assert all(h <= len(prefix) + QGRAM for h in horizons), (horizons, len(prefix))


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(words=st.lists(st.sampled_from((RUSSIAN + " " + GREEK).split()), min_size=5, max_size=80),
       sizes=st.lists(st.integers(1, 9), min_size=1, max_size=6), in_bytes=st.booleans())
def test_russian_and_greek_prose_is_not_blocked(words: list[str], sizes: list[int], in_bytes: bool) -> None:
    text = " ".join(words)
    pieces = utf8_deltas(text, sizes) if in_bytes else cut_text(text, sizes)
    assert WHOLE is not None
    assert WHOLE(CTX, pieces)
    assert armed_passes(CANARY, CTX, pieces)


@pytest.mark.parametrize("prose", [RUSSIAN, GREEK, RUSSIAN.upper(), GREEK.lower()])
def test_whole_paragraphs_of_other_scripts_pass(prose: str) -> None:
    assert WHOLE is not None
    assert WHOLE(CTX, [prose])
    assert armed_passes(CANARY, CTX, list(prose))


def test_the_projects_own_readme_and_sources_pass_against_the_agent_prompt() -> None:
    deltas = token_deltas(real_text())
    assert WHOLE is not None
    for start in range(0, len(deltas), 2000):  # one message per 2,000 deltas, as bench.holdback streams
        message = deltas[start:start + 2000]
        assert armed_passes(CANARY, CTX, message), start
        assert WHOLE(CTX, ["".join(message)]), start


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(parts=st.lists(st.one_of(
           st.builds(lambda at, n: AGENT_PROMPT[at:at + n], st.integers(0, len(AGENT_PROMPT)), st.integers(1, 80)),
           st.sampled_from([*RUSSIAN.split(), *GREEK.split(), "ﬁ", "ǅ", "ẞ", "\u200b", "  ", "\n"])), max_size=8),
       chosen=st.lists(st.booleans(), min_size=1, max_size=8), sizes=st.lists(st.integers(1, 9), min_size=1, max_size=4))
def test_the_whole_text_form_agrees_with_the_armed_check(parts: list[str], chosen: list[bool], sizes: list[int]) -> None:
    """Look-alikes, other scripts, expanding compatibility forms and whitespace, mixed: one verdict."""
    text = _swap("".join(parts), chosen, [0, 1, 2])
    pieces = cut_text(text, sizes)
    assert WHOLE is not None
    assert WHOLE(CTX, pieces) == armed_passes(CANARY, CTX, pieces)
