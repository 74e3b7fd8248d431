"""Tokenizers for Windows command lines: PowerShell and cmd.exe, read as their shells split them.

No kept Python library reads either: ``shlex`` is POSIX (it eats ``\\`` in ``C:\\Users``), ``bashlex`` and
tree-sitter-bash are bash, the PowerShell grammars for tree-sitter are not packaged for Python, and the
real parser (``System.Management.Automation.Language.Parser``) needs .NET. So these are hand-written,
one pass each, for what the tool rules need: commands and their words, the redirections, the
separators (``|``, ``;``, ``&&``, ``||``, cmd's ``&``), and the nested code (PowerShell's ``{...}``,
``(...)``, ``$(...)``, ``@(...)``; cmd's ``(...)`` blocks), kept as text to read again.

A word is ``Word(text, value)``: ``value`` is what the program receives when the line fixes it (quotes
removed, escapes applied, known variables put in), else None (a variable or a subexpression the
analysis cannot know). Cost: every character is read once per nesting level, and nesting is bounded
by the caller (``guardrails.tools.winshell``).

PowerShell details kept: ``'...'`` (``''`` is a quote), ``"..."`` (backtick escapes, ``""``, ``$var``,
``${var}``, ``$env:X``, ``$(...)``), here-strings ``@'...'@``/``@"..."@``, the typographic quotes and
dashes PowerShell accepts as ``'``, ``"`` and ``-`` (``‘’“”``, ``–—``), backtick escapes and line
continuations, ``#`` and ``<#...#>`` comments, ``[Type]`` literals, member access (``.Name``, ``::Name``)
after a value, ``&`` (the call operator), the dot-source ``.``, ``--%`` (the rest is verbatim), and the
redirections ``>``, ``>>``, ``N>``, ``N>>``, ``*>``, ``N>&1``. cmd: ``^`` escapes, ``"`` quoting, ``%VAR%``,
``N>``/``>>``/``<``/``N>&M``, ``&``, ``&&``, ``||``, ``|``, ``(...)`` blocks and ``@`` (echo off).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

SINGLE_QUOTES = "'\u2018\u2019\u201a\u201b"
DOUBLE_QUOTES = '"\u201c\u201d\u201e'
DASHES = "-\u2013\u2014\u2015"
_PS_WORD_END = frozenset(" \t\r\n|;&(){}<>,")
_PS_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "a": "\a", "b": "\b", "e": "\x1b", "f": "\f", "v": "\v"}
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_?:")


class LexError(Exception):
    """The line cannot be split as its shell would (an unterminated quote or bracket)."""


@dataclass(frozen=True, slots=True)
class Word:
    text: str
    """As written."""
    value: str | None
    """What the program receives, or None when it is built at run time."""
    kind: str = "word"
    """``word`` (a bare or quoted argument), ``var`` (starts with a variable: ``$x``, ``$env:X\\y``), ``str``
    (a quoted string), ``num``, ``param`` (``-Name`` or ``-Name:value``), ``type`` (``[T]``), ``group`` (``(...)``,
    ``$(...)``, ``@(...)``, ``@{...}``: ``inner`` is the code), ``block`` (``{...}``), ``member`` (``.M``/``::M``,
    ``call`` True when ``(`` follows), ``op`` (``=``, ``+=``, ``,``, ``&`` the call operator, ``.`` dot-source)."""
    inner: str = ""
    """The code inside a group or block, and inside the ``$(...)`` of an expandable string (one per line)."""
    call: bool = False


@dataclass(slots=True)
class Command:
    words: list[Word] = field(default_factory=list)
    redirects: list[tuple[str, Word]] = field(default_factory=list)
    """(operator, target): ``>``, ``>>`` (any stream: ``2>``, ``*>`` are writes too), ``<`` (cmd: a read)."""


@dataclass(slots=True)
class Pipeline:
    commands: list[Command] = field(default_factory=list)


Lookup = Callable[[str], str | None]
"""A variable's known value by its name (``env:USERPROFILE``, ``HOME``), or None."""


def _close(text: str, i: int, opening: str, closing: str, ps: bool = True) -> int:
    """The index after the bracket matching ``text[i]``; quotes, here-strings and comments inside are skipped."""
    depth = 0
    n = len(text)
    while i < n:
        c = text[i]
        if ps and c == "`":
            i += 2
            continue
        if c in SINGLE_QUOTES and ps:
            i = _ps_single(text, i)[1]
            continue
        if c in DOUBLE_QUOTES:
            i = _ps_double_end(text, i) if ps else _cmd_quote_end(text, i)
            continue
        if ps and c == "@" and text[i + 1:i + 2] and text[i + 1] in SINGLE_QUOTES + DOUBLE_QUOTES \
                and text[i + 2:i + 3] in ("\n", "\r"):
            i = _here_end(text, i)
            continue
        if ps and c == "#" and (i == 0 or text[i - 1] in " \t\n;{(|"):
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        if ps and c == "<" and text.startswith("<#", i):
            end = text.find("#>", i + 2)
            if end < 0:
                raise LexError("an unterminated <# comment")
            i = end + 2
            continue
        if c == opening:
            depth += 1
        elif c == closing:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise LexError(f"an unclosed {opening}")


def _ps_single(text: str, i: int) -> tuple[str, int]:
    out: list[str] = []
    j = i + 1
    n = len(text)
    while j < n:
        c = text[j]
        if c in SINGLE_QUOTES:
            if j + 1 < n and text[j + 1] in SINGLE_QUOTES:
                out.append("'")
                j += 2
                continue
            return "".join(out), j + 1
        out.append(c)
        j += 1
    raise LexError("an unterminated ' string")


def _ps_double_end(text: str, i: int) -> int:
    j = i + 1
    n = len(text)
    while j < n:
        c = text[j]
        if c == "`":
            j += 2
            continue
        if c == "$" and text.startswith("$(", j):
            j = _close(text, j + 1, "(", ")")
            continue
        if c in DOUBLE_QUOTES:
            if j + 1 < n and text[j + 1] in DOUBLE_QUOTES:
                j += 2
                continue
            return j + 1
        j += 1
    raise LexError('an unterminated " string')


def _here_end(text: str, i: int) -> int:
    quote = text[i + 1]
    closing = "\n" + ("'" if quote in SINGLE_QUOTES else '"') + "@"
    end = text.find(closing, i + 2)
    if end < 0:
        end = text.find(closing.replace("\n", "\r\n"), i + 2)
        if end < 0:
            raise LexError("an unterminated here-string")
        return end + 4
    return end + 3


def _cmd_quote_end(text: str, i: int) -> int:
    end = text.find('"', i + 1)
    line = text.find("\n", i + 1, end if end >= 0 else len(text))  # (bounded by the quote: linear overall)
    if end < 0 or line >= 0:  # cmd: an unterminated quote runs to the end of the line
        return len(text) if line < 0 else line
    return end + 1


# -- PowerShell -------------------------------------------------------------------------------------
def _variable_name(text: str, i: int) -> tuple[str, int]:
    """The name of the variable at ``text[i] == '$'`` and the index after it (``${...}``, ``$env:X``, ``$_``)."""
    if text.startswith("${", i):
        end = text.find("}", i + 2)
        if end < 0:
            raise LexError("an unclosed ${")
        return text[i + 2:end], end + 1
    j = i + 1
    if j < len(text) and text[j] in "$?^_":
        return text[j], j + 1
    while j < len(text) and text[j] in _NAME_CHARS:
        j += 1
    name = text[i + 1:j]
    if name.endswith(":"):  # ``$x:`` in ``"$x:rest"`` is not a scope
        name, j = name[:-1], j - 1
    return name, j


def _expand(text: str, lookup: Lookup, subs: list[str]) -> str | None:
    """The value of an expandable string's body: escapes applied, variables looked up; ``$(...)`` bodies are
    added to ``subs`` (their commands run) and make the value unknown."""
    out: list[str] = []
    known = True
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "`" and i + 1 < n:
            out.append(_PS_ESCAPES.get(text[i + 1], text[i + 1]))
            i += 2
        elif c == "$" and text.startswith("$(", i):
            end = _close(text, i + 1, "(", ")")
            subs.append(text[i + 2:end - 1])
            known = False
            i = end
        elif c == "$" and i + 1 < n and (text[i + 1] in _NAME_CHARS or text[i + 1] in "{$^"):
            name, i = _variable_name(text, i)
            value = lookup(name)
            if value is None:
                known = False
            else:
                out.append(value)
        elif c in DOUBLE_QUOTES and i + 1 < n and text[i + 1] in DOUBLE_QUOTES:
            out.append('"')
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out) if known else None


