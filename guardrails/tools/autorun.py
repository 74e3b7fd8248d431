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

from guardrails.tools.commands import Argv, file_operands, options_with_values, split_operands

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


_COPIERS = frozenset({"cp", "mv", "rsync", "scp", "install", "ln", "ditto"})
"""Programs that give a folder's files another name; a ``.git`` folder (or files of one) copied, moved or
linked elsewhere makes that place a git folder whose ``config`` and ``hooks/`` are ordinary paths
(``cp -r .git evil``, then ``core.fsmonitor`` in ``evil/config``, then ``git -C evil status`` runs it)."""

HOOK_INSTALLERS: dict[str, frozenset[str | None]] = {
    "pre-commit": frozenset({"install", "init-templatedir"}),
    "pre_commit": frozenset({"install", "init-templatedir"}),  # python -m pre_commit
    "husky": frozenset({None, "install", "init"}),             # v9: bare ``husky`` sets core.hooksPath
    "husky-init": frozenset({None}),
    "lefthook": frozenset({"install", "add"}),
    "simple-git-hooks": frozenset({None}),
    "overcommit": frozenset({"--install", "-i"}),
    "yorkie": frozenset({None}),
    "git-hooks": frozenset({"install", "--install"}),
    "prek": frozenset({"install", "init-templatedir"}),        # pre-commit's drop-in rewrite
    "captainhook": frozenset({"install"}),
    "hk": frozenset({"install"}),
}
"""program -> the first operand (None: none at all) with which it installs git hooks or points
``core.hooksPath`` at a folder of the project's: the same arming as ``git config core.hooksPath``.
Other verbs pass (``pre-commit run``, ``lefthook run``, ``husky uninstall``)."""

RUNNERS: dict[str, int] = {"npx": 0, "pnpx": 0, "bunx": 0, "uvx": 0, "pipx run": 0, "npm exec": 0, "npm x": 0,
                           "pnpm exec": 0, "pnpm dlx": 0, "yarn dlx": 0, "yarn exec": 0, "bun x": 0, "uv run": 0,
                           "poetry run": 0, "pdm run": 0, "pipenv run": 0, "hatch run": 0, "yarn": 0, "pnpm": 0}
"""Package runners that run a tool named next (``npx husky``, ``uv run pre-commit install``), by
``program`` or ``program verb``; ``yarn X``/``pnpm X`` run a package's binary X when X is no verb of
theirs (a hook installer's name never is)."""
_RUNNER_VALUE_OPTS = frozenset({"-p", "--package", "-c", "--call", "--with", "--from", "--python", "--spec"})


def _runner_target(program: str, args: Argv) -> tuple[str, Argv] | None:
    """(tool, its args) when ``program`` is a package runner running a tool; None otherwise."""
    for _ in range(3):
        _, operands = split_operands(args, _RUNNER_VALUE_OPTS)
        verb = operands[0] if operands else None
        key = f"{program} {verb}" if f"{program} {verb}" in RUNNERS else program
        if key not in RUNNERS:
            return None
        if key != program:  # drop the verb
            args = args[args.index(verb) + 1:]
        opts_end = 0
        while opts_end < len(args) and (a := args[opts_end]) is not None and a.startswith("-"):
            opts_end += 2 if a in _RUNNER_VALUE_OPTS else 1
        if opts_end >= len(args) or args[opts_end] is None:
            return None
        tool = _base(str(args[opts_end])).split("@", 1)[0] if not str(args[opts_end]).startswith("@") \
            else str(args[opts_end])
        program, args = tool, args[opts_end + 1:]
        if program not in RUNNERS:
            return program, args
    return None


def _base(word: str) -> str:
    return posixpath.basename(word.rstrip("/")) or word


