"""Shell command lines, parsed with the tree-sitter bash grammar and reduced to what the rules judge.

A command line becomes ``ShellFacts``:

- ``segments``: each simple command as ``{"program", "options", "fed_by", "script", "stdin"}``.
  ``program`` is the basename of the command word (``/usr/bin/python3.11`` -> ``python``) after
  looking through wrappers (``env``, ``sudo``, ``exec -a``, ``busybox``, ``xargs``, ...; see
  ``guardrails.tools.commands``); ``$`` when the command word is not a literal (``$SHELL``,
  ``"$(which bash)"``). ``options``: the flags before the first operand (``-lc`` -> ``-l``, ``-c``).
  ``fed_by``: programs whose output reaches it (earlier pipeline stages, process substitutions, a
  downloader that wrote the script file it runs). ``script`` (interpreters only): ``inline`` (``-c``/
  ``-e``), ``file`` or ``stdin``. ``stdin``: ``pipe``, ``herestring``, ``heredoc``, ``file`` or null.
  Operands are never recorded: scripts, file contents and header values (credentials) stay out.
- ``paths``: ``(op, path)`` for the path operands of the file commands and for redirections
  (``>``, ``>>``, ``<``), relative paths joined to a literal ``cd`` before them;
- ``urls``: what network commands connect to (``curl evil.example`` -> ``http://evil.example``);
- ``writes``: package/VCS settings files written, with the text written when the line shows it;
- ``autorun``: settings made that run code later (``git config core.hooksPath``, ``direnv allow``);
- ``status``: ``ok``, or why the line cannot be judged: ``error`` (not valid shell), ``too_large``
  (over ``MAX_COMMAND_BYTES``), ``too_complex`` (over ``MAX_NODES`` syntax nodes or ``MAX_DEPTH``
  nesting). The rules block all three (``unparseable_arguments``).

Cost: tree-sitter parses in time linear in the input; the walk visits each node once and stops at
``MAX_NODES``; strings handed back for a re-parse (``bash -c '...'``, ``env -S``) are parts of the
input, and the re-parse depth is bounded by ``MAX_DEPTH``.
"""

from __future__ import annotations

import codecs
import fnmatch
import itertools
import posixpath
import re
import threading
from dataclasses import dataclass, field

import tree_sitter_bash
from tree_sitter import Language, Node, Parser

from guardrails.tools import commands as cmds
from guardrails.tools import network as net
from guardrails.tools import winprograms, winshell
from guardrails.tools.autorun import (
    autorun_settings,
    git_dir_setting,
    git_subcommand,
    in_git_folder,
    is_git_config_name,
)
from guardrails.tools.commands import SCRIPT_INTERPRETERS, SHELLS, Embedded, program_name
from guardrails.tools.embedded import embedded, sed, setting
from guardrails.tools.interpreters import DYNAMIC, UNKNOWN_OPTIONS
from guardrails.tools.sources import EXPANSION, looks_like_requirements, sed_hosts, settings_kind
from guardrails.tools.variables import Variables, expand, has_alternatives
from guardrails.tools.wincmdlets import Unreadable
from guardrails.tools.writers import written_files

MAX_COMMAND_BYTES = 32 * 1024
MAX_NODES = 12_000
MAX_DEPTH = 48
MAX_FEEDERS = 64
"""Distinct programs feeding one pipeline stage; more is not a command anyone types."""
MAX_PARSED_BYTES = 4 * MAX_COMMAND_BYTES
"""Re-parsed strings (``bash -c '...'``) count again; their total is capped too."""
_LANGUAGE = Language(tree_sitter_bash.language())
_local = threading.local()
_INLINE_OPTS = {"-c", "-e", "-E", "-r", "-p", "--eval", "--print", "--command"}
"""Options that give code inline, for a program not in ``_INLINE_BY_PROGRAM`` (``$``: any of them)."""
_INLINE_BY_PROGRAM: dict[str, frozenset[str]] = {
    **{sh: frozenset({"-c", "--command"}) for sh in SHELLS},  # -e, -E, -r, -p are shell flags (errexit...)
    "python": frozenset({"-c"}), "ipython": frozenset({"-c"}),  # python -E: ignore the environment
    "node": frozenset({"-e", "--eval", "-p", "--print"}), "nodejs": frozenset({"-e", "--eval", "-p", "--print"}),
    "perl": frozenset({"-e", "-E"}), "ruby": frozenset({"-e"}), "irb": frozenset({"-e"}), "php": frozenset({"-r"}),
    "lua": frozenset({"-e"}), "Rscript": frozenset({"-e"}), "R": frozenset({"-e"}), "expect": frozenset({"-c"}),
}
_INTERP_VALUE_OPTS = frozenset({"-o", "+o", "-O", "+O", "-W", "-X", "-m", "-M", "-I", "-r", "--rcfile",
                                "--init-file", "--require", "--import", "--loader", "--input-type"})
_PROGRAM_VALUE_OPTS = {"php": frozenset({"-d", "-c", "-z"})}
_SHELL_VALUE_OPTS = frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file"})
"""A shell's options that take a value. Its ``-m`` (job control), ``-r`` (restricted) and the like are
flags: ``bash -m x.sh`` runs x.sh, and ``curl URL | bash -m`` runs the download."""
_MODULE_PROGRAMS = frozenset({"python", "ipython"})
"""Programs whose ``-m NAME`` runs a module (perl's ``-mNAME`` only imports one; the script still comes
from the operand or stdin)."""
_STDIN_CODE_MODULES = frozenset({"code", "asyncio", "pdb", "IPython", "idlelib", "ptpython", "bpython",
                                 "runpy", "cProfile", "profile", "trace", "pip", "pip3"})
"""Modules that read code from stdin (the REPLs, the debugger's commands), run another module or script
named in their operands, or install what a requirements list on stdin names: data piped into them may
be code, so a downloader feeding them still counts."""
_STDIN_CODE_OPTS = {"python": frozenset({"-i"}), "ipython": frozenset({"-i"}), "node": frozenset({"-i"}),
                    "nodejs": frozenset({"-i"}), "php": frozenset({"-a"})}
"""Options that read code from stdin after (or instead of) the script file: ``python3 -i tool.py``."""
_INLINE_MODULES = frozenset({"timeit"})
"""Modules whose operands are code: ``python3 -m timeit "__import__('os').system('id')"``."""
_CODE_FILE_OPTS = {"make": frozenset({"-f", "--file", "--makefile"}),
                   "awk": frozenset({"-f", "--file", "-E", "--exec", "-i", "--include"}),
                   "gawk": frozenset({"-f", "--file", "-E", "--exec", "-i", "--include"}), "mawk": frozenset({"-f"}),
                   "sed": frozenset({"-f", "--file"})}
"""Options whose value is a file of code the program runs (a makefile's recipes, an awk or sed script,
whose ``system()``/``e`` run commands): a downloaded one is run as ``curl -o x && sh x`` is."""
_SHELL_CODE_FILE_OPTS = frozenset({"--rcfile", "--init-file"})
_GLOB = re.compile(r"[*?\[]")
_EXPANDS = re.compile(r"[*?\[]|\{[^}]*,[^}]*\}")
_REDIRECT_TYPES = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect"})
_WRITE_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>"})
_DEV_SOCKET = re.compile(r"^/dev/(?:tcp|udp)/([^/]+)/")
_WRAPPER_FILES = {"xargs": frozenset({"-a", "--arg-file"}), "env": frozenset({"-C", "--chdir"}),
                  "sudo": frozenset({"-D", "--chdir"})}
_BACKTICKS = re.compile(r"`((?:\\.|[^`\\])*)`")
_SETS_VARIABLES = frozenset({"read", "mapfile", "readarray", "unset", "printf", "getopts"})
_SUBSHELLS = frozenset({"subshell", "command_substitution", "process_substitution"})
PROCESS_SUBSTITUTION = "/dev/fd/63"
"""What bash passes for ``<(...)``: the word a program sees (not a file: the path rules skip it)."""
_STDIN_FILES = frozenset({"/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"})
_PIPE_FILE = re.compile(r"^/(?:dev|proc/self)/fd/\d+$")
"""A script read from a descriptor (``bash <(...)``, ``source /dev/fd/3``): code from a pipe."""

Segment = dict[str, object]
_WINDOWS_ABSOLUTE = re.compile(r"^(?:[A-Za-z]:[\\/]|\\\\)")
"""``C:\\x``, ``\\\\server\\x``: absolute for a Windows agent (``guardrails.tools.paths.windows_form``), not
relative to a ``cd``."""


class _Stop(Exception):
    def __init__(self, status: str, detail: str = "") -> None:
        self.status = status
        self.detail = detail


