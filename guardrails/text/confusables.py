"""Look-alike letters: the canary's confusables skeleton (the idea of Unicode TR39's ``skeleton``).

A prompt written with Cyrillic ``а е о р с у х і ј ѕ``, Greek ``ο α ν``, Latin small capitals or
Cherokee letters in place of some Latin ones reads as the prompt. ``SKELETON`` (built once by
``skeleton_table``) maps each such character to the ASCII character it imitates, lowercased; the
canary applies it after NFKC and case folding (``guardrails.stream.canary.normalise``), to the
prompt and to the answer alike, so a copy in look-alikes compares equal to the prompt.

The data is Unicode's confusables.txt as the ``confusable_homoglyphs`` package ships it (MIT;
``confusables.json``: each character with the characters confusable with it). Kept from it:

- **One character to one ASCII character**, and only from non-ASCII characters. A non-ASCII
  character whose only ASCII look-alike is ``c`` has prototype ``c`` (an ASCII character is never
  the source of a mapping to a non-ASCII one in TR39, so the direction is not lost). Multi-character
  prototypes (``ɱ`` -> ``rn``-like ones) are left out: one character in, one out keeps every
  normalised offset where it was, which the canary's horizon relies on.
- **No ASCII character is mapped.** TR39 folds ``0`` to ``O`` and ``1``, ``I``, ``|`` to ``l``;
  here ASCII text is only lowercased, so ordinary prose, code and numbers compare as before and
  an ASCII delta never pays for a translation. A copy that swaps ``o`` for ``0`` is visibly not
  the prompt; one in Cyrillic ``о`` is.
- **Lowercase forms of look-alike capitals.** The canary folds case before mapping, so Cyrillic
  ``Н`` arrives as ``н``: a lowercase letter whose capital imitates a Latin capital (``Н``, ``Т``,
  ``М``, ``К``, ``В``, Greek ``Τ``, ``Κ``, Cherokee letters, which case-fold to their capitals)
  maps to that Latin letter, unless the data gives it its own ASCII look-alike.
- **Latin small capitals** (``ᴀ ʙ ᴅ ᴇ ɢ ʜ ʟ ᴍ ɴ ᴘ ʀ ᴛ``...), which confusables.txt mostly lacks:
  from their Unicode names (``LATIN LETTER SMALL CAPITAL X``), to ``x``.

Mathematical alphanumerics and full-width letters need nothing here: NFKC folds them first.

Not caught (left as they are): the lunate sigma ``ϲ`` (NFKC folds it into ``ς`` before the table
sees it), the dotless ``ȷ``, a small letter TR39 maps to ``l`` standing in for a capital ``I`` (and a
capital standing in for ``l``), since ASCII ``I`` and ``l`` stay apart; and for nine letters whose
capital and small forms imitate different Latin letters (Greek ``Ν``/``ν``: ``n``/``v``, ``Υ``/``υ``)
a prompt in that script copied in the other case.

False positives: none of these mappings touches ASCII, so only text in other scripts changes; a
Russian or Greek sentence skeletons to Latin letters mixed with unmapped ones (``л``, ``д``, ``я``,
``λ``...), never to 33 characters of an English prompt (measured in the tests against an agent
prompt).

Cost: ``str.translate`` with a dict (about 1,650 entries), on the non-ASCII path only; building it
loads the package's 900 KB JSON once per process (20-35 ms here; ``CanaryProvider`` builds it when a
policy is built, not on a stream).

``shape_table`` is the same table with case kept, for the checks that read the text as a reader sees
it (``secrets``, ``pii``, ``regex``: ``guardrails.text.invisible``), whose patterns are case
sensitive (``AKIA``, an IBAN's country): each look-alike maps to the ASCII character in the case it
imitates (Cyrillic ``А`` to ``A``, ``а`` to ``a``; a small form of a look-alike capital, ``н`` ``т``
``в``, and a Latin small capital, to the capital). Those checks apply no NFKC (it is not one to one),
so the table also maps each character whose NFKC form is one ASCII character and that shows as that
character (full-width ``Ａ１``, mathematical ``𝐀``, letterlike ``ℂ``, no-break and other spaces, the
Greek question mark), but not superscripts, subscripts, circled or squared letters, which show as
something else.
"""

from __future__ import annotations

import unicodedata
from functools import cache

from confusable_homoglyphs.utils import load

_BIDI_MARKS = str.maketrans("", "", "\u200e\u200f")
"""The package wraps right-to-left characters in LRM marks (``\\u200eא\\u200e``)."""
_SMALL_CAPITAL = "LATIN LETTER SMALL CAPITAL "
_SMALL_CAPITAL_BLOCKS = ((0x0250, 0x02AF), (0x1D00, 0x1DBF), (0xA720, 0xA7FF), (0xAB30, 0xAB6F),
                         (0x1DF00, 0x1DFFF))
"""IPA Extensions, Phonetic Extensions (and their supplement), Latin Extended-D, -E and -G: where
Unicode puts the Latin small capitals."""