def hook_installer(program: str, args: Argv) -> str | None:
    """A label when the command installs git hooks (``pre-commit install``, ``npx husky``)."""
    if program in ("python", "python3") and len(args) >= 2 and args[0] == "-m" and args[1] is not None:
        program, args = str(args[1]), args[2:]
    target = _runner_target(program, args)
    if target is not None:
        program, args = target
    verbs = HOOK_INSTALLERS.get(program)
    if verbs is None:
        return None
    _, operands = split_operands(args, frozenset({"-t", "--hook-type", "-c", "--config"}))
    first = next((a for a in args if a in verbs), None) if program == "overcommit" else \
        (operands[0] if operands else None)
    return f"{program} {first or ''}".strip() + " (installs git hooks)" if first in verbs else None


_TAR_CREATE = frozenset({"-c", "--create", "-r", "--append", "-u", "--update"})
_TAR_VALUES = frozenset({"-f", "--file", "-C", "--directory", "-T", "-X", "-b", "-H", "--format", "-I"})


def _archived_git_folder(program: str, args: Argv) -> str | None:
    """``tar -c .git``, ``tar -C .git -c .``, ``zip -r x.zip .git``: a git folder packed to be unpacked under
    another name (``| tar -x -C evil``); the source named, or None."""
    if program == "tar":
        if args and args[0] is not None and args[0][:1].isalpha():
            args = [f"-{args[0]}", *args[1:]]  # ``tar cf - .git``
        given = options_with_values(args, _TAR_VALUES)
        if not {o for o, _ in given} & _TAR_CREATE:
            return None
        _, operands = split_operands(args, _TAR_VALUES)
        named = [v for o, v in given if o in ("-C", "--directory") and v] + [p for p in operands if p]
    elif program == "zip":
        _, operands = split_operands(args, frozenset({"-b", "-n", "-t", "-tt", "-x", "-i", "-P", "-O", "--out"}))
        named = [p for p in operands[1:] if p]
    else:
        return None
    return next((p for p in named if _in_git_dir(p)), None)


def git_folder_copies(program: str, args: Argv) -> list[str]:
    """A ``.git`` folder, or files of one, copied, moved or linked under another name (``_COPIERS``), or
    packed into an archive (``_archived_git_folder``)."""
    packed = _archived_git_folder(program, args)
    if packed is not None:
        return [f"{program} of {packed} (a git folder, to unpack under another name)"]
    if program not in _COPIERS:
        return []
    touched = file_operands("cp" if program == "ditto" else program, args)
    sources = [p for _, p in touched[:-1]] if len(touched) > 1 else []
    target = touched[-1][1] if touched else None
    if target is not None and in_git_folder(target):
        return []  # within .git itself: the write rule judges it
    hit = next((p for p in sources if _in_git_dir(p)), None)
    return [f"{program} {hit} (a git folder under another name)"] if hit is not None else []


def _in_git_dir(path: str) -> bool:
    parts = _parts(path)
    return any(_names_git(p) for p in parts) and not parts[-1].endswith(".lock")


def autorun_settings(program: str, args: Argv) -> list[str]:
    """What a command arms to run later (``git config core.hooksPath``, ``direnv allow``, a hook installer,
    a copy of a ``.git`` folder), as short labels for the rationale; [] for anything else."""
    installer = hook_installer(program, args)
    if installer is not None:
        return [installer]
    copies = git_folder_copies(program, args)
    if copies:
        return copies
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
    parts = _parts(path)
    if parts and parts[-1] == "head":
        return True  # what makes a folder a git folder (``x/HEAD`` + ``x/config``: ``cd x && git ...``)
    if any(tuple(parts[-len(tail):]) == tail for tail in _GIT_SETTINGS_FILES):
        return True
    return any(_names_git(p) for p in parts) and not parts[-1].endswith(".lock")


def _parts(path: str) -> list[str]:
    """The path's names as a case-insensitive disk compares them: lowercased (.GIT is .git on macOS and
    Windows), split at ``/`` and ``\\`` (a Windows agent's separator), with the trailing dots and spaces
    Windows drops from a name removed (``.git.`` and ``.git `` open ``.git``)."""
    folded = posixpath.normpath(path.replace("\\", "/")).lower().split("/")
    return [p if p in (".", "..") else p.rstrip(". ") or p for p in folded]


