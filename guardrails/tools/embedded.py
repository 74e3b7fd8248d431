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


_AWKS = frozenset({"awk", "gawk", "mawk", "nawk"})
MAX_AWK_PROGRAM = 4096
"""Longer awk programs are not read (the string patterns below cost up to quadratic time: 2 s at 16 KB
of quotes); one is blocked as inline shell, with the advice to put it in a file (``awk -f``)."""
_AWK_VALUE_OPTS = frozenset({"-F", "-v", "-f", "-e", "--source", "--file", "--assign", "--field-separator"})
_AWK_STRING = r'"((?:\\.|[^"\\])*)"'
_AWK_SYSTEM = re.compile(r"\bsystem\s*\(")
_AWK_SYSTEM_LITERAL = re.compile(r"\s*" + _AWK_STRING + r"\s*\)")
_AWK_PIPE_TO = re.compile(r"(?<![|&])\|&?\s*(?:" + _AWK_STRING + r"|(?!getline\b)([A-Za-z_]\w*)\s*(?:[;}\n)]|$))")
_AWK_PIPE_FROM = re.compile(r"(?:" + _AWK_STRING + r"|([A-Za-z_]\w*))\s*\|&?\s*getline\b")
_AWK_PRINT_TO = re.compile(r"\bprintf?\b[^;{}\n]*?(>>?)\s*" + _AWK_STRING)
_AWK_READ_FROM = re.compile(r"\bgetline\b\s*(?:[A-Za-z_]\w*\s*)?<\s*" + _AWK_STRING)
_AWK_ESCAPES = re.compile(r"\\(.)", re.DOTALL)

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


def _unescape_awk(text: str) -> str:
    return _AWK_ESCAPES.sub(lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), text)


def _awk_programs(args: Argv) -> list[str | None]:
    opts, operands = split_operands(args, _AWK_VALUE_OPTS)
    given = [args[i + 1] for i, a in enumerate(args[:-1]) if a in ("-e", "--source")]
    given += [a.split("=", 1)[1] for a in opts if a.startswith("--source=")]
    if given:
        return list(given)
    if any(a in ("-f", "--file") or a.startswith("--file=") for a in opts):
        return []  # a program file: run like a script file (its path is a read)
    return operands[:1]


def awk(args: Argv) -> tuple[list[Embedded], list[tuple[str, str]]]:
    """The commands an awk program runs (``system``, pipes) and the files it prints to or reads."""
    lines: list[Embedded] = []
    paths: list[tuple[str, str]] = []
    for program in _awk_programs(args):
        if program is None or len(program) > MAX_AWK_PROGRAM:
            lines.append(Embedded(None))  # awk "$prog": cannot see what it runs
            continue
        for m in _AWK_SYSTEM.finditer(program):
            arg = _AWK_SYSTEM_LITERAL.match(program, m.end())
            lines.append(Embedded(_unescape_awk(arg.group(1)) if arg else None))
        for m in _AWK_PIPE_TO.finditer(program):
            lines.append(Embedded(_unescape_awk(m.group(1)) if m.group(1) is not None else None, "pipe"))
        for m in _AWK_PIPE_FROM.finditer(program):
            lines.append(Embedded(_unescape_awk(m.group(1)) if m.group(1) is not None else None))
        paths += [("write", _unescape_awk(m.group(2))) for m in _AWK_PRINT_TO.finditer(program)]
        paths += [("read", _unescape_awk(m.group(1))) for m in _AWK_READ_FROM.finditer(program)]
    return lines, paths


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


def embedded(program: str, args: Argv) -> tuple[list[Embedded], list[tuple[str, str]]]:
    """The command lines ``program`` runs from its arguments, and (awk) the files its program touches."""
    if program in _AWKS:
        return awk(args)
    if program == "sed":
        return sed(args)
    if program == "split":  # split --filter='CMD': CMD runs in a shell for each piece
        return [Embedded(v) for o, v in options_with_values(args, frozenset({"--filter"})) if o == "--filter"], []
    if program in ("ssh", "scp", "sftp", "autossh"):
        return _ssh(args), []
    if program == "git":
        return _git(args), []
    if program == "tar":
        return _tar(args), []
    if program == "rsync":
        rsh = [a.split("=", 1)[1] for a in args if a is not None and a.startswith("--rsh=")]
        return [Embedded(v) for v in [*_values(args, "-e"), *rsh]], []
    if program == "alias":
        return [Embedded(a.split("=", 1)[1]) for a in args if a is not None and "=" in a], []
    if program == "trap":
        _, operands = split_operands(args, frozenset())
        return ([Embedded(operands[0])] if len(operands) > 1 else []), []
    return [], []


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
