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

from guardrails.tools.autorun import git_config_setting, git_subcommand, runs_code
from guardrails.tools.awk import AWKS, awk
from guardrails.tools.commands import Argv, Embedded, options_with_values, split_operands

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


_MAKE_EVAL = frozenset({"-E", "--eval", "-f", "--file", "--makefile", "-C", "--directory", "-I", "--include-dir",
                        "-j", "--jobs", "-l", "--load-average", "-o", "--old-file", "-W", "--what-if", "--new-file"})
_SED_VALUE_OPTS = frozenset({"-e", "-f", "-l", "--expression", "--file", "--line-length"})
_SED_ADDRESS = re.compile(r"\s*(?:\d+(?:~\d+)?|\$|/(?:\\.|[^/\\\n]){0,1024}/[IM]*|\\(.)(?:\\.|(?!\1)[^\\\n]){0,1024}\1)?")
"""One sed address. Unambiguous and bounded: (``\\.|.`` with a lazy ``*?`` backtracked exponentially:
a 14 KB script of escapes ran for minutes)."""


_SED_FLAGS = re.compile(r"[gpiImMe0-9]*(w\s*[^\n]*)?")


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
                flags = _SED_FLAGS.match(script, i)  # at i: no copy of the rest of the script per command
                text = flags.group(0) if flags else ""
                if "e" in text.split("w", 1)[0]:
                    lines.append(Embedded(None))
                if flags and flags.group(1):
                    paths.append(("write", flags.group(1)[1:].strip()))
                i += len(text)
            elif c in "aic:bTtvlLqQ#":
                end = _line_end(script, i)
                semi = script.find(";", i, end) if c in ":bTtvlLqQ" else -1  # within the line: linear overall
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
    if program in AWKS:
        return awk(args)
    if program == "sqlite":
        return (*sqlite(args, stdin), 0)
    if program == "sed":
        return (*sed(args), 0)
    if program in ("make", "gmake") and any(o in ("-E", "--eval") for o, _ in options_with_values(args, _MAKE_EVAL)):
        return [Embedded(None)], [], 0  # make --eval='$(shell id)': makefile text, whose $(shell) and recipes run
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
