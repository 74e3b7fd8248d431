"""Settings that make programs run code later, by themselves (pure argv readers and a path test).

A hook in ``.git/hooks/``, ``core.hooksPath``, ``core.fsmonitor``, a ``!`` alias, a filter or textconv
driver, an ``include.path`` that pulls in another config: once set, git runs that code on the next
``git commit``/``status``/``diff``, the user's own included, long after the tool call and outside any
check of it. ``direnv allow`` does the same for ``.envrc`` (direnv runs a file only once the user has
allowed that exact content, so writing ``.envrc`` is inert; allowing it is the step that arms it).
Coding agents have no need to edit git's internals or to arm such settings, so with
``[tools] autorun = "block"`` (the default) the rules block:

- a write or change of any path inside a ``.git`` folder, or of a ``.git`` file itself (which names the
  git folder), except git's ``*.lock`` files (removing a stale ``index.lock`` is ordinary repair);
- ``git config`` (and ``git config set``) of a key that runs a program or loads other settings
  (``AUTORUN_KEY``, ``alias.*`` with a ``!`` value); reading, listing and unsetting pass. The pager and
  editor keys are judged as command lines instead (``guardrails.tools.embedded``), like ``-c``;
- ``git init``/``clone --template`` (the template's hooks are copied into the new ``.git``), ``git clone -c``
  of such a key (written into the clone's ``.git/config``: ``core.hooksPath=hooks`` runs the cloned
  repository's own hooks at checkout), and ``git config --edit`` (its editor may write any key);
- ``direnv allow``/``permit``/``grant`` and ``direnv edit`` (which allows on exit).

``git -c key=value`` sets a key for one command, judged now as that command (``embedded``), and is
not persistent: running a hook folder once is running a script file, which the shell rules allow.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re

from guardrails.tools.commands import Argv, options_with_values, split_operands

AUTORUN_KEY = re.compile(r"^(?:core\.(?:hookspath|fsmonitor|sshcommand|askpass|gitproxy)|include\.path"
                         r"|includeif\..+\.path|init\.templatedir|diff\.external|diff\..+\.(?:textconv|command)"
                         r"|.+\.textconv|filter\..+\.(?:clean|smudge|process)|merge\..+\.driver"
                         r"|credential\.(?:.+\.)?helper|gpg\.(?:.+\.)?program|uploadpack\.packobjectshook"
                         r"|remote\..+\.(?:uploadpack|receivepack)|browser\..+\.(?:cmd|path)|man\..+\.(?:cmd|path)"
                         r"|(?:merge|diff)tool\..+\.(?:cmd|path)|interactive\.difffilter|trailer\..+\.(?:command|cmd)"
                         r"|sendemail\.(?:sendmailcmd|tocmd|cccmd))$", re.IGNORECASE)
"""git settings whose value is a program (or a hook folder, or another config file) git runs or reads."""
_BOOLEAN = frozenset({"true", "false", "yes", "no", "on", "off", "1", "0", ""})
_CONFIG_VALUE_OPTS = frozenset({"-f", "--file", "--blob", "--type", "--default", "--comment", "--value"})
_CONFIG_READS = frozenset({"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--get-color", "--get-colorbool",
                           "-l", "--list", "--unset", "--unset-all", "--rename-section", "--remove-section",
                           "--show-origin"})
_CONFIG_VERBS = frozenset({"get", "list", "unset", "rename-section", "remove-section"})
_GIT_VALUE_OPTS = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path",
                             "--config-env", "--super-prefix"})
_CLONE_CONFIG_OPTS = frozenset({"-c", "--config"})
_GIT_DIR_ELSEWHERE = frozenset({"--bare", "--mirror", "--separate-git-dir"})
"""``git init --bare x``, ``clone --mirror``: a git folder not called ``.git``, whose ``config`` and ``hooks/``
the ``.git`` path test does not know; run in it (``cd x && git ...``, ``GIT_DIR=x``), they run code."""
_DIRENV_ARMS = frozenset({"allow", "permit", "grant", "edit"})


def git_config_setting(args: Argv) -> tuple[str | None, str | None] | None:
    """(key, value) that ``git config ...`` args set (None where not a literal); None when they read,
    list or unset (or name no value)."""
    opts, operands = split_operands(args, _CONFIG_VALUE_OPTS)
    if any(o.split("=", 1)[0] in _CONFIG_READS for o in opts):
        return None
    if operands and operands[0] in _CONFIG_VERBS:
        return None
    if operands and operands[0] == "set":
        operands = operands[1:]
    if len(operands) < 2:
        return None
    return operands[0], operands[1]


def git_subcommand(args: Argv) -> tuple[str | None, Argv]:
    """git's subcommand and the arguments after it (global options such as ``-C DIR`` skipped)."""
    i = 0
    while i < len(args):
        a = args[i]
        if a is None or not a.startswith("-"):
            return a, args[i + 1:]
        i += 2 if a in _GIT_VALUE_OPTS else 1
    return None, ()