@dataclass(slots=True)
class ShellFacts:
    segments: list[Segment] = field(default_factory=list)
    paths: list[tuple[str, str]] = field(default_factory=list)
    urls: list[str] = field(default_factory=list)
    writes: list[tuple[str, str | None]] = field(default_factory=list)
    """Package and VCS settings files this line writes (``guardrails.tools.sources.settings_kind``), with
    the text it puts into them when the line spells it out (``echo``/``printf`` operands, a heredoc or
    herestring fed to ``cat``/``tee``, a ``sed -i`` script), else None: what ``cp``, ``mv``, ``curl -o``
    or another program's output puts there is not in the line."""
    autorun: list[str] = field(default_factory=list)
    """Settings this line makes that run code later by themselves (``guardrails.tools.autorun``)."""
    git_runs: list[str] = field(default_factory=list)
    """Folders other than the starting one that git runs in (``git -C DIR``, ``cd DIR && git ...``): one
    that is a git folder under another name runs its hooks and ``core.fsmonitor`` (the mounted probe)."""
    status: str = "ok"
    detail: str = ""
    """What made a line unreadable, when a reader can say (``winshell``: ``[IO.File]::WriteAllText()``)."""
    work: int = 0
    """Syntax nodes visited, bytes handed to the parser, and characters and tokens of embedded programs
    read (awk): the cost of this analysis."""


def _parser() -> Parser:
    parser: Parser | None = getattr(_local, "parser", None)
    if parser is None:
        parser = Parser(_LANGUAGE)
        _local.parser = parser
    return parser


_BACKSLASH = re.compile(r"\\(.)", re.DOTALL)
_DQ_ESCAPE = re.compile(r"\\([\\\"$`])")


def _unescape(text: str) -> str:
    return _BACKSLASH.sub(lambda m: m.group(1), text) if "\\" in text else text


_WIDE = re.compile("[\u0100-\U0010ffff]")
_SAME_WIDTH = {2: "\u00a4", 3: "\u00a4x", 4: "\u00a4\u00a4"}
"""A stand-in of the same UTF-8 length for a character above U+00FF (see ``ctype_safe``)."""


def ctype_safe(text: str) -> str:
    """``text`` with every character above U+00FF replaced by ``¤`` (padded with ``x`` or a second
    ``¤`` to the same UTF-8 length), so that byte offsets into the parse are offsets into the original.

    tree-sitter-bash 0.25.1 (the newest on PyPI) calls ``isdigit``/``isalpha`` on the lexer's
    lookahead, which is a code point: past U+00FF that indexes glibc's 384-entry class table out of
    bounds (tree-sitter/tree-sitter-bash#337; ``echo {`` followed by U+10FFFF killed 13 of 20 fresh
    processes here). To bash such characters are only ever word characters (names are ASCII), and so
    is ``¤``; the walker reads every word's text from the original bytes (``_text``)."""
    if text.isascii():
        return text
    return _WIDE.sub(lambda m: _SAME_WIDTH[len(m.group().encode("utf-8", "surrogatepass"))], text)


def _text(node: Node) -> str:
    """The node's text in the original command (the parse saw ``ctype_safe`` of it)."""
    source: bytes = _local.sources[-1]
    return source[node.start_byte:node.end_byte].decode("utf-8", "replace")


_FOLDER_VARIABLES = {"$HOME": "~", "${HOME}": "~", "$PWD": ".", "${PWD}": "."}
"""Expansions whose value the analysis knows: the home folder, and the current folder (``.``, which
``_Walker._join`` puts after the last literal ``cd``)."""
_TILDE_USER = re.compile(r"~([A-Za-z_][A-Za-z0-9_.-]*)(?=/|$)")


def literal_prefix(node: Node) -> str:
    """The fixed text a word starts with, up to its first expansion (``"https://x.io/$p"`` ->
    ``https://x.io/``): what a URL built at run time is known to be."""
    whole = literal(node)
    if whole is not None:
        return whole
    if node.type not in ("concatenation", "string"):
        return ""
    out = ""
    for n, c in enumerate(node.named_children):
        piece = _text(c) if c.type == "string_content" else literal(c, n == 0 and node.type == "concatenation")
        if piece is None:
            return out + (literal_prefix(c) if c.type == "string" else "")
        out += piece
    return out


_PWD_SUBSTITUTION = re.compile(r"^(?:\$\(\s*pwd(?:\s+-[LP])?\s*\)|`\s*pwd(?:\s+-[LP])?\s*`)$")
_GIT_DIR_OPTIONS = frozenset({"--git-dir", "--absolute-git-dir", "--git-common-dir"})


def git_dir_substitution(text: str) -> str | None:
    """``.git`` for ``$(git rev-parse --git-dir)`` (also ``--absolute-git-dir``, ``--git-common-dir``, with
    ``git -C DIR``: ``DIR/.git``), ``.git/X`` for ``--git-path X``; None for any other substitution. The
    folder whose hooks and config git runs, spelled so the ``.git`` rules see it (#29 review)."""
    inner = text[2:-1] if text.startswith("$(") and text.endswith(")") else \
        text[1:-1] if len(text) > 1 and text[0] == text[-1] == "`" else None
    words = inner.split() if inner is not None and len(inner) < 256 else []
    if len(words) < 3 or words[0] != "git":
        return None
    folder, i = "", 1
    while i + 1 < len(words) and words[i] == "-C":
        folder, i = posixpath.join(folder, words[i + 1].strip("'\"")), i + 2
    if words[i] != "rev-parse":
        return None
    rest = words[i + 1:]
    for n, w in enumerate(rest):
        if w in _GIT_DIR_OPTIONS:
            return posixpath.join(folder, ".git")
        if w == "--git-path" and n + 1 < len(rest):
            return posixpath.join(folder, ".git", rest[n + 1].strip("'\""))
    return None
_PLAIN_EXPANSION = re.compile(r"^\$(?:([A-Za-z_][A-Za-z0-9_]*)|\{([A-Za-z_][A-Za-z0-9_]*)\})$")


def _variable(node: Node, quoted: bool) -> str | None:
    """A plain ``$NAME``/``${NAME}`` the analysis knows: set to literals earlier in the line
    (``guardrails.tools.variables``), or ``$HOME``/``$PWD`` (anywhere in a word: ``-d @$HOME/.netrc``
    is the file after the ``@``)."""
    if node.type == "command_substitution" and _PWD_SUBSTITUTION.match(_text(node)):
        return "."  # ``"$(pwd)/x.sh"``: the current folder, as ``$PWD``
    if node.type == "command_substitution":
        return git_dir_substitution(_text(node))
    if node.type not in ("simple_expansion", "expansion"):
        return None
    m = _PLAIN_EXPANSION.match(_text(node))
    if m is None:
        return None
    name = m.group(1) or m.group(2)
    known: Variables | None = getattr(_local, "variables", None)
    if known is not None and name in known:
        return known.value(name, quoted=quoted)
    return _FOLDER_VARIABLES.get(_text(node))


def _tilde(word: str) -> str | None:
    """Bash's tilde expansion of an unquoted word's start: ``~+`` is the current folder, ``~root`` and
    ``~name`` that user's home (``/root``, ``/home/name``, where Linux puts it); ``~-`` (the folder
    before the last ``cd``) is not known: None. ``~`` itself stays (``lexical`` expands it)."""
    if word == "~+" or word.startswith("~+/"):
        return "." + word[2:]
    if word == "~-" or word.startswith("~-/"):
        return None
    m = _TILDE_USER.match(word)
    if m is None:
        return word
    home = "/root" if m.group(1) == "root" else "/home/" + m.group(1)
    return home + word[m.end():]


def literal(node: Node, first: bool = True) -> str | None:
    """A word's value when it is fixed text (``~`` stands for the home folder); None otherwise.
    ``first``: the node starts its word (only there does ``~`` name a folder)."""
    kind = node.type
    if kind in ("word", "number"):
        text = _text(node)
        return _tilde(_unescape(text)) if first and text.startswith("~") else _unescape(text)
    if kind == "raw_string":
        return _text(node)[1:-1]
    if kind == "ansi_c_string":
        try:
            return codecs.decode(_text(node)[2:-1], "unicode_escape")
        except (UnicodeDecodeError, ValueError):
            return None
    folder = _variable(node, quoted=False)
    if folder is not None:
        return folder
    if kind == "process_substitution":
        return PROCESS_SUBSTITUTION
    if kind in ("string", "translated_string"):
        pieces: list[str] = []
        for c in node.named_children:
            value = _variable(c, quoted=True) if c.type != "string_content" else _text(c)
            if value is None:
                return None
            pieces.append(value if c.type != "string_content" or "\\" not in value
                          else _DQ_ESCAPE.sub(lambda m: m.group(1), value))
        return "".join(pieces)
    if kind == "concatenation":
        parts = [literal(c, first and n == 0) for n, c in enumerate(node.named_children)]
        return None if any(p is None for p in parts) else "".join(p for p in parts if p is not None)
    return None


@dataclass(slots=True)
class _Pending:
    """One command's words (None: not a literal), their nodes and its redirects; ``text`` once read."""

    words: list[str | None]
    targets: list[Node]
    redirects: list[Node]
    text: str | None = None
    done: bool = False