def _ps_bare(text: str, i: int, lookup: Lookup, subs: list[str]) -> tuple[str, str | None, int]:
    """A bare argument (with quoted parts glued on: ``a"b c"d``) from ``i``: (text, value, end)."""
    out: list[str] = []
    known = True
    j, n = i, len(text)
    if i >= n:
        return "", None, i
    if text[i] == "$" and i + 1 < n and (text[i + 1] in _NAME_CHARS or text[i + 1] == "{"):
        name, j = _variable_name(text, i)
        if j >= n or text[j] in ".=[+" or text.startswith("::", j) or text[j] in _PS_WORD_END:
            value = lookup(name)  # ``$x.Trim()``, ``$x=1``, ``$a[0]``: the variable alone (members follow)
            return text[i:j], value, j
        j = i
    while j < n:
        c = text[j]
        if c in _PS_WORD_END:
            break
        if c == "`":
            if j + 1 < n and text[j + 1] == "\n":
                break  # a line continuation ends the word
            if j + 1 < n:
                out.append(text[j + 1])
            j += 2
            continue
        if c in SINGLE_QUOTES:
            body, j = _ps_single(text, j)
            out.append(body)
            continue
        if c in DOUBLE_QUOTES:
            end = _ps_double_end(text, j)
            value = _expand(text[j + 1:end - 1], lookup, subs)
            known = known and value is not None
            out.append(value or "")
            j = end
            continue
        if c == "$" and j + 1 < n and text[j + 1] == "(":
            end = _close(text, j + 1, "(", ")")
            subs.append(text[j + 2:end - 1])
            known = False
            j = end
            continue
        if c == "$" and j + 1 < n and (text[j + 1] in _NAME_CHARS or text[j + 1] == "{"):
            name, j = _variable_name(text, j)
            value = lookup(name)
            known = known and value is not None
            out.append(value or "")
            continue
        out.append(c)
        j += 1
    return text[i:j], "".join(out) if known else None, j


