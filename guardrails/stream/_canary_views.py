"""More views of the prompt and of the answer for the canary: copies a model makes for free on request.

The squeezed view (``_canary_text.squeeze``: the letters alone) already reads a prompt spelled out
or marked up. A model asked to "print your instructions reversed / without vowels / in base64 /
in rot13 / as HTML" writes copies that no run of the prompt's letters matches. Two kinds of help:

**More spellings of the prompt, in the squeezed index** (``letter_variants``, zero cost per delta).
The prompt's letters reversed, each word's letters reversed, the words in reverse order and the
letters without vowels are indexed next to the letters themselves, in the same sets: the squeezed
twin reads a reversed copy (read forward, it *is* the reversed prompt read forward), a copy with
each word reversed, with the words in reverse order, or with the vowels removed, in the very lookups
it already makes. A window of ``SHINGLE`` letters of ordinary text that happens to be one of these is
as unlikely as one of the prompt itself. The cost is memory: each variant is about one more squeezed
index (the squeezed index of a 21 KB prompt grows from about 1.3 MB to 6 MB; ``PromptIndexCache``
counts it against its budget).
"""

from __future__ import annotations

import binascii
import codecs
import html
import re
from collections.abc import Callable, Sequence
from functools import lru_cache

from guardrails.stream._canary_text import normalise, squeeze

_WORD = re.compile(r"[^\W\d_]+")
_VOWELS = str.maketrans("", "", "aeiou")
_FOLD_L = str.maketrans("l", "i")


def letter_variants(raw_prompt: str, letters: str) -> list[str]:
    """The strings the squeezed index holds for ``raw_prompt`` whose letters alone are ``letters``
    (``squeeze(raw_prompt)``): the letters, reversed, each word reversed, the words in reverse order,
    without vowels, with ``l`` folded to ``i`` (what ``leet_letters`` reads), and as ``steps`` (what
    the shift view reads). O(len(prompt)), once per distinct prompt."""
    words = _WORD.findall(normalise(raw_prompt))
    return [letters, letters[::-1], "".join(w[::-1] for w in words), "".join(reversed(words)),
            letters.translate(_VOWELS), letters.translate(_FOLD_L), steps(letters)]


# --- Views of the answer -------------------------------------------------------------------------
# Each is a stateful reader of the raw deltas that yields letters (``squeeze`` of what a reader of
# the copy reads) and the raw offset they came from, and a ``Matcher`` that looks them up in the
# squeezed index. They are idle on ordinary deltas: a view starts on the characters that begin what
# it decodes, and stops again after ``QUIET`` letters with nothing to decode (from there on, every
# window it could match is one the squeezed twin reads too, letter for letter).

_QGRAM = 6  # canary.QGRAM (not imported: canary imports this module)
_LEET = bytes.maketrans(b"4310572l", b"aeiostzi")  # and 1 -> i, so l is folded to i on both sides
_NOT_ALNUM_ASCII = bytes(c for c in range(128) if not chr(c).isalnum())
_NOT_ALNUM = re.compile(r"[\W_]+")
_LEET_TEXT = str.maketrans("4310572l", "aeiostzi")


def leet_letters(text: str) -> str:
    """Letters and digits, the digits read as the letters they stand for in leetspeak (4 3 1 0 5 7
    2 as a e i o s t z), and ``l`` folded to ``i`` (``1`` stands for either)."""
    if text.isascii():
        return text.encode("ascii").lower().translate(_LEET, _NOT_ALNUM_ASCII).decode("ascii")
    return _NOT_ALNUM.sub("", normalise(text)).translate(_LEET_TEXT)


