"""Step 1 of an assessment: map a call through the catalog and gather facts through the probe.

Observations (JSON-able; this is what the audit log records and replay reads back)::

    args            "ok" | "recovered" | "raw_patch" | "raw_text" | "invalid_json"  (guardrails.tools.arguments)
    unknown_tool    true when the tool is in no catalog (judged by parameter-name heuristics)
    workspace_root  the policy's workspace_root at the time (string or null)
    workspace       that root, resolved (realpath when mounted, else normalised); null when unset
    resolution      "realpath" | "lexical" (workspace not on the proxy's disk) | "none" (no workspace)
    home            the proxy's HOME (what "~" meant)
    targets         [{param, op: read|write|change|unknown, patch_op?, path (as the agent named it),
                      lexical, resolved, glob, exists, is_dir, read_before, written_before,
                     agent_path (only with agent_workspace_root), nul (only when the path holds a NUL),
                      git_dir (a write inside a folder git takes for a git folder, other than .git; mounted only)}]
                    exists/is_dir are null unless resolution is "realpath"
    commands        [{program, options, fed_by, script, stdin}]    (see guardrails.tools.shell)
    shell_parse     "ok" | "error" | "too_large" | "too_complex" | "parser_failed" | null (no command); older records
                    carry "shlex" | "split"
    urls            [{param, scheme, host, userinfo, ip_literal, error}]; a host that a package or VCS settings
                    file names as a source has param "content" and ``file`` (the path as the agent named
                    it); error "unseen" when the text written to such a file is not in the call
    autorun         settings made that run code later (``git config core.hooksPath``, ``direnv allow``)
    grants          per-session egress grants that applied
    session         {"reads": n, "writes": n} successful file reads/writes folded from history

The rules add derived facts on top (``in_workspace``, ``privileged``, ``in_manifest`` per target,
``allowed`` per URL, ``interpreter``); those are recomputed on replay under the replay's policy.
"""

from __future__ import annotations

import posixpath
import re
import shlex
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from config.policy import ToolsPolicy
from guardrails.datamodel import HistoryToolCall
from guardrails.tools import egress, shell
from guardrails.tools.arguments import parse_arguments
from guardrails.tools.autorun import git_config_text, is_git_config_name
from guardrails.tools.catalog import ToolEntry, looks_like_path, lookup, strings, texts
from guardrails.tools.commands import program_name
from guardrails.tools.patch import added_text, find_patch, parse_patch
from guardrails.tools.paths import is_glob, is_windows, lexical, static_prefix, within, workspace_form
from guardrails.tools.probe import WorldProbe
from guardrails.tools.shell_worker import analyze_isolated
from guardrails.tools.sources import fragment_hosts, looks_like_requirements, settings_kind, source_urls
from guardrails.tools.winshell import decode_encoded

FRAGMENT_PARAMS = frozenset({"new_string", "new_str", "insert_text", "edits"})
"""Content parameters that carry a piece of a file (an edit's replacement), not all of it: the text around
it is not in the call, so a bare host in it may complete a URL (``sources.fragment_hosts``)."""
UNSEEN = "unseen"
"""The ``error`` of a settings file's source when the text written to it is not in the call."""

Obs = dict[str, object]
_OPS = {"file_read": "read", "file_write": "write"}
_ABSOLUTE = re.compile(r"^(?:~|/|\\|[A-Za-z]:)")
"""Paths a tool's folder parameter does not prefix: home, POSIX or Windows absolute, a drive (``D:x``)."""


@dataclass(frozen=True, slots=True)
class _Raw:
    """A path as found in the arguments, before resolution."""

    param: str
    op: str
    path: str
    patch_op: str | None = None


@dataclass(frozen=True, slots=True)
class _Found:
    """Everything one call's arguments carry that a rule may look at."""

    effect: str
    args: str
    paths: list[_Raw]
    shell: list[shell.ShellFacts]
    urls: list[tuple[str, str]]
    unknown_tool: bool
    written: list[tuple[str, str | None]]
    """(path, text) for what the call writes where the text matters (``_written``; None: not in the call)."""
    autorun: list[str]


