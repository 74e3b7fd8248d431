"""PowerShell and cmd.exe command lines, reduced to the facts the tool rules judge (#29, class 8).

A Windows agent's shell is PowerShell (Codex, Gemini CLI) or cmd.exe, not bash: read as bash,
``type C:\\Users\\me\\.ssh\\id_rsa`` touched nothing and ``powershell -Command ...`` could only be blocked
whole. Here each command is split by its own shell's rules (``guardrails.tools.winlex``) and reduced
to what bash's reading already judges, through the same walker (``guardrails.tools.shell``), so every
rule applies unchanged: containment, privileged places, ``.git`` and the other autorun writes,
read-before-write, settings files, the egress allowlist, and "downloaded, then run".

- PowerShell cmdlets and their aliases that touch files become the bash command that does the same
  (``Get-Content``/``gc``/``cat``/``type`` -> ``cat``, ``Set-Content``/``Add-Content``/``Out-File``/
  ``Tee-Object``/``Export-Csv`` -> a write with the text when the line shows it, ``Copy-Item`` -> ``cp -r``,
  ``Move-Item``/``Rename-Item`` -> ``mv``, ``Remove-Item`` -> ``rm``, ``New-Item`` -> a write, ``mkdir`` or
  ``ln -s``, ``Invoke-WebRequest``/``Invoke-RestMethod``/``Start-BitsTransfer`` -> ``curl`` with ``-o``/
  ``-T``, ``Expand-Archive`` -> ``unzip -d``, ``Compress-Archive`` -> ``zip``, ``Set-Location`` -> ``cd``);
  cmd's builtins likewise (``type``, ``copy``, ``xcopy``, ``robocopy``, ``move``, ``ren``, ``del``, ``rd``,
  ``md``, ``mklink``, ``echo``, ``set``, ``cd``/``pushd``, ``call``, ``start``, ``if``, ``for /f``, blocks);
  and ``certutil -urlcache``/``-decode`` and ``bitsadmin /transfer`` (downloads).
- Any other program (``git``, ``python``, ``curl.exe``, ``npm``, ``bash``...) is handed to the bash walker
  as its argv: the same tables judge it.
- Code run from text is the interpreter rule's: ``Invoke-Expression``/``iex`` is ``eval`` (``iwr URL | iex``
  is fed by a download), ``& .\\x.ps1``/``.\\x.ps1``/``. .\\x.ps1``/``Import-Module`` run a script file,
  ``powershell -Command``/``pwsh -c``/``cmd /c`` are read (``-EncodedCommand`` decoded from base64 UTF-16LE).
- What cannot be read fails closed (``status``): ``ps_dynamic`` for code or objects the line cannot show
  (a .NET method outside a short list of pure ones, ``[scriptblock]::Create``, ``Add-Type``, ``New-Object
  -ComObject``, ``& $x``, aliases made at run time); ``win_unknown`` for a cmdlet whose verb changes
  things and that the reader does not know (``Install-Module`` and other verbs outside the read-only
  ones), and for the system programs that run code or change the machine (``mshta``, ``rundll32``,
  ``regsvr32``, ``wmic``, ``netsh``...); ``ps_error`` when the text cannot be split (an unterminated
  quote); ``detail`` names the construct. Registry writes (``reg add``, ``Set-ItemProperty HKCU:\\...``),
  scheduled tasks and services, file associations and writes to a PowerShell profile are autorun
  settings.

Switch words in cmd's style (``/s``, ``/q``, ``/Y``) are never paths. Pure: no I/O.
"""

from __future__ import annotations

import base64
import binascii
import ntpath
import re
from typing import TYPE_CHECKING

from guardrails.tools.wincmdlets import (
    _AUTORUN_CMDLETS,
    _CMD_BUILTINS,
    _DYNAMIC_CMDLETS,
    _IWR_PARAMS,
    _KEYWORDS,
    ALIASES,
    APPROVED_VERBS,
    HANDLERS,
    KNOWN_VARIABLES,
    SAFE_CMDLETS,
    SAFE_METHODS,
    SAFE_TYPES,
    SAFE_VERBS,
    SPECS,
    SPECS_JOIN,
    Spec,
    Unreadable,
    _is_switch,
    _literal_join,
    autorun_path,
    bind,
)
from guardrails.tools.winlex import Command, LexError, Word, cmd_pipelines, ps_pipelines

