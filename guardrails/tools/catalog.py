"""Tool name -> effect and parameter roles, so the rules never see an agent's own schema.

Built-ins cover Gemini CLI, Claude Code and Codex CLI (names as they appear on the wire). A policy
``[tools.catalog.NAME]`` entry replaces the built-in of the same name. A role names the parameter(s)
that carry it; built-ins list several candidate names where a client renamed a parameter between
versions (Gemini CLI: ``absolute_path`` -> ``file_path``, ``path`` -> ``dir_path``).

Roles: ``path`` (one path), ``paths`` (a list of paths or globs), ``command`` (a shell string or an
argv list), ``url`` (a URL, or free text with URLs in it), ``patch`` (an ``apply_patch`` envelope).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from config.policy import ToolSpec

ROLES = ("path", "paths", "command", "url", "patch")


@dataclass(frozen=True, slots=True)
class ToolEntry:
    effect: str
    """file_read | file_write | exec | network | none | unknown"""
    path: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    command: tuple[str, ...] = ()
    url: tuple[str, ...] = ()
    patch: tuple[str, ...] = ()
    declared: bool = True
    """False for a tool found in no catalog (its paths are found by the heuristic below)."""

    def params(self, role: str) -> tuple[str, ...]:
        value: tuple[str, ...] = getattr(self, role)
        return value


def _e(effect: str, *, path: tuple[str, ...] = (), paths: tuple[str, ...] = (),
       command: tuple[str, ...] = (), url: tuple[str, ...] = (), patch: tuple[str, ...] = ()) -> ToolEntry:
    return ToolEntry(effect, path=path, paths=paths, command=command, url=url, patch=patch)


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
    "write_file": _e("file_write", path=("file_path", "path")),
    "replace": _e("file_write", path=("file_path", "path")),
    "run_shell_command": _e("exec", command=("command",)),
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
    "Write": _e("file_write", path=("file_path",)),
    "Edit": _e("file_write", path=("file_path",)),
    "MultiEdit": _e("file_write", path=("file_path",)),
    "NotebookEdit": _e("file_write", path=("notebook_path",)),
    "Bash": _e("exec", command=("command",)),
    "WebFetch": _e("network", url=("url",)),
    "WebSearch": _e("network"),
    "TodoWrite": _e("none"),
    "Task": _e("none"),
    # Codex CLI
    "shell": _e("exec", command=("command",)),
    "local_shell": _e("exec", command=("command",)),
    "container.exec": _e("exec", command=("cmd", "command")),
    "exec_command": _e("exec", command=("cmd",)),
    "apply_patch": _e("file_write", patch=("input", "patch")),
    "view_image": _e("file_read", path=("path",)),
    "list_dir": _e("file_read", path=("dir_path", "path")),
    "grep_files": _e("file_read", path=("path",)),
    "web_search": _e("network"),
    "update_plan": _e("none"),
}

# The heuristic for undeclared tools: only parameters literally named as a path. Content-like
# parameters (content, text, new_string...) are never looked at, whatever their value.
HEURISTIC_PATH_PARAMS = ("path", "file_path", "filepath", "filename", "file", "notebook_path",
                         "absolute_path", "dir_path", "directory")
_MAX_PATH_LEN = 4096


def from_spec(spec: ToolSpec) -> ToolEntry:
    def one(name: str | None) -> tuple[str, ...]:
        return (name,) if name else ()

    return ToolEntry(spec.effect, path=one(spec.path), paths=one(spec.paths),
                     command=one(spec.command), url=one(spec.url), patch=one(spec.patch))


def lookup(name: str, overrides: Mapping[str, ToolSpec]) -> ToolEntry:
    """The entry for ``name``: the policy's own first, then the built-ins, else an undeclared tool."""
    spec = overrides.get(name)
    if spec is not None:
        return from_spec(spec)
    entry = BUILTINS.get(name)
    if entry is not None:
        return entry
    return ToolEntry("unknown", path=HEURISTIC_PATH_PARAMS, declared=False)


def looks_like_path(value: str) -> bool:
    """For undeclared tools only: a single line, not a URL, of sane length."""
    return 0 < len(value) <= _MAX_PATH_LEN and "\n" not in value and "://" not in value


def strings(value: object) -> list[str]:
    """A parameter value as strings: a string, or the strings of a list (argv, path lists)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return []
