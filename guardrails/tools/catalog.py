"""Tool name -> effect and parameter roles, so the rules never see an agent's own schema.

Built-ins cover Gemini CLI, Claude Code and Codex CLI (names as they appear on the wire). A policy
``[tools.catalog.NAME]`` entry replaces the built-in of the same name. A role names the parameter(s)
that carry it; built-ins list several candidate names where a client renamed a parameter between
versions (Gemini CLI: ``absolute_path`` -> ``file_path``, ``path`` -> ``dir_path``).

Roles: ``path`` (one path), ``paths`` (a list of paths or globs), ``command`` (a shell string or an
argv list), ``commands`` (a list of shell strings), ``url`` (a URL, or free text with URLs in it),
``patch`` (an ``apply_patch`` envelope), ``content`` (the text a file tool writes: read only for the
sources a package or VCS settings file names, ``guardrails.tools.sources``; a list of objects is read
for the same parameter names inside them, as MultiEdit's ``edits[].new_string``).

Tool-call items that are not named functions get the item type as their name (the wire modules
decode them so): Responses ``local_shell_call``, ``shell_call``, ``apply_patch_call``,
``computer_call``. A tool found in no catalog is ``unknown``: its parameters are read by name
heuristics (``HEURISTIC_*``) and the audit records ``unknown_tool``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from config.policy import ToolSpec

ROLES = ("path", "paths", "command", "commands", "url", "patch")


@dataclass(frozen=True, slots=True)
class ToolEntry:
    effect: str
    """file_read | file_write | exec | network | none | unknown"""
    path: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    command: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()
    url: tuple[str, ...] = ()
    patch: tuple[str, ...] = ()
    content: tuple[str, ...] = ()
    declared: bool = True
    """False for a tool found in no catalog (its paths are found by the heuristic below)."""
    read_when: tuple[str, tuple[str, ...]] | None = None
    """A file tool whose op depends on a sub-command: (parameter, values that mean read); any other
    value is a write (Anthropic's text editor: ``command`` = ``view`` reads, the rest write)."""
    tty_param: str | None = None
    """A boolean parameter that opens an interactive terminal: its shell reads what is typed later."""

    def params(self, role: str) -> tuple[str, ...]:
        value: tuple[str, ...] = getattr(self, role)
        return value


def _e(effect: str, *, path: tuple[str, ...] = (), paths: tuple[str, ...] = (),
       command: tuple[str, ...] = (), commands: tuple[str, ...] = (), url: tuple[str, ...] = (),
       patch: tuple[str, ...] = (), content: tuple[str, ...] = (),
       read_when: tuple[str, tuple[str, ...]] | None = None, tty_param: str | None = None) -> ToolEntry:
    return ToolEntry(effect, path=path, paths=paths, command=command, commands=commands, url=url, patch=patch,
                     content=content, read_when=read_when, tty_param=tty_param)


_EDITOR = _e("file_write", path=("path",), content=("file_text", "new_str", "insert_text"),
             read_when=("command", ("view",)))


_READ_FILE = ("file_path", "absolute_path", "path")
_DIR = ("dir_path", "path", "directory")

BUILTINS: Mapping[str, ToolEntry] = {
    # Gemini CLI
    "read_file": _e("file_read", path=_READ_FILE),
    "read_many_files": _e("file_read", paths=("paths", "include")),
    "list_directory": _e("file_read", path=_DIR),
    "glob": _e("file_read", path=_DIR, paths=("pattern",)),
    "search_file_content": _e("file_read", path=_DIR),
    "grep": _e("file_read", path=_DIR),
    "grep_search": _e("file_read", path=_DIR),
    "update_topic": _e("none"),
    "activate_skill": _e("none"),
    "enter_plan_mode": _e("none"),
    "invoke_agent": _e("none"),
    "list_background_processes": _e("none"),
    "read_background_output": _e("none"),
    "write_file": _e("file_write", path=("file_path", "path"), content=("content",)),
    "replace": _e("file_write", path=("file_path", "path"), content=("new_string",)),
    "run_shell_command": _e("exec", command=("command",), path=("dir_path", "directory")),
    "web_fetch": _e("network", url=("url", "prompt")),
    "google_web_search": _e("network"),
    "save_memory": _e("none"),
    "write_todos": _e("none"),
    # Claude Code
    "Read": _e("file_read", path=("file_path",)),
    "NotebookRead": _e("file_read", path=("notebook_path",)),
    "LS": _e("file_read", path=("path",)),
    "Glob": _e("file_read", path=("path",), paths=("pattern",)),
    "Grep": _e("file_read", path=("path",)),
    "Write": _e("file_write", path=("file_path",), content=("content",)),
    "Edit": _e("file_write", path=("file_path",), content=("new_string",)),
    "MultiEdit": _e("file_write", path=("file_path",), content=("edits", "new_string")),
    "NotebookEdit": _e("file_write", path=("notebook_path",)),
    "Bash": _e("exec", command=("command",)),
    "WebFetch": _e("network", url=("url",)),
    "WebSearch": _e("network"),
    "TodoWrite": _e("none"),
    "Task": _e("none"),
    # Codex CLI (``write_stdin`` types into an ``exec_command`` session: typed text runs as shell)
    "shell": _e("exec", command=("command",), path=("workdir",)),
    "local_shell": _e("exec", command=("command",), path=("workdir", "working_directory")),
    "container.exec": _e("exec", command=("cmd", "command"), path=("workdir",)),
    "exec_command": _e("exec", command=("cmd",), path=("workdir",), tty_param="tty"),
    "write_stdin": _e("exec", command=("chars",)),
    "apply_patch": _e("file_write", patch=("input", "patch")),
    "view_image": _e("file_read", path=("path",)),
    "list_dir": _e("file_read", path=("dir_path", "path")),
    "grep_files": _e("file_read", path=("path",)),
    "web_search": _e("network"),
    "update_plan": _e("none"),
    # Anthropic client tools (bash_2025xxxx, text_editor_2025xxxx: the names the model calls)
    "bash": _e("exec", command=("command",)),
    "str_replace_based_edit_tool": _EDITOR,
    "str_replace_editor": _EDITOR,
    "computer": _e("computer"),  # computer_20250124: clicks and typed text, like Responses computer_call
    # OpenAI Responses tool-call items (named by item type; arguments are the item's action)
    "local_shell_call": _e("exec", command=("command",), path=("working_directory",)),
    "shell_call": _e("exec", commands=("commands",)),
    "apply_patch_call": _e("file_write", path=("path",), content=("diff",)),
    "computer_call": _e("computer"),
}

# The heuristic for undeclared tools: only parameters literally named as a path. Content-like
# parameters (content, text, new_string...) are read only when a path names a package or VCS settings
# file (``guardrails.tools.sources``), for the hosts it names; never as paths.
HEURISTIC_PATH_PARAMS = ("path", "file_path", "filepath", "filename", "file", "notebook_path",
                         "absolute_path", "dir_path", "directory", "target", "destination", "source",
                         "working_directory", "workdir", "cwd", "paths", "files", "file_paths", "filepaths",
                         "filenames")
HEURISTIC_COMMAND_PARAMS = ("command", "cmd", "shell_command", "bash_command")
HEURISTIC_URL_PARAMS = ("url", "uri", "href", "endpoint", "link", "address")
HEURISTIC_CONTENT_PARAMS = ("content", "contents", "file_text", "text", "new_string", "new_str", "new_content",
                            "data", "body", "edits")
_MAX_PATH_LEN = 4096


def from_spec(spec: ToolSpec) -> ToolEntry:
    def one(name: str | None) -> tuple[str, ...]:
        return (name,) if name else ()

    return ToolEntry(spec.effect, path=one(spec.path), paths=one(spec.paths),
                     command=one(spec.command), url=one(spec.url), patch=one(spec.patch),
                     content=one(spec.content))


def lookup(name: str, overrides: Mapping[str, ToolSpec]) -> ToolEntry:
    """The entry for ``name``: the policy's own first, then the built-ins, else an undeclared tool."""
    spec = overrides.get(name)
    if spec is not None:
        return from_spec(spec)
    entry = BUILTINS.get(name)
    if entry is not None:
        return entry
    return ToolEntry("unknown", path=HEURISTIC_PATH_PARAMS, command=HEURISTIC_COMMAND_PARAMS,
                     url=HEURISTIC_URL_PARAMS, content=HEURISTIC_CONTENT_PARAMS, declared=False)


def looks_like_path(value: str) -> bool:
    """For undeclared tools only: a single line, not a URL, of sane length."""
    return 0 < len(value) <= _MAX_PATH_LEN and "\n" not in value and "://" not in value


def texts(args: dict[str, object], names: tuple[str, ...]) -> list[str]:
    """The text a file tool writes: the string values of the ``content`` role's parameters, and inside a
    list of objects (MultiEdit's ``edits``) the values of the same names."""
    out: list[str] = []
    for name in names:
        value = args.get(name)
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, dict):
                    out += [v for k, v in item.items() if k in names and isinstance(v, str)]
                elif isinstance(item, str):
                    out.append(item)
    return out


def strings(value: object) -> list[str]:
    """A parameter value as strings: a string, or the strings of a list (argv, path lists)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return []
