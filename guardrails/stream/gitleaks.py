"""Operator rules from a gitleaks-format TOML file, matched across deltas in linear time.

The file holds ``[[rules]]`` tables with ``id``, ``regex``, optional ``secretGroup``,
``entropy``, ``keywords`` and allowlists (``[rules.allowlist]`` or ``[[rules.allowlists]]`` with
``regexes``, ``regexTarget`` = ``secret``/``match``/``line``, ``stopwords``), and an optional
global ``[allowlist]``. Path-only rules (no ``regex``) do not apply to model output and are
skipped. Regexes are Go RE2 syntax and are compiled with ``google-re2`` (the same engine
family): matching is linear in the text, so an operator's regex cannot backtrack the proxy to a
halt. A regex RE2 rejects makes the policy fail to load, naming the rule.

Matching: a rule with keywords runs only while one of them (found case-insensitively by one
Aho-Corasick pass over the new text) lies within ``WINDOW`` characters of the end, over the text
from ``WINDOW`` before the keyword; a rule without keywords runs on every call over the last
``WINDOW`` characters plus the new text. A match is reported once a character follows it (RE2 has
no lookahead, so the regex may still grow while it touches the end) or at ``finish``, each at
most once. Gitleaks rules say nothing about how far before a keyword a match starts, so these
rules hold back ``WINDOW`` characters behind the earliest live keyword, or behind the end when a
rule has no keyword.
"""

from __future__ import annotations

import math
import tomllib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ahocorasick
import re2

# The longest text an operator's match may span. Gitleaks rules match within a line or two.
WINDOW = 256


@dataclass(frozen=True, slots=True)
class Allowlist:
    regexes: tuple[Any, ...]
    target: str
    stopwords: tuple[str, ...]

    def allows(self, secret: str, match: str, line: str) -> bool:
        subject = {"secret": secret, "match": match, "line": line}.get(self.target, secret)
        if any(rx.search(subject) for rx in self.regexes):
            return True
        lowered = secret.lower()
        return any(word in lowered for word in self.stopwords)


@dataclass(frozen=True, slots=True)
class GitleaksRule:
    id: str
    regex: Any
    secret_group: int
    entropy: float
    keywords: tuple[str, ...]
    allowlists: tuple[Allowlist, ...]


@dataclass(frozen=True, slots=True)
class GitleaksRules:
    rules: tuple[GitleaksRule, ...]
    automaton: Any
    reach: int
    window: int = WINDOW

    @property
    def unkeyed(self) -> tuple[GitleaksRule, ...]:
        return tuple(r for r in self.rules if not r.keywords)


class GitleaksError(ValueError):
    """A rules file that cannot be used; the message names the file and the rule."""


def load_gitleaks_rules(path: str | Path) -> GitleaksRules:
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise GitleaksError(f"{path}: cannot read gitleaks rules: {exc}") from exc
    return parse_gitleaks_rules(data, source=str(path))


def parse_gitleaks_rules(data: dict[str, Any], *, source: str = "<rules>") -> GitleaksRules:
    shared = [_allowlist(data["allowlist"], source, "allowlist")] if "allowlist" in data else []
    rules: list[GitleaksRule] = []
    for number, raw in enumerate(data.get("rules", [])):
        rule_id = str(raw.get("id", f"rules[{number}]"))
        if "regex" not in raw:
            continue
        try:
            regex = re2.compile(str(raw["regex"]))
        except re2.error as exc:
            raise GitleaksError(f"{source}: rule {rule_id!r}: regex RE2 cannot compile: {exc}") from exc
        lists = [raw["allowlist"]] if "allowlist" in raw else list(raw.get("allowlists", []))
        rules.append(GitleaksRule(
            id=rule_id, regex=regex, secret_group=int(raw.get("secretGroup", 0)),
            entropy=float(raw.get("entropy", 0.0)),
            keywords=tuple(str(k).lower() for k in raw.get("keywords", []) if k),
            allowlists=(*shared, *(_allowlist(a, source, rule_id) for a in lists))))
    if not rules:
        raise GitleaksError(f"{source}: no [[rules]] with a regex")
    automaton = ahocorasick.Automaton()
    keyed: dict[str, list[int]] = {}
    for i, rule in enumerate(rules):
        for keyword in rule.keywords:
            keyed.setdefault(keyword, []).append(i)
    for keyword, owners in keyed.items():
        automaton.add_word(keyword, (len(keyword), tuple(owners)))
    if keyed:
        automaton.make_automaton()
    return GitleaksRules(tuple(rules), automaton if keyed else None, max(map(len, keyed), default=1))