class _Walker:
    def __init__(self) -> None:
        self.facts = ShellFacts()
        self.nodes = 0
        self.parsed = 0
        self.scanned = 0
        """Characters and tokens of embedded programs read (awk's): counted in ``work``, not ``MAX_NODES``."""
        self.cwd = ""
        """A literal ``cd`` target seen so far ("" = the starting folder; None-like "?" = unknown)."""
        self.downloaded: set[str] = set()
        self.downloaders: set[str] = set()
        self.written: set[str] = set()
        self.stdin_path: str | None = None
        """The file a ``<`` redirect feeds the current command (to spot a downloaded script)."""
        self.seen: set[str] = set()
        """The segments recorded so far (``_record``)."""
        self.dirs: list[str] = []
        """The folders ``pushd`` left, for ``popd``."""
        self.path_dirs: list[str] = []
        """Literal folders a ``PATH=`` setting in the line names (``PATH=.:$PATH``): a bare command word may
        run a downloaded file there."""
        self.git_listers: set[str] = set()
        """Programs that listed a ``.git`` path earlier in the line (``find .git``): what they feed a copier
        or an archiver (``| cpio -pdm evil``) is a git folder under another name."""
        self.oldcwd: str | None = None
        """The folder before the last ``cd`` (``cd -`` goes back there); None: the one before the line."""
        self.variables = Variables()
        self.prefixes: dict[int, str] = {}
        """The literal starts of the current command's non-literal words, by distance from its end (a
        wrapper's tail keeps them): where a URL built at run time goes."""
        self.pending: _Pending | None = None
        """The current command's words and redirects, for the text it writes (``_content``): read only
        when it writes a file, and saved and restored around every nested command."""

    @staticmethod
    def text_pending(text: str | None) -> _Pending:
        """A pending command whose written text is ``text`` (None: not in the line), for the Windows readers."""
        return _Pending([], [], [], text, True)

    def windows(self, dialect: str, text: str, depth: int, feed: list[str], stdin: str | None) -> None:
        """Read ``text`` as PowerShell or cmd (``guardrails.tools.winshell``) into this walker's facts."""
        try:
            winshell.read_code(self, dialect, text, depth, feed, stdin)
        except Unreadable as e:
            raise _Stop(e.status, e.detail) from None

    # -- structure ----------------------------------------------------------------------------
    def line(self, text: str, depth: int, feed: list[str], stdin: str | None) -> None:
        if depth > MAX_DEPTH:
            raise _Stop("too_complex")
        data = text.encode("utf-8", "surrogatepass")
        self.parsed += len(data)
        if self.parsed > MAX_PARSED_BYTES:
            raise _Stop("too_complex")
        safe = ctype_safe(text).encode("utf-8", "surrogatepass")
        tree = _parser().parse(safe)
        if tree.root_node.has_error:
            raise _Stop("error")
        sources: list[bytes] = _local.__dict__.setdefault("sources", [])
        sources.append(data)  # a nested ``bash -c '...'`` parse pushes its own and pops it on return
        pending = self.pending
        try:
            self.visit(tree.root_node, depth, feed, stdin)
        finally:
            sources.pop()
            self.pending = pending

    def _count(self, depth: int) -> None:
        self.nodes += 1
        if self.nodes > MAX_NODES or depth > MAX_DEPTH:
            raise _Stop("too_complex")

    def visit(self, node: Node, depth: int, feed: list[str], stdin: str | None) -> list[str]:
        """Walk ``node``; return the programs it runs (to feed a later pipeline stage)."""
        self._count(depth)
        kind = node.type
        if kind == "list":
            return self._list(node, depth, feed, stdin)
        if kind == "pipeline":
            return self._pipeline(list(node.named_children), depth, feed, stdin)
        if kind == "redirected_statement":
            return self._redirected(node, depth, feed, stdin)
        if kind == "command":
            return self._command(node, depth, feed, stdin, [])
        if kind == "variable_assignment":  # a statement of its own (``F=x cmd`` goes to _command)
            self._assignment(node, depth)
            parent = node.parent
            self._remember(node, nameref=parent is not None and parent.type == "declaration_command"
                           and _declares_nameref(parent))
        ran: list[str] = []
        if kind == "for_statement":
            self._loop_variable(node)
        # ``( cd sub && ... )``, ``$(cd x; ...)``: a subshell's ``cd`` ends with it (its files stay made)
        scoped = (self.cwd, list(self.dirs), self.oldcwd) if kind in _SUBSHELLS else None
        for child in node.named_children:
            ran += self.visit(child, depth + (kind in ("command_substitution", "subshell")), feed, stdin)
        if scoped is not None:
            self.cwd, self.dirs, self.oldcwd = scoped
        return ran

    def _list(self, node: Node, depth: int, feed: list[str], stdin: str | None) -> list[str]:
        spine: list[Node] = []
        cur: Node | None = node
        while cur is not None and cur.type == "list":  # left-nested: walk the spine, not recursion
            self._count(depth)
            kids = cur.named_children
            spine.extend(reversed(kids[1:]))
            cur = kids[0] if kids else None
        if cur is not None:
            spine.append(cur)
        ran: list[str] = []
        for part in reversed(spine):
            ran += self.visit(part, depth, feed, stdin)
        return ran

    def _pipeline(self, stages: list[Node], depth: int, feed: list[str], stdin: str | None) -> list[str]:
        upstream = dict.fromkeys(feed)  # distinct programs, in order: a long pipeline of ``cat`` is one
        ran: dict[str, None] = {}
        for n, stage in enumerate(stages):
            out = self.visit(stage, depth, list(upstream), stdin if n == 0 else "pipe")
            for prog in out:
                upstream[prog] = ran[prog] = None
            if len(upstream) > MAX_FEEDERS:
                raise _Stop("too_complex")
        return list(ran)

    def _redirected(self, node: Node, depth: int, feed: list[str], stdin: str | None) -> list[str]:
        body = node.child_by_field_name("body")
        redirects = _nested([c for c in node.named_children if c.type in _REDIRECT_TYPES])
        ran = self._apply(body, redirects, depth, feed, stdin)
        for r in redirects:  # ``cat <<EOF | sh``: the pipeline continues inside the heredoc node
            rest = [c for c in r.named_children if c.type not in ("heredoc_start", "heredoc_body", "heredoc_end")
                    and r.type == "heredoc_redirect"]
            if rest:
                ran += self._pipeline(rest, depth, [*feed, *ran], "pipe")
        return ran

    def _apply(self, body: Node | None, redirects: list[Node], depth: int, feed: list[str],
               stdin: str | None) -> list[str]:
        """Run ``body`` with ``redirects``. tree-sitter hangs ``a && b < f`` and ``a | b > f`` on the
        whole list or pipeline; the shell binds them to the last command, so they are moved there."""
        self._count(depth)
        if body is None:
            self._group_redirects(redirects, depth)
            return []
        if body.type == "command":
            return self._command(body, depth, feed, stdin, redirects)
        if body.type == "redirected_statement":
            inner = [c for c in body.named_children if c.type in _REDIRECT_TYPES]
            return self._apply(body.child_by_field_name("body"), [*inner, *redirects], depth, feed, stdin)
        if body.type in ("list", "pipeline") and body.named_children:
            kids = body.named_children
            if body.type == "list":
                ran = self.visit(kids[0], depth, feed, stdin) if len(kids) > 1 else []
                return ran + self._apply(kids[-1], redirects, depth, feed, stdin)
            ran = self._pipeline(kids[:-1], depth, feed, stdin)
            return ran + self._apply(kids[-1], redirects, depth, [*feed, *ran], "pipe" if ran else stdin)
        ran = self.visit(body, depth, feed, _stdin_of(redirects) or stdin)
        self._group_redirects(redirects, depth)
        return ran

    def _group_redirects(self, redirects: list[Node], depth: int) -> None:
        """The redirects of a group (``{ ...; } > f``, ``( ... ) > f``): what it writes is not one
        command's text, so no command's text stands for it."""
        saved, self.pending = self.pending, None
        try:
            for r in redirects:
                self._redirect_paths(r, depth)
        finally:
            self.pending = saved

    # -- one simple command -------------------------------------------------------------------
    def _command(self, node: Node, depth: int, feed: list[str], stdin: str | None,
                 outer: list[Node]) -> list[str]:
        words: list[str | None] = []
        splits: set[int] = set()
        prefixes: dict[int, str] = {}
        procsub: list[str] = []
        outputs: list[Node] = []
        redirects = list(outer)
        targets: list[Node] = []
        for child in node.named_children:
            self._count(depth)
            if child.type in _REDIRECT_TYPES:
                redirects += _nested([child])
            elif child.type == "variable_assignment":
                self._assignment(child, depth)
                self._substitutions(child, depth, procsub)
            else:
                target = child.named_children[0] if child.type == "command_name" and child.named_children else child
                words.append(literal(target))
                targets.append(target)
                if words[-1] is None:
                    prefixes[len(words) - 1] = literal_prefix(target)
                    if _splits(target):
                        splits.add(len(words) - 1)
                self._substitutions(target, depth, procsub, outputs)
        saved, self.pending = self.pending, _Pending(words, targets, redirects)
        try:
            return self._run_command(words, redirects, prefixes, splits, procsub, outputs, depth, feed, stdin)
        finally:
            self.pending = saved

    def _run_command(self, words: list[str | None], redirects: list[Node], prefixes: dict[int, str],
                     splits: set[int], procsub: list[str], outputs: list[Node], depth: int, feed: list[str],
                     stdin: str | None) -> list[str]:
        for r in redirects:
            self._redirect_paths(r, depth)
            if r.type == "file_redirect" and r.named_children:
                self._substitutions(r, depth, procsub, outputs)
            elif r.type == "heredoc_redirect":
                self._heredoc_body(r, depth)
        source = _stdin_of(redirects)
        self.stdin_path = _stdin_path(redirects)
        tail = frozenset(len(words) - i for i in splits)
        self.prefixes = {len(words) - i: p for i, p in prefixes.items()}
        # A command that reads a downloaded file passes the download on (``cat x.sh | sh``, ``base64 -d x >
        # y.sh``): to what it feeds and to the files it writes, as the downloader itself would.
        reads_download = bool(self.downloaded) and (any(w and self._is_download(w) for w in words[1:]) or (
            self.stdin_path is not None and self._is_download(self.stdin_path)))
        # ``curl URL | tee x.sh``, ``curl URL | base64 -d > x.sh``: fed by a download, what it writes holds it
        fed_download = sorted(p for p in set(feed) if p in cmds.DOWNLOADERS)
        if fed_download:
            reads_download = True
            self.downloaders.update(fed_download)
        program = program_name(words[0]) if words and words[0] is not None else ""
        if self.downloaded and not reads_download:  # ``dd if=x.sh of=y.sh``: a read the words do not spell
            reads_download = any(op == "read" and self._is_download(path)
                                 for op, path in cmds.file_operands(program, words[1:]))
        if reads_download and program == "tee":
            self.downloaded.update(self._key(w) for w in words[1:] if w and not w.startswith("-"))
        elif reads_download:  # ``| sponge y``, ``| dd of=y``, ``dd if=x.sh of=y``, ``| sort -o y``: what it writes
            made = [*written_files(program, words[1:]), *cmds.file_operands(program, words[1:])]
            self.downloaded.update(self._key(path) for op, path in made if op == "write")
        ran = self.argv(words, depth, [*feed, *procsub], source or stdin, tail) + procsub
        if reads_download:
            ran += sorted(self.downloaders)
        for out in outputs:  # ``tee >(sh)``, ``> >(bash)``: fed by this command, as a pipe would be
            ran += self.visit(out, depth + 1, [*feed, *ran], "pipe")
        if ran and (ran[0] in cmds.DOWNLOADERS or reads_download):  # ``curl URL > x.sh``: x.sh holds the download
            for r in redirects:
                dest = r.child_by_field_name("destination")
                path = literal(dest) if dest is not None and r.type == "file_redirect" else None
                if path is not None and _op(r) in _WRITE_REDIRECTS:
                    self.downloaded.add(self._key(path))
                    if ran[0] in cmds.DOWNLOADERS:
                        self.downloaders.add(ran[0])
        return ran

    def _assignment(self, node: Node, depth: int) -> None:
        """``HTTPS_PROXY=host``, ``export PIP_INDEX_URL=...``: a setting that sends programs elsewhere;
        ``GIT_SSH_COMMAND='...'``: one that makes them run a command."""
        name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
        if name is not None:
            self._setting(_text(name), literal(value) if value is not None else "", depth,
                          _text(value) if value is not None else "")

    def _remember(self, node: Node, nameref: bool) -> None:
        """``F=/etc/x``, ``export F=/etc/x`` (not ``F=x cmd``: only ``cmd`` sees that one)."""
        name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
        if name is None or name.type != "variable_name":
            return
        appends = any(not c.is_named and _text(c) == "+=" for c in node.children)
        literal_value = "" if value is None else literal(value)
        self.variables.assign(_text(name), None if nameref or appends else literal_value)

    def _loop_variable(self, node: Node) -> None:
        """``for f in a b``: f holds each word (a glob stays a pattern; none at all: ``$@``, unknown)."""
        name = node.child_by_field_name("variable")
        if name is None:
            return
        values = [literal(c) for c in node.children_by_field_name("value")]
        if not values or None in values:
            self.variables.assign(_text(name), None)
        for v in values:
            self.variables.assign(_text(name), v)

    def _setting(self, name: str, value: str | None, depth: int, raw: str | None = None) -> None:
        """``raw``: the value as written, when it is not a literal (``PATH=.:$PATH``)."""
        if name.upper() == "PATH":  # ``PATH=.:$PATH x``: a bare command word may name a file in these folders
            given = value if value is not None else (raw or "").strip("\"'")
            entries = given.split(";") if ";" in given else given.split(":")  # Windows: ``.;C:\bin;%PATH%``
            self.path_dirs += [self._key(e or ".") for e in entries if "$" not in e and "`" not in e and "%" not in e]
        loaded = _loaded_files(name, value) if self.downloaded else []
        if any(self._is_download(f) for f in loaded):
            # ``BASH_ENV=x.sh bash build.sh``, ``LD_PRELOAD=./x.so ls``, ``NODE_OPTIONS='-r ./x.js' npm test``:
            # the next program loads the downloaded file as code before its own
            self._record({"program": DYNAMIC, "options": [], "fed_by": sorted(self.downloaders or {"curl"}),
                          "script": "file", "stdin": None})
        if value is not None:
            self.facts.urls += net.setting_targets(name, value)
        self.facts.autorun += git_dir_setting(name, value)
        command = setting(name, value)
        if command is not None:
            self._embedded(command, depth)

    def _substitutions(self, node: Node, depth: int, procsub: list[str], outputs: list[Node] | None = None) -> None:
        """Walk the commands inside a word: ``$(...)``, backticks, ``<(...)``; an output substitution
        ``>(...)`` goes to ``outputs`` (its commands read what the command writes: walked after it)."""
        stack = [node]
        while stack:
            cur = stack.pop()
            self._count(depth)
            if cur.type == "command_substitution":
                self.visit(cur, depth + 1, [], None)
            elif cur.type == "process_substitution" and outputs is not None and _text(cur).startswith(">("):
                outputs.append(cur)
            elif cur.type == "process_substitution":
                procsub += self.visit(cur, depth + 1, [], None)
            else:
                stack.extend(cur.named_children)

    def _heredoc_body(self, r: Node, depth: int) -> None:
        """An unquoted heredoc expands its body: ``$(...)`` and backticks there run. The grammar gives
        ``$(...)`` as nodes but not backticks (parsed here), and under ``<<-`` with a pipe it gives
        neither: a body that spells a substitution the parse did not find cannot be seen (inline sh)."""
        start = next((c for c in r.children if c.type == "heredoc_start"), None)
        body = next((c for c in r.children if c.type == "heredoc_body"), None)
        if start is None or body is None or any(q in _text(start) for q in "'\"\\"):
            return  # <<'EOF': the body is text
        found: list[str] = []
        self._substitutions(body, depth, found)
        text = _text(body)
        for m in _BACKTICKS.finditer(text):
            self.line(m.group(1), depth + 1, [], None)
        parsed = any(c.type == "command_substitution" for c in body.named_children)
        if "$(" in text and not parsed:
            self._inline_shell([], None)

    def _redirect_paths(self, r: Node, depth: int) -> None:
        if r.type == "herestring_redirect":
            for c in r.named_children:
                self._substitutions(c, depth, [])
            return
        if r.type != "file_redirect":
            return
        dest = r.child_by_field_name("destination")
        op = _op(r)
        if dest is None or dest.type == "number":
            return
        path = literal(dest)
        if op in (">&", "<&") and path in ("-", None):
            return  # ``>&-`` closes; ``>&$fd`` duplicates a descriptor
        socket = _DEV_SOCKET.match(path or "")
        if socket:  # bash itself connects: ``> /dev/tcp/host/port``
            self.facts.urls.append(f"tcp://{net.bracket(socket.group(1))}")
        elif path is not None and not cmds.not_a_file(path):
            self._path("write" if op in _WRITE_REDIRECTS or op == ">&" else "read", path)

    def argv(self, words: list[str | None], depth: int, feed: list[str], stdin: str | None,
             splits: frozenset[int] = frozenset()) -> list[str]:
        """Judge one simple command given as words (None: not a literal). Returns what it runs.
        ``splits``: the words (counted from the end, so that a wrapper's tail keeps them) that bash
        splits into several (``$x``, ``"$@"``)."""
        for _ in range(16):
            if not words:
                return []
            # Not a literal, or a glob / brace expansion (``/bin/b?sh``, ``{bash,-c,id}``): the shell
            # decides which program it is, the parse cannot.
            prog = "$" if words[0] is None or _EXPANDS.search(words[0]) or has_alternatives(words[0]) \
                else program_name(words[0])
            self._wrapper_options(prog, words[1:])
            if prog == "env":  # env HTTPS_PROXY=host curl ...
                for w in words[1:]:
                    name, eq, value = (w or "").partition("=")
                    if eq and re.match(r"^[A-Za-z_]\w*$", name):
                        self._setting(name, value, depth)
            unwrapped = cmds.unwrap(prog, words[1:])
            if unwrapped is None:
                break
            if unwrapped.script is not None or unwrapped.hidden:
                if unwrapped.via_shell or unwrapped.hidden:
                    self._inline_shell(feed, stdin)
                if unwrapped.script is not None:
                    self.line(unwrapped.script, depth + 1, feed, stdin)
                return [prog]
            words = unwrapped.argv
        else:
            raise _Stop("too_complex")
        args = words[1:]
        windows = winprograms.windows_program(self, prog.lower(), args, depth, feed, stdin) \
            if prog.lower() in _WINDOWS_PROGRAMS else None
        if windows is not None:
            return windows
        if prog.lower() == "cmd" and self._cmd_inline(args, depth, feed, stdin):
            return [prog]
        self._segment(prog, args, depth, feed, stdin, len(words) in splits, words[0])
        return [prog]

    def _cmd_inline(self, args: list[str | None], depth: int, feed: list[str], stdin: str | None) -> bool:
        """``cmd /c LINE`` (``/k``, ``/r``, after ``/s /q /d``...): LINE is read as cmd reads it. False when there
        is no ``/c``: ``cmd`` alone reads its commands from stdin (the ``cmd <`` form, judged as a segment)."""
        for i, a in enumerate(args):
            low = (a or "").lower()
            if a is None or not low.startswith("/"):
                return False
            if low[:2] in ("/c", "/k", "/r"):
                rest = ([a[2:]] if len(a) > 2 else []) + args[i + 1:]
                self._record({"program": "cmd", "options": ["/c"], "fed_by": sorted(set(feed)), "script": "inline",
                              "stdin": stdin})
                if any(r is None for r in rest):
                    self._inline_shell(feed, stdin)  # built at run time: not seen
                elif rest:
                    self.windows("cmd", " ".join(r for r in rest if r is not None), depth + 1, feed, stdin)
                return True
        return False

    def _segment(self, prog: str, args: list[str | None], depth: int, feed: list[str], stdin: str | None,
                 split: bool = False, word: str | None = None) -> None:
        prefixes = self.prefixes  # a nested parse (``bash -c``) sets its own
        if word is not None and (("/" in word or "\\" in word) and self._is_download(word) or "/" not in word and any(
                self._is_download(posixpath.join(d, word + ext)) for d in self.path_dirs for ext in _RUN_SUFFIXES)):
            # ``chmod +x x.sh; ./x.sh``: the kernel runs the downloaded file with whatever interpreter its
            # first line names, which the line does not show: any program, fed by the download.
            self._record({"program": DYNAMIC, "options": [], "fed_by": sorted(self.downloaders or {"curl"}),
                          "script": "file", "stdin": stdin})
        code_opts = _CODE_FILE_OPTS.get(prog, _SHELL_CODE_FILE_OPTS if prog in SHELLS else frozenset())
        if code_opts and self.downloaded and any(
                name in code_opts and value is not None and self._is_download(value)
                for name, value in cmds.options_with_values(args, code_opts)):
            # ``make -f x``, ``awk -f x``, ``sed -f x``, ``bash --rcfile x -i``: the downloaded file is the code
            self._record({"program": DYNAMIC, "options": [], "fed_by": sorted(self.downloaders or {"curl"}),
                          "script": "file", "stdin": stdin})
        interp = prog in SCRIPT_INTERPRETERS or prog == "$"
        base = _SHELL_VALUE_OPTS if prog in SHELLS else _INTERP_VALUE_OPTS
        values = base | _PROGRAM_VALUE_OPTS.get(prog, frozenset()) if interp else frozenset()
        opts, first = (powershell_options(args) if prog in ("pwsh", "powershell")
                       else cmds.options_before_operands(args, values))
        if split:  # ``$x`` may expand to ``bash -c ...``: its options are unknown
            opts.append(UNKNOWN_OPTIONS)
        if prog in SHELLS and "--command" in opts:
            opts.append("-c")  # fish --command 'id' is fish -c
        fed = set(feed)
        seg: Segment = {"program": prog, "options": sorted(set(opts)), "fed_by": [], "script": None,
                        "stdin": stdin}
        operands = args[first:]
        stdin_code = False
        if prog in ("pwsh", "powershell") and "-c" in opts:
            self._powershell_inline(opts, operands, depth, feed, stdin, seg)
            return
        if interp:
            module = _module_name(args) if prog in _MODULE_PROGRAMS and "-m" in opts else None
            from_script = self._script(prog, opts, operands, depth, seg, module)
            stdin_code = module in _STDIN_CODE_MODULES or bool(_STDIN_CODE_OPTS.get(prog, frozenset()) & set(opts))
            if prog != "$" and seg["script"] in ("file", "module") and not stdin_code:
                # ``curl URL | python3 -m json.tool``, ``python3 tool.py < data.json``: the code is the file or the
                # module; what feeds stdin is data (a script file is allowed: the interpreter rule's advice)
                fed = from_script
            else:
                fed |= from_script
        code_from_stdin = not interp or prog == "$" or seg["script"] not in ("file", "module") or stdin_code
        if code_from_stdin and stdin == "file" and self.stdin_path is not None \
                and self._is_download(self.stdin_path):
            fed.add("download")
        if prog in ("source", ".") and operands and operands[0] is not None \
                and self._is_download(operands[0]):
            fed.add("download")
        if "download" in fed:
            fed.discard("download")
            fed |= self.downloaders or {"curl"}
        seg["fed_by"] = sorted(p for p in fed if p)
        self._record(seg)
        self.prefixes = prefixes
        self._effects(prog, args, depth, feed, stdin)

    def _powershell_inline(self, opts: list[str], operands: list[str | None], depth: int, feed: list[str],
                           stdin: str | None, seg: Segment) -> None:
        """``pwsh -Command CODE`` (the words after it, joined), ``-EncodedCommand B64``: the code is read as
        PowerShell (``guardrails.tools.winshell``), as a Windows agent's harness runs every command. Code the
        line does not show (a variable, undecodable base64) is an inline ``sh -c``; ``-Command -`` reads stdin."""
        seg["script"] = "inline"
        self._record(seg)
        if operands == ["-"] or not operands:
            self._record({**seg, "script": "stdin", "options": sorted(set(opts) - {"-c"})})
            return
        code = None if None in operands else " ".join(o for o in operands if o is not None)
        if code is not None and "-encodedcommand" in opts:
            code = winshell.decode_encoded(code)
        if code is None:
            self._inline_shell(feed, stdin)
            return
        self.windows("powershell", code, depth + 1, feed, stdin)

    def _script(self, prog: str, opts: list[str], operands: list[str | None], depth: int, seg: Segment,
                module: str | None = None) -> set[str]:
        """Where an interpreter's code comes from (``seg["script"]``); a script file is read. Returns
        ``{"download"}`` when that file was downloaded earlier in the line."""
        sub = cmds.subcommand(prog, operands[0]) if operands else None
        if sub == "eval":
            seg["options"] = sorted({*opts, "eval"})
            seg["script"] = "inline"
            return set()
        if sub is not None:
            if sub != "run":
                return set()  # deno test, bun install, R CMD check: runs no code of the model's line
            more, first = cmds.options_before_operands(operands[1:], _INTERP_VALUE_OPTS)
            opts, operands = [*opts, *more], operands[1 + first:]
            if not operands or cmds.subcommand(prog, operands[0]) is not None:
                return set()  # bun run test: a package.json script
        if "-m" in opts and prog in _MODULE_PROGRAMS:
            if module in _INLINE_MODULES:
                seg["options"] = sorted({*opts, "-c"})  # the operands are code, as with python -c
                seg["script"] = "inline"
                return set()
            seg["script"] = "module"
            # ``curl -o x.py URL; python3 -m x``: the module is the downloaded file (the folder is on sys.path)
            base = (module or "").replace(".", "/")
            made = {self._key(f"{base}{tail}") for tail in (".py", "/__main__.py", "/__init__.py")} if base else set()
            return {"download"} if made & set(self.downloaded) else set()
        elif any(o in _INLINE_BY_PROGRAM.get(prog, _INLINE_OPTS) for o in opts):
            seg["script"] = "inline"
            if (prog in SHELLS or prog == "$") and operands and operands[0] is not None and "-c" in opts:
                self.line(operands[0], depth + 1, [], None)
        elif operands and operands[0] is not None and (operands[0] in _STDIN_FILES or _PIPE_FILE.match(operands[0])):
            seg["script"] = "stdin"  # bash /dev/stdin <<< id, python3 <(echo ...), source /dev/stdin
            if operands[0] not in _STDIN_FILES:
                seg["stdin"] = "pipe"
        elif operands and operands[0] not in ("-", None) and "-s" not in opts:
            seg["script"] = "file"
            self._path("read", str(operands[0]))
            return {"download"} if self._is_download(str(operands[0])) else set()
        else:
            seg["script"] = "stdin"
        return set()

    def _effects(self, prog: str, args: list[str | None], depth: int, feed: list[str], stdin: str | None) -> None:
        if prog in ("cd", "pushd"):
            target = next((a for a in args if a is None or not a.startswith(("-", "+"))), "~" if prog == "cd" else None)
            if prog == "pushd":
                self.dirs.append(self.cwd)
            previous = self.cwd
            if prog == "cd" and "-" in args and self.oldcwd is not None:
                self.cwd = self.oldcwd  # ``cd -``: back to the folder before the last cd
            else:  # (``cd -`` before any cd in the line: the folder before the line, unknown: home, as before)
                self.cwd = "?" if target is None else self._join(target)
            self.oldcwd = previous
            return
        if prog == "popd":
            self.cwd = self.dirs.pop() if self.dirs and not args else "?"
            return
        if prog in _SETS_VARIABLES:  # read F, mapfile A, unset F, printf -v F, getopts o F
            for a in args:
                self.variables.forget(a or "")
        self._copied_download(prog, args)
        table = written_files(prog, args)
        made = {path for op, path in table if op != "read"}
        for op, path in cmds.file_operands(prog, args):
            if not (op == "read" and path in made):  # ``tar -czf out.tgz``, ``unzip -d out``: not a read
                self._path(op, path)
        for op, path in table:
            self._path(op, path)
        if self.cwd and not self.cwd.startswith("?") and in_git_folder(self.cwd + "/x"):
            # ``cd .git && cp -r . ../evil``: the operands are read from inside the git folder
            args = [a if a is None or a.startswith("-") else self._key(a) for a in args]
        self.facts.autorun += autorun_settings(prog, args)
        if prog == "git":
            self._git_run(args)
        for path in _moved_in(prog, args):  # ``ln -s x .npmrc``, ``git mv notes.txt .npmrc``: text not in the line
            if prog == "git":
                self._path("write", path)  # also gets the path rules (a link's name already has them)
            elif settings_kind(path) is not None:
                self.facts.writes.append((self._join(path), None))
        self.facts.urls += net.network_targets(prog, args)
        built = {len(args) - d: p for d, p in self.prefixes.items() if 0 <= len(args) - d < len(args)}
        self.facts.urls += net.built_targets(prog, args, built)
        for op, path in net.transfer_files(prog, args):
            self._path(op, path)
        for f in net.downloaded_files(prog, args):
            self._path("write", f)
            self.downloaded.add(self._key(f))
            self.downloaders.add(prog)
        fed = _stdin_text(self.pending.redirects) if prog == "sqlite" and self.pending is not None else None
        lines, touched, scanned = embedded(prog, args, fed)
        self.scanned += scanned
        for found in lines:
            self._embedded(found, depth)
        saved, self.pending = self.pending, None  # sed's ``w`` and awk's ``print >`` write input lines, not the script
        try:
            for op, path in touched:
                if not cmds.not_a_file(path):  # awk's ``print > "/dev/stderr"``, sqlite's ``.output /dev/null``
                    self._path(op, path)
        finally:
            self.pending = saved
        if prog == "find":
            # ``{}`` is each file found: at or below a start point, so it stands for the start point (a
            # found file is read or changed where find looked: ``-exec wc -l {} +`` is no missing file
            # named ``{}``, ``find .git/hooks -exec cp x {} \;`` writes into .git); with several start
            # points, for none of them (not followed)
            starts = list(itertools.takewhile(lambda a: a is not None and not a.startswith(("-", "(", "!", ")")),
                                              args)) or ["."]
            each: str | None = starts[0] if len(starts) == 1 else None
            # a file downloaded earlier in the line at or below a start point is among the files found:
            # ``curl -o x.sh ..; find . -name x.sh -exec sh {} \;`` runs it
            fetched = next((d for d in sorted(self.downloaded) for s in starts if _below(d, self._key(str(s)))), None)
            for flag in ("-exec", "-execdir", "-ok", "-okdir"):
                if flag in args:
                    start = args.index(flag) + 1
                    end = next((i for i in range(start, len(args)) if args[i] in (";", "+")), len(args))
                    words = [each if a == "{}" else None if a is not None and "{}" in a else a
                             for a in args[start:end]]
                    self.argv(words, depth + 1, feed, stdin)
                    if fetched is not None and "{}" in args[start:end]:
                        shown = fetched if fetched.startswith("/") else "./" + fetched
                        self.argv([shown if a == "{}" else w for a, w in zip(args[start:end], words, strict=True)],
                                  depth + 1, feed, stdin)
        self._listed_git_folder(prog, args, feed)

    def _listed_git_folder(self, prog: str, args: list[str | None], feed: list[str]) -> None:
        """``find .git | cpio -pdm evil``, ``find .git | xargs cp --parents -t evil``, ``tar -T <(find .git)``:
        files a lister named under ``.git`` handed to a program that copies or packs the files it is given
        by name: a git folder under another name, as ``cp -r .git evil`` is."""
        operands = [a for a in args if a is not None and not a.startswith("-")]
        if prog in _LISTERS and any(_in_git_dir(self._key(a)) for a in operands):
            self.git_listers.add(prog)
        if prog in _LIST_COPIERS and self.git_listers & set(feed) and not any(
                a is not None and in_git_folder(self._key(a)) for a in operands[-1:]):
            self.facts.autorun.append(f"{prog} of files listed from a git folder (a git folder under another name)")

    def _wrapper_options(self, prog: str, args: list[str | None]) -> None:
        """What a wrapper's own options touch: ``xargs -a FILE`` reads it; ``env -C DIR`` and ``sudo -D
        DIR`` run the command there (its relative paths, and the line's after it, start there)."""
        opts = _WRAPPER_FILES.get(prog)
        if opts is None:
            return
        for name, value in cmds.options_with_values(args, cmds.wrapper_value_options(prog) | opts):
            if name in opts and value is not None:
                self._path("read", value)
                if prog != "xargs":
                    self.cwd = self._join(value)

    def _copied_download(self, prog: str, args: list[str | None]) -> None:
        """``cp x.sh y.sh``, ``mv``, ``ln -s``, ``install``, ``rsync`` of a downloaded file: the copy (or the
        file of that name inside a destination folder) is the download too. Any copy into a folder makes
        the file of that name there (written in this line: a later read of it is not a missing file)."""
        if prog not in ("cp", "mv", "ln", "install", "rsync", "ditto"):
            return
        touched = cmds.file_operands("cp" if prog == "ditto" else prog, args)
        sources = [p for _, p in touched[:-1]]
        if len(touched) < 2:
            return
        target = touched[-1][1]
        inside = {self._key(posixpath.join(target, posixpath.basename(p.rstrip("/")))) for p in sources}
        self.written.update(inside)  # ``cp a.py build/ && cat build/a.py``: made here, judged with build/
        if any(self._is_download(p) for p in sources):
            self.downloaded.add(self._key(target))
            self.downloaded.update(inside)

    def _git_run(self, args: list[str | None]) -> None:
        """Record the folder git runs in when it is not the starting one (``git -C a -C b`` is ``a/b``)."""
        _, rest = git_subcommand(args)
        folder = self.cwd
        for name, value in cmds.options_with_values(args[:len(args) - len(rest)], frozenset({"-C", "-c"})):
            if name == "-C":
                if value is None:
                    return  # git -C "$d": not known
                folder = value if value.startswith(("/", "~")) or not folder else posixpath.join(folder, value)
        if folder and folder != "?" and not folder.startswith("?"):
            self.facts.git_runs.append(folder)

    def _inline_shell(self, feed: list[str], stdin: str | None) -> None:
        """A command line handed to ``sh -c``: by a wrapper (``su -c``), or one the parse cannot see."""
        self._record({"program": "sh", "options": ["-c"], "fed_by": sorted(set(feed)), "script": "inline",
                      "stdin": stdin})

    def _embedded(self, found: Embedded, depth: int) -> None:
        """A command line another program runs (``guardrails.tools.embedded``): judged as the model's own."""
        if found.line is None:
            self._inline_shell([], None)
        else:
            self.line(found.line, depth + 1, [], found.stdin)

    def _record(self, seg: Segment) -> None:
        """Keep ``seg`` unless an identical one is kept already: a pipeline of 5,000 ``cat`` is two
        facts (the first and the piped ones), not 5,000 for every rule and the audit record to read."""
        key = repr(sorted(seg.items()))
        if key not in self.seen:
            self.seen.add(key)
            self.facts.segments.append(seg)

    # -- paths ---------------------------------------------------------------------------------
    def _content(self) -> str | None:
        """The text the current command writes (``_written_text``), worked out on first use."""
        p = self.pending
        if p is None:
            return None
        if not p.done:
            shown = [_text(t) if w is not None else literal_prefix(t) + EXPANSION for w, t in zip(p.words, p.targets,
                                                                                                  strict=False)]
            p.text, p.done = _written_text(p.words, shown, _stdin_text(p.redirects)), True
        return p.text

    def _join(self, path: str) -> str:
        if path.startswith(("/", "~")) or not self.cwd or _WINDOWS_ABSOLUTE.match(path):
            return path
        return posixpath.join(self.cwd, path)

    def _is_download(self, path: str) -> bool:
        """Whether ``path`` names a file downloaded earlier in the line; a glob names every file it
        matches (``sh y.*``, ``sh [y].sh`` run the downloaded y.sh)."""
        key = self._key(path)
        if key in self.downloaded:
            return True
        return bool(_GLOB.search(path)) and any(fnmatch.fnmatchcase(d, key) for d in self.downloaded)

    def _key(self, path: str) -> str:
        """The file ``path`` names, whatever its spelling: joined to the current folder, ``.`` and ``..``
        folded (``./x.sh``, ``"$PWD/x.sh"``, ``src/../x.sh`` and ``x.sh`` are one file). Lexical: a symbolic
        link in the line is not followed."""
        return posixpath.normpath(self._join(path.replace("\\", "/") if "\\" in path else path))

    def _path(self, op: str, path: str) -> None:
        if has_alternatives(path) or has_alternatives(self.cwd):
            for one in expand(self._join(path)):  # F set to several values: each is checked
                self._one_path(op, one, joined=True)
            return
        self._one_path(op, path)

    def _one_path(self, op: str, path: str, joined: bool = False) -> None:
        """``joined``: ``path`` is already joined to the current folder (each value of an alternative)."""
        if not joined and self.cwd == "?" and not path.startswith(("/", "~")) and not _WINDOWS_ABSOLUTE.match(path):
            return  # relative to a folder the parse cannot know
        full = path if joined else self._join(path)
        key = posixpath.normpath(full.replace("\\", "/") if "\\" in full else full)  # (``.\\x`` is ``x``)
        if op == "read" and key in self.written:
            return  # made earlier in this line (``echo x > a && cat a``): its write was judged
        if op == "write":
            self.written.add(key)
            content = self._content()
            if settings_kind(full) is not None or is_git_config_name(full) \
                    or (content and looks_like_requirements(content)):
                self.facts.writes.append((full, content))
        self.facts.paths.append((op, full))


