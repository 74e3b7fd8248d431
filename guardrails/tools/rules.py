"""Step 2 of an assessment: pure rules over recorded observations. No filesystem, no environment.

Rules run in this fixed order and the first block wins (one verdict per call); the derived facts
of every rule are still added to the observations:

0. ``unparseable_arguments``: ``unparseable_arguments`` (arguments no client could act on were not
   recovered, a path holding a NUL character, or a shell command that is not valid shell, too large or too complex to judge, or on
   which the parser's worker process crashed or hung: ``shell_parse = "parser_failed"``)
1. ``path_containment``: ``privileged_path``, then ``path_outside_workspace``
   ``autorun``:           ``autorun_setting`` (a write or change inside ``.git/`` or inside a git folder
                          under another name (``git_dir``), a ``git config`` key that runs a program, a
                          hook installer, a copy of ``.git``, ``direnv allow``; unless ``autorun = "allow"``)
2. ``write_manifest``:    ``path_outside_manifest``  (writes inside the workspace only)
3. ``no_such_path``:      ``no_such_path``           (reads inside the workspace only)
4. ``read_before_write``: ``write_without_read``     (writes inside the workspace only)
5. ``shell_interpreter``: ``shell_interpreter``
6. ``egress_allowlist``:  ``egress_not_allowed`` (also the hosts a written package or VCS settings file
                          names as sources: ``guardrails.tools.sources``)
7. ``tainted_egress``:    ``tainted_egress`` (untrusted content in the conversation and a call that sends
                          data out, also to an allowed host: ``guardrails.tools.taint``)
8. ``computer_use``:      ``computer_use_not_allowed`` (unless ``allow_computer_use``)

Path rules apply only when ``workspace_root`` is set. Out-of-workspace targets are containment's
alone, so rules 2-4 never flag the same target twice. Existence facts are unknown (null) when the
workspace is not mounted into the proxy; then rules 3 and 4 cannot and do not block.
"""

from __future__ import annotations

import ntpath
import posixpath
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from config.policy import ToolsPolicy
from guardrails import decision as codes
from guardrails.tools import taint
from guardrails.tools import verdict as ids
from guardrails.tools.autorun import in_git_folder
from guardrails.tools.egress import egress_violation
from guardrails.tools.interpreters import DEFAULT_INTERPRETERS, interpreter_form
from guardrails.tools.paths import in_manifest, is_windows, privileged_entry, within, workspace_form
from guardrails.tools.shell import MAX_COMMAND_BYTES
from guardrails.tools.verdict import Assessment

Obs = dict[str, object]


@dataclass(frozen=True, slots=True)
class Hit:
    rule: str
    reason_code: str
    rationale: str


@dataclass(frozen=True, slots=True)
class Context:
    policy: ToolsPolicy
    workspace: str | None
    """The resolved workspace the rules compare against; None: path rules are off."""
    shown_root: str
    """The workspace as the agent names it, for rationales."""
    targets: list[Obs]
    urls: list[Obs]
    commands: list[Obs]
    allow: tuple[str, ...]
    effect: str = ""
    obs: Mapping[str, object] | None = None