def _member(text: str, i: int) -> tuple[Word, int] | None:
    """``.Name``/``::Name`` right after a value (no space): a member, a call when ``(`` follows."""
    sep = 2 if text.startswith("::", i) else 1 if text.startswith(".", i) else 0
    if not sep:
        return None
    j = i + sep
    k = j
    while k < len(text) and (text[k].isalnum() or text[k] == "_"):
        k += 1
    if k == j:
        return None
    return Word(text[i:k], text[j:k], "member", call=text.startswith("(", k)), k


def ps_pipelines(text: str, lookup: Lookup) -> Iterator[tuple[str, Pipeline]]:
    """The statements of a PowerShell script, one at a time: (separator before it, pipeline) with ``;``, a line
    break, ``&&``, ``||`` and ``&`` (a background job) as separators. A generator: a statement's variables are
    looked up after the statements before it were read (``$f = 'x'; gc $f``)."""
    sep = ";"
    cur = Pipeline()
    cmd = Command()
    i, n = 0, len(text)

    def push_word(w: Word) -> None:
        cmd.words.append(w)

    while i < n:
        c = text[i]
        if c in " \t\r":
            i += 1
            continue
        if c == "`" and text.startswith("`\n", i) or text.startswith("`\r\n", i):
            i += 2 if text[i + 1] == "\n" else 3
            continue
        if c == "#":
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        if text.startswith("<#", i):
            end = text.find("#>", i + 2)
            if end < 0:
                raise LexError("an unterminated <# comment")
            i = end + 2
            continue
        if c in "\n;&" or text.startswith("||", i):
            if c == "&" and not cmd.words and not text.startswith("&&", i):
                push_word(Word("&", "&", "op"))  # the call operator
                i += 1
                continue
            if cmd.words or cmd.redirects:
                cur.commands.append(cmd)
            if cur.commands:
                yield sep, cur
            cur, cmd = Pipeline(), Command()
            sep = text[i:i + 2] if text.startswith(("&&", "||"), i) else c
            i += 2 if sep in ("&&", "||") else 1
            continue
        if c == "|":
            if not cmd.words:
                raise LexError("an empty pipeline element")
            cur.commands.append(cmd)
            cmd = Command()
            i += 1
            continue
        if c in ">*" or c.isdigit() and text[i + 1:i + 2] == ">":
            red = _ps_redirect(text, i)
            if red is not None:
                op, i = red
                if op.endswith(("&1", "&2")):
                    continue
                while i < n and text[i] in " \t":
                    i += 1
                raw, value, i = _ps_bare(text, i, lookup, [])
                if not raw:
                    raise LexError("a redirection without a target")
                cmd.redirects.append((">>" if ">>" in op else ">", Word(raw, value)))
                continue
        if c == "<":
            raise LexError("'<' is reserved in PowerShell")
        if c == "{":
            end = _close(text, i, "{", "}")
            push_word(Word(text[i:end], None, "block", inner=text[i + 1:end - 1]))
            i = end
        elif c in "(" or (c in "$@" and text[i + 1:i + 2] in ("(", "{")):
            start = i + (c != "(")
            opening = text[start]
            end = _close(text, start, opening, "}" if opening == "{" else ")")
            push_word(Word(text[i:end], None, "group", inner=text[start + 1:end - 1]))
            i = end
        elif c == "[" and (not cmd.words or cmd.words[-1].kind in ("op",)) or c == "[" and _type_follows(text, i):
            end = _close(text, i, "[", "]")
            push_word(Word(text[i:end], text[i + 1:end - 1].strip(), "type"))
            i = end
        elif c == "@" and text[i + 1:i + 2] in (SINGLE_QUOTES + DOUBLE_QUOTES) and text[i + 1:i + 2] != "" \
                and text[i + 2:i + 3] in ("\n", "\r"):
            end = _here_end(text, i)
            body = text[i + 3:end - 3].lstrip("\n")
            subs: list[str] = []
            value = body if text[i + 1] in SINGLE_QUOTES else _expand(body, lookup, subs)
            push_word(Word(text[i:end], value, "str", inner="\n".join(subs)))
            i = end
        elif c in SINGLE_QUOTES:
            body, end = _ps_single(text, i)
            push_word(Word(text[i:end], body, "str"))
            i = end
        elif c in DOUBLE_QUOTES:
            end = _ps_double_end(text, i)
            subs = []
            value = _expand(text[i + 1:end - 1], lookup, subs)
            push_word(Word(text[i:end], value, "str", inner="\n".join(subs)))
            i = end
        elif c == "," or c == "=" and cmd.words and cmd.words[-1].kind in ("var", "group", "type", "member"):
            push_word(Word(c, c, "op"))
            i += 1
        elif c in "+-*/%" and text[i + 1:i + 2] == "=" and cmd.words and cmd.words[-1].kind == "var":
            push_word(Word(text[i:i + 2], text[i:i + 2], "op"))
            i += 2
        elif c == "." and text[i + 1:i + 2] in (" ", "\t") and not cmd.words:
            push_word(Word(".", ".", "op"))  # dot-source
            i += 1
        elif c in "})]":
            raise LexError(f"an unmatched {c}")
        else:
            subs = []
            raw, value, i = _ps_bare(text, i, lookup, subs)
            if not raw:
                raise LexError(f"an unexpected {c!r}")
            kind = "var" if raw.startswith("$") else "param" if raw[0] in DASHES and len(raw) > 1 \
                and not raw[1].isdigit() else "num" if raw[0].isdigit() else "word"
            if kind == "param":
                raw = "-" + raw[1:]
                value = value if value is None else "-" + value[1:]
            if raw == "--%":  # stop-parsing: the rest of the line goes to the program as it is
                end = text.find("\n", i)
                rest = text[i:end if end >= 0 else n].strip()
                push_word(Word(rest, rest if "%" not in rest else None))
                i = end if end >= 0 else n
                continue
            push_word(Word(raw, value, kind, inner="\n".join(subs)))
        # member access after a value (no space): ``$x.Trim()``, ``[IO.File]::ReadAllText(...)``, ``(..).M()``
        while i < n and cmd.words and cmd.words[-1].kind in ("var", "group", "type", "str", "member") \
                and (found := _member(text, i)) is not None:
            member, i = found
            push_word(member)
            if member.call:
                end = _close(text, i, "(", ")")
                push_word(Word(text[i:end], None, "group", inner=text[i + 1:end - 1]))
                i = end
    if cmd.words or cmd.redirects:
        cur.commands.append(cmd)
    if cur.commands:
        yield sep, cur