_SPLIT_IN_QUOTES = re.compile(r'^\$(?:@|\{@\}|\{[^}]*\[[@*]\]\})$')


def _splits(node: Node) -> bool:
    """Whether bash may turn this word into several: an unquoted expansion or substitution, or
    ``"$@"``/``"${a[@]}"`` in quotes."""
    kind = node.type
    if kind in ("simple_expansion", "expansion", "command_substitution"):
        return True
    if kind == "string":
        return any(_SPLIT_IN_QUOTES.match(_text(c)) for c in node.named_children)
    return kind == "concatenation" and any(_splits(c) for c in node.named_children)


_PS_COMMAND = ("-command", "-encodedcommand")
_PS_VALUE = ("-executionpolicy", "-workingdirectory", "-configurationname", "-outputformat",
             "-inputformat", "-settingsfile", "-custompipename", "-windowstyle", "-version")


def powershell_options(args: list[str | None]) -> tuple[list[str], int]:
    """PowerShell's options are single-dash words, any unambiguous prefix (``-NoProfile``, ``-Comm``,
    ``-ec``): ``-c`` stands for -Command and -EncodedCommand (inline code), others are lowercased whole."""
    opts: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a is None or not a.startswith(("-", "/")) or len(a) < 2:
            break
        low = "-" + a[1:].lower()
        if low in ("-c", "-e", "-ec", "-enc") or any(p.startswith(low) for p in _PS_COMMAND) and len(low) > 2:
            opts.append("-c")
            if low in ("-e", "-ec", "-enc") or len(low) > 2 and "-encodedcommand".startswith(low):
                opts.append("-encodedcommand")
            return opts, i + 1
        if low in ("-f", "-fi", "-fil", "-file"):  # -File x.ps1: the script file (the operand after it)
            opts.append("-file")
            return opts, i + 1
        opts.append(low)
        i += 2 if any(p.startswith(low) for p in _PS_VALUE) and len(low) > 2 else 1
    return opts, i