def _dicts(value: object) -> list[Obs]:
    return [dict(v) for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _workspace(policy: ToolsPolicy, obs: Mapping[str, object]) -> str | None:
    """The recorded resolved root when the policy names the same root; else the new root, spelled
    out (a replay that moves the workspace is a dry-run over the old facts)."""
    if not policy.workspace_root:
        return None
    if policy.workspace_root == obs.get("workspace_root") and isinstance(obs.get("workspace"), str):
        return str(obs["workspace"])
    return workspace_form(policy.workspace_root)


def _derive(ctx_policy: ToolsPolicy, ws: str | None, obs: Mapping[str, object], t: Obs) -> None:
    resolved, lex = t.get("resolved"), t.get("lexical")
    if ws is None or not isinstance(resolved, str):
        t.update(in_workspace=None, privileged=None, in_manifest=None)
        return
    home = str(obs.get("home") or "")
    t["in_workspace"] = within(resolved, ws)
    candidates: list[tuple[str, str | None]] = [(p, ws) for p in (lex, resolved) if isinstance(p, str)]
    agent_path, agent_root = t.get("agent_path"), ctx_policy.agent_workspace_root
    if isinstance(agent_path, str):
        candidates.append((agent_path, workspace_form(agent_root) if agent_root else None))
    t["privileged"] = privileged_entry(candidates, ctx_policy.privileged, home=home)
    manifest = ctx_policy.write_manifest
    if t["in_workspace"] and manifest and t.get("op") in ("write", "change"):
        # A plain prefix cut: posixpath.relpath would consult the working directory.
        relative = resolved[len(ws):].lstrip("/") or "."
        if is_windows(ctx_policy.workspace_root or ""):  # compared as windows_form: lowercased, ``/``
            manifest = [m.replace("\\", "/").lower() for m in manifest]
        t["in_manifest"] = in_manifest(relative, manifest)
    else:
        t["in_manifest"] = None


_SHELL_TROUBLE = {
    "error": "is not valid shell syntax (check quoting and brackets)",
    "too_large": f"is longer than the {MAX_COMMAND_BYTES // 1024} KiB the proxy checks; write long "
                 "content with the file-writing tool and keep the command short",
    "too_complex": "nests or chains more than the proxy checks; split it into simpler commands",
    "parser_failed": "could not be parsed (the shell parser failed on it); write it more plainly",
    "ps_error": "is not PowerShell the proxy can split (check quoting and brackets)",
    "cmd_error": "is not a cmd.exe line the proxy can split (check quoting and brackets)",
    "ps_dynamic": "runs PowerShell the proxy cannot read ({detail}: a .NET method or object, a script block, "
                  "or a command or parameters built at run time); write it with plain commands (Get-Content, "
                  "Set-Content, Copy-Item, Invoke-WebRequest -OutFile, a script file)",
    "win_unknown": "uses a Windows command the proxy does not read ({detail}: it changes the machine, installs, "
                   "or runs code the line does not show); use plain file and shell commands, or ask the user "
                   "to run it",
}


def _unparseable(ctx: Context) -> Hit | None:
    obs = ctx.obs or {}
    if obs.get("args") == "invalid_json" and ctx.effect != "none":
        return Hit(ids.UNPARSEABLE, codes.UNPARSEABLE_ARGUMENTS,
                   "Blocked: the arguments of this call are not a valid JSON object, so what it would do "
                   "cannot be checked. Send the call again with complete, valid JSON arguments.")
    if any(t.get("nul") for t in ctx.targets):
        return Hit(ids.UNPARSEABLE, codes.UNPARSEABLE_ARGUMENTS,
                   "Blocked: a path in this call contains a NUL character, which no file name can hold. "
                   "Send the call again with the plain path.")
    trouble = _SHELL_TROUBLE.get(str(obs.get("shell_parse")))
    if trouble and "{detail}" in trouble:
        trouble = trouble.replace("{detail}", str(obs.get("shell_detail") or "a construct"))
    if trouble and not obs.get("unknown_tool"):
        return Hit(ids.UNPARSEABLE, codes.UNPARSEABLE_ARGUMENTS,
                   f"Blocked: the shell command {trouble}, so what it would do cannot be checked.")
    return None


def _computer_use(ctx: Context) -> Hit | None:
    if ctx.effect != "computer" or ctx.policy.allow_computer_use:
        return None
    return Hit(ids.COMPUTER_USE, codes.COMPUTER_USE_NOT_ALLOWED,
               "Blocked: computer-use actions (clicks, typing) are not allowed through this proxy. "
               "Use the file and shell tools instead.")


def _containment(ctx: Context) -> Hit | None:
    for t in ctx.targets:
        if t.get("privileged"):
            return Hit(ids.PATH_CONTAINMENT, codes.PRIVILEGED_PATH,
                       f"Blocked: {t['path']} is in a privileged location ({t['privileged']}) that "
                       f"tools may not touch. Work only with files inside {ctx.shown_root}.")
    for t in ctx.targets:
        if t.get("in_workspace") is False:
            via = ""
            if isinstance(t.get("lexical"), str) and ctx.workspace and within(str(t["lexical"]), ctx.workspace):
                via = " through a symbolic link"
            return Hit(ids.PATH_CONTAINMENT, codes.PATH_OUTSIDE_WORKSPACE,
                       f"Blocked: {t['path']} resolves{via} outside the workspace {ctx.shown_root}. "
                       f"Use a path inside the workspace.")
    return None


def _autorun(ctx: Context) -> Hit | None:
    if ctx.policy.autorun != "block":
        return None
    for t in ctx.targets:
        named = [p for p in (t.get("path"), t.get("lexical"), t.get("resolved")) if isinstance(p, str)]
        if t.get("op") in ("write", "change", "unknown") and any(in_git_folder(p) for p in named):
            return Hit(ids.AUTORUN, codes.AUTORUN_SETTING,
                       f"Blocked: {t['path']} is one of git's own files (.git, .gitconfig), where hooks and settings make "
                       f"git run programs later, unseen. Edit the project's files only; use git commands "
                       f"(git add, git commit) for the repository, and ask the user to change git's setup.")
    for t in ctx.targets:
        git_dir = t.get("git_dir")
        if t.get("op") in ("write", "change", "unknown") and isinstance(git_dir, str):
            if ctx.workspace and within(git_dir, ctx.workspace):
                git_dir = git_dir[len(ctx.workspace):].lstrip("/")  # as the agent sees it, not the proxy's path
            return Hit(ids.AUTORUN, codes.AUTORUN_SETTING,
                       f"Blocked: {t['path']} is inside a git folder under another name ({git_dir} has HEAD, "
                       f"objects/ and refs/), whose config and hooks git runs later, unseen. Edit the project's "
                       f"files only; ask the user to change git's setup.")
    armed = (ctx.obs or {}).get("autorun")
    if isinstance(armed, list) and armed:
        return Hit(ids.AUTORUN, codes.AUTORUN_SETTING,
                   f"Blocked: `{armed[0]}` makes programs run code later by themselves (git hooks, filters, "
                   f"`!` aliases, direnv), outside these checks. Run the commands you need directly; ask the "
                   f"user to make such settings.")
    return None


def _manifest(ctx: Context) -> Hit | None:
    for t in ctx.targets:
        if t.get("in_manifest") is False:
            allowed = ", ".join(ctx.policy.write_manifest)
            return Hit(ids.WRITE_MANIFEST, codes.PATH_OUTSIDE_MANIFEST,
                       f"Blocked: {t['path']} is outside the files this task may write ({allowed}). "
                       f"Keep changes within those files.")
    return None


def _no_such_path(ctx: Context) -> Hit | None:
    if not ctx.policy.no_such_path:
        return None
    for t in ctx.targets:
        if t.get("op") == "read" and t.get("in_workspace") and t.get("exists") is False and not t.get("glob"):
            path = str(t["path"])
            parent = (ntpath if "\\" in path and is_windows(ctx.shown_root) else posixpath).dirname(path.rstrip("/")) or "."
            return Hit(ids.NO_SUCH_PATH, codes.NO_SUCH_PATH,
                       f"Blocked: {t['path']} does not exist. List the directory ({parent}) to find "
                       f"the right name, then retry with the exact path.")
    return None


def _read_before_write(ctx: Context) -> Hit | None:
    if not ctx.policy.read_before_write:
        return None
    for t in ctx.targets:
        known = t.get("read_before") or t.get("written_before")
        # A folder written to (``cp a.py build/``) gets new files; its content is not overwritten.
        if t.get("op") == "write" and t.get("in_workspace") and t.get("exists") is True and not known \
                and not t.get("is_dir"):
            return Hit(ids.READ_BEFORE_WRITE, codes.WRITE_WITHOUT_READ,
                       f"Blocked: {t['path']} exists but was not read in this conversation. Read it "
                       f"first, then make the change based on its actual contents.")
    return None


def _shell(ctx: Context) -> Hit | None:
    entries = ctx.policy.interpreters if ctx.policy.interpreters is not None else DEFAULT_INTERPRETERS
    form = interpreter_form(ctx.commands, entries)
    if form is None:
        return None
    return Hit(ids.SHELL_INTERPRETER, codes.SHELL_INTERPRETER,
               f"Blocked: running code through `{form}` is not allowed. Run the commands directly, "
               f"or write a script file in the workspace and run that.")


def _egress(ctx: Context) -> Hit | None:
    if not ctx.policy.egress_enabled:
        return None
    for u in ctx.urls:
        if u.get("allowed") is False:
            why = egress_violation(u, ctx.allow)
            return Hit(ids.EGRESS, codes.EGRESS_NOT_ALLOWED,
                       f"Blocked: network access denied: {why}. Use an allowed host, or ask the user "
                       f"to grant access to this one.")
    return None


def _tainted(ctx: Context) -> Hit | None:
    why = taint.blocks(ctx.policy, ctx.obs or {})
    return None if why is None else Hit(ids.TAINTED_EGRESS, codes.TAINTED_EGRESS, why)


RULES: Sequence[Callable[[Context], Hit | None]] = (
    _unparseable, _containment, _autorun, _manifest, _no_such_path, _read_before_write, _shell, _egress,
    _tainted, _computer_use,
)


def decide(tool: str, effect: str, observations: Mapping[str, object], policy: ToolsPolicy,
             grants: Iterable[str] = frozenset()) -> Assessment:
    """Decide a call from its observations alone (what replay runs). Pure."""
    obs: Obs = dict(observations)
    if not policy.enabled:
        return Assessment(tool, effect, "allow", None, None, "", obs)
    ws = _workspace(policy, obs)
    targets, urls, commands = _dicts(obs.get("targets")), _dicts(obs.get("urls")), _dicts(obs.get("commands"))
    for t in targets:
        _derive(policy, ws, obs, t)
    allow = (*policy.egress_allow, *grants)
    for u in urls:
        u["allowed"] = egress_violation(u, allow) is None
    shown = policy.agent_workspace_root or (policy.workspace_root if is_windows(policy.workspace_root or "") else ws)
    ctx = Context(policy, ws, shown or "", targets, urls, commands, allow,
                  effect, obs)
    entries = policy.interpreters if policy.interpreters is not None else DEFAULT_INTERPRETERS
    obs.update(targets=targets, urls=urls, commands=commands,
               interpreter=interpreter_form(commands, entries))
    for rule in RULES:
        hit = rule(ctx)
        if hit is not None:
            return Assessment(tool, effect, "block", hit.rule, hit.reason_code, hit.rationale, obs)
    return Assessment(tool, effect, "allow", None, None, "", obs)
