"""Shell commands: a structural summary (what gets recorded) and the interpreter rule (pure).

A command line is reduced to its simple commands, each as ``{"program", "options", "fed_by"}``:

- ``program``: the basename of the command word, version suffix stripped (``/usr/bin/python3.11``
  -> ``python``), after skipping env assignments and wrappers (``env``, ``sudo``, ``nohup``...);
- ``options``: the option flags before the first operand, short clusters split (``-lc`` -> ``-l``,
  ``-c``), long options without their value. Operands are never recorded, so neither are the
  scripts, file names or header values (credentials) the command carries;
- ``fed_by``: the programs that feed it: earlier members of its pipeline (``curl ... | sh``) and
  process substitutions among its arguments (``bash <(curl ...)``).

``[tools] interpreters`` entries are matched against that summary:

- ``"bash -c"``: program ``bash`` run with option ``-c`` (also ``-lc``, ``-ec``...);
- ``"eval"``: program ``eval`` at all;
- ``"curl|sh"``: program ``sh`` fed by ``curl`` (pipe or process substitution).

Paths inside shell commands are not containment-checked: a shell can reach any path by means no
parser can follow (variables, ``cd``, globs), so pretending to would be false assurance.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Iterable, Sequence

_SHELLS = ("sh", "bash", "zsh", "dash", "ksh", "fish")
_DOWNLOADERS = ("curl", "wget")
DEFAULT_INTERPRETERS: tuple[str, ...] = (
    *(f"{s} -c" for s in _SHELLS),
    "python -c", "node -e", "node --eval", "node -p", "node --print", "perl -e", "perl -E",
    "ruby -e", "php -r", "eval",
    *(f"{d}|{s}" for d in _DOWNLOADERS for s in (*_SHELLS, "python", "perl", "ruby", "node", "source")),
)
# Programs that run their arguments as another command; they are looked through.
_WRAPPERS = frozenset({"env", "sudo", "doas", "command", "exec", "nohup", "time", "nice", "ionice",
                       "timeout", "xargs", "builtin", "stdbuf", "setsid", "then", "do", "else",
                       "elif", "if", "while", "until", "!", "{", "}"})
_WRAPPER_VALUE_OPTS = frozenset({"-u", "-g", "-n", "-s", "-k", "-I", "-L", "-P", "-C", "-c"})
# Options that take a separate value before the first operand (``bash -o pipefail -c``).
_VALUE_OPTS = frozenset({"-o", "+o", "-O", "+O", "-W", "-X", "-r", "--rcfile", "--init-file"})
_NETWORK_PROGRAMS = frozenset({"curl", "wget", "http", "https", "xh", "aria2c", "git"})
_OPERATORS = ("&&", "||", ";;", "|&", "<(", ">(", ">>", "<<", ">&", "<&", "&>",
              ";", "&", "|", "(", ")", "<", ">", "\n")
_LIST_SEPS = frozenset({"&&", "||", ";;", ";", "&", "\n"})
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1[^\n]*\n.*?\n[ \t]*\2[ \t]*(?=\n|$)",
                      re.DOTALL)
_VERSION = re.compile(r"[\d.]+$")
_SUBST = re.compile(r"\$\(|`")
MAX_DEPTH = 4
"""Command substitutions are followed this deep; deeper nesting is not written by agents."""

Segment = dict[str, object]


def program_name(word: str) -> str:
    base = posixpath.basename(word)
    stripped = _VERSION.sub("", base)
    return stripped or base


def _split_ops(token: str) -> list[str]:
    """shlex returns a run of punctuation as one token (``)|(``); cut it into shell operators."""
    out: list[str] = []
    i = 0
    while i < len(token):
        op = next((o for o in _OPERATORS if token.startswith(o, i)), token[i])
        out.append(op)
        i += len(op)
    return out


def tokenize(command: str) -> tuple[list[str], bool]:
    """Words and operators, and whether shlex managed (False: whitespace split of a broken line)."""
    text = _HEREDOC.sub("", command)  # heredoc bodies are data (a script, a patch), not commands
    lex = shlex.shlex(text, posix=True, punctuation_chars=";&|()<>\n")
    lex.whitespace_split = True
    lex.whitespace = " \t\r"
    lex.commenters = ""
    try:
        raw = list(lex)
    except ValueError:  # unbalanced quotes: the shell itself would refuse, but still look
        return text.split(), False
    tokens: list[str] = []
    for tok in raw:
        tokens.extend(_split_ops(tok) if tok and all(c in ";&|()<>\n" for c in tok) else [tok])
    return tokens, True


def _options(args: Sequence[str]) -> list[str]:
    opts: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
            continue
        if arg == "--" or not arg.startswith(("-", "+")) or arg in ("-", "+"):
            break
        if arg.startswith("--"):
            opts.append(arg.split("=", 1)[0])
        elif arg[1:].isalpha():
            opts.extend(arg[0] + c for c in arg[1:])
        else:
            opts.append(arg[:2])
        skip = arg in _VALUE_OPTS
    return sorted(set(opts))


def _strip_prefix(words: list[str]) -> list[str]:
    """Drop env assignments and wrapper programs (with their own options) before the command word."""
    i = 0
    while i < len(words):
        w = words[i]
        if re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", w):
            i += 1
        elif program_name(w) in _WRAPPERS:
            i += 1
            while i < len(words) and words[i].startswith("-"):
                i += 2 if words[i] in _WRAPPER_VALUE_OPTS else 1
            if i < len(words) and program_name(words[i - 1]) == "timeout" and words[i][:1].isdigit():
                i += 1
        else:
            break
    return words[i:]


class _Parser:
    def __init__(self, depth: int) -> None:
        self.depth = depth
        self.segments: list[Segment] = []
        self.hosts: list[str] = []

    def parse(self, tokens: list[str]) -> None:
        pipeline: list[str] = []
        words: list[str] = []
        procsub: list[str] = []
        i = 0
        while i <= len(tokens):
            tok = tokens[i] if i < len(tokens) else "\n"
            if tok in ("<(", ">(") or (tok == "(" and words[-1:] == ["$"]):
                if tok == "(":
                    words.pop()
                end = _matching(tokens, i + 1)
                inner = _Parser(self.depth)
                inner.parse(tokens[i + 1:end])
                self.segments.extend(inner.segments)
                self.hosts.extend(inner.hosts)
                if tok != "(":  # $(...) only supplies words; <(...) feeds the command a script
                    procsub.extend(str(s["program"]) for s in inner.segments)
                i = end + 1
                continue
            if tok in _LIST_SEPS or tok in ("|", "|&", "(", ")"):
                self._emit(words, pipeline, procsub)
                if tok in ("|", "|&"):
                    pipeline.append(program_name(_strip_prefix(words)[0]) if _strip_prefix(words) else "")
                else:
                    pipeline = []
                words, procsub = [], []
            elif tok.startswith("#") and not words:
                while i < len(tokens) and tokens[i] != "\n":
                    i += 1
                continue
            else:
                words.append(tok)
            i += 1

    def _emit(self, words: list[str], pipeline: list[str], procsub: list[str]) -> None:
        core = _strip_prefix(words)
        for w in words:
            if self.depth < MAX_DEPTH and _SUBST.search(w):
                for inner_text in _substitutions(w):
                    inner = _Parser(self.depth + 1)
                    inner.parse(tokenize(inner_text)[0])
                    self.segments.extend(inner.segments)
                    self.hosts.extend(inner.hosts)
        if not core:
            return
        prog = program_name(core[0])
        fed = sorted({p for p in (*pipeline, *procsub) if p})
        self.segments.append({"program": prog, "options": _options(core[1:]), "fed_by": fed})
        if prog in _NETWORK_PROGRAMS:
            self.hosts.extend(a for a in core[1:] if re.match(r"^https?://", a, re.IGNORECASE))
        if prog == "find":  # find ... -exec CMD ... ;  runs CMD
            for flag in ("-exec", "-execdir", "-ok"):
                if flag in core:
                    self._emit(core[core.index(flag) + 1:], [], [])


def _matching(tokens: list[str], start: int) -> int:
    depth = 1
    for j in range(start, len(tokens)):
        if tokens[j] in ("(", "<(", ">("):
            depth += 1
        elif tokens[j] == ")":
            depth -= 1
            if depth == 0:
                return j
    return len(tokens)


def _substitutions(word: str) -> list[str]:
    """The inner commands of ``$(...)`` and backticks inside one (quoted) word."""
    found: list[str] = re.findall(r"`([^`]*)`", word)
    start = word.find("$(")
    while start >= 0:
        depth, j = 0, start + 1
        while j < len(word):
            depth += word[j] == "("
            depth -= word[j] == ")"
            if depth == 0:
                break
            j += 1
        found.append(word[start + 2:j])
        start = word.find("$(", j)
    return found


def summarize(command: str) -> tuple[list[Segment], list[str], bool]:
    """(simple commands, URLs given to network programs, whether shlex parsed the line)."""
    tokens, ok = tokenize(command)
    parser = _Parser(0)
    parser.parse(tokens)
    return parser.segments, parser.hosts, ok


def unwrap_argv(argv: Sequence[str]) -> str:
    """An argv list as a command line. ``["bash", "-lc", SCRIPT]`` is how Codex runs every command:
    the wrapper is the harness, not the model's choice, so the script itself is what gets judged."""
    if len(argv) == 3 and program_name(argv[0]) in _SHELLS and "-c" in _options(argv[1:2]):
        return argv[2]
    return shlex.join(argv)


def _entry_matches(entry: str, seg: Segment) -> bool:
    prog = str(seg["program"])
    fed = seg["fed_by"]
    opts = seg["options"]
    if "|" in entry:
        source, _, sink = (p.strip() for p in entry.partition("|"))
        return prog == program_name(sink) and isinstance(fed, list) and program_name(source) in fed
    words = entry.split()
    if not words or prog != program_name(words[0]):
        return False
    return isinstance(opts, list) and all(w in opts for w in words[1:])


def interpreter_form(segments: Iterable[Segment], entries: Sequence[str]) -> str | None:
    """The first configured form that one of the simple commands uses, or None."""
    for seg in segments:
        for entry in entries:
            if _entry_matches(entry, seg):
                return entry
    return None