if TYPE_CHECKING:
    from guardrails.tools.shell import _Walker

DYNAMIC_PROGRAM = "$"
MAX_NESTING = 8
"""Groups, blocks and subexpressions inside each other that are read (each level is split again, so the
work is at most this many times the line's length); deeper is ``too_complex``."""
MAX_FEEDERS = 64
"""Distinct programs feeding one pipeline stage (as ``shell.MAX_FEEDERS``)."""
MAX_PARSED = 4 * 32 * 1024
"""Characters split in all, nested levels included (as ``shell.MAX_PARSED_BYTES``)."""


_PATH_ARGUMENT = re.compile(r"(?i)[a-z]:[\\/]|\\\\[^\\]|\.\.[\\/]|\$env:|\$home|~[\\/]")
"""An argument that names a path outside the current folder (a drive, a share, ``..``, home)."""
_SPLAT = re.compile(r"^@[A-Za-z_]\w*$")
_MODULE_QUALIFIED = re.compile(r"^[\w.]+\\([A-Za-z]+-\w+)$")
_PROVIDER = re.compile(r"^(?:microsoft\.powershell\.core\\)?filesystem::", re.IGNORECASE)


def _command_name(word: str) -> str:
    """A command word as PowerShell resolves it: case-insensitive, its dashes in any typographic form, a
    module-qualified name (``Microsoft.PowerShell.Management\\Get-Content``) as its cmdlet."""
    low = "".join("-" if c in "\u2013\u2014\u2015" else c for c in word.lower())
    qualified = _MODULE_QUALIFIED.match(low)
    return qualified.group(1) if qualified is not None else low


def _plain(word: Word) -> Word:
    """A provider-qualified path (``FileSystem::C:\\x``) as the path it names."""
    if word.value is not None and _PROVIDER.match(word.value):
        return Word(word.text, _PROVIDER.sub("", word.value), word.kind, word.inner, word.call)
    return word


def decode_encoded(text: str) -> str | None:
    """``-EncodedCommand``'s text: base64 of UTF-16LE; None when it is not that."""
    try:
        raw = base64.b64decode(text.strip(), validate=True)
        return raw.decode("utf-16-le")
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return None