def runs_code(key: str | None, value: str | None) -> bool:
    """Whether setting git ``key`` to ``value`` makes git run a program later."""
    if key is None:
        return True  # a key built at run time: it may be any of them
    low = key.lower()
    if low.startswith("alias.") or (low.startswith("submodule.") and low.endswith(".update")):
        return value is None or value.lstrip().startswith("!")  # ``update = !cmd``: run by submodule update
    if low == "core.fsmonitor" and value is not None and value.lower() in _BOOLEAN:
        return False  # git's own fsmonitor daemon
    return bool(AUTORUN_KEY.match(low))


def autorun_settings(program: str, args: Argv) -> list[str]:
    """What a command arms to run later (``git config core.hooksPath``, ``direnv allow``), as short
    labels for the rationale; [] for anything else."""
    if program == "direnv":
        _, operands = split_operands(args, frozenset())
        verb = operands[0] if operands else None
        return [f"direnv {verb}"] if verb in _DIRENV_ARMS else []
    if program != "git":
        return []
    sub, rest = git_subcommand(args)
    if sub == "config":
        _, operands = split_operands(rest, _CONFIG_VALUE_OPTS)
        if any(a in ("-e", "--edit") for a in rest) or operands[:1] == ["edit"]:
            return ["git config --edit"]  # the editor (GIT_EDITOR='sed -i ...') may write any key
        setting = git_config_setting(rest)
        if setting is not None and runs_code(*setting):
            return [f"git config {setting[0] or '(a key built at run time)'}"]
    if sub == "clone":  # ``clone -c core.hooksPath=hooks``: written to the clone's .git/config, run at checkout
        for option, value in options_with_values(rest, _CLONE_CONFIG_OPTS):
            if option not in _CLONE_CONFIG_OPTS:
                continue
            key, eq, val = value.partition("=") if value is not None else (None, "", None)
            if runs_code(key, val if eq else None):
                return [f"git clone -c {key or '(a setting built at run time)'}"]
    if sub in ("init", "clone") and any(a in _GIT_DIR_ELSEWHERE or (a or "").startswith("--separate-git-dir=")
                                        for a in rest):
        return [f"git {sub} of a git folder under another name"]  # its config and hooks are ordinary paths
    git_dir = [v for o, v in options_with_values(args[:len(args) - len(rest)], frozenset({"--git-dir"}))
               if o == "--git-dir"]
    if any(v is None or posixpath.basename(posixpath.normpath(v)) != ".git" for v in git_dir):
        return ["git --git-dir (a git folder under another name)"]
    if sub in ("init", "clone") and any(a is not None and (a == "--template" or a.startswith("--template="))
                                          for a in rest):
        return [f"git {sub} --template"]
    return []


_GIT_SETTINGS_FILES = ((".gitconfig",), (".config", "git", "config"), ("etc", "gitconfig"))
"""git's user and system settings files (``~/.gitconfig``, ``$XDG_CONFIG_HOME/git/config``,
``/etc/gitconfig``): read on every git run, with the same hooks, aliases and ``insteadOf`` as ``.git/config``."""


def git_dir_setting(name: str, value: str | None) -> list[str]:
    """``GIT_DIR=x`` (or ``GIT_COMMON_DIR``) naming a folder not called ``.git``: git reads its ``config``
    and runs its ``hooks/``, which the ``.git`` path test does not know."""
    if name.upper() not in ("GIT_DIR", "GIT_COMMON_DIR"):
        return []
    if value is not None and posixpath.basename(posixpath.normpath(value)) == ".git":
        return []
    return [f"{name.upper()} (a git folder under another name)"]


def in_git_folder(path: str) -> bool:
    """A path inside a ``.git`` folder, or a ``.git`` file itself, or one of git's user and system settings
    files (``_GIT_SETTINGS_FILES``), or a ``HEAD`` file (which makes its folder a git folder); not git's
    ``*.lock`` files."""
    if posixpath.basename(path) == "HEAD":
        return True  # what makes a folder a git folder (``x/HEAD`` + ``x/config``: ``cd x && git ...``)
    parts = posixpath.normpath(path).lower().split("/")  # .GIT is .git on a case-insensitive disk
    if any(tuple(parts[-len(tail):]) == tail for tail in _GIT_SETTINGS_FILES):
        return True
    return any(_names_git(p) for p in parts) and not parts[-1].endswith(".lock")


def _names_git(part: str) -> bool:
    """``.git``, or a glob bash expands to it (``.gi?``, ``.g*``: a redirect's word is expanded when it
    matches one file); as in bash, only a pattern that starts with a dot matches a dot file."""
    return part == ".git" or (part.startswith(".") and any(c in part for c in "*?[")
                              and fnmatch.fnmatchcase(".git", part))
