"""What the shell analysis knows about individual programs (pure tables and small argv readers).

Three kinds of knowledge, each applied to one simple command's literal argv:

- **wrappers**: programs that run another command given in their arguments (``env``, ``sudo``,
  ``exec -a NAME``, ``busybox APPLET``, ``xargs``, ``timeout 5``...). They are looked through; those
  that take the command as one string (``env -S``, ``su -c``, ``watch``) hand it back for a re-parse.
- **file commands**: the path operands of the common file programs and whether each is read,
  written (content), or changed (removed, moved away, its mode or times set) (``cat``, ``cp``, ``mv``, ``rm``, ``tee``, ``sed -i``, ``curl -o``...).

An operand that is not a literal (it holds a variable or a substitution) is ``None`` and is skipped
by the path readers; ``$HOME``/``~`` are literals (``~``).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise

Argv = Sequence[str | None]

SHELLS = frozenset({"sh", "bash", "rbash", "zsh", "dash", "ksh", "mksh", "fish", "ash", "csh", "tcsh", "yash"})
SCRIPT_INTERPRETERS = frozenset({*SHELLS, "python", "ipython", "perl", "ruby", "node", "nodejs", "php", "lua",
                                 "deno", "bun", "tclsh", "wish", "expect", "R", "Rscript", "julia", "pwsh",
                                 "powershell", "osascript", "irb", "source", "."})
SUBCOMMAND_INTERPRETERS = frozenset({"deno", "bun", "R"})
"""Their first operand may be a subcommand (``deno test``, ``bun install``, ``R CMD check``) rather than
a script: a bare word there is one. ``eval`` runs its operand as code (recorded as the option ``eval``);
``run`` takes the script next (or, for bun, a package.json script name)."""


def subcommand(program: str, operand: str | None) -> str | None:
    """The subcommand ``operand`` names for ``program``, or None when it is a script path."""
    if program not in SUBCOMMAND_INTERPRETERS or operand is None or "/" in operand or "." in operand:
        return None
    return operand
DOWNLOADERS = frozenset({"curl", "wget", "aria2c", "http", "https", "xh", "fetch", "curlie", "httpie", "lynx", "w3m",
                         "links", "elinks"})

_VERSION = re.compile(r"(?<=[a-z])[\d.]+$")


_DIGITS_ARE_THE_NAME = frozenset({"base64", "base32", "bzip2", "lz4", "md5", "ping6", "traceroute6", "proxychains4",
                                  "ip6tables", "sha1", "sha256", "sha512"})
_SAME_PROGRAM = {"pypy": "python"}
_WINDOWS_SUFFIX = re.compile(r"\.(?:exe|com|cmd|bat)$", re.IGNORECASE)
"""Windows runs ``bash.exe``, ``python.exe``, ``curl.exe`` and ``pip.cmd`` by these names too (Git Bash,
WSL interop): ``bash.exe -c id`` is ``bash -c``, and ``powershell.exe -Command`` is ``powershell -Command``."""


@lru_cache(maxsize=4096)
def program_name(word: str) -> str:
    """The basename of a command word with a version suffix stripped: ``/usr/bin/python3.11`` -> python
    (``base64`` stays ``base64``: there the digits are the name)."""
    base = posixpath.basename(word.rstrip("/")) or word
    base = _WINDOWS_SUFFIX.sub("", base.rsplit("\\", 1)[-1]) or base  # bash.exe, C:\x\python3.EXE, pip.cmd
    if base in _DIGITS_ARE_THE_NAME:
        return base
    stripped = _VERSION.sub("", base) or base
    return _SAME_PROGRAM.get(stripped, stripped)


def options_before_operands(args: Argv, value_opts: frozenset[str] = frozenset()) -> tuple[list[str], int]:
    """(option flags, index of the first operand). Short clusters split (``-lc`` -> -l, -c); long
    options without their value; options listed in ``value_opts`` consume the next word."""
    opts: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg is None or arg in ("-", "+") or not arg.startswith(("-", "+")):
            break
        if arg == "--":
            return opts, i + 1
        if arg.startswith("--"):
            opts.append(arg.split("=", 1)[0])
            i += 2 if arg in value_opts else 1
            continue
        # A short cluster: a letter that takes a value ends it (``-euxo pipefail``: -o takes the next
        # word; ``-Wignore``: -W takes "ignore"); any other letters are flags.
        for k, c in enumerate(arg[1:]):
            opts.append(arg[0] + c)
            if arg[0] + c in value_opts:
                i += 1 if k + 2 == len(arg) else 0
                break
            if not c.isalpha():
                break
        i += 1
    return opts, i


# -- wrappers ---------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Unwrapped:
    argv: list[str | None]
    """The wrapped command's argv (may be empty)."""
    script: str | None = None
    """A command line given as one string (``env -S``, ``su -c``, ``watch``): parse it as shell."""
    via_shell: bool = False
    """The wrapper hands ``script`` to ``sh -c`` (``su -c``, ``watch``, ``flock -c``), an inline script."""
    hidden: bool = False
    """A command line was given as one string that is not a literal (``su -c "$x"``): it cannot be seen."""