# -- the reader --------------------------------------------------------------------------------------
class Reader:
    """Reads one dialect's text into ``walker`` (the bash analysis' state: its facts, folders, downloads)."""

    def __init__(self, walker: _Walker, dialect: str = "powershell") -> None:
        self.walker = walker
        self.dialect = dialect
        self.variables: dict[str, str | None] = {}
        self.piped_paths: list[str | None] = []
        """The paths the previous pipeline stage hands on (``'C:\\x' | Remove-Item``, ``Get-ChildItem .git |
        Copy-Item -Destination evil``): bound to the next cmdlet's ``-Path`` when it names none."""

    def lookup(self, name: str) -> str | None:
        low = name.lower()
        if low in self.variables:
            return self.variables[low]
        if low.startswith("env:") and low in self.variables:
            return self.variables[low]
        known = KNOWN_VARIABLES.get(low) or KNOWN_VARIABLES.get("env:" + low)
        return known

    def _budget(self, text: str, depth: int) -> None:
        w = self.walker
        w._count(depth)
        w.parsed += len(text)
        if w.parsed > MAX_PARSED or depth > MAX_NESTING:
            raise Unreadable("too_complex", "nesting or length")

    @staticmethod
    def _feeders(ran: dict[str, None]) -> None:
        if len(ran) > MAX_FEEDERS:
            raise Unreadable("too_complex", "a pipeline of too many programs")

    def _words(self, cmd: Command, depth: int) -> None:
        """Count a command and its words as the bash parse counts syntax nodes (``shell.MAX_NODES``): a line
        of thousands of commands is ``too_complex`` in either shell, at the same size."""
        self.walker.nodes += 1 + len(cmd.words) + len(cmd.redirects)  # (the command, its name, words, redirects)
        self.walker._count(depth)

    # -- PowerShell --------------------------------------------------------------------------------
    def powershell(self, text: str, depth: int, feed: list[str], stdin: str | None) -> None:
        self._budget(text, depth)
        try:
            for _sep, pipeline in ps_pipelines(text, self.lookup):
                ran = dict.fromkeys(feed)  # distinct programs feeding the next stage, as bash's reading keeps them
                piped: str | None = None
                self.piped_paths = []
                for n, cmd in enumerate(pipeline.commands):
                    self._words(cmd, depth)
                    out, piped = self._ps_command(cmd, depth, list(ran), stdin if n == 0 else "pipe",
                                                  piped if n else None, n > 0)
                    ran.update(dict.fromkeys(out))
                    self._feeders(ran)
        except LexError as e:
            raise Unreadable("ps_error", str(e)) from None

    def _nested(self, words: list[Word], depth: int) -> None:
        """Read the code inside groups, blocks and expandable strings; judge member calls."""
        for k, w in enumerate(words):
            if w.kind in ("group", "block") and w.inner.strip() or w.inner.strip():
                self.powershell(w.inner, depth + 1, [], None)
            if w.kind == "member" and w.call:
                self._member_call(words, k)
            if w.kind == "var" and w.text.lower().startswith("$executioncontext"):
                raise Unreadable("ps_dynamic", w.text)

    def _member_call(self, words: list[Word], k: int) -> None:
        member = words[k]
        name = (member.value or "").lower()
        before = words[k - 1] if k else None
        static = member.text.startswith("::")
        if static:
            type_name = (before.value or "").lower().removeprefix("system.") if before and before.kind == "type" else ""
            if type_name in SAFE_TYPES and name in SAFE_METHODS:
                return
            raise Unreadable("ps_dynamic", f"[{before.value if before else '?'}]{member.text}()")
        after = words[k + 1] if k + 1 < len(words) else None
        if name == "replace" and after is not None and _PATH_ARGUMENT.search(after.inner):
            raise Unreadable("ps_dynamic", f"{member.text}() given a path")  # FileInfo.Replace(dest, backup)
        if name in SAFE_METHODS:
            return
        raise Unreadable("ps_dynamic", f"{member.text}()")

    def _ps_command(self, cmd: Command, depth: int, feed: list[str], stdin: str | None, piped: str | None,
                    in_pipe: bool) -> tuple[list[str], str | None]:
        """Judge one pipeline element; return (programs it runs, the text it writes when the line shows it)."""
        self._nested(cmd.words, depth)
        words = [_plain(self._group_value(w) if w.kind == "group" else w) for w in cmd.words]
        splat = next((w for w in words if w.kind == "word" and _SPLAT.match(w.text)), None)
        if splat is not None and splat is words[0]:
            raise Unreadable("ps_error", f"{splat.text} as a command")  # (cmd's ``@echo off``: PowerShell refuses it)
        if splat is not None:
            raise Unreadable("ps_dynamic", f"splatting {splat.text}")  # its parameters are a hashtable's keys
        cmd = Command(words, cmd.redirects)
        given, self.piped_paths = self.piped_paths, self._hands_on(words)
        if not words:
            self._redirects(cmd, None, depth)
            return [], None
        head = words[0]
        if head.kind == "op" and head.text in ("&", ".") or head.kind == "word" and head.value == ".":
            return self._invoke(head.text, words[1:], cmd, depth, feed, stdin, piped, in_pipe, given), None
        if head.kind == "var" and len(words) > 1 and words[1].kind == "op" and words[1].text.endswith("="):
            self._assign(head, words[2:], depth, feed)
            return [], None
        if head.kind != "word" or head.value is None:
            for k, w in enumerate(words):  # an expression: ``[IO.File]::...``, ``"x" | ...``, ``$x.M()``
                if w.kind == "type" and k + 1 < len(words) and words[k + 1].kind == "member":
                    continue
            self._redirects(cmd, self._expression_text(words), depth)
            return [], self._expression_text(words)
        name = _command_name(head.value)
        if name in _KEYWORDS:
            return [], None  # if/foreach/function...: their groups and blocks were read above
        canonical = ALIASES.get(name, name)
        if name in ("curl", "wget") and not any(w.kind == "param" and len(w.text) > 2 and w.text[1:].lower()
                                                in _IWR_PARAMS for w in words[1:]):
            canonical = name  # curl.exe's own options (``curl -sSLo x URL``): the real curl
        return self._cmdlet(canonical, head, words[1:], cmd, depth, feed, stdin, piped, in_pipe, given)

    def _hands_on(self, words: list[Word]) -> list[str | None]:
        """The paths this stage hands the next one: a string's value, a hashtable's ``Path``/``LiteralPath``/
        ``FullName``/``PSPath``, or the folders ``Get-ChildItem``/``Get-Item``/``Resolve-Path`` list (the
        items found are at or below them)."""
        if not words:
            return []
        head = words[0]
        if head.kind == "str":
            return [head.value]
        table = next((w for w in words if w.kind == "group" and w.text.startswith("@{")), None)
        if table is not None and head.kind in ("group", "type"):
            return self._table_paths(table.inner)
        name = ALIASES.get(_command_name(head.value or ""), _command_name(head.value or ""))
        if head.kind == "word" and name in ("get-childitem", "get-item", "resolve-path", "gi", "rvpa"):
            bound = bind(SPECS["get-childitem"], words[1:])
            return [w.value for n in ("path", "literalpath", "lp", "_extra") for w in bound.get(n, [])] or ["."]
        return []

    def _table_paths(self, inner: str) -> list[str | None]:
        found: list[str | None] = []
        try:
            for _sep, pipeline in ps_pipelines(inner, self.lookup):
                for cmd in pipeline.commands:
                    values = [w.value for w in cmd.words]
                    key, eq, value = ("".join(v for v in values if v is not None) if None not in values
                                      else "").partition("=")
                    if eq and key.strip().lower() in ("path", "literalpath", "fullname", "pspath"):
                        found.append(value.strip())
                    elif any(w.value is None for w in cmd.words[2:]) and cmd.words and \
                            (cmd.words[0].value or "").lower() in ("path", "literalpath", "fullname", "pspath"):
                        found.append(None)
        except LexError:
            return [None]
        return found

    def _group_value(self, group: Word) -> Word:
        """A group's value when it is a path spelled out the usual ways: a concatenation of known strings
        (``($env:USERPROFILE + '\\.ssh\\id_rsa')``) or ``(Join-Path A B)``; else the group, unknown."""
        if len(group.inner) > 512 or not group.text.startswith("("):
            return group  # (``@{...}`` is a hashtable, ``$(...)``/``@(...)`` run their commands: not a path)
        self.walker.parsed += len(group.inner)  # split again here: counted in the work
        try:
            statements = list(ps_pipelines(group.inner, self.lookup))
        except LexError:
            return group
        if len(statements) != 1 or len(statements[0][1].commands) != 1:
            return group
        words = statements[0][1].commands[0].words
        value: str | None = None
        head = (words[0].value or "").lower() if words else ""
        if head == "join-path" and len(words) >= 3:
            bound = bind(SPECS_JOIN, words[1:])
            parts = [w.value for n in ("path", "childpath", "additionalchildpath", "_extra") for w in bound.get(n, [])]
            value = ntpath.join(*parts) if parts and None not in parts else None  # type: ignore[arg-type]
        elif words and len(words) % 2 == 1 and all(w.value == "+" for w in words[1::2]) and all(
                w.kind in ("str", "var", "word") and w.value is not None for w in words[::2]):
            value = "".join(str(w.value) for w in words[::2])
        return Word(group.text, value, "str") if value is not None else group

    def _expression_text(self, words: list[Word]) -> str | None:
        return words[0].value if len(words) == 1 and words[0].kind in ("str", "num", "word") else None

    def _assign(self, target: Word, rest: list[Word], depth: int, feed: list[str]) -> None:
        name = target.text[1:].strip("{}").lower()
        value = rest[0].value if len(rest) == 1 and rest[0].kind in ("str", "word", "num", "var") else None
        if rest and rest[0].kind == "word" and rest[0].value is not None and len(rest) > 1 or (
                len(rest) == 1 and rest[0].kind == "word" and rest[0].value is not None
                and "-" in rest[0].value and not rest[0].value.startswith("-")):
            self._ps_command(Command(list(rest)), depth, feed, None, None, False)  # ``$x = Get-Content f``
            value = None
        self.variables[name] = value
        if name.startswith("env:"):
            # ``'.;' + $env:PATH``: the literal pieces, ``$`` for the others
            raw = "".join(w.value if w.kind == "str" and w.value is not None else "" if w.value == "+" else "$"
                          for w in rest) if len(rest) > 1 else rest[0].text.strip("'\"") if rest else ""
            self.walker._setting(target.text[5:].strip("{}"), value, depth, raw)

    def _invoke(self, how: str, words: list[Word], cmd: Command, depth: int, feed: list[str], stdin: str | None,
                piped: str | None, in_pipe: bool, given: list[str | None]) -> list[str]:
        """``& X args``, ``. X``: X is a script block (read above), a script file, a command named by a literal
        (``& 'Get-Content' x`` is ``Get-Content x``), or, built at run time, a program the line does not show
        (``ps_dynamic``)."""
        if not words:
            raise Unreadable("ps_error", f"{how} without a command")
        target = words[0]
        if target.kind == "block":
            return []
        args = [w.value for w in words[1:]]
        if target.value is None and (target.kind == "str" or "\\" in target.text or "/" in target.text):
            # ``& "$dotnet" build``, ``& $PSScriptRoot\\x.ps1``: a program or script named at run time, as bash's
            # ``"$PYTHON" -m pytest``: any program (its options still judged)
            self._redirects(cmd, None, depth)
            return self.walker.argv([None, *args], depth + 1, feed, stdin)
        if target.value is None or target.kind in ("var", "group", "type"):
            raise Unreadable("ps_dynamic", f"{how} {target.text}")  # ``& $x``: a script block from anywhere
        path = "\\" in target.value or "/" in target.value or target.value.lower().endswith((".ps1", ".psm1"))
        if not path:
            self.piped_paths = given
            return self._ps_command(Command([Word(target.text, target.value, "word"), *words[1:]], cmd.redirects),
                                    depth, feed, stdin, piped, in_pipe)[0]
        self._redirects(cmd, None, depth)
        if how == ".":
            return self.walker.argv(["source", target.value, *args], depth + 1, feed, stdin)
        return self._run(target.value, args, depth, feed, stdin)

    def _run(self, program: str, args: list[str | None], depth: int, feed: list[str], stdin: str | None) -> list[str]:
        """An external program (or a script file) run with ``args``: the bash walker judges it. cmd looks in
        the current folder first (``git`` may be a downloaded ``git.exe`` there); PowerShell only by a path."""
        word = program
        if "\\" not in word and "/" not in word:
            found = next((ext for ext in (("", ".exe", ".com", ".bat", ".cmd") if self.dialect == "cmd" else ("",))
                          if self.walker._is_download(word + ext)), None)
            word = ".\\" + word + found if found is not None else word
        if word.lower().endswith((".ps1", ".psm1")) and ("\\" in word or "/" in word):
            return self.walker.argv(["pwsh", "-File", word, *args], depth + 1, feed, stdin)
        if word.lower().endswith((".bat", ".cmd")) and ("\\" in word or "/" in word):
            return self.walker.argv(["cmd", "/c", word, *args], depth + 1, feed, stdin)
        return self.walker.argv([word, *args], depth + 1, feed, stdin)

    def _redirects(self, cmd: Command, text: str | None, depth: int) -> None:
        for op, target in cmd.redirects:
            if target.value is None or target.value.lower() in ("$null", "nul", "null", "con"):
                continue
            self._write(target.value, text, op)

    def _write(self, path: str, text: str | None, op: str = ">") -> None:
        """A write of ``path`` with ``text`` (None: not in the line); profiles and Startup are autorun."""
        w = self.walker
        label = autorun_path(path)
        if label is not None:
            w.facts.autorun.append(label)
        saved = w.pending
        w.pending = w.text_pending(text)
        try:
            w._path("write", path)
        finally:
            w.pending = saved

    def _cmdlet(self, name: str, head: Word, args: list[Word], cmd: Command, depth: int, feed: list[str],
                stdin: str | None, piped: str | None, in_pipe: bool,
                given: list[str | None] | None = None) -> tuple[list[str], str | None]:
        w = self.walker
        spec = SPECS.get(name)
        bound = bind(spec, args) if spec is not None else {}
        if in_pipe and given and spec is not None and "path" in spec.values and not any(
                k in bound for k in ("path", "literalpath", "lp", "pspath", "filepath")):
            bound["path"] = [Word(p or "", p) for p in given]  # bound from the pipeline
        handler = HANDLERS.get(name)
        self._redirects(cmd, _literal_join(bound, "inputobject") if name == "write-output" else None, depth)
        if handler is not None:
            return handler(self, name, bound, depth, feed, stdin, piped, in_pipe), None
        if name == "write-output":
            w._record({"program": "echo", "options": [], "fed_by": [], "script": None, "stdin": stdin})
            return ["echo"], _literal_join(bound, "inputobject")
        if name == "set-executionpolicy":  # for this process only: what the line runs is still read
            if (_literal_join(bound, "scope") or "").lower() == "process":
                w._record({"program": name, "options": [], "fed_by": [], "script": None, "stdin": stdin})
                return [name], None
            raise Unreadable("win_unknown", str(head.value))
        if name in _AUTORUN_CMDLETS:
            w.facts.autorun.append(f"{head.value} ({_AUTORUN_CMDLETS[name]}: runs code later)")
            return [name], None
        if name in _DYNAMIC_CMDLETS:
            raise Unreadable("ps_dynamic", str(head.value))
        verb, dash, noun = name.partition("-")
        if dash and noun and "\\" not in name and "/" not in name and "." not in name:
            if verb in SAFE_VERBS or name in SAFE_CMDLETS:
                w._record({"program": name, "options": [], "fed_by": sorted(set(feed)), "script": None,
                           "stdin": stdin})
                return [name], None
            if verb in APPROVED_VERBS:
                raise Unreadable("win_unknown", str(head.value))
        return self._run(str(head.value), [a.value for a in args], depth, feed, stdin), None

    # -- cmd.exe -----------------------------------------------------------------------------------
    def cmd(self, text: str, depth: int, feed: list[str], stdin: str | None) -> None:
        self._budget(text, depth)
        try:
            for _sep, pipeline in cmd_pipelines(text, self.lookup):
                feeders = dict.fromkeys(feed)
                for n, command in enumerate(pipeline.commands):
                    self._words(command, depth)
                    feeders.update(dict.fromkeys(self._cmd_command(command, depth, list(feeders),
                                                                   stdin if n == 0 else "pipe")))
                    self._feeders(feeders)
        except LexError as e:
            raise Unreadable("cmd_error", str(e)) from None

    def _cmd_command(self, cmd: Command, depth: int, feed: list[str], stdin: str | None) -> list[str]:
        words = cmd.words
        if not words:
            return []
        if words[0].kind == "block":
            self.cmd(words[0].inner, depth + 1, feed, stdin)
            for op, target in cmd.redirects:
                if target.value is not None and op != "<" and target.value.lower() not in ("nul", "con"):
                    self._write(target.value, None, op)
            return []
        head = (words[0].value or "").lower()
        for op, target in cmd.redirects:
            if target.value is None or target.value.lower() in ("nul", "con", "nul:"):
                continue
            if op == "<":
                self.walker._path("read", target.value)
            else:
                text = " ".join(str(v.value) for v in words[1:]) if head.startswith("echo") and all(
                    v.value is not None for v in words[1:]) else None
                self._write(target.value, text, op)
        values = [w.value for w in words[1:]]
        if head in ("if", "else"):
            return self._cmd_if(words, depth, feed, stdin)
        if head == "for":
            return self._cmd_for(words, depth, feed, stdin)
        if head in ("rem", "::") or head.startswith("echo") or head in ("cls", "title", "color", "ver", "pause",
                                                                        "exit", "goto", "setlocal", "endlocal",
                                                                        "shift", "prompt", "vol", "verify"):
            return []
        if head == "set":
            return self._cmd_set(words[1:], depth)
        if head == "path":
            self.walker._setting("PATH", " ".join(v for v in values if v) if None not in values else None, depth)
            return []
        if head == "call":
            if values and values[0] is not None and values[0].startswith(":"):
                return []
            return self._cmd_command(Command(words[1:], []), depth, feed, stdin) if len(words) > 1 else []
        if head in ("assoc", "ftype") and any(v and "=" in v for v in values):
            self.walker.facts.autorun.append(f"{head} (a file association: runs a program when a file is opened)")
            return []
        canonical = _CMD_BUILTINS.get(head)
        if canonical is not None:
            bound = bind(SPECS.get(canonical, Spec((), frozenset())), [x for x in words[1:] if not _is_switch(x.value)])
            if canonical == "set-location" and values[:1] == ["/d"]:
                bound = {"path": words[2:3]}
            handler = HANDLERS[canonical]
            return handler(self, canonical, bound, depth, feed, stdin, None, False)
        if head == "mklink":
            rest = [v for v in values if not _is_switch(v)]
            if len(rest) >= 2:
                return self.walker.argv(["ln", "-s", rest[1], rest[0]], depth + 1, feed, stdin)
            return []
        if head in ("xcopy", "robocopy"):
            rest = [v for v in values if not _is_switch(v) and not (v or "").startswith("/")]
            if len(rest) >= 2:
                return self.walker.argv(["cp", "-r", rest[0], rest[1]], depth + 1, feed, stdin)
            return self.walker.argv(["cat", *rest], depth + 1, feed, stdin)
        if head == "start":
            given = list(words[1:])
            if given and given[0].kind == "str":
                given = given[1:]  # the window title
            while given and _is_switch(given[0].value) or given and (given[0].value or "").lower() == "/d":
                given = given[2:] if (given[0].value or "").lower() == "/d" else given[1:]
            if not given:
                return []
            return self._start(given[0].value, [x.value for x in given[1:]], depth, feed, stdin)
        return self._run(str(words[0].value) if words[0].value is not None else DYNAMIC_PROGRAM,
                         values, depth, feed, stdin) if words[0].value is not None else \
            self.walker.argv([None, *values], depth + 1, feed, stdin)

    def _start(self, program: str | None, args: list[str | None], depth: int, feed: list[str],
               stdin: str | None) -> list[str]:
        if program is None:
            raise Unreadable("ps_dynamic", "start of a program named at run time")
        if "://" in program:
            self.walker.facts.urls.append(program)  # opens the browser there
            return []
        return self._run(program, args, depth, feed, stdin)

    def _cmd_if(self, words: list[Word], depth: int, feed: list[str], stdin: str | None) -> list[str]:
        i = 1
        low = [(w.value or "").lower() for w in words]
        if words[0].value and low[0] == "else":
            return self._cmd_command(Command(words[1:], []), depth, feed, stdin) if len(words) > 1 else []
        while i < len(words) and low[i] in ("/i", "not"):
            i += 1
        if i < len(words) and low[i] in ("exist", "defined", "errorlevel", "cmdextversion"):
            i += 2
        elif i + 1 < len(words) and low[i + 1] in ("equ", "neq", "lss", "leq", "gtr", "geq", "=="):
            i += 3
        else:
            i += 1  # ``a==b`` as one word
        ran: list[str] = []
        rest = words[i:]
        for k, w in enumerate(rest):
            if (w.value or "").lower() == "else":
                ran += self._cmd_command(Command(rest[:k], []), depth, feed, stdin)
                return ran + self._cmd_command(Command(rest[k + 1:], []), depth, feed, stdin)
        return self._cmd_command(Command(rest, []), depth, feed, stdin) if rest else []

    def _cmd_for(self, words: list[Word], depth: int, feed: list[str], stdin: str | None) -> list[str]:
        low = [(w.value or "").lower() for w in words]
        if "do" not in low:
            return []
        at = low.index("do")
        for w in words[1:at]:  # ``for /f %%i in ('dir /b') do ...``: the command in quotes runs
            if w.kind == "block" and "/f" in low:
                inner = w.inner.strip()
                if len(inner) > 1 and inner[0] in "'`" and inner[-1] == inner[0]:
                    self.cmd(inner[1:-1], depth + 1, [], None)
        body = words[at + 1:]
        return self._cmd_command(Command(body, []), depth, feed, stdin) if body else []

    def _cmd_set(self, words: list[Word], depth: int) -> list[str]:
        if not words:
            return []
        if (words[0].value or "").lower() in ("/a", "/p"):
            name = (words[1].value or "").partition("=")[0] if len(words) > 1 else ""
            self.variables[name.lower()] = None
            return []
        text = words[0].value
        raw = words[0].text.strip('"')
        name, eq, first = (text if text is not None else raw).partition("=")
        if not eq:
            return []
        value: str | None = first
        if len(words) > 1:
            value = None if text is None or any(w.value is None for w in words[1:]) else \
                " ".join([first, *(str(w.value) for w in words[1:])])
        elif text is None:
            value = None
        self.variables[name.lower()] = value
        self.walker._setting(name, value, depth, raw.partition("=")[2])
        return []


def read_code(walker: _Walker, dialect: str, text: str, depth: int, feed: list[str], stdin: str | None) -> None:
    """Read ``text`` as ``dialect`` (``powershell`` or ``cmd``) into ``walker``; raises ``Unreadable``."""
    reader = Reader(walker, dialect)
    if dialect == "cmd":
        reader.cmd(text, depth, feed, stdin)
    else:
        reader.powershell(text, depth, feed, stdin)