@cache
def skeleton_table() -> dict[int, str]:
    """``str.translate`` table: a non-ASCII look-alike to the lowercase ASCII character it imitates."""
    prototypes = _ascii_prototypes(load("confusables.json"))
    table = dict(prototypes)
    for source, prototype in prototypes.items():
        for other in (source.upper(), source.lower(), source.title()):  # the same letter in another case
            if len(other) == 1 and other not in table and other.casefold() == source:
                table[other] = prototype
    for source, prototype in prototypes.items():
        folded = source.casefold()  # the lowercase of a look-alike capital
        if len(folded) == 1 and not folded.isascii() and folded not in table:
            table[folded] = prototype
    for lo, hi in _SMALL_CAPITAL_BLOCKS:
        for code in range(lo, hi + 1):
            name = unicodedata.name(chr(code), "")
            letter = name[len(_SMALL_CAPITAL):]
            if name.startswith(_SMALL_CAPITAL) and len(letter) == 1 and chr(code) not in table:
                table[chr(code)] = letter.lower()
    return str.maketrans(table)


def _ascii_prototypes(data: dict[str, list[dict[str, str]]], *, keep_case: bool = False) -> dict[str, str]:
    """Each non-ASCII character whose look-alikes include one ASCII character: to it, lowercased
    (with ``keep_case``, in the case it has there)."""
    prototypes: dict[str, str] = {}
    for key, alikes in data.items():
        source = key.translate(_BIDI_MARKS)
        if len(source) != 1 or source.isascii():
            continue
        ascii_alikes = {c for alike in alikes if len(c := alike["c"].translate(_BIDI_MARKS)) == 1 and c.isascii()}
        if len(ascii_alikes) == 1:
            prototype = ascii_alikes.pop()
            # TR39 merges ``I`` into ``l``; a capital (Greek ``Ι``, Cyrillic ``І``, palochka ``Ӏ``)
            # imitates ``I``, which ASCII text case-folds to ``i``.
            prototype = "I" if prototype == "l" and source.isupper() else prototype
            prototypes[source] = prototype if keep_case else prototype.lower()
    return prototypes


def skeleton(text: str) -> str:
    """``text`` (NFKC) with every look-alike replaced by its prototype; case folding comes after."""
    return text if text.isascii() else text.translate(skeleton_table())


_SAME_SHAPE_SMALL = frozenset("cosuvwxz")
"""Latin letters whose small form is their capital, smaller."""
_SHOWN_AS_NFKC = frozenset({"<font>", "<wide>", "<narrow>", "<compat>", "<noBreak>", "<small>", ""})
"""Decomposition tags of characters that show as their NFKC form ("": a canonical singleton, the
Kelvin sign ``K``); ``<super>``, ``<sub>``, ``<circle>``, ``<square>`` and ``<vertical>`` forms do not."""
_NFKC_BLOCKS = ((0x0080, 0x03FF), (0x1D00, 0x1FFF), (0x2000, 0x24FF), (0x3000, 0x3000), (0xFE30, 0xFFEF),
                (0x1D400, 0x1D7FF))
"""Where a character with a one-character ASCII NFKC form lives (Unicode 14: all of them but the
Outlined/Segmented digits and squared letters, which show differently anyway)."""


@cache
def shape_table() -> dict[int, str]:
    """``str.translate`` table: a non-ASCII look-alike to the ASCII character it imitates, in the case
    it imitates; the keys of ``skeleton_table`` and the NFKC forms that show as ASCII (module doc)."""
    shapes = _ascii_prototypes(load("confusables.json"), keep_case=True)
    table = {chr(code): _shape_of(chr(code), folded, shapes) for code, folded in skeleton_table().items()}
    for lo, hi in _NFKC_BLOCKS:
        for code in range(lo, hi + 1):
            char = chr(code)
            nfkc = unicodedata.normalize("NFKC", char)
            tag = unicodedata.decomposition(char).partition(" ")[0]
            if len(nfkc) == 1 and nfkc.isascii() and nfkc != char and (tag if tag[:1] == "<" else "") in _SHOWN_AS_NFKC:
                table[char] = nfkc
    return str.maketrans(table)


def _shape_of(char: str, folded: str, shapes: dict[str, str]) -> str:
    """The case ``char`` imitates its (lowercased) prototype ``folded`` in: the data's own case, or
    its capital's shape for a small form of a look-alike capital (``н``: ``H``); a small capital,
    or a capital the data gives no ASCII look-alike of, is a capital. A small letter shaped as one
    of the capitals whose ASCII small letter is the same shape smaller (``χ``, ``ᴄ``) is that one."""
    if char in shapes:
        return shapes[char]
    capital = char.upper()
    if char.isupper():
        return folded.upper()
    if len(capital) == 1 and capital != char and capital in shapes:
        shape = shapes[capital]
    elif unicodedata.name(char, "").startswith(_SMALL_CAPITAL):
        shape = folded.upper()
    else:
        return folded
    return shape.lower() if shape.lower() in _SAME_SHAPE_SMALL else shape