def _type_follows(text: str, i: int) -> bool:
    """``[T]::`` or ``[T]$x`` in argument position: a type literal, not a bare ``[`` of a wildcard word."""
    end = text.find("]", i, i + 200)
    return end > 0 and text.startswith("::", end + 1)


def _ps_redirect(text: str, i: int) -> tuple[str, int] | None:
    j = i
    if text[j] in "*123456" and text[j + 1:j + 2] == ">":
        j += 1
    elif text[j] != ">":
        return None
    j += 1
    if text.startswith(">", j):
        j += 1
    if text.startswith("&", j) and text[j + 1:j + 2] in ("1", "2"):
        j += 2
    return text[i:j], j


# -- cmd.exe -----------------------------------------------------------------------------------------
def cmd_pipelines(text: str, lookup: Lookup) -> Iterator[tuple[str, Pipeline]]:
    """The commands of a cmd.exe line, split at ``&``, ``&&``, ``||``, line breaks and ``|``; ``(...)`` blocks
    are read as their commands (the block's words are the commands inside)."""
    sep = "&"
    cur = Pipeline()
    cmd = Command()
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in " \t\r,;=" and not cmd.words:
            i += 1
            continue
        if c in " \t\r":
            i += 1
            continue
        if c in "\n&" or text.startswith("||", i):
            if cmd.words or cmd.redirects:
                cur.commands.append(cmd)
            if cur.commands:
                yield sep, cur
            cur, cmd = Pipeline(), Command()
            sep = text[i:i + 2] if text.startswith(("&&", "||"), i) else c
            i += len(sep)
            continue
        if c == "|":
            cur.commands.append(cmd)
            cmd = Command()
            i += 1
            continue
        if c == "(":  # a block (``(del a & echo b)``, ``if exist a (del a) else (...)``): its commands are read
            end = _close(text, i, "(", ")", ps=False)
            cmd.words.append(Word(text[i:end], None, "block", inner=text[i + 1:end - 1]))
            i = end
            continue
        if c == ")":
            raise LexError("an unmatched )")
        if c in "<>" or c.isdigit() and text[i + 1:i + 2] in ("<", ">"):
            j = i + (c.isdigit())
            op = ">>" if text.startswith(">>", j) else text[j]
            j += len(op)
            if text.startswith("&", j):  # 2>&1
                i = j + 2
                continue
            while j < n and text[j] in " \t":
                j += 1
            raw, value, i = _cmd_word(text, j, lookup)
            if not raw:
                raise LexError("a redirection without a target")
            cmd.redirects.append((op, Word(raw, value)))
            continue
        if c == "@" and not cmd.words:
            i += 1  # ``@echo off``: echo suppressed, the command is the same
            continue
        raw, value, i = _cmd_word(text, i, lookup)
        cmd.words.append(Word(raw, value, "str" if raw.startswith('"') else "word"))
    if cmd.words or cmd.redirects:
        cur.commands.append(cmd)
    if cur.commands:
        yield sep, cur