def _declares_nameref(node: Node) -> bool:
    """``declare -n r=F``: r names another variable; its text is not its value."""
    return any(c.type == "word" and _text(c).startswith("-") and "n" in _text(c) for c in node.named_children)


def _op(redirect: Node) -> str:
    return next((_text(c) for c in redirect.children if not c.is_named), "")


def _stdin_of(redirects: list[Node]) -> str | None:
    for r in redirects:
        if r.type == "herestring_redirect":
            return "herestring"
        if r.type == "heredoc_redirect":
            return "heredoc"
        if r.type == "file_redirect" and _op(r) in ("<", "<>") and r.child_by_field_name("descriptor") is None:
            return "file"
    return None


def _stdin_path(redirects: list[Node]) -> str | None:
    for r in redirects:
        dest = r.child_by_field_name("destination")
        if r.type == "file_redirect" and _op(r) == "<" and dest is not None:
            return literal(dest)
    return None


def _moved_in(prog: str, args: list[str | None]) -> list[str]:
    """Files that take another file's content without a write of it: a link's name (``ln``) and the
    destination of ``git mv``."""
    if prog == "ln":
        return [p for op, p in cmds.file_operands(prog, args)[-1:] if op == "change"]
    if prog == "git":
        sub, rest = git_subcommand(args)
        if sub == "mv":
            _, operands = cmds.split_operands(rest, frozenset())
            return [str(operands[-1])] if len(operands) >= 2 and operands[-1] is not None else []
    return []