_WRAPPER_VALUE_OPTS: dict[str, frozenset[str]] = {
    "env": frozenset({"-u", "--unset", "-C", "--chdir"}),
    "sudo": frozenset({"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "--chdir"}),
    "doas": frozenset({"-u", "-C"}),
    "exec": frozenset({"-a"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "ionice": frozenset({"-c", "-n", "-t", "-p", "-P", "-u"}),
    "timeout": frozenset({"-k", "-s", "--kill-after", "--signal"}),
    "stdbuf": frozenset({"-i", "-o", "-e"}),
    "xargs": frozenset({"-I", "-L", "-n", "-P", "-s", "-d", "-E", "-a", "-i", "--delimiter",
                        "--arg-file", "--max-args", "--max-procs", "--replace"}),
    "chroot": frozenset({"--userspec", "--groups"}),
    "watch": frozenset({"-n", "-d", "--interval"}),
    "flock": frozenset({"-w", "-E", "--timeout", "--conflict-exit-code"}),
    "taskset": frozenset(),
    "setpriv": frozenset(),
    "time": frozenset({"-f", "-o"}),
    # Tracers, sandboxes and schedulers that run a command: without their value options, ``strace -o log
    # bash -c id`` read ``log`` as the program and never saw ``bash -c``.
    "strace": frozenset({"-o", "-e", "-p", "-s", "-u", "-E", "-P", "-a", "-b", "-I", "-X", "-O", "-S", "-U"}),
    "ltrace": frozenset({"-o", "-e", "-p", "-s", "-u", "-a", "-A", "-D", "-E", "-F", "-l", "-n", "-x", "-w"}),
    "proxychains": frozenset({"-f"}),
    "proxychains4": frozenset({"-f"}),
    "chrt": frozenset({"-T", "-P", "-D"}),
    "unshare": frozenset({"-S", "-G", "-R", "-w", "--setuid", "--setgid", "--root", "--wd", "--propagation",
                          "--map-user", "--map-group", "--kill-child"}),
    "nsenter": frozenset({"-t", "-S", "-G", "-r", "-w", "--target", "--setuid", "--setgid", "--root", "--wd",
                          "--env"}),
    "systemd-run": frozenset({"-u", "-p", "-E", "-M", "-H", "-d", "--unit", "--property", "--setenv",
                              "--machine", "--host", "--description", "--slice", "--uid", "--gid", "--nice",
                              "--working-directory", "--service-type", "--on-calendar", "--on-active"}),
    "pkexec": frozenset({"--user", "-u"}),
}
_PLAIN_WRAPPERS = frozenset({"command", "builtin", "nohup", "setsid", "unbuffer", "chronic", "caffeinate",
                             "catchsegv", "torsocks", "firejail", "fakeroot", "then", "do", "else", "!",
                             "coproc"})
WRAPPERS = frozenset({*_WRAPPER_VALUE_OPTS, *_PLAIN_WRAPPERS, "busybox", "toybox", "su", "runuser",
                      "script", "sg", "parallel"})


def wrapper_value_options(program: str) -> frozenset[str]:
    return _WRAPPER_VALUE_OPTS.get(program, frozenset())


def _option_value(args: Argv, names: tuple[str, ...]) -> tuple[bool, str | None]:
    """Whether one of ``names`` is given, and its value (``-S X``, ``-SX``, ``--split-string=X``)."""
    for i, a in enumerate(args):
        if a is None:
            continue
        for n in names:
            if a == n:
                return True, args[i + 1] if i + 1 < len(args) else None
            if n.startswith("--") and a.startswith(n + "="):
                return True, a[len(n) + 1:]
            if not n.startswith("--") and a.startswith(n) and len(a) > len(n):
                return True, a[len(n):]
    return False, None


def unwrap(program: str, args: Argv) -> Unwrapped | None:
    """The command a wrapper runs, or None when ``program`` is not a wrapper."""
    if program not in WRAPPERS:
        return None
    if program in ("busybox", "toybox"):
        return Unwrapped(list(args))
    if program in ("su", "runuser", "sg", "script"):
        found, value = _option_value(args, ("-c", "--command"))
        cluster = next((a for a in args if a is not None and re.match(r"^-[a-zA-Z]+c$", a)), None)
        if not found and cluster is not None:  # su -lc 'id', script -qc 'id' /dev/null
            at = args.index(cluster)
            found, value = True, args[at + 1] if at + 1 < len(args) else None
        if program == "sg" and not found and len(args) >= 2:
            found, value = True, args[1]
        return Unwrapped([], value, via_shell=True, hidden=value is None) if found else Unwrapped([])
    if program == "env":
        found, value = _option_value(args, ("-S", "--split-string"))
        if not found:  # -S inside a cluster: env -iS'bash -c id'
            cluster = next((a for a in args if a is not None and re.match(r"^-[a-zA-Z0]*S", a)), None)
            if cluster is not None:
                found, value = True, cluster[cluster.index("S") + 1:] or None
        if found:
            return Unwrapped([], value, hidden=value is None)
    value_opts = _WRAPPER_VALUE_OPTS.get(program, frozenset())
    opts, i = options_before_operands(args, value_opts)
    rest = list(args[i:])
    if program == "command" and ("-v" in opts or "-V" in opts):
        return Unwrapped([])
    if program == "sudo" and rest and {"-s", "-i", "--shell", "--login"} & set(opts):
        # sudo -s CMD runs ``$SHELL -c 'CMD'``: the words are joined into one command line
        return Unwrapped([], None if None in rest else " ".join(a for a in rest if a is not None),
                         via_shell=True, hidden=None in rest)
    if program == "env":
        while rest and rest[0] is not None and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", rest[0]):
            rest.pop(0)
    elif program == "timeout" and rest:
        rest = rest[1:]  # the duration
    elif program in ("chroot", "flock", "taskset", "chrt") and rest:
        if program == "flock":
            found, value = _option_value(args, ("-c", "--command"))
            if found:
                return Unwrapped([], value, via_shell=True, hidden=value is None)
        rest = rest[1:]  # the new root / lock file / cpu mask
    elif program == "watch":
        if any(a is None for a in rest):
            return Unwrapped([], None, via_shell=True, hidden=True)
        return Unwrapped([], " ".join(a for a in rest if a is not None), via_shell=True)
    elif program == "parallel":
        rest = [a for a in rest if a != ":::"]
        rest = [None if a is not None and "{" in a and "}" in a and "://" not in a else a  # {}, {.}, {1}: an input
                for a in rest]
    if program == "xargs":
        # ``xargs -I{} cat {}``: the replace string stands for each input line, not a file of that name
        found, repl = _option_value(args, ("-I", "--replace", "-i"))
        if found:
            repl = repl or "{}"
            rest = [None if a is not None and repl in a and "://" not in a else a for a in rest]  # a URL keeps its host
    elif program == "coproc" and rest:  # coproc [NAME] { cmd; }: the grammar reads it as words
        if len(rest) > 1 and rest[1] in ("{", "("):
            rest = rest[1:]
        if rest[0] in ("{", "("):
            rest = rest[1:]
    return Unwrapped(rest)


@dataclass(frozen=True, slots=True)
class Embedded:
    """A command line another program runs for the model (``guardrails.tools.embedded``, ``awk``)."""

    line: str | None
    """The command line, or None when it is not a literal."""
    stdin: str | None = None
    """``pipe`` when the program writes into it (awk's ``print | "sh"``)."""


# -- file commands ----------------------------------------------------------------------------------

# program -> (op of its operands, options that take a value, how many leading operands are not paths)
_READERS = frozenset({"cat", "tac", "head", "tail", "less", "more", "wc", "nl", "od", "xxd", "hexdump",
                      "strings", "base64", "base32", "sort", "uniq", "diff", "cmp", "file", "stat",
                      "md5sum", "sha1sum", "sha256sum", "sha512sum", "cksum", "ls", "tree", "du",
                      "source", ".", "jq", "yq", "column", "cut", "paste", "fold", "iconv", "readlink",
                      "realpath", "bat", "view", "awk", "grep", "egrep", "fgrep", "rg", "ag", "zcat",
                      "gunzip", "tar", "unzip", "find", "comm", "join", "pr", "rev", "tsort", "shuf", "expand",
                      "unexpand", "fmt", "look", "b2sum", "sha224sum", "sha384sum", "split", "csplit"})
_WRITERS = frozenset({"tee", "touch", "mkdir", "rm", "rmdir", "truncate", "shred", "unlink",
                      "chmod", "chown", "chgrp", "ln", "mv", "cp", "install", "dd", "sed", "perl",
                      "gzip", "bzip2", "xz", "zstd", "lz4", "compress", "vi", "vim", "nvim", "ex", "ed", "nano",
                      "emacs", "pico", "micro", "patch"})
_VALUE_OPTS: dict[str, frozenset[str]] = {
    "head": frozenset({"-n", "-c", "--lines", "--bytes"}),
    "tail": frozenset({"-n", "-c", "--lines", "--bytes", "-s", "--pid"}),
    "grep": frozenset({"-e", "-f", "-m", "-A", "-B", "-C", "-d", "-D", "--regexp", "--file", "--max-count",
                       "--context", "--include", "--exclude", "--exclude-dir", "--color", "--label"}),
    "rg": frozenset({"-e", "-f", "-g", "-m", "-A", "-B", "-C", "-t", "-T", "--glob", "--type", "--regexp",
                     "--max-count", "--context", "--iglob", "-M", "-j"}),
    "sort": frozenset({"-k", "-t", "-S", "-T", "--key", "--field-separator", "--buffer-size"}),
    "sed": frozenset({"-e", "-f", "-l", "--expression", "--file"}),
    "cut": frozenset({"-d", "-f", "-b", "-c", "--delimiter", "--fields"}),
    "awk": frozenset({"-F", "-v", "-f", "-E", "-i", "-l", "-e", "--exec", "--include", "--load", "--file", "--source"}),
    "jq": frozenset({"--arg", "--argjson", "-f", "--indent"}),
    "chmod": frozenset({"--reference"}),
    "truncate": frozenset({"-s", "--size", "-r", "--reference"}),
    "install": frozenset({"-m", "-o", "-g", "--mode", "--owner", "--group", "-S", "--suffix"}),
    "rsync": frozenset({"-e", "--rsh", "--exclude", "--include", "-f", "--filter", "--port", "-T", "--temp-dir",
                        "--exclude-from", "--include-from", "--files-from", "-B", "--block-size"}),
    "scp": frozenset({"-P", "-i", "-o", "-F", "-J", "-c", "-l", "-S", "-D", "-X"}),
    "tar": frozenset({"-C", "--directory", "-T", "-X"}),
    "du": frozenset({"-d", "--max-depth"}),
    "tree": frozenset({"-L", "-I", "-P"}),
    "xxd": frozenset({"-c", "-g", "-l", "-s"}),
    "od": frozenset({"-A", "-t", "-j", "-N"}),
    "mkdir": frozenset({"-m", "--mode"}),
    "ln": frozenset({"-t", "--target-directory", "-S", "--suffix"}),
    "perl": frozenset({"-e", "-E", "-M", "-I"}),
    "split": frozenset({"-l", "-b", "-C", "-n", "-a", "-t", "--lines", "--bytes", "--line-bytes", "--number",
                        "--suffix-length", "--additional-suffix", "--separator", "--filter"}),
    "csplit": frozenset({"-f", "-b", "-n", "--prefix", "--suffix-format", "--digits"}),
}
_CHANGERS = frozenset({"rm", "rmdir", "unlink", "chmod", "chown", "chgrp", "touch", "mkdir", "ln",
                       "gzip", "bzip2", "xz", "zstd", "lz4", "compress"})
"""Writers that change a file's existence or metadata, not its content: containment, privileged places
and the manifest apply (op ``change``), read-before-write does not (nothing is overwritten blind)."""
_PATTERN_FIRST = frozenset({"grep", "egrep", "fgrep", "rg", "ag", "awk", "sed", "jq", "look"})
_FIRST_ONLY = frozenset({"split", "csplit"})
_EDITORS = frozenset({"vi", "vim", "nvim", "ex", "ed", "nano", "emacs", "pico", "micro"})
"""Programs whose later operands are not files they read (``split FILE PREFIX``)."""
_NAMED_FILES = {"openssl": ({"-in", "-inkey", "-key", "-CAfile", "-cert", "-passin"}, {"-out", "-keyout"}),
                "patch": ({"-i", "--input"}, {"-o", "--output"}), "zip": (set(), set())}
"""Programs whose files are named by options: (read options, write options)."""
_MODE_FIRST = frozenset({"chmod", "chown", "chgrp"})
_NOT_FILES = frozenset({"/dev/null", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/tty", "-"})


def not_a_file(path: str) -> bool:
    return path in _NOT_FILES or path.startswith("/dev/fd/")


def split_operands(args: Argv, value_opts: frozenset[str]) -> tuple[list[str], list[str | None]]:
    """(options, operands) where options may be interleaved with operands (GNU style)."""
    opts: list[str] = []
    operands: list[str | None] = []
    i = 0
    ended = False
    while i < len(args):
        a = args[i]
        if not ended and a == "--":
            ended = True
        elif not ended and a is not None and a.startswith("-") and a != "-":
            opts.append(a)
            if a in value_opts or (not a.startswith("--") and "-" + a[-1] in value_opts and a[1:].isalpha()
                                   and not any("-" + c in value_opts for c in a[1:-1])):
                i += 1  # ``-o F``, and a cluster whose last letter takes the next word (``curl -sLo F URL``)
        else:
            operands.append(a)
        i += 1
    return opts, operands


_DIRECTORY_OPTS = {"git": ("-C",), "make": ("-C", "--directory"), "tar": ("-C", "--directory"),
                   "npm": ("--prefix",), "pnpm": ("-C", "--dir"), "yarn": ("--cwd",)}
"""Options that move a program into another folder; the folder is checked like a path it reads."""


def _directories(program: str, args: Argv) -> list[tuple[str, str]]:
    names = _DIRECTORY_OPTS.get(program, ())
    out: list[tuple[str, str]] = []
    for i, a in enumerate(args):
        if a is None:
            continue
        value: str | None = None
        if a in names and i + 1 < len(args):
            value = args[i + 1]
        elif "=" in a and a.split("=", 1)[0] in names:
            value = a.split("=", 1)[1]
        if value is not None and not not_a_file(value):
            out.append(("read", value))
    return out


def file_operands(program: str, args: Argv) -> list[tuple[str, str]]:
    """[(op, path)] for a known file program's literal path operands; [] for any other program."""
    if program == "tar" and args and args[0] is not None and args[0][:1].isalpha():
        args = [f"-{args[0]}", *args[1:]]  # ``tar xzf a.tgz``: the old style's first word is a cluster
    if program in _DIRECTORY_OPTS:
        found = _directories(program, args)
        if program not in ("tar", "git"):
            return found
    else:
        found = []
    return found + _operands(program, args)


def options_with_values(args: Argv, values: frozenset[str]) -> list[tuple[str, str | None]]:
    """Each option and its value: ``--long value``, ``--long=value``, ``-x value``, ``-xVALUE`` and short
    clusters (``-sSLx host``, ``-st DIR``: a letter that takes a value ends the cluster). Stops at ``--``."""
    out: list[tuple[str, str | None]] = []
    i = 0
    while i < len(args):
        a, nxt = args[i], args[i + 1] if i + 1 < len(args) else None
        i += 1
        if a is None or not a.startswith("-") or a == "-":
            continue
        if a == "--":
            break
        if a.startswith("--"):
            name, eq, value = a.partition("=")
            taken = name in values and not eq
            out.append((name, value if eq else nxt if taken else None))
            i += taken
            continue
        for k in range(1, len(a)):
            name = "-" + a[k]
            if name in values:
                out.append((name, a[k + 1:] or nxt))
                i += not a[k + 1:]
                break
            out.append((name, None))
    return out


_TARGET_DIR = frozenset({"-t", "--target-directory"})
_COPIERS = frozenset({"cp", "mv", "install", "ln"})
_FIND_WRITES = frozenset({"-fprint", "-fprint0", "-fprintf", "-fls"})
_REMOTE = re.compile(r"^(?:[^/:]*:|[a-z][a-z0-9+.-]*://)", re.IGNORECASE)
"""``host:path``, ``host::module``, ``rsync://``: the other side of a copy (an egress host, not a path)."""


def _copy(program: str, args: Argv) -> list[tuple[str, str]]:
    """cp/mv/install/ln (``-t DIR`` puts every operand into DIR), rsync and scp (local sides only): the
    sources are read (moved away by mv, linked to by ln), the destination is written."""
    values = _VALUE_OPTS.get(program, frozenset()) | _TARGET_DIR
    _, operands = split_operands(args, values)
    target = next((v for o, v in options_with_values(args, values) if o in _TARGET_DIR and v), None)
    if target is not None:  # ``-st DIR`` in a cluster: split_operands took DIR for an operand
        operands = [p for p in operands if p != target]
    elif len(operands) > 1 and operands[-1] is not None:
        target, operands = operands[-1], operands[:-1]
    source_op = {"mv": "change", "ln": "change"}.get(program, "read")
    out = [(source_op, p) for p in operands if p is not None and not not_a_file(p)]
    if target is not None and not not_a_file(target):
        out.append(("change" if program == "ln" else "write", target))
    return [(op, p) for op, p in out if not (program in ("rsync", "scp") and _REMOTE.match(p))]


def _find(args: Argv) -> list[tuple[str, str]]:
    """find's start points (every operand before the expression) and the files ``-fprint`` writes."""
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(args) and args[i] in ("-H", "-L", "-P"):
        i += 1
    while i < len(args) and args[i] is not None and not str(args[i]).startswith(("-", "(", "!", ")")):
        out.append(("read", str(args[i])))
        i += 1
    for j, a in enumerate(args[:-1]):
        target = args[j + 1]
        if a in _FIND_WRITES and target is not None and not not_a_file(target):
            out.append(("write", target))
    return out


def _named(program: str, args: Argv) -> list[tuple[str, str]]:
    """openssl ``-in``/``-out``, patch ``-i``/``-o``/``-d``, zip's archive and inputs, ``git diff --no-index``."""
    reads, writes = _NAMED_FILES.get(program, (set(), set()))
    out = [("read" if a in reads else "write", v) for a, v in pairwise(args)
           if a in reads | writes and v is not None and not not_a_file(v)]
    if program == "patch":
        _, operands = split_operands(args, frozenset({*reads, *writes, "-p", "-d", "--directory", "-r", "-B", "-z"}))
        out += [("change", v) for a, v in pairwise(args) if a in ("-d", "--directory") and v is not None]
        out += [("write", operands[0])] if operands and operands[0] is not None else []
    if program == "zip":
        _, operands = split_operands(args, frozenset({"-b", "-n", "-t", "-tt", "-x", "-i", "-P", "-O", "--out"}))
        files = [p for p in operands if p is not None and not not_a_file(p)]
        out += [("change", f) for f in files[:1]] + [("read", f) for f in files[1:]]
    if program == "git" and "--no-index" in args:
        _, operands = split_operands(args, frozenset())
        out += [("read", p) for p in operands[1:] if p is not None and not not_a_file(p)]
    return out


_VOLUME_OPTS = frozenset({"-v", "--volume", "--mount"})


def _volumes(args: Argv) -> list[tuple[str, str]]:
    """docker/podman ``-v SRC:DST`` and ``--mount type=bind,source=SRC``: the container reaches SRC
    (read and written). A named volume (``cache:/cache``) is no host path."""
    out: list[tuple[str, str]] = []
    for name, value in options_with_values(args, _VOLUME_OPTS):
        if name not in _VOLUME_OPTS or not value:
            continue
        if name == "--mount":
            fields = dict(f.partition("=")[::2] for f in value.split(","))
            src = fields.get("source") or fields.get("src")
        else:
            src = value.split(":", 1)[0]
        if src and src.startswith(("/", ".", "~")):
            out.append(("change", src))
    return out


def _operands(program: str, args: Argv) -> list[tuple[str, str]]:
    if program in ("docker", "podman"):
        return _volumes(args)
    if program in _NAMED_FILES or (program == "git" and "--no-index" in args):
        return _named(program, args)
    if program == "dd":
        return [("read" if a.startswith("if=") else "write", a[3:]) for a in args
                if a is not None and a.startswith(("if=", "of="))]
    if program in _COPIERS or program in ("rsync", "scp"):
        return _copy(program, args)
    if program == "find":
        return _find(args)
    if program not in _READERS and program not in _WRITERS:
        return []
    value_opts = _VALUE_OPTS.get(program, frozenset())
    opts, operands = split_operands(args, value_opts)
    given_script = any(o in ("-e", "-f", "--expression", "--file", "--regexp") or o.startswith(("--expression=",
                       "--regexp=", "--file=")) for o in opts)
    if program in _PATTERN_FIRST and not given_script and operands:
        operands = operands[1:]
    if program in _MODE_FIRST and operands:
        operands = operands[1:]
    if program in _FIRST_ONLY:
        operands = operands[:1]
    if program in _EDITORS:
        operands = [p for p in operands if p is None or not p.startswith("+")]  # vim +42 file
    if program == "perl" and not any(o.startswith("-i") or ("i" in o[1:] and o[1:].isalpha()) for o in opts):
        return []
    op = "read"
    if program == "sed":
        op = "write" if any(o.startswith(("-i", "--in-place")) or ("i" in o[1:] and o[1:].isalpha()
                                                                    and not o.startswith("--")) for o in opts) else "read"
    elif program in _CHANGERS:
        op = "change"
    elif program in _WRITERS:
        op = "write"
    return [(op, path) for path in operands if path is not None and not not_a_file(path)]
