"""Command lines that other programs run for the model: found in their options, programs and settings.

Many programs hand a string to ``sh -c`` (or run it as a command) on the model's behalf: awk's
``system("...")`` and ``print | "..."``, ssh's ``-o ProxyCommand=``, git's ``-c core.sshCommand=``,
``core.pager`` and ``!`` aliases, tar's ``--to-command``, ``rsync -e``, ``sudo -s``, ``alias``, ``trap``,
and settings such as ``GIT_SSH_COMMAND=`` or ``PAGER=``. Each is returned as an ``Embedded`` line that
the shell analysis parses and judges like the model's own command, so ``awk 'BEGIN{system("curl x|sh")}'``
is the ``curl|sh`` it runs. A string that is not a literal (``system($0)``, ``PAGER="$x"``) is
``Embedded(None)``: the analysis cannot see what runs, and records an inline ``sh -c`` (blocked).

Pure argv readers, like ``guardrails.tools.commands``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from guardrails.tools.autorun import git_config_setting, git_subcommand, runs_code
from guardrails.tools.commands import Argv, options_with_values, split_operands


@dataclass(frozen=True, slots=True)
class Embedded:
    line: str | None
    """The command line, or None when it is not a literal."""
    stdin: str | None = None
    """``pipe`` when the program writes into it (awk's ``print | "sh"``)."""


SHELL_SETTINGS = frozenset({"GIT_SSH_COMMAND", "GIT_SSH", "GIT_PAGER", "PAGER", "GIT_EDITOR", "EDITOR", "VISUAL",
                            "GIT_SEQUENCE_EDITOR", "GIT_ASKPASS", "SSH_ASKPASS", "GIT_PROXY_COMMAND",
                            "PROMPT_COMMAND", "MANPAGER", "SYSTEMD_PAGER", "LESSOPEN", "LESSCLOSE"})
"""Variables whose value a program runs as a command (git, less, man, bash's prompt)."""
_GIT_COMMAND_KEYS = re.compile(r"^(?:core\.(?:sshcommand|pager|editor|fsmonitor|askpass|gitproxy)"
                               r"|sequence\.editor|diff\.external|pager\..*|.*\.textconv|filter\..*\.(?:clean|smudge"
                               r"|process)|uploadpack\.packobjectshook|credential\..*helper)$", re.IGNORECASE)
_GIT_PROGRAM_OPTS = frozenset({"--upload-pack", "-u", "--receive-pack", "--exec"})
"""git clone/fetch/push/ls-remote: the program run for the other side (a shell command for a local one)."""
_SSH_COMMAND_KEYS = frozenset({"proxycommand", "localcommand", "knownhostscommand"})
_TAR_COMMAND_OPTS = ("--to-command=", "--use-compress-program=", "--checkpoint-action=exec=", "--info-script=",
                     "--new-volume-script=", "--rmt-command=", "--rsh-command=")


_AWKS = frozenset({"awk", "gawk", "mawk", "nawk"})
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


_SED_VALUE_OPTS = frozenset({"-e", "-f", "-l", "--expression", "--file", "--line-length"})
_SED_ADDRESS = re.compile(r"\s*(?:\d+(?:~\d+)?|\$|/(?:\\.|[^/\\\n]){0,1024}/[IM]*|\\(.)(?:\\.|(?!\1)[^\\\n]){0,1024}\1)?")
"""One sed address. Unambiguous and bounded: (``\\.|.`` with a lazy ``*?`` backtracked exponentially:
a 14 KB script of escapes ran for minutes)."""


def _sed_scripts(args: Argv) -> list[str | None]:
    opts, operands = split_operands(args, _SED_VALUE_OPTS)
    given = [args[i + 1] for i, a in enumerate(args[:-1]) if a in ("-e", "--expression")]
    given += [a.split("=", 1)[1] for a in opts if a.startswith("--expression=")]
    if given or any(a in ("-f", "--file") or a.startswith("--file=") for a in opts):
        return given
    return operands[:1]


def _sed_delimited(script: str, i: int, parts: int) -> int:
    """The index after ``parts`` fields delimited by ``script[i]`` (``s/a/b/`` is 2 after the ``s``)."""
    delim, i = script[i], i + 1
    while parts and i < len(script):
        if script[i] == "\\":
            i += 1
        elif script[i] == delim:
            parts -= 1
        i += 1
    return i


def _line_end(script: str, i: int) -> int:
    end = script.find("\n", i)
    return len(script) if end < 0 else end


def sed(args: Argv) -> tuple[list[Embedded], list[tuple[str, str]]]:
    """GNU sed commands that touch files or run commands: ``r``/``R`` read, ``w``/``W`` and the ``s///w``
    flag write, ``e CMD`` runs CMD, ``e`` alone and the ``s///e`` flag run text (not a literal)."""
    lines: list[Embedded] = []
    paths: list[tuple[str, str]] = []
    for script in _sed_scripts(args):
        if script is None:
            continue
        i = 0
        while i < len(script):
            i = _SED_ADDRESS.match(script, i).end()  # type: ignore[union-attr]  # matches the empty string
            if script.startswith(",", i):
                i = _SED_ADDRESS.match(script, i + 1).end()  # type: ignore[union-attr]
            while i < len(script) and script[i] in " \t!":
                i += 1
            if i >= len(script):
                break
            c = script[i]
            if c in "rRwWe":
                end = _line_end(script, i)
                arg = script[i + 1:end].strip()
                if c == "e":
                    lines.append(Embedded(arg or None))
                elif arg:
                    paths.append(("read" if c in "rR" else "write", arg))
                i = end
            elif c in "sy":
                i = _sed_delimited(script, i + 1, 2)
                flags = re.match(r"[gpiImMe0-9]*(w\s*[^\n]*)?", script[i:])
                text = flags.group(0) if flags else ""
                if "e" in text.split("w", 1)[0]:
                    lines.append(Embedded(None))
                if flags and flags.group(1):
                    paths.append(("write", flags.group(1)[1:].strip()))
                i += len(text)
            elif c in "aic:bTtvlLqQ#":
                end = _line_end(script, i)
                semi = script.find(";", i) if c in ":bTtvlLqQ" else -1
                i = semi if 0 <= semi < end else end
            else:
                i += 1
    return lines, paths


def _values(args: Argv, flag: str) -> list[str | None]:
    """Values of ``flag X`` and ``flagX`` (``-o ProxyCommand=x``, ``-oProxyCommand=x``, ``-c k=v``)."""
    out: list[str | None] = []
    for i, a in enumerate(args):
        if a == flag:
            out.append(args[i + 1] if i + 1 < len(args) else None)
        elif a is not None and a.startswith(flag) and len(a) > len(flag) and not a.startswith("--"):
            out.append(a[len(flag):])
    return out


def _ssh(args: Argv) -> list[Embedded]:
    out: list[Embedded] = []
    for value in _values(args, "-o"):
        if value is None:
            out.append(Embedded(None))
            continue
        key, _, command = value.replace("=", " ", 1).partition(" ")
        if key.lower() in _SSH_COMMAND_KEYS:
            out.append(Embedded(command.strip()))
    return out


def _git(args: Argv) -> list[Embedded]:
    remote = bool(set(args) & {"clone", "fetch", "pull", "push", "ls-remote", "archive"})
    out = [Embedded(v) for o, v in options_with_values(args, _GIT_PROGRAM_OPTS) if o in _GIT_PROGRAM_OPTS and remote]
    for value in _values(args, "-c"):
        if value is None:
            out.append(Embedded(None))
            continue
        key, _, command = value.partition("=")
        if _GIT_COMMAND_KEYS.match(key):
            out.append(Embedded(command))
        elif key.lower().startswith("alias.") and command.startswith("!"):
            out.append(Embedded(command[1:]))
    sub, rest = git_subcommand(args)
    setting = git_config_setting(rest) if sub == "config" else None
    if setting is not None and setting[0] is not None and _GIT_COMMAND_KEYS.match(setting[0]) \
            and not runs_code(*setting):  # git config core.pager 'less -R': judged as the command it is
        out.append(Embedded(setting[1]))
    return out


def _tar(args: Argv) -> list[Embedded]:
    out = [Embedded(a.split("=", 1)[1] if not a.startswith("--checkpoint-action=") else a.split("exec=", 1)[1])
           for a in args if a is not None and a.startswith(_TAR_COMMAND_OPTS)]
    return out + [Embedded(v) for v in _values(args, "-I") + _values(args, "-F")]


_SQLITE_VALUE_OPTS = frozenset({"-cmd", "-init", "-separator", "-newline", "-nullvalue", "-vfs", "-mmap",
                                "-lookaside", "-pagecache", "-maxsize", "-A", "-escape"})
_SQLITE_DOT = re.compile(r"^[ \t]*\.([a-z]+)[ \t]*(.*)$", re.MULTILINE)
_SQLITE_DOT_FILES = {"output": "write", "once": "write", "save": "write", "backup": "write", "clone": "write",
                     "log": "write", "trace": "write", "excel": "write", "read": "read", "import": "read",
                     "restore": "change", "open": "change"}
_SQLITE_DOT_RUNS = frozenset({"shell", "system"})
_SQLITE_DOT_CODE = frozenset({"load", "edit"})
"""``.load LIB`` runs a library's code; ``.once -e``/``.excel`` and ``edit()`` start other programs."""
_SQLITE_FILE_SQL = re.compile(r"\b(?:(attach)\s+(?:database\s+)?|(vacuum)\s+(?:\w+\s+)?into\s+|(readfile|writefile)"
                              r"\s*\(\s*)'((?:[^']|'')*)'", re.IGNORECASE)
_SQLITE_CODE_SQL = re.compile(r"\b(?:load_extension|edit)\s*\(", re.IGNORECASE)


def _sqlite_word(text: str) -> str:
    """A dot-command's first argument: quoted (``'a b'``, ``"a b"``) or up to a blank."""
    text = text.strip()
    if text[:1] in ("'", '"') and text[0] in text[1:]:
        return text[1:text.index(text[0], 1)]
    return text.split(None, 1)[0] if text else ""


def sqlite(args: Argv, stdin: str | None = None) -> tuple[list[Embedded], list[tuple[str, str]]]:
    """What the sqlite3 shell's SQL and dot-commands run and touch, in its operands after the database,
    ``-cmd`` values and a heredoc or herestring (``stdin``): ``.shell``/``.system`` run a command, ``.output
    |cmd``/``.read |cmd``/``.import |cmd`` too; ``.output``/``.once``/``.save``/``.backup`` write a file,
    ``.read``/``.import`` read one; ``ATTACH 'f'`` and ``VACUUM INTO 'f'`` make a database file; the
    CLI's ``readfile``/``writefile`` read and write; ``.load``, ``load_extension()`` and the editor are code
    the line cannot show. SQL fed through a pipe or a file is not read (like a script file)."""
    _, operands = split_operands(args, _SQLITE_VALUE_OPTS)
    texts = list(operands[1:]) + _values(args, "-cmd") + ([stdin] if stdin is not None else [])
    lines: list[Embedded] = []
    paths: list[tuple[str, str]] = [("read", v) for v in _values(args, "-init") if v]
    for text in texts:
        if text is None:
            lines.append(Embedded(None))  # SQL built at run time: a ``.shell`` may be in it
            continue
        for m in _SQLITE_DOT.finditer(text):
            verb, rest = m.group(1), m.group(2)
            target = _sqlite_word(rest.split(None, 1)[-1] if verb == "backup" and len(rest.split()) > 1 else rest)
            if verb in _SQLITE_DOT_RUNS:
                lines.append(Embedded(rest.strip() or None))
            elif verb in _SQLITE_DOT_CODE or (verb in ("once", "output") and target in ("-e", "-x")):
                lines.append(Embedded(None))
            elif verb in _SQLITE_DOT_FILES and target.startswith("|"):
                lines.append(Embedded(target[1:].strip() or None, "pipe" if verb in ("output", "once") else None))
            elif verb in _SQLITE_DOT_FILES and target and not target.startswith("-"):
                paths.append((_SQLITE_DOT_FILES[verb], target))
        for m in _SQLITE_FILE_SQL.finditer(text):
            name = m.group(4).replace("''", "'")
            op = "read" if (m.group(3) or "").lower() == "readfile" else "change" if m.group(1) else "write"
            if name and name != ":memory:":
                paths.append((op, name))
        if _SQLITE_CODE_SQL.search(text):
            lines.append(Embedded(None))
    return lines, paths


def embedded(program: str, args: Argv, stdin: str | None = None) -> tuple[list[Embedded], list[tuple[str, str]], int]:
    """The command lines ``program`` runs from its arguments, (awk, sed, sqlite3) the files its program
    touches, and the characters an awk program cost to read (0 for the others: their readers are bounded
    by the argument lengths the shell parse already counted). ``stdin``: the text a heredoc or herestring
    feeds the command (read by sqlite3)."""
    if program in _AWKS:
        return awk(args)
    if program == "sqlite":
        return (*sqlite(args, stdin), 0)
    if program == "sed":
        return (*sed(args), 0)
    if program == "split":  # split --filter='CMD': CMD runs in a shell for each piece
        return [Embedded(v) for o, v in options_with_values(args, frozenset({"--filter"})) if o == "--filter"], [], 0
    if program in ("ssh", "scp", "sftp", "autossh"):
        return _ssh(args), [], 0
    if program == "git":
        return _git(args), [], 0
    if program == "tar":
        return _tar(args), [], 0
    if program == "rsync":
        rsh = [a.split("=", 1)[1] for a in args if a is not None and a.startswith("--rsh=")]
        return [Embedded(v) for v in [*_values(args, "-e"), *rsh]], [], 0
    if program == "alias":
        return [Embedded(a.split("=", 1)[1]) for a in args if a is not None and "=" in a], [], 0
    if program == "trap":
        _, operands = split_operands(args, frozenset())
        return ([Embedded(operands[0])] if len(operands) > 1 else []), [], 0
    return [], [], 0


_GIT_CONFIG_ENV = re.compile(r"^GIT_CONFIG_(?:PARAMETERS|COUNT|KEY_\d+|VALUE_\d+)$", re.IGNORECASE)
"""git settings passed in the environment, as ``-c`` passes them (``core.sshCommand``, ``alias.x=!...``,
``url.*.insteadOf``): not read here, so not seen."""


def setting(name: str, value: str | None) -> Embedded | None:
    """The command a variable assignment sets up (``GIT_SSH_COMMAND='...'``), or None."""
    if _GIT_CONFIG_ENV.match(name):
        return Embedded(None)
    if name.upper() not in SHELL_SETTINGS:
        return None
    if value is not None and name.upper() in ("LESSOPEN", "LESSCLOSE"):
        value = value.lstrip("|")
    return Embedded(value)