def _parse_args(arguments: str, entry: ToolEntry) -> tuple[dict[str, object], str]:
    value, state = parse_arguments(arguments)
    if isinstance(value, dict):
        return value, state
    # Freeform input (a ``custom`` tool): Codex's apply_patch sends the envelope itself.
    text: str = value if isinstance(value, str) else arguments
    if entry.patch and find_patch(text) is not None:
        return {entry.patch[0]: text}, "raw_patch"
    if entry.command and text.strip() and not text.lstrip().startswith(("{", "[")):
        return {entry.command[0]: text}, "raw_text"  # a freeform shell tool: the input is the command
    return {}, "invalid_json"


def _patch_paths(param: str, text: str) -> list[_Raw]:
    patch = find_patch(text)
    if patch is None:
        return []
    return [_Raw(param, "write", t.path, t.op) for t in parse_patch(patch)]


def _op(entry: ToolEntry, args: dict[str, object]) -> str:
    if entry.read_when is not None:
        param, reads = entry.read_when
        return "read" if args.get(param) in reads else "write"
    return _OPS.get(entry.effect, "unknown")


BASH_TOOLS = frozenset({"Bash", "bash"})
"""Tools whose shell is bash on Windows too (Claude Code runs Git Bash; Anthropic's client ``bash`` tool)."""


def dialect(name: str, policy: ToolsPolicy) -> str:
    """How a tool's string command lines are read: ``windows`` (PowerShell and cmd) when the agent's workspace
    is a Windows path and the tool is not one of ``BASH_TOOLS``, else ``bash``."""
    windows = is_windows(policy.workspace_root or "") or is_windows(policy.agent_workspace_root or "")
    return "windows" if windows and name not in BASH_TOOLS else "bash"


def _argv_line(argv: list[str], default: str) -> tuple[str, str]:
    """(dialect, line) for a command given as argv: ``powershell -Command CODE`` is CODE read as PowerShell,
    ``cmd /c LINE`` is LINE read as cmd, ``bash -lc SCRIPT`` is SCRIPT (the harness's wrapper); any other argv
    is the line that runs it (for a Windows agent, as CreateProcess joins it)."""
    prog = program_name(argv[0]).lower() if argv else ""
    if prog in ("pwsh", "powershell"):
        opts, first = shell.powershell_options([*argv[1:]])
        rest = argv[1 + first:]
        if "-c" in opts and rest and rest != ["-"]:
            code = " ".join(rest)
            decoded = decode_encoded(code) if "-encodedcommand" in opts else code
            if decoded is not None:
                return "powershell", decoded
    if prog == "cmd":
        for i, a in enumerate(argv[1:], 1):
            if not a.startswith("/"):
                break
            if a[:2].lower() in ("/c", "/k", "/r"):
                return "cmd", " ".join(([a[2:]] if len(a) > 2 else []) + argv[i + 1:])
    unwrapped = shell.unwrap_argv(argv)
    if default == "windows" and unwrapped == shlex.join(argv):
        return "windows", subprocess.list2cmdline(argv)
    return "bash", unwrapped


def _command_lines(entry: ToolEntry, args: dict[str, object], paths: list[_Raw], patches: list[str],
                   default: str = "bash") -> list[tuple[str, str, str]]:
    """(param, command line, dialect) for the command roles; apply_patch given as argv is a patch instead (its
    text goes to ``patches``)."""
    lines: list[tuple[str, str, str]] = []
    for param in entry.command:
        given = args.get(param)
        argv = strings(given)
        if isinstance(given, list) and argv and program_name(argv[0]) in ("apply_patch", "applypatch"):
            # Codex: the model may call its shell with apply_patch as argv[0]; the harness applies it.
            paths.extend(_patch_paths(param, "\n".join(argv[1:])))
            patches.append("\n".join(argv[1:]))
            continue
        how, line = _argv_line(argv, default) if isinstance(given, list) and argv else \
            (default, argv[0] if argv else "")
        if line:
            lines.append((param, line, how))
    for param in entry.commands:
        lines += [(param, line, default) for line in strings(args.get(param)) if line]
    return lines