def _allowlist(raw: dict[str, Any], source: str, where: str) -> Allowlist:
    try:
        regexes = tuple(re2.compile(str(rx)) for rx in raw.get("regexes", []))
    except re2.error as exc:
        raise GitleaksError(f"{source}: {where}: allowlist regex RE2 cannot compile: {exc}") from exc
    return Allowlist(regexes, str(raw.get("regexTarget", "secret")),
                     tuple(str(w).lower() for w in raw.get("stopwords", [])))


def shannon_entropy(value: str) -> float:
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values()) if n else 0.0


class GitleaksScanner:
    """One stream's state over the operator's rules: live keywords, and matches already reported."""

    __slots__ = ("_live", "_reported", "_rules", "_seen", "_unkeyed")

    def __init__(self, rules: GitleaksRules) -> None:
        self._rules = rules
        self._unkeyed = rules.unkeyed
        self._seen = 0
        self._live: dict[int, int] = {}  # rule number -> offset of its latest keyword
        self._reported: set[tuple[str, int]] = set()

    def scan(self, text: str, *, final: bool) -> list[tuple[int, str]]:
        """``(start, secret)`` of the new settled matches (allowlisted and low-entropy ones left out)."""
        end = len(text)
        if end > self._seen:
            self._take_keywords(text)
        found: list[tuple[int, str]] = []
        for number, at in list(self._live.items()):
            found += self._run(self._rules.rules[number], text, max(0, at - WINDOW), final)
            if end - at > WINDOW:
                del self._live[number]
        for rule in self._unkeyed:
            found += self._run(rule, text, max(0, end - WINDOW - (end - self._seen)), final)
        return found

    def horizon(self, text: str) -> int:
        end = len(text)
        if self._unkeyed:
            return max(0, end - WINDOW)
        lowest = max(0, end - self._rules.reach - WINDOW)
        return min([lowest, *(max(0, at - WINDOW) for at in self._live.values())])

    def _take_keywords(self, text: str) -> None:
        end, seen, automaton = len(text), self._seen, self._rules.automaton
        if automaton is not None:
            lo = max(0, seen - self._rules.reach + 1)
            for last, (_, owners) in automaton.iter(text[lo:end].lower()):
                if lo + last >= seen:
                    for number in owners:
                        self._live[number] = lo + last
        self._seen = end

    def _run(self, rule: GitleaksRule, text: str, lo: int, final: bool) -> list[tuple[int, str]]:
        out: list[tuple[int, str]] = []
        segment = text[lo:]
        for match in rule.regex.finditer(segment):
            start, stop = lo + match.start(), lo + match.end()
            if stop == start or (stop >= len(text) and not final) or (rule.id, start) in self._reported:
                continue
            self._reported.add((rule.id, start))
            secret = _secret(match, rule.secret_group)
            if rule.entropy and shannon_entropy(secret) < rule.entropy:
                continue
            line_start = text.rfind("\n", 0, start) + 1
            line_end = text.find("\n", stop)
            line = text[line_start:line_end if line_end >= 0 else len(text)]
            if any(a.allows(secret, match.group(), line) for a in rule.allowlists):
                continue
            out.append((start, secret))
        return out


def _secret(match: Any, group: int) -> str:
    """The secret: ``secretGroup`` when set, else the first group that matched, else the match."""
    if group:
        return str(match.group(group) or "")
    for value in match.groups():
        if value:
            return str(value)
    return str(match.group())