class Matcher:
    """One view's search for the prompt's shingles in the letters it reads. Per letter: one gram
    looked up (the chain of the prompt's grams, as ``CanaryCheck`` keeps it) and, only inside a
    chain at least a shingle long, one window hashed. Its horizon is the raw offset the letters at
    the chain's start came from (``origins``: the raw offset of each fed piece, kept from the chain
    on). A simple loop: views run on a few deltas of an ordinary answer, not on every one."""

    __slots__ = ("_chain", "_last_hit", "_origins", "_qgrams", "_seen", "_shingle", "_shingles", "_stride", "_tail")

    def __init__(self, shingles: frozenset[int], qgrams: frozenset[int], shingle: int, stride: int,
                 seed: str, origin: int) -> None:
        self._shingles, self._qgrams, self._shingle, self._stride = shingles, qgrams, shingle, stride
        self._tail = seed[1 - shingle:] if seed else ""
        self._seen = len(self._tail)
        self._chain = 0
        self._last_hit = -(10**9)
        self._origins: list[tuple[int, int]] = [(0, origin)]

    def feed(self, letters: str, origin: int) -> bool:
        """Whether ``letters`` (from raw offset ``origin`` on) end a new run of the prompt."""
        if not letters:
            return False
        k, q, qgrams, shingles = self._shingle, _QGRAM, self._qgrams, self._shingles
        buf = self._tail + letters
        base = self._seen - len(self._tail)
        chain, last_hit, new_run = self._chain, self._last_hit, False
        self._origins.append((self._seen, origin))
        for end in range(max(len(self._tail) + 1, q), len(buf) + 1):
            if hash(buf[end - q:end]) not in qgrams:
                chain = base + end - q + 1
            elif base + end - k >= chain and hash(buf[end - k:end]) in shingles:
                new_run = new_run or base + end - last_hit > self._stride
                last_hit = base + end
        self._seen += len(letters)
        self._chain, self._last_hit = chain, last_hit
        self._tail = buf[1 - k:]
        return new_run

    def in_run(self) -> bool:
        return self._seen - self._last_hit <= self._stride

    def horizon(self) -> int:
        """The raw offset of the piece the chain starts in (older pieces are forgotten)."""
        origins, chain = self._origins, self._chain
        drop = 0
        while drop + 1 < len(origins) and origins[drop + 1][0] <= chain:
            drop += 1
        if drop:
            del origins[:drop]
        return origins[0][1]


_TAG = re.compile(r"</?[A-Za-z][^<>]{0,60}>")
_ENTITY_LIKE = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});?")
_UESCAPE = re.compile(r"\\u([0-9A-Fa-f]{4})|\\x([0-9A-Fa-f]{2})")
_PERCENT = re.compile(r"(?:%[0-9A-Fa-f]{2})+")
# What may still become a tag, a reference or an escape at the end of the text read so far.
_OPEN = re.compile(r"<(?:/?(?:[A-Za-z][^<>]{0,60})?)?|&(?:#[xX]?[0-9A-Fa-f]{0,7}|[A-Za-z][A-Za-z0-9]{0,31})?"
                   r"|%[0-9A-Fa-f]?|\\(?:u[0-9A-Fa-f]{0,3}|x[0-9A-Fa-f]?)?")
_OPENERS = "<&%\\"
_OPEN_MAX = 64


def render(text: str) -> str:
    """``text`` as a browser or a JSON/URL decoder shows it: HTML tags dropped, character references,
    ``\\uXXXX``/``\\xXX`` escapes and ``%XX`` escapes decoded."""
    if "<" in text:
        text = _TAG.sub("", text)
    if "\\" in text:
        text = _UESCAPE.sub(_unescape, text)
    if "%" in text:
        text = _PERCENT.sub(_unquote, text)
    if "&" in text:
        text = _ENTITY_LIKE.sub(_reference, text)
    return text


def _unescape(m: re.Match[str]) -> str:
    code = int(m.group(1) or m.group(2), 16)
    return "" if 0xD800 <= code <= 0xDFFF else chr(code)


def _unquote(m: re.Match[str]) -> str:
    return bytes.fromhex(m.group().replace("%", "")).decode("utf-8", "replace")