def _nested(redirects: list[Node]) -> list[Node]:
    """The redirects with those the grammar hangs inside a heredoc redirect (``cat <<EOF > f``: the
    ``> f`` is a child of the heredoc node), which bash applies to the same command."""
    out: list[Node] = []
    for r in redirects:
        out.append(r)
        if r.type == "heredoc_redirect":
            out += [c for c in r.named_children if c.type in ("file_redirect", "herestring_redirect")]
    return out


def _stdin_text(redirects: list[Node]) -> str | None:
    """The text a heredoc or herestring feeds the command, with ``EXPANSION`` where bash fills in text at
    run time (``$X``, ``$(...)``, backticks in an unquoted heredoc), or None."""
    for r in redirects:
        if r.type == "heredoc_redirect":
            return _heredoc_text(r)
        if r.type == "herestring_redirect":
            words = [c for c in r.named_children if c.type not in _REDIRECT_TYPES]
            return " ".join(v if (v := literal(c)) is not None else literal_prefix(c) + EXPANSION for c in words)
    return None


_EXPANSION_NODES = frozenset({"simple_expansion", "expansion", "command_substitution", "arithmetic_expansion"})


def _heredoc_text(r: Node) -> str:
    start = next((c for c in r.children if c.type == "heredoc_start"), None)
    body = next((c for c in r.children if c.type == "heredoc_body"), None)
    if body is None:
        return ""
    if start is not None and any(q in _text(start) for q in "'\"\\"):
        return _text(body)  # <<'EOF': the body is text
    source: bytes = _local.sources[-1]
    out: list[bytes] = []
    at = body.start_byte
    for c in body.named_children:
        if c.type in _EXPANSION_NODES:
            out += [source[at:c.start_byte], EXPANSION.encode()]
            at = c.end_byte
    out.append(source[at:body.end_byte])
    text = b"".join(out).decode("utf-8", "replace")
    return _BACKTICKS.sub(EXPANSION, text)


