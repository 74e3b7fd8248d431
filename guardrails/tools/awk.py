"""awk programs read as awk reads them: what they run and the files they touch, in one pass.

A one-pass tokenizer (``_awk_tokens``) turns a program into strings, words, numbers, regular expressions,
statement ends and operators; a second pass over the tokens finds ``system("...")``, ``print | "..."``,
``"..." | getline``, gawk's ``@load``/``@include``/indirect calls, ``print > "file"`` and ``getline <
"file"``. Every character is read once and every token visited once, so the cost is linear in the
program's length whatever it holds (the regular expressions this replaced were quadratic in a run of
word characters: #29). The cost is reported as ``work`` for the shell analysis' per-byte bound.

A ``/`` is a division after a value and a regular expression elsewhere, as awk's grammar has it: after
a ``)`` it depends on whether the parenthesis held an ``if``/``while``/``for`` condition (then a
statement follows), which the tokenizer tracks. Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from guardrails.tools.commands import Argv, Embedded, options_with_values, split_operands

AWKS = frozenset({"awk", "gawk", "mawk", "nawk"})
_AWK_VALUE_OPTS = frozenset({"-F", "-v", "-f", "-e", "-E", "-i", "-l", "--source", "--file", "--exec", "--include",
                             "--load", "--assign", "--field-separator"})
_AWK_FILE_OPTS = frozenset({"-f", "--file", "-E", "--exec"})
"""gawk's ``-E``/``--exec`` is ``-f`` for a script run as a program (``#!/usr/bin/gawk -E``): a program file."""
_AWK_STDIN_FILES = re.compile(r"^(?:-|/dev/stdin|/dev/fd/\d+|/proc/self/fd/\d+)$")
"""A program file that is a pipe or stdin (``awk -f /dev/stdin <<< '...'``): its text is not in the line."""
_AWK_ESCAPES = re.compile(r"\\(.)", re.DOTALL)
_AWK_KEYWORDS = frozenset({"BEGIN", "END", "BEGINFILE", "ENDFILE", "if", "else", "while", "for", "do", "break",
                           "continue", "next", "nextfile", "exit", "return", "delete", "in", "print", "printf",
                           "function", "func", "switch", "case", "default", "getline"})
"""Words after which an expression starts (a ``/`` there opens a regular expression)."""
_AWK_CONDITIONS = frozenset({"if", "while", "for", "switch"})
"""Their ``(...)`` is followed by a statement: a ``/`` after its ``)`` opens a regular expression."""
_AWK_ENDS = frozenset({";", "\n", "{", "}"})
_AWK_WORD_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
_AWK_HIDING = frozenset('";{}|@')
"""Characters a text read as a regular expression could hide code behind, when it may be a division."""


def _unescape_awk(text: str) -> str:
    return _AWK_ESCAPES.sub(lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), text)


@dataclass(frozen=True, slots=True)
class _AwkToken:
    kind: str
    """``str`` (a string literal, ``text`` decoded), ``word``, ``num``, ``re`` (a regular expression),
    ``end`` (``;``, a line break, ``{``, ``}``) or ``op`` (any other operator, ``|``, ``|&``, ``||``, ``>``,
    ``>>``, ``<``, ``(``, ``)``, ...)."""
    text: str


_AWK_STRING_BODY = re.compile(r'(?:[^"\\\n]|\\.)*(?:\\$)?', re.DOTALL)
"""A string literal's body: one way to match each character (no backtracking), so linear in its length."""
_AWK_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_AWK_NUMBER = re.compile(r"[0-9.][0-9A-Za-z.]*")
_AWK_BLANKS = re.compile(r"[ \t\r]+")


def _awk_string(program: str, i: int) -> int:
    """The index after the string literal opening at ``program[i]`` (a line break ends an unterminated one)."""
    end = _AWK_STRING_BODY.match(program, i + 1).end()  # type: ignore[union-attr]  # matches the empty string
    return end + 1 if program.startswith('"', end) else end


def _awk_regex(program: str, i: int) -> int | None:
    """The index after the regular expression opening at ``program[i]`` (``/``), brackets read as gawk
    reads them (``/[/]/``); None when the line ends first (then it is no regular expression)."""
    n = len(program)
    i += 1
    bracket = False
    while i < n and program[i] != "\n":
        c = program[i]
        if c == "\\":
            i += 2
            continue
        if bracket:
            bracket = c != "]"
        elif c == "[":
            bracket = True
            if program.startswith("^", i + 1):
                i += 1
            if program.startswith("]", i + 1):
                i += 1  # ``[]a]``, ``[^]a]``: a leading ``]`` is a member
        elif c == "/":
            return i + 1
        i += 1
    return None