def _lift_nested(args: dict[str, object], names: tuple[str, ...], budget: int = 2000) -> dict[str, object]:
    """For an undeclared tool: values of path- and URL-named keys anywhere in the arguments, lifted to
    the top (``{"options": {"path": "/etc/x"}}`` -> ``{"path": ["/etc/x"]}``), so nesting hides none."""
    found: dict[str, list[str]] = {}
    stack: list[object] = [v for v in args.values() if isinstance(v, (dict, list))]
    while stack and budget > 0:
        budget -= 1
        cur = stack.pop()
        items = cur.items() if isinstance(cur, dict) else ((None, v) for v in cur) if isinstance(cur, list) else ()
        for key, value in items:
            if isinstance(value, (dict, list)):
                stack.append(value)
                if key in names and isinstance(value, list):  # {"file_paths": ["/etc/x", ...]}
                    found.setdefault(key, []).extend(v for v in value if isinstance(v, str))
            elif key in names and isinstance(value, str):
                found.setdefault(key, []).append(value)
    lifted: dict[str, object] = dict(args)
    for key, values in found.items():
        lifted[key] = [*strings(args.get(key)), *values]
    return lifted


def find(name: str, arguments: str, policy: ToolsPolicy, texts_too: bool = True) -> _Found:
    """What a call's arguments carry, by role. No filesystem. ``texts_too=False``: leave out the text
    written (folding the history needs only the paths)."""
    entry = lookup(name, policy.catalog)
    args, state = _parse_args(arguments, entry)
    if not entry.declared:
        args = _lift_nested(args, (*entry.path, *entry.url))
    op = _op(entry, args)
    paths: list[_Raw] = []
    for role in ("path", "paths"):
        for param in entry.params(role):
            for value in strings(args.get(param)):
                if entry.declared or looks_like_path(value):
                    paths.append(_Raw(param, op, value))
    for param in entry.patch:
        for value in strings(args.get(param)):
            paths.extend(_patch_paths(param, value))
    patches: list[str] = []
    lines = _command_lines(entry, args, paths, patches, dialect(name, policy))
    tty = bool(entry.tty_param and args.get(entry.tty_param) is True)
    facts: list[shell.ShellFacts] = []
    # An exec tool's folder parameter (``workdir``, ``dir_path``) is where its relative paths start.
    cwd = next((p.path for p in paths if entry.effect == "exec" and p.param in entry.path), "")
    for param, line, how in lines:
        found = analyze_isolated(line, stdin="tty" if tty else None, dialect=how)
        facts.append(found)
        paths.extend(_Raw(param, o, posixpath.join(cwd, p) if cwd and not _ABSOLUTE.match(p) else p)
                     for o, p in found.paths)
        paths.extend(_patch_paths(param, line))  # apply_patch <<'EOF' ... in a shell script
        patches.append(line)
    urls = [(param, u) for param in entry.url for v in strings(args.get(param)) for u in egress.urls_in(v)
            if entry.declared or "://" in u]
    urls += [("command", u) for f in facts for u in f.urls]
    writes = any(p.op == "write" for p in paths)
    effect = "file_write" if entry.effect == "exec" and writes else entry.effect
    written = _written(entry, args, op, paths) if texts_too else []
    written += [w for text in patches for w in _patch_writes(text)] if texts_too else []
    written += [(path, text) for f in facts for path, text in f.writes]
    autorun = [a for f in facts for a in f.autorun]
    autorun += [f"{key} in {path} (git's config syntax)" for path, text in written
                if text and is_git_config_name(path) for key in git_config_text(text)[:1]]
    return _Found(effect, state, paths, facts, urls, not entry.declared, written, autorun)


def _written(entry: ToolEntry, args: dict[str, object], op: str, paths: list[_Raw]) -> list[tuple[str, str | None]]:
    """(path, text) for what a file tool writes into each of its paths: the ``content`` role's text,
    or for a patch each file's added lines (None for a ``Move to``: the moved file's text is not in it)."""
    out: list[tuple[str, str | None]] = []
    if op in ("write", "unknown") and entry.content:
        text = "\n".join(texts(args, entry.content))
        if "diff" in entry.content:  # Responses apply_patch_call: a V4A diff, its added lines are the text
            text = "\n".join(line[1:] for line in text.splitlines() if line.startswith("+"))
        fragment = "\n".join(texts(args, tuple(n for n in entry.content if n in FRAGMENT_PARAMS)))
        out += [(p.path, text + fragment_hosts(settings_kind(p.path), fragment) if fragment else text)
                for p in paths if p.param in entry.path and text]
    for param in entry.patch:
        for value in strings(args.get(param)):
            out += _patch_writes(value)
    return out