_CMD_WORD_END = frozenset(" \t\r\n&|<>")


def _cmd_word(text: str, i: int, lookup: Lookup) -> tuple[str, str | None, int]:
    out: list[str] = []
    known = True
    j, n = i, len(text)
    while j < n:
        c = text[j]
        if c in _CMD_WORD_END or c in "()":
            break
        if c == "^" and j + 1 < n:
            out.append(text[j + 1])
            j += 2
            continue
        if c == '"':
            end = _cmd_quote_end(text, j)
            body = text[j + 1:end - 1] if text[end - 1:end] == '"' else text[j + 1:end]
            value = _cmd_expand(body, lookup)
            known = known and value is not None
            out.append(value or "")
            j = end
            continue
        if c in "%!":
            end = text.find(c, j + 1)
            if end > j + 1 and " " not in text[j + 1:end]:
                value = lookup(text[j + 1:end].split(":", 1)[0]) if c == "%" else None
                known = known and value is not None
                out.append(value or "")
                j = end + 1
                continue
        out.append(c)
        j += 1
    return text[i:j], "".join(out) if known else None, j


def _cmd_expand(body: str, lookup: Lookup) -> str | None:
    out: list[str] = []
    j, n = 0, len(body)
    while j < n:
        c = body[j]
        if c in "%!":
            end = body.find(c, j + 1)
            if end > j + 1 and " " not in body[j + 1:end]:
                value = lookup(body[j + 1:end].split(":", 1)[0]) if c == "%" else None
                if value is None:
                    return None
                out.append(value)
                j = end + 1
                continue
        out.append(c)
        j += 1
    return "".join(out)