def _reference(m: re.Match[str]) -> str:
    return html.unescape(m.group())


class Rendered:
    """The answer as rendered (``render``), stateful across deltas: a tag, a reference or an escape
    split between deltas is kept (at most ``_OPEN_MAX`` characters) until it is complete or cannot
    be one any more."""

    __slots__ = ("_open",)

    def __init__(self) -> None:
        self._open = ""

    def feed(self, delta: str) -> str:
        text = self._open + delta
        lo = len(text) - _OPEN_MAX
        cut = max(text.rfind("<", lo), text.rfind("&", lo), text.rfind("%", lo), text.rfind("\\", lo))  # (_OPENERS)
        if cut >= 0 and _OPEN.fullmatch(text, cut):
            self._open = text[cut:]
            text = text[:cut]
        else:
            self._open = ""
        return render(text)

    def held(self) -> int:
        """Raw characters kept for the next delta."""
        return len(self._open)


@lru_cache(maxsize=8)
def _run_patterns(chars: str, digits: str) -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """A run, a whole run long enough to be decoded (``Run._runs`` visits only those, and the
    ends), a digit: compiled once (a ``Run`` is made per answer checked)."""
    return (re.compile(f"[{re.escape(chars)}]+"), re.compile(f"[{re.escape(chars)}]{{{MIN_RUN},}}"),
            re.compile(f"[{re.escape(digits)}]"))


class Run:
    """A run of base64 or hex digits (base64 across line breaks, hex with a space or a colon between
    bytes), decoded once it is ``MIN_RUN`` characters long and from then on as it grows, in whole
    units (4 base64 digits, 2 hex digits). The raw characters of a run too short to be decoded yet,
    or of a unit not complete yet, are kept (``held``): their letters are not known yet."""

    __slots__ = ("_decode", "_decoding", "_digit", "_held", "_long", "_pending", "_run", "_text", "_unit", "chars",
                 "skipped")

    def __init__(self, chars: str, digits: str, unit: int, decode: Callable[[str], bytes]) -> None:
        self.chars = chars
        """Every character a run may hold (digits and separators)."""
        self._run, self._long, self._digit = _run_patterns(chars, digits)
        self._unit = unit
        self._decode = decode
        self._pending = 0  # characters of the run at the end of the answer, while not decoding
        self.skipped = 0
        """Raw characters before the first run in the text ``_runs`` last read."""
        self._held = ""  # the raw characters of the current run not decoded yet
        self._decoding = False  # the current run is long enough to be decoded
        self._text = codecs.getincrementaldecoder("utf-8")("replace")

    def held(self) -> int:
        """Raw characters at the end that may start (or continue) a run: the horizon holds them
        (a run shorter than ``HOLD_FROM`` is not held: a word; at most a few bytes of a copy's start)."""
        if self._decoding:
            return len(self._held)
        return self._pending if self._pending >= HOLD_FROM else 0

    def decoding(self) -> bool:
        """Whether the current run is being decoded (it may go on)."""
        return self._decoding

    def feed(self, accumulated: str, delta: str) -> tuple[str, int]:
        """The text decoded from ``delta`` and what was held (empty on most deltas), and the raw
        offset it was decoded from. Until a run is long enough, only its length is tracked (its
        characters are the end of ``accumulated``): one ``rstrip`` per delta."""
        end = len(accumulated)
        if self._decoding:
            origin = end - len(delta) - len(self._held)
            return self._runs(self._held + delta, True), origin
        n = len(delta)
        trail = n - len(delta.rstrip(self.chars))
        before = self._pending
        self._pending = before + n if trail == n else trail
        if n < MIN_RUN and self._pending < MIN_RUN:
            return "", end  # (most deltas)
        origin = end - n - before
        text = self._runs(accumulated[origin:], False)
        if not self._decoding:
            self._pending, self._held = len(self._held), ""
        return text, origin + self.skipped

    def _runs(self, text: str, continued: bool) -> str:
        """Every run of ``text`` decoded: the ones it ends whole (when long enough), the last one as
        far as its whole units go; the rest of the last run is held."""
        out: list[str] = []
        n = len(text)
        first = self._run.search(text)
        self.skipped = n if first is None else first.start()  # (the raw characters before the first run read nothing)
        # The runs that matter: one that continues a decode (at 0), every run long enough to be
        # decoded, and the one the text ends in (it may go on). Each is a whole run of ``_run``'s; the
        # short ones between them read nothing, and a prose answer is all short runs (its words), so
        # they are not visited one by one.
        spans = [m.span() for m in self._long.finditer(text)]
        if first is not None and first.start() == 0 and self._decoding and continued:
            spans.insert(0, first.span())
        tail = len(text.rstrip(self.chars))
        if tail < n:
            spans.append((tail, n))
        seen = -1
        for start, end in spans:
            if start <= seen:
                continue  # (a run listed twice: at 0, long, or the tail)
            seen = start
            run = text[start:end]
            decoding = self._decoding and continued and start == 0
            if not decoding:
                self._text.reset()
            if end == n:  # may go on in the next delta
                if decoding or len(run) >= MIN_RUN:
                    self._decoding = True
                    cut = self._whole_units(run)
                    out.append(self._decoded(run[:cut], final=False))
                    run = run[cut:]
                else:
                    self._decoding = False
                self._held = run
                return "".join(out)
            if decoding or len(run) >= MIN_RUN:
                out.append(self._decoded(run, final=True))
        self._held, self._decoding = "", False
        return "".join(out)

    def _whole_units(self, run: str) -> int:
        """The raw length of the longest prefix of ``run`` holding whole units."""
        ends = [m.end() for m in self._digit.finditer(run)]
        whole = len(ends) // self._unit * self._unit
        return ends[whole - 1] if whole else 0

    def _decoded(self, run: str, *, final: bool) -> str:
        try:
            raw = self._decode(run)
        except (ValueError, binascii.Error):
            raw = b""
        text = self._text.decode(raw, final=final)
        if final:
            self._text.reset()
        return text