def _awk_tokens(program: str) -> tuple[list[_AwkToken], bool]:
    """The program as tokens, in one pass (each character is read once: linear in its length), and
    whether a ``/`` could not be told a division from a regular expression hiding code (after
    ``getline``): then the program cannot be read. Comments and line continuations are dropped."""
    tokens: list[_AwkToken] = []
    parens: list[bool] = []  # for each open ``(``: does it hold an if/while/for condition?
    after_condition = False
    unsure = False
    n = len(program)
    i = 0
    while i < n:
        c = program[i]
        prev = tokens[-1] if tokens else None
        if c in " \t\r":
            i = _AWK_BLANKS.match(program, i).end()  # type: ignore[union-attr]
            continue
        if c == "\\" and program.startswith("\n", i + 1):
            i += 2
            continue
        if c == "#":
            end = program.find("\n", i)
            i = n if end < 0 else end
            continue
        condition_closed, after_condition = after_condition, False
        if c == '"':
            end = _awk_string(program, i)
            tokens.append(_AwkToken("str", _unescape_awk(program[i + 1:end - 1 if program[end - 1:end] == '"'
                                                                  and end - 1 > i else end])))
            i = end
            continue
        if c == "/":
            operand = prev is not None and (prev.kind in ("str", "num", "re") or (
                prev.kind == "word" and prev.text not in _AWK_KEYWORDS) or prev.text in (")", "]", "++", "--"))
            close = None if operand and not condition_closed else _awk_regex(program, i)
            if close is not None:
                if prev is not None and prev.text == "getline" and _AWK_HIDING & set(program[i:close]):
                    unsure = True  # ``getline /x/``: gawk reads a division; which one is not worth knowing
                tokens.append(_AwkToken("re", program[i:close]))
                i = close
                continue
        if c in _AWK_WORD_START:
            j = _AWK_NAME.match(program, i).end()  # type: ignore[union-attr]
            tokens.append(_AwkToken("word", program[i:j]))
            i = j
            continue
        if c.isdigit() or (c == "." and program[i + 1:i + 2].isdigit()):
            j = _AWK_NUMBER.match(program, i).end()  # type: ignore[union-attr]
            tokens.append(_AwkToken("num", program[i:j]))
            i = j
            continue
        if c in _AWK_ENDS:
            tokens.append(_AwkToken("end", c))
            i += 1
            continue
        two = program[i:i + 2]
        op = two if two in ("||", "|&", "&&", ">>", "++", "--", "==", "!=", "<=", ">=") else c
        if op == "(":
            parens.append(prev is not None and prev.kind == "word" and prev.text in _AWK_CONDITIONS)
        elif op == ")":
            after_condition = parens.pop() if parens else False
        tokens.append(_AwkToken("op", op))
        i += len(op)
    return tokens, unsure


def _awk_operand(token: _AwkToken | None) -> bool:
    """Whether a token ends a value (so that a string after it is concatenated to it)."""
    return token is not None and (token.kind in ("str", "num", "re") or token.text in (")", "]", "$")
                                  or (token.kind == "word" and token.text not in _AWK_KEYWORDS))


def _awk_strings(tokens: list[_AwkToken], assigned: dict[str, list[str]]) -> dict[str, list[str]]:
    """Each variable set to a string literal in the program (``f = "/etc/x"``), with ``-v`` values: the
    texts a ``print > f`` may name. A variable also set otherwise stays with the literals it is given (the
    others are input: not followed, like ``cat $(cat list)``)."""
    out = {k: list(v) for k, v in assigned.items()}
    for k in range(len(tokens) - 2):
        name, eq, value = tokens[k], tokens[k + 1], tokens[k + 2]
        if name.kind == "word" and eq.text == "=" and value.kind == "str" and len(out.get(name.text, ())) < 8:
            out.setdefault(name.text, []).append(value.text)  # (8 values each: the paths stay linear)
    return out


def _awk_target(tokens: list[_AwkToken], k: int, strings: dict[str, list[str]]) -> list[str]:
    """The files ``print > X`` at token ``k`` names: a literal, a variable's literal values, or the literal
    start of a concatenation (``"/etc/" x``: ``/etc/*``)."""
    t = tokens[k] if k < len(tokens) else None
    if t is None:
        return []
    nxt = tokens[k + 1] if k + 1 < len(tokens) else None
    more = nxt is not None and nxt.kind in ("str", "word", "num") or nxt is not None and nxt.text == "$"
    if t.kind == "str":
        return [t.text + "*" if more else t.text]
    if t.kind == "word" and t.text in strings:
        return [v + "*" if more else v for v in strings[t.text]]
    if t.text == "(":  # ``print > ("/etc/" x)``
        return _awk_target(tokens, k + 1, strings)
    return []


