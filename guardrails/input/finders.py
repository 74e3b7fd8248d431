"""Span finders over one complete text: where a secret, a piece of personal data, a deny pattern or
hidden characters sit, and what stands there after a redaction.

Each reuses its stream guardrail's own matcher (the secrets catalog's keyword index and checks, the
PII alternation and validators, the linear-time deny patterns, the hidden-character scan), run to the
end of the text at once. Pure, no I/O; the cost is linear in the text. ``Cached`` remembers the hits
of a text by its digest, so a conversation that grows by one turn has only that turn checked.
"""

from __future__ import annotations

import hashlib
import re
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from config.policy import (
    HiddenTextGuardrail,
    InputHiddenTextGuardrail,
    InputPiiGuardrail,
    InputRegexGuardrail,
    InputSecretsGuardrail,
    PiiGuardrail,
    SecretsGuardrail,
)
from guardrails.decision import HIDDEN_TEXT, PATTERN_MATCH, PII, SECRET_LEAK, Redact
from guardrails.seams import StreamContext
from guardrails.stream.gitleaks import GitleaksScanner
from guardrails.stream.hidden_text import HiddenTextCheck
from guardrails.stream.keyword_scan import KeywordScanner
from guardrails.stream.linear import LinearPattern
from guardrails.stream.pii import PiiCheck, PiiProvider
from guardrails.stream.secrets import CUSTOM, SecretsProvider, is_credential, key_end

CACHE_ENTRIES = 16_384
"""Texts whose verdicts each finder remembers (a digest and a few spans each, ~200 bytes): room for
the turns of a few hundred agent conversations at once."""
_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE}
_NO_CTX = StreamContext("")
_TOKEN_PREFIX = re.compile(r"[A-Za-z0-9_.-]*")  # a prefix (ghp_), or a structured token's earlier segments
"""What lies between a secret match's start and its secret part when that part is the tail of one
token; an assignment (``password = ...``) has other characters there and keeps its name."""


@dataclass(frozen=True, slots=True)
class Hit:
    start: int
    end: int
    mask: str
    """What stands in the text instead when redacting ("" drops the characters)."""
    category: str


Hits = tuple[Hit, ...]


class Finder(Protocol):
    reason_code: str
    line_local: bool
    """A newline bounds what it finds as the text's own start and end do (no match spans one unless
    it may, none is anchored to the text's edges): a text's hits are then found in it with other
    texts joined to it by newlines (``guardrails.input.joined``)."""

    def find(self, text: str) -> Hits: ...


def digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class Cached:
    """A finder's hits remembered by the text's digest (LRU, ``CACHE_ENTRIES``)."""

    __slots__ = ("_seen", "hits", "inner", "misses", "reason_code")

    def __init__(self, finder: Finder) -> None:
        self.inner, self.reason_code = finder, finder.reason_code
        """``inner``: the finder itself, for a caller that keeps its own verdicts (``proxy.drive.input_guard``)."""
        self._seen: OrderedDict[bytes, Hits] = OrderedDict()
        self.hits = self.misses = 0

    def find(self, text: str, key: bytes | None = None) -> Hits:
        key = key if key is not None else digest(text)
        found = self._seen.get(key)
        if found is not None:
            self.hits += 1
            self._seen.move_to_end(key)
            return found
        self.misses += 1
        found = self.inner.find(text)
        self._seen[key] = found
        if len(self._seen) > CACHE_ENTRIES:
            self._seen.popitem(last=False)
        return found


def _masked(template: str, category: str) -> str:
    return template.replace("{category}", category)


