"""The interpreter rule (pure): which recorded simple commands run code the model wrote inline.

``[tools] interpreters`` entries are matched against each segment (``guardrails.tools.shell``):

- ``"bash -c"``: program ``bash`` run with option ``-c`` (also ``-lc``, ``-ec``...);
- ``"eval"``: program ``eval`` at all;
- ``"curl|sh"``: program ``sh`` fed by ``curl``: a pipe, a process substitution (``sh <(curl ..)``), or
  a file that ``curl`` downloaded earlier in the same command line (``curl -o x .. && sh x``);
- ``"bash <"``: program ``bash`` reading its script from stdin that a pipe, a herestring, a heredoc
  or an interactive terminal feeds (``echo .. | base64 -d | bash``, ``bash <<< 'id'``,
  ``python3 - <<EOF``).

A command word that is not a literal (``$SHELL -c id``, ``"$(which bash)" ...``) is recorded as
program ``$`` and matches every entry's program: the proxy cannot tell which program it is. One that
bash splits into several words (``$x``, ``"$@"``) also carries ``*`` among its options, and matches
every entry: ``x="bash -c id"; $x`` is ``bash -c``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from guardrails.tools.commands import program_name

_SHELLS = ("sh", "bash", "zsh", "dash", "ksh", "fish", "ash", "mksh", "csh", "tcsh", "yash", "rbash")
_STDIN_INTERPRETERS = (*_SHELLS, "python", "ipython", "perl", "ruby", "irb", "node", "php", "lua", "deno", "bun",
                       "tclsh", "wish", "expect", "R", "Rscript", "julia", "pwsh", "powershell")
_DOWNLOADERS = ("curl", "wget", "aria2c", "fetch", "http", "https", "xh", "xhs", "httpie", "curlie")
"""The programs whose downloads the ``|`` forms follow (a pipe, ``<(...)``, or a file they saved)."""
DEFAULT_INTERPRETERS: tuple[str, ...] = (
    *(f"{s} -c" for s in _SHELLS),
    "python -c", "ipython -c", "node -e", "node --eval", "node -p", "node --print", "perl -e", "perl -E",
    "ruby -e", "php -r", "lua -e", "bun -e", "bun --eval", "bun --print", "deno eval", "bun eval",
    "Rscript -e", "R -e", "julia -e", "osascript -e", "expect -c",
    # PowerShell's -Command and -EncodedCommand code is read as PowerShell (``guardrails.tools.winshell``),
    # the way a Windows agent's harness runs every command: list "pwsh -c" to block it whole
    "eval",
    *(f"{d}|{s}" for d in _DOWNLOADERS for s in (*_STDIN_INTERPRETERS, "source", ".")),
    *(f"{i} <" for i in _STDIN_INTERPRETERS), "source <", ". <",
)
_FED_STDIN = ("pipe", "herestring", "heredoc", "tty")
DYNAMIC = "$"
UNKNOWN_OPTIONS = "*"
"""Recorded among a dynamic command's options when its word splits (``$x``): any options may follow."""


def _program_matches(prog: str, want: str) -> bool:
    return prog == DYNAMIC or prog == program_name(want)


def entry_matches(entry: str, seg: dict[str, object]) -> bool:
    prog = str(seg.get("program"))
    fed = seg.get("fed_by")
    opts = seg.get("options")
    text = entry.strip()
    if text.endswith("<") and "|" not in text:
        return (_program_matches(prog, text[:-1].strip()) and seg.get("script") == "stdin"
                and seg.get("stdin") in _FED_STDIN)
    if "|" in text:
        source, _, sink = (p.strip() for p in text.partition("|"))
        return _program_matches(prog, sink) and isinstance(fed, list) and program_name(source) in fed
    words = text.split()
    if not words or not _program_matches(prog, words[0]):
        return False
    if prog == DYNAMIC and len(words) == 1:
        return False  # "eval" names a builtin; a dynamic word is not known to be it
    if prog == DYNAMIC and isinstance(opts, list) and UNKNOWN_OPTIONS in opts:
        return True
    return isinstance(opts, list) and all(w in opts for w in words[1:])


def interpreter_form(segments: Iterable[dict[str, object]], entries: Sequence[str]) -> str | None:
    """The first configured form that one of the simple commands uses, or None. A segment without
    its ``program``, ``options`` and ``fed_by`` is not one this module wrote (a crafted audit record):
    TypeError, rather than a guess."""
    for seg in segments:
        if not (isinstance(seg.get("program"), str) and isinstance(seg.get("options"), list)
                and isinstance(seg.get("fed_by"), list)):
            raise TypeError("a recorded command lacks program, options or fed_by")
        for entry in entries:
            if entry_matches(entry, seg):
                return entry
    return None