_C_ESCAPE = re.compile(r"\\(?:x([0-9A-Fa-f]{1,2})|u([0-9A-Fa-f]{1,4})|U([0-9A-Fa-f]{1,8})|0?([0-7]{1,3})|(.))", re.DOTALL)
_C_SIMPLE = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f",
             "v": "\v", "\\": "\\"}


def _c_unescape(text: str) -> str:
    """``echo -e``/``printf`` backslash escapes (``\\x2f`` is ``/``), as bash and dash decode them."""
    def one(m: re.Match[str]) -> str:
        code = m.group(1) or m.group(2) or m.group(3)
        if code:
            return chr(min(int(code, 16), 0x10FFFF))
        if m.group(4):
            return chr(int(m.group(4), 8))
        return _C_SIMPLE.get(m.group(5), "\\" + m.group(5))
    return _C_ESCAPE.sub(one, text) if "\\" in text else text


_PRINTF_CONVERSION = re.compile(r"%(?:%|[-+ #0']*(?:\d+|\*)?(?:\.(?:\d+|\*))?([a-zA-Z]))")


def _printf(args: list[str]) -> str:
    """What ``printf FORMAT ARGS`` prints, near enough to see the hosts in it: each conversion takes the
    next argument (the format repeats while arguments remain), then the escapes are decoded."""
    if args and args[0] == "-v":
        args = args[2:]
    if args and args[0] == "--":
        args = args[1:]
    if not args:
        return ""
    fmt, rest = args[0], list(args[1:])
    out: list[str] = []
    for _ in range(len(rest) + 1):
        used = 0

        def conv(m: re.Match[str]) -> str:
            nonlocal used
            if m.group(0) == "%%":
                return "%"
            used += 1
            value = rest.pop(0) if rest else ""
            return _c_unescape(value) if m.group(1) == "b" else value
        out.append(_PRINTF_CONVERSION.sub(conv, fmt))
        if not rest or not used:
            break
    return _c_unescape("".join(out))


_STATE_REPORTS = frozenset({"freeze", "list", "compile", "export", "requirements"})
"""``pip freeze``, ``uv pip compile``, ``poetry export``, ``pipenv requirements``: a package manager printing
what it installed or resolved (from sources already checked), not text of the model's."""
_PACKAGE_TOOLS = frozenset({"pip", "uv", "poetry", "pipenv", "pdm", "pip-compile", "conda", "mamba"})


def _written_text(words: list[str | None], raws: list[str], stdin_text: str | None) -> str | None:
    """The text a command writes (to its output or to the files it edits) when the line spells it out:
    ``echo``/``printf`` operands, ``cat``/``tee`` of a heredoc or herestring, a ``sed`` script; ""
    for a package manager's report of its own state; None otherwise (the content is not in the line).
    ``raws``: each word as written, for the words that are not literals (``"registry=$REG"``: the
    setting is seen, its host is not)."""
    shown_words = [w if w is not None else r for w, r in zip(words, raws, strict=False)]
    for _ in range(16):
        if not words or words[0] is None:
            return None
        prog = program_name(words[0])
        unwrapped = cmds.unwrap(prog, words[1:])
        if unwrapped is None:
            break
        if unwrapped.script is not None or unwrapped.hidden:
            return None
        words = unwrapped.argv
    args = words[1:]
    given = shown_words[len(shown_words) - len(args):]
    shown = " ".join(given)
    if prog == "echo":  # bash's echo prints escapes as written, dash's (and echo -e) decodes them: both
        return shown + "\n" + _c_unescape(shown) if "\\" in shown else shown
    if prog == "printf":
        return shown + "\n" + _printf(given)
    if prog == "sed":  # the script's own text (``s///``, ``a``/``i``/``c``); a file it reads in (``r``) is not seen
        return None if any(op == "read" for op, _ in sed(args)[1]) else shown + sed_hosts(shown)
    if prog in ("cat", "tee") and stdin_text is not None and (prog == "tee" or not [
            a for a in args if a is not None and not a.startswith("-")]):
        return stdin_text
    if (prog in _PACKAGE_TOOLS or prog == "python") and set(args) & _STATE_REPORTS:
        return ""
    return None