class SecretsFinder:
    reason_code = SECRET_LEAK
    line_local = True

    def __init__(self, spec: InputSecretsGuardrail, base_dir: Path) -> None:
        stream = SecretsGuardrail(id=spec.id, kind="secrets", allow=spec.allow, categories=spec.categories,
                                  rules_file=spec.rules_file)
        self._p = SecretsProvider(stream, "", base_dir)
        self._mask = spec.mask

    def _allowed(self, secret: str, whole: str) -> bool:
        return any(secret in allowed or whole in allowed for allowed in self._p.allow)

    def find(self, text: str) -> Hits:
        p, out = self._p, []
        if p.index is not None and not p.index.finds_none(text):
            scanner = KeywordScanner(p.index)
            while (found := scanner.next(text, final=True)) is not None:
                rule, match = p.rows[found[0].name], found[1]
                group = "s" if "s" in match.re.groupindex and match.group("s") else 0
                if self._allowed(match.group(group), match.group()) or not is_credential(rule, match):
                    continue
                start = match.start(group)
                if _TOKEN_PREFIX.fullmatch(text, match.start(), start):
                    start = match.start()  # a token's own prefix (``AKIA``, ``ghp_``): masked with it
                end = match.end(group)
                if rule.family == "private_key":  # the whole key: its rule names its first line
                    end = key_end(text, end) or end
                out.append(Hit(start, end, _masked(self._mask, rule.family), rule.family))
        if p.custom is not None:
            for start, secret in GitleaksScanner(p.custom).scan(text, final=True):
                if not any(allowed.startswith(secret) for allowed in p.allow):
                    out.append(Hit(start, start + len(secret), _masked(self._mask, CUSTOM), CUSTOM))
        return disjoint(out)


class PiiFinder:
    reason_code = PII
    line_local = True

    def __init__(self, spec: InputPiiGuardrail) -> None:
        stream = PiiGuardrail(id=spec.id, kind="pii", action="redact", allow=spec.allow,
                              categories=spec.categories, regions=spec.regions)
        self._p = PiiProvider(stream, "")
        self._mask = spec.mask

    def find(self, text: str) -> Hits:
        if self._p.passes_whole(_NO_CTX, [text]):
            return ()
        check = PiiCheck(self._p)
        out = []
        while isinstance(d := check.finish(text), Redact):
            category = d.mask.strip("[]")
            out.append(Hit(d.start, d.end, _masked(self._mask, category), category))
        return disjoint(out)


class HiddenTextFinder:
    reason_code = HIDDEN_TEXT
    line_local = True

    def __init__(self, spec: InputHiddenTextGuardrail | HiddenTextGuardrail) -> None:
        self._bidi = spec.bidi

    def find(self, text: str) -> Hits:
        if text.isascii():
            return ()
        check = HiddenTextCheck(True, "", bidi=self._bidi)
        out = []
        while isinstance(d := check.finish(text), Redact):
            out.append(Hit(d.start, d.end, "", "hidden_text"))
        return tuple(out)


class RegexFinder:
    reason_code = PATTERN_MATCH
    line_local = False
    """An operator's pattern may anchor to the text's edges (``^`` without ``m``, ``\\A``)."""

    def __init__(self, spec: InputRegexGuardrail) -> None:
        flags = re.NOFLAG
        for flag in spec.flags:
            flags |= _FLAGS[flag]
        self._patterns: list[tuple[int, LinearPattern]] = []
        for number, pattern in enumerate(spec.patterns, start=1):
            try:
                re.compile(pattern, flags)
                self._patterns.append((number, LinearPattern(pattern, flags)))
            except (re.error, ValueError) as exc:
                raise ValueError(f"guardrail {spec.id!r}: pattern #{number} {pattern!r}: not accepted: {exc} "
                                 "(patterns run on a linear-time engine, RE2)") from exc
        self._mask = spec.mask

    def find(self, text: str) -> Hits:
        out = [Hit(m.start(), m.end(), self._mask, f"pattern#{n}") for n, p in self._patterns
               for m in p.finditer(text) if m.end() > m.start()]
        return disjoint(out)


def disjoint(hits: list[Hit]) -> Hits:
    """In text order, overlaps merged into the first (a redaction must cover each once)."""
    out: list[Hit] = []
    for h in sorted(hits, key=lambda h: (h.start, -h.end)):
        if out and h.start < out[-1].end:
            last = out[-1]
            out[-1] = Hit(last.start, max(last.end, h.end), last.mask, last.category)
        else:
            out.append(h)
    return tuple(out)


def redacted(text: str, hits: Hits) -> str:
    """``text`` with each hit replaced by its mask (hits disjoint, in order)."""
    parts, at = [], 0
    for h in hits:
        parts += [text[at:h.start], h.mask]
        at = h.end
    parts.append(text[at:])
    return "".join(parts)