def _patch_writes(text: str) -> list[tuple[str, str | None]]:
    patch = find_patch(text)
    return [(t.path, body) for t, body in added_text(patch)] if patch is not None else []


def _sources(written: list[tuple[str, str | None]], ws: Workspace, probe: WorldProbe) -> list[tuple[str, str]]:
    """(file, URL) for the hosts each written package/VCS settings file names as sources; a file of any
    name whose text reads as a pip requirements file with a source counts as one (``pip install -r``).
    The file is known by the name the agent gave or, when the workspace is mounted, the one it resolves
    to (a symbolic link ``cfg`` -> ``.npmrc``)."""
    out: list[tuple[str, str]] = []
    for path, text in written:
        kind = settings_kind(path)
        if kind is None and ws.resolution == "realpath":
            resolved = ws.locate(path, probe)[1]
            kind = settings_kind(resolved) if resolved else None
        if kind is None and text and looks_like_requirements(text):
            kind = "requirements"
        if kind is None:
            continue
        if text is None:
            out.append((path, egress.OPAQUE + UNSEEN))
            continue
        out += [(path, u) for u in source_urls(kind, text, path)]
    return out


@dataclass(frozen=True, slots=True)
class Workspace:
    root: str | None
    """The policy value as written."""
    absolute: str | None
    resolved: str | None
    resolution: str
    home: str
    agent_root: str

    @classmethod
    def probe(cls, policy: ToolsPolicy, base_dir: str, probe: WorldProbe) -> Workspace:
        home = probe.home()
        root = policy.workspace_root
        if not root:
            return cls(None, None, None, "none", home, policy.agent_workspace_root)
        if is_windows(root):  # a Windows agent's folder the proxy does not see: its paths by spelling
            return cls(root, workspace_form(root), workspace_form(root), "lexical", home, policy.agent_workspace_root)
        absolute = posixpath.normpath(posixpath.join(base_dir, root))
        if probe.is_dir(absolute):
            return cls(root, absolute, probe.realpath(absolute), "realpath", home,
                       policy.agent_workspace_root)
        return cls(root, absolute, absolute, "lexical", home, policy.agent_workspace_root)

    def locate(self, raw: str, probe: WorldProbe) -> tuple[str | None, str | None]:
        """(lexical, resolved) for a path the agent named; (None, None) without a workspace."""
        if self.absolute is None:
            return None, None
        root = self.root if self.root and is_windows(self.root) else self.absolute  # read the Windows way
        lex = lexical(raw, home=self.home, workspace=root, agent_root=self.agent_root)
        base = static_prefix(lex) if is_glob(raw) else lex
        return lex, probe.realpath(base) if self.resolution == "realpath" else base


def fold_session(history: Sequence[HistoryToolCall], policy: ToolsPolicy, ws: Workspace,
                 probe: WorldProbe) -> tuple[set[str], set[str]]:
    """Resolved paths successfully read, and successfully written, earlier in the conversation.
    Only calls whose result came back ok count: a failed read taught the model nothing."""
    reads: set[str] = set()
    writes: set[str] = set()
    for call in history:
        if call.result_ok is not True:
            continue
        for raw in find(call.name, call.arguments, policy, texts_too=False).paths:
            if is_glob(raw.path) or raw.patch_op == "delete":
                continue
            _, resolved = ws.locate(raw.path, probe)
            if resolved is not None and raw.op in ("read", "write"):
                (reads if raw.op == "read" else writes).add(resolved)
    return reads, writes


class SessionFold:
    """``fold_session`` of one history, computed on first use and shared by every call assessed against
    that history (the calls of one message, each choice's): an agent's message with several tool calls
    folds its conversation once, not once per call. Only for calls assessed together, through one
    probe: the disk may change between turns, so nothing is kept across requests."""

    __slots__ = ("_folded", "_history")

    def __init__(self, history: Sequence[HistoryToolCall]) -> None:
        self._history = history
        self._folded: tuple[set[str], set[str]] | None = None

    def get(self, policy: ToolsPolicy, ws: Workspace, probe: WorldProbe) -> tuple[set[str], set[str]]:
        if self._folded is None:
            self._folded = fold_session(self._history, policy, ws, probe)
        return self._folded