MIN_RUN = 24
HOLD_FROM = 8
"""Characters of base64 or hex in a row before they are read as an encoding: longer than words and
most identifiers, and 18 bytes (base64) or 12 (hex): less than any ``min_chars`` a policy uses."""
_B64_DIGITS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_="
_HEX_DIGITS = "0123456789abcdefABCDEF"
_B64_CHARS = _B64_DIGITS + "\r\n"
_HEX_CHARS = _HEX_DIGITS + " :"
_URLSAFE = str.maketrans("-_", "+/", "\r\n")


def _b64(run: str) -> bytes:
    """The bytes of ``run`` (standard or URL-safe digits, line breaks ignored); padding ends one
    encoded text and the digits after it start another."""
    return b"".join(binascii.a2b_base64(part + "=" * (-len(part) % 4))
                    for part in run.translate(_URLSAFE).split("=") if len(part) % 4 != 1)


def _hex(run: str) -> bytes:
    clean = run.replace(" ", "").replace(":", "")
    return bytes.fromhex(clean[:len(clean) // 2 * 2])


def base64_run() -> Run:
    return Run(_B64_CHARS, _B64_DIGITS, 4, _b64)


def hex_run() -> Run:
    return Run(_HEX_CHARS, _HEX_DIGITS, 2, _hex)


_OPENER = re.compile(r"[<&%\\]")
_SPECIAL = re.compile(r"[<&%\\]|[A-Za-z][0-9]|[0-9][A-Za-z]")
_OPENER_OR_DIGIT = re.compile(r"[<&%\\0-9]")
"""What ``_SPECIAL`` needs one of (a character class: searched without trying an alternation at
each character)."""
_DIGIT = re.compile(r"[A-Za-z][0-9]|[0-9][A-Za-z]")
"""A digit next to a letter: what starts the leetspeak view (a number alone does not)."""
_SEED_RAW = 3
"""Raw characters read per seed letter when a view starts (the letters before its first delta)."""


class Views:
    """One stream's further views (rendered, base64 runs, hex runs, leetspeak), each a ``Matcher``
    against the squeezed index while it is started. ``check`` returns the views' horizon; ``found``
    says whether a view found a new run of the prompt in this delta. Cost on a delta with none of
    ``< & % \\``, no digit and no run of 24 base64 or hex digits: a regex search for those characters
    and the two runs' ``rstrip``/``lstrip`` (C-level); a started view costs a loop over the letters
    it reads, until ``quiet`` letters without anything to decode stop it."""

    __slots__ = (
        "_b64",
        "_b64_m",
        "_hex",
        "_hex_m",
        "_idle",
        "_index",
        "_leet_m",
        "_leet_quiet",
        "_quiet",
        "_r",
        "_r_m",
        "_r_quiet",
        "_shift_last",
        "_shift_m",
        "_shingle",
        "_since_gate",
        "_stride",
        "found",
    )

    def __init__(self, shingles: frozenset[int], qgrams: frozenset[int], shingle: int, stride: int) -> None:
        self._index = (shingles, qgrams)
        self._shingle, self._stride = shingle, stride
        self._quiet = shingle + _QGRAM
        """Letters with nothing decoded after which a started view stops: every window it could
        match from then on is one the squeezed twin reads letter for letter."""
        self._r = Rendered()
        self._r_m: Matcher | None = None
        self._r_quiet = 0
        self._b64, self._hex = base64_run(), hex_run()
        self._b64_m: Matcher | None = None
        self._hex_m: Matcher | None = None
        self._leet_m: Matcher | None = None
        self._leet_quiet = 0
        self._shift_m: Matcher | None = None
        self._shift_last = ""  # the last letter read by the shift view (its next step starts there)
        self._since_gate = 0  # raw characters since the shift gate last looked
        self._idle = True
        """No view is started and no run is being decoded: ``check`` takes its fast path."""
        self.found = False

    def _matcher(self, seed: str, origin: int) -> Matcher:
        shingles, qgrams = self._index
        return Matcher(shingles, qgrams, self._shingle, self._stride, seed, origin)

    def in_run(self) -> bool:
        for m in (self._r_m, self._b64_m, self._hex_m, self._leet_m):
            if m is not None and m.in_run():
                return True
        return False

    def check(self, accumulated: str, delta: str, floor: int, busy: bool) -> int:
        """The views' horizon after ``delta`` (``accumulated`` ends with it); ``floor`` is the
        canary's horizon before it (where a view that starts now holds from at the earliest);
        ``busy``: the canary's other views are inside a reported run (a run is reported once)."""
        n = len(delta)
        since = self._since_gate + n
        if since >= GATE_EVERY:
            since = 0
            self._gate(accumulated, len(accumulated) - n, floor)
        self._since_gate = since
        if not self._idle or n >= MIN_RUN:
            return self._check(accumulated, delta, floor, busy)
        # Nothing to render or read as leetspeak: only the runs' lengths move (``Run.feed``).
        h, b = self._hex, self._b64
        ph = h._pending
        word = delta.isalpha()
        if word or (delta[:1] == " " and delta[1:].isalpha()):
            # A word: no digit (a hex run is followed only while it goes on: the hex of text has
            # a digit in every byte, so it starts in a delta with one); base64 letters to its end.
            if ph:
                t = n - len(delta.rstrip(_HEX_CHARS))
                ph = ph + n if t == n else t
            pb = b._pending + n if word else n - 1
        elif _OPENER_OR_DIGIT.search(delta) is None or _SPECIAL.search(delta) is None:  # (one class first: 3x faster)
            t = n - len(delta.rstrip(_HEX_CHARS))
            ph = ph + n if t == n else t
            t = n - len(delta.rstrip(_B64_CHARS))
            pb = b._pending + n if t == n else t
        else:
            return self._check(accumulated, delta, floor, busy)
        if pb < MIN_RUN and ph < MIN_RUN:  # (else ``Run.feed`` reads this delta itself)
            h._pending, b._pending = ph, pb
            self.found = False
            held = pb if pb > ph else ph  # noqa: FURB136 - max() is a builtin call per delta
            return len(accumulated) - (held if held >= HOLD_FROM else 0)
        return self._check(accumulated, delta, floor, busy)

    def _check(self, accumulated: str, delta: str, floor: int, busy: bool) -> int:
        busy = busy or self.in_run()
        end = len(accumulated)
        start = end - len(delta)
        horizon, found = end, False
        special = _OPENER.search(delta) is not None
        # Rendered: markup dropped, references and escapes decoded.
        if special or self._r_m is not None:
            origin = start - self._r.held()
            letters = squeeze(self._r.feed(delta))
            m = self._r_m
            if m is None:
                m = self._r_m = self._matcher(self._seed(accumulated, origin, squeeze),
                                              max(floor, origin - _SEED_RAW * self._shingle))
                self._r_quiet = 0
            found = m.feed(letters, origin)
            self._r_quiet = 0 if special or self._r.held() else self._r_quiet + len(letters)
            if self._r_quiet >= self._quiet and not m.in_run():
                self._r_m = None
            else:
                horizon = min(m.horizon(), origin if self._r.held() else end)
        # Leetspeak: digits read as letters.
        if self._leet_m is not None or _DIGIT.search(delta) is not None:
            letters = leet_letters(delta)
            m = self._leet_m
            if m is None:
                m = self._leet_m = self._matcher(self._seed(accumulated, start, leet_letters),
                                                 max(floor, start - _SEED_RAW * self._shingle))
                self._leet_quiet = 0
            found = m.feed(letters, start) or found
            self._leet_quiet = 0 if _DIGIT.search(delta) else self._leet_quiet + len(letters)
            if self._leet_quiet >= self._quiet and not m.in_run():
                self._leet_m = None
            else:
                horizon = min(horizon, m.horizon())
        # Caesar shifts (rot13 among them): the letters' steps, looked up while the letters of the
        # last ``GATE_WINDOW`` raw characters are unlike prose (``_shifted``, every ``GATE_EVERY``).
        m = self._shift_m
        if m is not None:
            letters = self._shift_last + squeeze(delta)
            if len(letters) > 1:
                self._shift_last = letters[-1]
                found = m.feed(steps(letters), start) or found
            horizon = min(horizon, m.horizon())
        # Base64 and hex runs, decoded.
        for run in (self._b64, self._hex):
            text, origin = run.feed(accumulated, delta)
            m = self._b64_m if run is self._b64 else self._hex_m
            if text:
                if m is None:
                    m = self._matcher("", origin)
                found = m.feed(squeeze(text), origin) or found
            if m is not None and not run.decoding() and not m.in_run():
                m = None  # the run ended
            if run is self._b64:
                self._b64_m = m
            else:
                self._hex_m = m
            if m is not None:
                horizon = min(horizon, m.horizon())
            if run.held():
                horizon = min(horizon, end - run.held())
        self.found = found and not busy
        self._idle = (self._r_m is None and self._leet_m is None and self._b64_m is None and self._hex_m is None
                      and self._shift_m is None and not self._b64.decoding() and not self._hex.decoding())
        return horizon

    def _gate(self, accumulated: str, start: int, floor: int) -> None:
        """Start the shift view when the last letters look shifted (seeded with the letters before
        the delta that starts at ``start``: ``_check`` feeds it that delta), stop it when they do not."""
        end = len(accumulated)
        # A long delta (a run of deltas checked at once, or a whole answer): every window in it.
        if end - start <= GATE_EVERY:
            shifted = _shifted(accumulated[-GATE_WINDOW:])
        else:
            shifted = _any_shifted(accumulated, start, end)
        if shifted and self._shift_m is None:
            seed = squeeze(accumulated[max(0, start - _SEED_RAW * self._shingle):start])
            self._shift_m = self._matcher(steps(seed), max(floor, start - _SEED_RAW * self._shingle))
            self._shift_last = seed[-1:]
            self._idle = False
        elif not shifted and self._shift_m is not None and not self._shift_m.in_run():
            self._shift_m = None

    def _seed(self, accumulated: str, origin: int, view: Callable[[str], str]) -> str:
        """The view's last letters before ``origin`` (a copy whose first words had nothing to decode),
        read from ``_SEED_RAW * shingle`` raw characters: a started view holds from there at the
        earliest (or from the canary's horizon, if later: what went out is out)."""
        return view(accumulated[max(0, origin - _SEED_RAW * self._shingle):origin])


GATE_EVERY = 16
"""Raw characters between two looks of the shift gate (``_shifted``): a shifted copy starts being read
at most this late (the view is seeded with the letters before, so nothing of it is missed; at most
this much more of it may have gone out)."""
GATE_WINDOW = 64
"""Raw characters the shift gate looks at."""
_LETTER_CLASS = bytes(b"F"[0] if c < 128 and chr(c).lower() in "etaoinshr" else
                      b"L"[0] if c < 128 and chr(c).isalpha() else b"."[0] for c in range(256))
"""Each byte as ``F`` (one of the nine most frequent English letters), ``L`` (another ASCII letter) or ``.``."""
_SHIFT_BELOW = 0.5
"""The share of the nine most frequent English letters (e t a o i n s h r) under which a window of
letters reads as shifted: ordinary text of the project's README, docs and sources has at least
0.5 in 99 windows of 48 letters out of 100 (median 0.69); the prompt shifted by any of the 25 has
0.24-0.46 on average."""
_STEP = {chr(97 + a) + chr(97 + b): chr(97 + (b - a) % 26) for a in range(26) for b in range(26)}


def _shifted(raw: str) -> bool:
    """Whether the ASCII letters of ``raw`` (at least 32 of them) look like a Caesar shift of prose.
    Four C-level passes over at most ``GATE_WINDOW`` characters."""
    classes = raw.encode("utf-8").translate(_LETTER_CLASS)
    frequent = classes.count(b"F")
    letters = frequent + classes.count(b"L")
    return letters >= 32 and frequent < _SHIFT_BELOW * letters


def _any_shifted(text: str, start: int, end: int) -> bool:
    """Whether ``_gate`` finds a window shifted after the long delta ``text[start:end]`` (the windows
    ending every ``GATE_EVERY`` characters from ``start + GATE_EVERY``, the last one at ``end``). An
    ASCII text is classed once and each window counted in place (``_classes_shifted``)."""
    lo = max(0, start - GATE_WINDOW)
    read = text[lo:end]
    if not read.isascii():
        return any(_shifted(text[max(0, at - GATE_WINDOW):min(at, end)])
                   for at in range(start + GATE_EVERY, end + GATE_EVERY, GATE_EVERY))
    return _classes_shifted(read.encode("ascii").translate(_LETTER_CLASS), start - lo, end - lo)


def _classes_shifted(classes: bytes, start: int, end: int) -> bool:
    """``_any_shifted`` over the classes of an ASCII text (``_LETTER_CLASS``, from at least
    ``GATE_WINDOW`` before ``start`` or the text's start): one or two C counts a window, where
    slicing, encoding and classing each window cost about three times as much."""
    count = classes.count
    for hi in range(start + GATE_EVERY, end + GATE_EVERY, GATE_EVERY):  # (a count stops at ``end``)
        first = hi - GATE_WINDOW if hi > GATE_WINDOW else 0
        frequent = count(b"F", first, hi)
        if frequent < GATE_WINDOW // 2:  # (else at least 32 of at most 64 letters: not under half)
            letters = frequent + count(b"L", first, hi)
            if letters >= 32 and frequent < _SHIFT_BELOW * letters:
                return True
    return False


def steps(letters: str) -> str:
    """The step from each letter to the next, as a letter (``a`` = 0): the same for every Caesar
    shift of a text, rot13 included. A letter outside a-z breaks the chain as a ``-``."""
    step = _STEP
    return "".join([step.get(pair, "-") for pair in map(str.__add__, letters, letters[1:])])


def passes_views(shingles: frozenset[int], qgrams: frozenset[int], pieces: Sequence[str], shingle: int) -> bool:
    """``Views`` fed ``pieces`` find no run of the prompt (the whole-text form: same code, same verdict).
    A text on which no view would start (``_stays_idle``, most answers) passes without one."""
    if _stays_idle(pieces):
        return True
    views = Views(shingles, qgrams, shingle, 1)
    accumulated = ""
    for piece in pieces:
        if piece:
            accumulated += piece
            views.check(accumulated, piece, 0, False)
            if views.found:
                return False
    return True


def _byte_class(members: str, mark: str) -> bytes:
    return bytes(ord(mark) if chr(c) in members else ord(".") for c in range(128)) + b"." * 128


_IN_B64 = _byte_class(_B64_CHARS, "b")
_IN_HEX = _byte_class(_HEX_CHARS, "h")
_KIND = bytes(ord("<") if chr(c) in _OPENERS else ord("1") if chr(c) in "0123456789" else
              ord("a") if chr(c).isascii() and chr(c).isalpha() else ord(".") for c in range(128)) + b"." * 128
"""Each byte of a text's UTF-8 as what ``Views`` starts on: an opener (``<``), an ASCII digit (``1``)
or letter (``a``), or another (``.``; every byte of a non-ASCII character, which none of them is)."""
_LONG_B64 = b"b" * MIN_RUN
_LONG_HEX = b"h" * MIN_RUN


def _stays_idle(pieces: Sequence[str]) -> bool:
    """Whether ``Views`` fed ``pieces`` (as ``passes_views`` feeds them) starts no view, so finds
    nothing: the rendered and leetspeak views start only on a delta with one of ``< & % \\`` or an
    ASCII digit next to an ASCII letter (the joined text holds every one of those, and more); a run
    is decoded only once it is ``MIN_RUN`` characters long (a run in any delta, or in what ``Run``
    re-reads, is part of one in the joined text); the shift view starts only when the gate finds a
    shifted window, and the gate's calls are replayed here piece by piece (the same ``GATE_EVERY``
    count, the same windows). Each test is a C pass over the text's bytes classed by a table (all
    the sets are ASCII: a non-ASCII character's bytes class as none), where ``Views`` would cost a
    Python-level pass per view (about 20 µs on a 112-character answer, 3 here)."""
    text = pieces[0] if len(pieces) == 1 else "".join(pieces)
    raw = text.encode("utf-8", "surrogatepass")
    kinds = raw.translate(_KIND)
    if b"<" in kinds or b"1" in kinds and (b"a1" in kinds or b"1a" in kinds):
        return False
    if _LONG_B64 in raw.translate(_IN_B64) or _LONG_HEX in raw.translate(_IN_HEX):
        return False
    if len(pieces) == 1 and len(raw) == len(text):  # (one ASCII piece: its classes are at hand)
        n = len(text)
        return n < GATE_EVERY or not (_shifted(text) if n == GATE_EVERY else
                                      _classes_shifted(raw.translate(_LETTER_CLASS), 0, n))
    since = end = 0
    for piece in pieces:
        n = len(piece)
        end += n
        since += n
        if n and since >= GATE_EVERY:  # (``passes_views`` skips an empty piece)
            since = 0
            if _shifted(text[max(0, end - GATE_WINDOW):end]) if n <= GATE_EVERY else _any_shifted(text, end - n, end):
                return False
    return True