DIALECTS = ("bash", "powershell", "cmd", "windows")
"""How a line is read: as bash (the default), PowerShell, cmd.exe, or ``windows``: a Windows agent's line
whose shell may be either, read both ways and judged on both readings."""


def analyze(command: str, stdin: str | None = None, dialect: str = "bash") -> ShellFacts:
    """Facts about one command line (never raises on any input; see ``status``). ``stdin="tty"``: the
    line runs in an interactive terminal, so an interpreter it starts reads what is typed next."""
    if len(command.encode("utf-8", "surrogatepass")) > MAX_COMMAND_BYTES:
        return ShellFacts(status="too_large")
    if dialect == "windows":
        return _both_windows_shells(command, stdin)
    return _read(command, stdin, dialect)


def _read(command: str, stdin: str | None, dialect: str) -> ShellFacts:
    walker = _Walker()
    _local.variables = walker.variables
    try:
        if dialect in ("powershell", "cmd"):
            walker.windows(dialect, command, 0, [], stdin)
        else:
            walker.line(command, 0, [], stdin)
    except _Stop as stop:
        return ShellFacts(segments=walker.facts.segments, status=stop.status, detail=stop.detail,
                          work=walker.nodes + walker.parsed + walker.scanned)
    except Unreadable as e:  # a Windows system program met in a bash line (``mshta URL``)
        return ShellFacts(segments=walker.facts.segments, status=e.status, detail=e.detail,
                          work=walker.nodes + walker.parsed + walker.scanned)
    except RecursionError:
        return ShellFacts(status="too_complex", work=walker.nodes + walker.parsed + walker.scanned)
    finally:
        _local.variables = None
    walker.facts.urls = [u for url in walker.facts.urls for u in expand(url)]
    walker.facts.work = walker.nodes + walker.parsed + walker.scanned
    if dialect != "bash":  # a path named again is judged the same: once (``type a & type a & ...``)
        walker.facts.paths = list(dict.fromkeys(walker.facts.paths))
    return walker.facts


_SPLIT_ERRORS = frozenset({"ps_error", "cmd_error"})
_POWERSHELL_ONLY = re.compile(r"[;{}]|\$[A-Za-z_{(]|@[({]|\]::|\b[A-Z][a-z]+-[A-Z][A-Za-z]+\b")
"""What only a PowerShell line holds: statements split by ``;``, variables, script blocks, ``@(...)``, .NET
members, ``Verb-Noun`` cmdlets. Such a line is read as PowerShell alone: cmd would read ``mkdir a; cd a``
as one ``mkdir`` of four folders, a reading no agent means (and a false alarm on ``cmake ..``)."""
_CMD_ONLY = re.compile(r"%[A-Za-z_][\w()]*%|\^|(?<!&)&(?!&)|![A-Za-z_]\w*!")
"""What only a cmd line holds: ``%VAR%``, ``^`` escapes, a single ``&``, ``!VAR!``: then both readings count."""


def _both_windows_shells(command: str, stdin: str | None) -> ShellFacts:
    """A Windows agent's line read as PowerShell and as cmd: what either shell would do is judged. A line
    one of them cannot split is that shell's syntax error (it runs nothing there); both: ``error``. Any
    other trouble (code the reader cannot see, a command it does not know) blocks."""
    ps = _read(command, stdin, "powershell")
    if ps.status not in ("ok", "ps_error"):
        return ps  # blocked whatever cmd makes of it
    if ps.status == "ok" and _POWERSHELL_ONLY.search(command) and not _CMD_ONLY.search(command):
        return ps  # ``;``, ``$x``, ``{...}``, ``Verb-Noun``: PowerShell's line (cmd would not split it so)
    cmd = _read(command, stdin, "cmd")
    readings = [f for f in (ps, cmd) if f.status not in _SPLIT_ERRORS]
    work = ps.work + cmd.work
    if not readings:
        return ShellFacts(status="error", detail=ps.detail, work=work)
    trouble = next((f for f in readings if f.status != "ok"), None)
    if trouble is not None:
        return ShellFacts(segments=trouble.segments, status=trouble.status, detail=trouble.detail, work=work)
    seen: set[str] = set()
    segments = [seg for f in readings for seg in f.segments
                if (key := repr(sorted(seg.items()))) not in seen and not seen.add(key)]  # type: ignore[func-returns-value]
    return ShellFacts(segments=segments, work=work,
                      paths=list(dict.fromkeys(p for f in readings for p in f.paths)),
                      urls=list(dict.fromkeys(u for f in readings for u in f.urls)),
                      writes=list(dict.fromkeys(w for f in readings for w in f.writes)),
                      autorun=list(dict.fromkeys(a for f in readings for a in f.autorun)),
                      git_runs=list(dict.fromkeys(g for f in readings for g in f.git_runs)))


def unwrap_argv(argv: list[str]) -> str:
    """An argv list as a command line. ``["bash", "-lc", SCRIPT]`` is how Codex runs every command:
    the wrapper is the harness, not the model's choice, so the script itself is what gets judged."""
    import shlex

    if len(argv) == 3 and program_name(argv[0]) in SHELLS and "-c" in cmds.options_before_operands(argv[1:2])[0]:
        return argv[2]
    return shlex.join(argv)


_RUN_SUFFIXES = ("", ".exe", ".com", ".bat", ".cmd", ".ps1")
"""What a bare command word may be completed with when it is looked up in a folder (Windows' ``PATHEXT``)."""
_WINDOWS_PROGRAMS = frozenset({"certutil", "bitsadmin", "reg", "schtasks", "at", "cscript", "wscript", "wsl",
                               *winprograms.CODE_RUNNERS, *winprograms.MACHINE})
"""Windows system programs read by ``winshell.windows_program`` from any shell (Git Bash runs them too)."""
_LISTERS = frozenset({"find", "ls", "echo", "printf", "tree", "fd", "fdfind", "du", "git"})
"""Programs whose output can name the files below a folder (``git`` for ``git ls-files`` of a folder)."""
_LIST_COPIERS = frozenset({"cpio", "pax", "cp", "mv", "ln", "install", "rsync", "ditto", "scp", "tar", "zip", "bsdtar",
                           "7z", "7za", "afio"})
"""Programs that copy or pack files named on their input or in their operands (through ``xargs``)."""


def _below(path: str, start: str) -> bool:
    """Whether ``path`` (a ``_key``) is ``start`` or inside it; ``.`` holds every relative path."""
    if start == ".":
        return not path.startswith(("/", "~", "../")) and path != ".."
    return path == start or path.startswith(start.rstrip("/") + "/")


def _in_git_dir(path: str) -> bool:
    """A path at or inside a ``.git`` folder (not git's ``*.lock`` files)."""
    return in_git_folder(path) or in_git_folder(path + "/x")


_LOADER_SETTINGS = frozenset({"BASH_ENV", "ENV", "PYTHONSTARTUP"})
"""Settings whose value is a script a shell or interpreter runs first (``ENV``: sh and dash, interactive)."""
_LIBRARY_SETTINGS = frozenset({"LD_PRELOAD", "LD_AUDIT", "DYLD_INSERT_LIBRARIES"})
_NODE_LOAD_OPTS = frozenset({"-r", "--require", "--import", "--loader", "--experimental-loader"})


def _loaded_files(name: str, value: str | None) -> list[str]:
    """The files a setting makes the next program load as code: ``BASH_ENV``'s script, ``LD_PRELOAD``'s
    libraries, ``NODE_OPTIONS``' ``--require``/``--import``, ``RUBYOPT``'s ``-r``; ``ZDOTDIR``'s ``.zshenv``."""
    if value is None or not value:
        return []
    if name in _LOADER_SETTINGS:
        return [value]
    if name == "ZDOTDIR":
        return [posixpath.join(value, ".zshenv"), posixpath.join(value, ".zshrc")]
    if name in _LIBRARY_SETTINGS:
        return [v for v in re.split(r"[\s:]+", value) if v]
    words = value.split()
    if name == "NODE_OPTIONS":
        found = [v for o, v in cmds.options_with_values(words, _NODE_LOAD_OPTS) if o in _NODE_LOAD_OPTS and v]
        return [f for v in found for f in (v, v + ".js")]
    if name == "RUBYOPT":
        found = [v for o, v in cmds.options_with_values(words, frozenset({"-r"})) if o == "-r" and v]
        return [f for v in found for f in (v, v + ".rb")]
    return []


def _module_name(args: list[str | None]) -> str | None:
    """The NAME of ``python -m NAME`` (``-mNAME``, ``-Im NAME``); None when it is not a literal."""
    for i, a in enumerate(args):
        if a is None or not a.startswith("-") or a.startswith("--"):
            continue
        at = a.find("m")
        if at == 1 or at > 1 and a[1:at].isalpha():
            return a[at + 1:] or (args[i + 1] if i + 1 < len(args) else None)
    return None