def _git_folder_around(resolved: str, root: str, probe: WorldProbe) -> str | None:
    """The folder at or above ``resolved`` (below the workspace root) that git would take for a git folder
    (``HEAD``, ``objects/`` and ``refs/`` in it), or None: a copy of ``.git`` under another name, whose
    ``config`` and ``hooks/`` git runs (``git -C evil status``). Up to three probes per folder, cached."""
    cur = resolved
    while within(cur, root) and cur != root:
        if probe.exists(cur + "/HEAD") and probe.is_dir(cur + "/objects") and probe.is_dir(cur + "/refs"):
            return cur
        cur = posixpath.dirname(cur)
    return None


def _target(raw: _Raw, ws: Workspace, probe: WorldProbe, reads: set[str], writes: set[str]) -> Obs:
    lex, resolved = ws.locate(raw.path, probe)
    glob = is_glob(raw.path)
    mounted = ws.resolution == "realpath" and resolved is not None
    facts: Obs = {"param": raw.param, "op": raw.op, "path": raw.path, "lexical": lex,
                  "resolved": resolved, "glob": glob,
                  "exists": probe.exists(resolved) if mounted and resolved else None,
                  "is_dir": probe.is_dir(resolved) if mounted and resolved else None,
                  "read_before": resolved in reads, "written_before": resolved in writes}
    if raw.patch_op:
        facts["patch_op"] = raw.patch_op
    if mounted and resolved and raw.op in ("write", "change", "unknown") and ws.resolved is not None:
        git_dir = _git_folder_around(resolved, ws.resolved, probe)
        if git_dir is not None:
            facts["git_dir"] = git_dir
    if "\0" in raw.path:
        facts["nul"] = True
    if ws.agent_root and ws.absolute is not None:
        # The path in the agent's own namespace: privileged places are named from its side too.
        facts["agent_path"] = lexical(raw.path, home=ws.home, workspace=ws.agent_root, agent_root="")
    return facts


def observe(name: str, arguments: str, history: Sequence[HistoryToolCall], policy: ToolsPolicy,
            probe: WorldProbe, base_dir: str, grants: Iterable[str] = (),
            session: SessionFold | None = None) -> tuple[str, Obs]:
    """(effect, observations) for one call. The only step that probes the world. ``session``: the
    history's fold shared with the other calls assessed with it (same history, same probe)."""
    found = find(name, arguments, policy)
    ws = Workspace.probe(policy, base_dir, probe)
    fold = session if session is not None else SessionFold(history)
    reads, writes = fold.get(policy, ws, probe) if found.paths else (set(), set())
    segments = [seg for f in found.shell for seg in f.segments]
    urls = [egress.url_facts(u, p) for p, u in found.urls]
    urls += [{**egress.url_facts(u, "content"), "file": f} for f, u in _sources(found.written, ws, probe)]
    statuses = [f.status for f in found.shell]
    parse = next((st for st in statuses if st != "ok"), "ok") if statuses else None
    detail = next((f.detail for f in found.shell if f.status != "ok" and f.detail), "")
    obs: Obs = {
        "args": found.args, "workspace_root": ws.root, "workspace": ws.resolved,
        "resolution": ws.resolution, "home": ws.home,
        "targets": [_target(r, ws, probe, reads, writes) for r in found.paths],
        "commands": segments, "shell_parse": parse, "urls": urls,
        "grants": sorted(set(grants)), "session": {"reads": len(reads), "writes": len(writes)},
    }
    if found.unknown_tool:
        obs["unknown_tool"] = True
    if detail:
        obs["shell_detail"] = detail[:200]
    armed = list(found.autorun)
    if ws.resolution == "realpath" and ws.resolved is not None:
        for folder in (f for facts in found.shell for f in facts.git_runs):
            resolved = ws.locate(folder, probe)[1]
            if resolved is not None and _git_folder_around(resolved, ws.resolved, probe) is not None:
                armed.append(f"git run in {folder}, a git folder under another name (its hooks and "
                             f"core.fsmonitor run)")
    if armed:
        obs["autorun"] = armed
    return found.effect, obs