def _awk_read(program: str, assigned: dict[str, list[str]] | None = None) \
        -> tuple[list[Embedded], list[tuple[str, str]], int]:
    """One awk program: the commands it runs, the files it prints to or reads, and the work done (characters
    read plus tokens visited: linear in the program's length, whatever it holds)."""
    tokens, unsure = _awk_tokens(program)
    strings = _awk_strings(tokens, assigned or {})
    lines: list[Embedded] = [Embedded(None)] if unsure else []
    paths: list[tuple[str, str]] = []
    printing = False
    count = len(tokens)

    def at(k: int) -> _AwkToken | None:
        return tokens[k] if 0 <= k < count else None

    for k, t in enumerate(tokens):
        nxt = at(k + 1)
        if t.kind == "end":
            printing = False
        elif t.kind == "word" and t.text in ("print", "printf"):
            printing = True
        elif t.kind == "word" and t.text == "system" and nxt is not None and nxt.text == "(":
            arg, close = at(k + 2), at(k + 3)
            literal = arg is not None and arg.kind == "str" and close is not None and close.text == ")"
            lines.append(Embedded(arg.text if literal and arg is not None else None))
        elif t.kind == "op" and t.text == "@" and nxt is not None and nxt.kind == "word":
            target = at(k + 2)
            if nxt.text == "include" and target is not None and target.kind == "str":
                paths.append(("read", target.text))
            elif nxt.text != "namespace":
                lines.append(Embedded(None))  # @load (a library's code), @f() (a function named at run time)
        elif t.kind == "op" and t.text in ("|", "|&"):
            before = at(k - 1)
            if nxt is not None and nxt.kind == "word" and nxt.text == "getline":
                literal = before is not None and before.kind == "str" and not _awk_operand(at(k - 2))
                lines.append(Embedded(before.text if literal and before is not None else None))
            else:
                after = at(k + 2)
                literal = nxt is not None and nxt.kind == "str" and (after is None or after.kind == "end"
                                                                     or after.text in (")", ","))
                lines.append(Embedded(nxt.text if literal and nxt is not None else None, "pipe"))
        elif t.kind == "op" and t.text in (">", ">>") and printing:
            paths += [("write", p) for p in _awk_target(tokens, k + 1, strings)]
        elif t.kind == "word" and t.text == "getline":
            j = k + 2 if nxt is not None and nxt.kind == "word" else k + 1
            arrow = at(j)
            if arrow is not None and arrow.text == "<":
                paths += [("read", p) for p in _awk_target(tokens, j + 1, strings)]
    return lines, paths, len(program) + count


def _awk_programs(args: Argv) -> list[str | None]:
    opts, operands = split_operands(args, _AWK_VALUE_OPTS)
    given = [args[i + 1] for i, a in enumerate(args[:-1]) if a in ("-e", "--source")]
    given += [a.split("=", 1)[1] for a in opts if a.startswith("--source=")]
    files = [v for o, v in options_with_values(args, _AWK_VALUE_OPTS) if o in _AWK_FILE_OPTS]
    if any(v is None or _AWK_STDIN_FILES.match(v) for v in files) or any(
            o in ("-l", "--load") for o, _ in options_with_values(args, _AWK_VALUE_OPTS)):
        given.append(None)  # a program read from stdin, or gawk's ``-l`` extension (a library's code): unseen
    if given or files:
        return list(given)  # a program file: run like a script file (its path is a read)
    return operands[:1]


def awk_files(args: Argv) -> list[tuple[str, str]]:
    """[(option, file)] for the program files (``-f``, gawk's ``-E``) and libraries (``-i``) awk reads as code."""
    return [(o, v) for o, v in options_with_values(args, _AWK_VALUE_OPTS)
            if o in (*_AWK_FILE_OPTS, "-i", "--include") and v is not None]


def _awk_assigned(args: Argv) -> dict[str, list[str]]:
    """``-v name=value`` and ``name=value`` operands: the variable's text as the program starts."""
    out: dict[str, list[str]] = {}
    values = [v for o, v in options_with_values(args, _AWK_VALUE_OPTS) if o in ("-v", "--assign") and v]
    _, operands = split_operands(args, _AWK_VALUE_OPTS)
    for text in [*values, *(a for a in operands[1:] if a is not None)]:
        name, eq, value = text.partition("=")
        if eq and _AWK_NAME.fullmatch(name):
            out.setdefault(name, []).append(value)
    return out


def awk(args: Argv) -> tuple[list[Embedded], list[tuple[str, str]], int]:
    """The commands an awk program runs (``system``, pipes, gawk's ``@load`` and indirect calls) and the
    files it prints to or reads, read from its tokens (``_awk_tokens``); and the work that took."""
    lines: list[Embedded] = []
    paths: list[tuple[str, str]] = []
    work = 0
    assigned = _awk_assigned(args)
    for program in _awk_programs(args):
        if program is None:
            lines.append(Embedded(None))  # awk "$prog": cannot see what it runs
            continue
        found, touched, cost = _awk_read(program, assigned)
        lines += found
        paths += touched
        work += cost
    return lines, paths, work
