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

from guardrails.tools.commands import Argv, Embedded, split_operands

AWKS = frozenset({"awk", "gawk", "mawk", "nawk"})
_AWK_VALUE_OPTS = frozenset({"-F", "-v", "-f", "-e", "--source", "--file", "--assign", "--field-separator"})
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


def _awk_read(program: str) -> tuple[list[Embedded], list[tuple[str, str]], int]:
    """One awk program: the commands it runs, the files it prints to or reads, and the work done (characters
    read plus tokens visited: linear in the program's length, whatever it holds)."""
    tokens, unsure = _awk_tokens(program)
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
        elif t.kind == "op" and t.text in (">", ">>") and printing and nxt is not None and nxt.kind == "str":
            paths.append(("write", nxt.text))
        elif t.kind == "word" and t.text == "getline":
            j = k + 2 if nxt is not None and nxt.kind == "word" else k + 1
            arrow, source = at(j), at(j + 1)
            if arrow is not None and arrow.text == "<" and source is not None and source.kind == "str":
                paths.append(("read", source.text))
    return lines, paths, len(program) + count


def _awk_programs(args: Argv) -> list[str | None]:
    opts, operands = split_operands(args, _AWK_VALUE_OPTS)
    given = [args[i + 1] for i, a in enumerate(args[:-1]) if a in ("-e", "--source")]
    given += [a.split("=", 1)[1] for a in opts if a.startswith("--source=")]
    if given:
        return list(given)
    if any(a in ("-f", "--file") or a.startswith("--file=") for a in opts):
        return []  # a program file: run like a script file (its path is a read)
    return operands[:1]


def awk(args: Argv) -> tuple[list[Embedded], list[tuple[str, str]], int]:
    """The commands an awk program runs (``system``, pipes, gawk's ``@load`` and indirect calls) and the
    files it prints to or reads, read from its tokens (``_awk_tokens``); and the work that took."""
    lines: list[Embedded] = []
    paths: list[tuple[str, str]] = []
    work = 0
    for program in _awk_programs(args):
        if program is None:
            lines.append(Embedded(None))  # awk "$prog": cannot see what it runs
            continue
        found, touched, cost = _awk_read(program)
        lines += found
        paths += touched
        work += cost
    return lines, paths, work
