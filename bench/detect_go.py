"""Just enough of Go to read the string values of other scanners' test files (bench only).

``values(source, at)`` evaluates the Go expression that starts at offset ``at``: string literals
(raw and interpreted), ``+`` concatenation, ``[]string{...}`` slices, ``append(...)`` (the items
after the first argument, ``...`` spreads), ``fmt.Sprintf`` with ``%s``/``%d``/``%v``, names bound
by ``name = expr`` / ``name := expr`` elsewhere in the file, and the sample helpers of gitleaks'
rule generator: ``secrets.NewSecret(regex)`` gives one random string of the regex (``rstr``,
seeded), ``utils.AlphaNumeric("40")`` and its siblings give their documented character classes,
``utils.GenerateSampleSecret(s)`` wrap a secret in assignment forms. Whatever else is called (a
helper of the file's own) cannot be evaluated: that item is dropped, never guessed. A
``map[string]...`` literal (file-path samples) evaluates to nothing.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable

import rstr

_TOKEN = re.compile(r"""
    (?P<space>\s+|//[^\n]*|/\*.*?\*/)
  | (?P<raw>`[^`]*`)
  | (?P<str>"(?:[^"\\\n]|\\.)*")
  | (?P<chr>'(?:[^'\\\n]|\\.)+')
  | (?P<name>[A-Za-z_][\w.]*)
  | (?P<num>\d+)
  | (?P<op>\.\.\.|:=|==|!=|<=|>=|&&|\|\||[-+*/%=(){}\[\],:;|&!<>^.])
""", re.VERBOSE | re.DOTALL)
# gitleaks' generator helpers (cmd/generate/config/utils/patterns.go): the class each one names.
_CLASSES = {"utils.Numeric": "[0-9]", "utils.Hex": "[a-f0-9]", "utils.AlphaNumeric": "[a-z0-9]",
            "utils.AlphaNumericExtendedShort": "[a-z0-9_-]", "utils.AlphaNumericExtended": "[a-z0-9=_-]",
            "utils.AlphaNumericExtendedLong": "[a-z0-9/=_+-]"}
# The assignment forms each ``GenerateSampleSecrets`` sample is written in, one per kind its
# generator covers (gitleaks issue #1222: ini, json, xml, yaml, code in several languages,
# logstash, make), spelled by us. Every form names the secret (no bare value: neither scanner
# claims a keyless 32-hex string for a provider).
FORMS = ('{i}Token="{s}"', "{i}Token = {s}", '{{\n    "{i}_token": "{s}"\n}}', '{{"app.ini": "{I}_TOKEN={s}\\nDEBUG=false"}}',
         "<{i}Token>\n    {s}\n</{i}Token>", "{i}_token: {s}", "{i}_token: '{s}'", 'var {i}Token string = "{s}"',
         "{i}Token := `{s}`", 'String {i}Token = "{s}";', '${i}Token .= "{s}"', "{i}Token = '{s}'",
         'System.setProperty("{I}_TOKEN", "{s}")', '  "{i}Token" => "{s}"', '{I}_TOKEN ?= "{s}"', '{I}_TOKEN ::= "{s}"')


class Unknown(Exception):
    """An expression this reader cannot evaluate."""


def unquote(token: str) -> str:
    if token.startswith("`"):
        return token[1:-1].replace("\r", "")
    return bytes(token[1:-1], "utf-8").decode("unicode_escape").encode("latin-1").decode("utf-8", "replace")


class GoReader:
    def __init__(self, source: str, seed: int = 0) -> None:
        self.source = source
        self.tokens = [(m.lastgroup or "", m.group(), m.start()) for m in _TOKEN.finditer(source)
                       if m.lastgroup != "space"]
        self.starts = {start: i for i, (_, _, start) in enumerate(self.tokens)}
        self.rng = rstr.Rstr(random.Random(seed))
        self.bindings: dict[str, int] = {}
        for i in range(len(self.tokens) - 2):
            kind, text, _ = self.tokens[i]
            if kind == "name" and self.tokens[i + 1][1] in ("=", ":=") and text not in self.bindings:
                self.bindings[text] = i + 2

    def values(self, offset: int) -> list[str]:
        """The strings of the expression whose first token starts at or after ``offset``."""
        i = next((n for start, n in sorted(self.starts.items()) if start >= offset), len(self.tokens))
        try:
            return self._expr(i, depth=0)[0]
        except (Unknown, IndexError, re.error):
            return []

    def _expr(self, i: int, depth: int) -> tuple[list[str], int]:
        left, i = self._term(i, depth)
        while i < len(self.tokens) and self.tokens[i][1] == "+":
            right, i = self._term(i + 1, depth)
            if len(left) != 1 or len(right) != 1:
                raise Unknown("concatenation of lists")
            left = [left[0] + right[0]]
        return left, i

    def _items(self, i: int, close: str, depth: int) -> tuple[list[list[str] | None], int]:
        """Comma-separated expressions up to ``close``; an item that cannot be read is None."""
        items: list[list[str] | None] = []
        while self.tokens[i][1] != close:
            try:
                value, i = self._expr(i, depth)
                if i < len(self.tokens) and self.tokens[i][1] == "...":
                    i += 1
                items.append(value)
            except Unknown:
                items.append(None)
                i = self._skip_item(i, close)
            if self.tokens[i][1] == ",":
                i += 1
        return items, i + 1

    def _skip_item(self, i: int, close: str) -> int:
        level = 0
        while True:
            text = self.tokens[i][1]
            if level == 0 and text in (",", close):
                return i
            level += text in "([{"
            level -= text in ")]}"
            i += 1

    def _term(self, i: int, depth: int) -> tuple[list[str], int]:
        if depth > 8:
            raise Unknown("too deep")
        kind, text, _ = self.tokens[i]
        if kind in ("raw", "str"):
            return [unquote(text)], i + 1
        if text == "[" and self.tokens[i + 1][1] == "]" and self.tokens[i + 2][1] == "string":
            items, i = self._items(i + 4, "}", depth)
            return [s for item in items if item for s in item], i
        if kind != "name":
            raise Unknown(text)
        if text.startswith("map"):
            raise Unknown("a map literal (file paths)")
        if text == "nil":
            return [], i + 1
        if i + 1 < len(self.tokens) and self.tokens[i + 1][1] == "(":
            args, after = self._items(i + 2, ")", depth + 1)
            return self._call(text, args), after
        if text in self.bindings and self.bindings[text] != i:
            return self._expr(self.bindings[text], depth + 1)[0], i + 1
        raise Unknown(text)

    def _call(self, name: str, args: list[list[str] | None]) -> list[str]:
        def one(n: int) -> str:
            arg = args[n] if n < len(args) else None
            if arg is None or len(arg) != 1:
                raise Unknown(f"{name} argument {n}")
            return arg[0]

        if name == "append":
            return [s for item in args[1:] if item for s in item]
        if name in _CLASSES:
            return [f"{_CLASSES[name]}{{{one(0)}}}"]
        if name == "utils.Hex8_4_4_4_12":
            return ["[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"]
        if name == "secrets.NewSecret":
            try:
                return [self.rng.xeger(one(0))]
            except (re.error, ValueError, OverflowError) as exc:  # Go-only syntax, huge repeats
                raise Unknown(name) from exc
        if name == "utils.GenerateSampleSecret":
            return [f'{one(0)}_api_token = "{one(1)}"']
        if name == "utils.GenerateSampleSecrets":
            ident, secret = one(0), one(1)
            return [form.format(i=ident, I=ident.upper(), s=secret) for form in FORMS]
        if name == "fmt.Sprintf":
            rest = iter([one(n) for n in range(1, len(args))])
            formatter: Callable[[re.Match[str]], str] = lambda m: "%" if m.group() == "%%" else next(rest, "")
            return [re.sub(r"%%|%[sdvq]", formatter, one(0))]
        raise Unknown(name)