_SHORT_GIT = re.compile(r"^gi(?:t|[0-9a-f]{4})~\d+$")
"""Windows 8.3 short names that can stand for ``.git`` (``GIT~1``; after four clashes, two letters and
a hash: ``GI1A2B~5``)."""


def _names_git(part: str) -> bool:
    """``.git``, a short name that can stand for it (``_SHORT_GIT``), or a glob bash expands to it
    (``.gi?``, ``.g*``: a redirect's word is expanded when it matches one file); as in bash, only a
    pattern that starts with a dot matches a dot file."""
    return part == ".git" or bool(_SHORT_GIT.match(part)) or (
        part.startswith(".") and any(c in part for c in "*?[") and fnmatch.fnmatchcase(".git", part))


_GIT_CONFIG_NAMES = frozenset({"config", "config.worktree"})
"""The files git reads in a git folder: a file of such a name written with a key that runs a program is
that key set, whichever folder it is in (the folder may be, or become, a git folder: ``cp -r .git evil``)."""
_SECTION = re.compile(r'^\s*\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:\\.|[^"\\])*)")?\s*\]')
_VARIABLE = re.compile(r"^\s*([A-Za-z][A-Za-z0-9-]*)\s*(?:=\s*(.*))?$")


def is_git_config_name(path: str) -> bool:
    parts = _parts(path)
    return bool(parts) and parts[-1] in _GIT_CONFIG_NAMES


def git_config_text(text: str) -> list[str]:
    """The keys that run a program (``runs_code``) which ``text``, read as git's config syntax, sets:
    ``[core]`` + ``fsmonitor = ./x``, ``[alias] x = !sh``, ``[filter "a"]`` + ``clean = ...``. One pass over
    the lines (continued lines joined); a section header may carry a variable on its own line."""
    found: list[str] = []
    section = ""
    for line in text.replace("\\\r\n", "").replace("\\\n", "").splitlines():
        head = _SECTION.match(line)
        if head is not None:
            name, sub = head.group(1).lower(), head.group(2)
            section = f"{name}.{sub}" if sub is not None else name
            line = line[head.end():]
        if not section:  # a piece of a file (an Edit's new text, a sed script): its section is not shown
            found += _sectionless(line)
            continue
        var = _VARIABLE.match(line.split("#", 1)[0].split(";", 1)[0])
        if var is None:
            continue
        key = f"{section}.{var.group(1).lower()}"
        value = (var.group(2) or "").strip().strip('"')
        if runs_code(key, value if var.group(2) is not None else "true"):
            found.append(key)
    return found


_ANY_VARIABLE = re.compile(r"([A-Za-z][A-Za-z0-9-]*)[ \t]*=[ \t]*([^\n/;#]*)")
_SECTIONS = ("core", "alias", "include", "credential", "gpg", "init", "interactive", "sendemail", "uploadpack",
             "diff.x", "filter.x", "merge.x", "mergetool.x", "difftool.x", "trailer.x", "remote.x", "browser.x",
             "man.x", "submodule.x")
"""The sections whose keys can run a program (``AUTORUN_KEY``), with a stand-in subsection name."""


def _sectionless(line: str) -> list[str]:
    """Keys a line may set in whichever section it lands (``\tfsmonitor = ./x`` inserted under an existing
    ``[core]``, ``s/bare = false/fsmonitor = .\\/x/``): each ``name = value`` in it, under every section
    where that name runs a program. Used only for text written into a file named like git's config."""
    out: list[str] = []
    for m in _ANY_VARIABLE.finditer(line):
        name, value = m.group(1).lower(), m.group(2).strip().strip('"')
        out += [f"{s}.{name}" for s in _SECTIONS if runs_code(f"{s}.{name}", value)][:1]
    return out
