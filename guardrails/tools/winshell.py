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
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from guardrails.tools.commands import program_name
from guardrails.tools.winlex import Command, LexError, Word, cmd_pipelines, ps_pipelines

if TYPE_CHECKING:
    from guardrails.tools.shell import _Walker

DYNAMIC_PROGRAM = "$"
MAX_NESTING = 8
"""Groups, blocks and subexpressions inside each other that are read (each level is split again, so the
work is at most this many times the line's length); deeper is ``too_complex``."""
MAX_PARSED = 4 * 32 * 1024
"""Characters split in all, nested levels included (as ``shell.MAX_PARSED_BYTES``)."""


class Unreadable(Exception):
    """The line holds what the reader cannot judge: ``status`` and the construct (``detail``)."""

    def __init__(self, status: str, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


# -- what names mean ---------------------------------------------------------------------------------
KNOWN_VARIABLES = {
    "home": "~", "env:userprofile": "~", "env:homepath": "~", "env:home": "~", "pwd": ".",
    "env:appdata": "~\\AppData\\Roaming", "env:localappdata": "~\\AppData\\Local",
    "env:temp": "~\\AppData\\Local\\Temp", "env:tmp": "~\\AppData\\Local\\Temp",
    "env:windir": "C:\\Windows", "env:systemroot": "C:\\Windows", "env:systemdrive": "C:",
    "env:programfiles": "C:\\Program Files", "env:programfiles(x86)": "C:\\Program Files (x86)",
    "env:programdata": "C:\\ProgramData", "env:allusersprofile": "C:\\ProgramData",
    "env:public": "C:\\Users\\Public", "null": "$null",
    "profile": "~\\Documents\\PowerShell\\Microsoft.PowerShell_profile.ps1",
}
"""Variables whose value the analysis knows (``$env:USERPROFILE``, cmd's ``%USERPROFILE%``): the home folder as
``~`` (read as the agent's home), the system folders where Windows keeps them, ``$PROFILE`` the profile
script PowerShell runs at every start."""

ALIASES = {
    "gc": "get-content", "cat": "get-content", "type": "get-content", "sc": "set-content", "ac": "add-content",
    "copy": "copy-item", "cp": "copy-item", "cpi": "copy-item", "move": "move-item", "mv": "move-item",
    "mi": "move-item", "del": "remove-item", "erase": "remove-item", "rd": "remove-item", "ri": "remove-item",
    "rm": "remove-item", "rmdir": "remove-item", "ren": "rename-item", "rni": "rename-item", "ni": "new-item",
    "md": "mkdir", "dir": "get-childitem", "ls": "get-childitem", "gci": "get-childitem",
    "iwr": "invoke-webrequest", "irm": "invoke-restmethod", "iex": "invoke-expression", "start": "start-process",
    "saps": "start-process", "cd": "set-location", "chdir": "set-location", "sl": "set-location",
    "pushd": "push-location", "popd": "pop-location", "echo": "write-output", "write": "write-output",
    "tee": "tee-object", "sls": "select-string", "icm": "invoke-command", "ii": "invoke-item",
    "clc": "clear-content", "si": "set-item", "sp": "set-itemproperty", "ipmo": "import-module",
    "epcsv": "export-csv", "ipcsv": "import-csv", "sal": "set-alias", "nal": "new-alias", "sajb": "start-job",
    "curl": "invoke-webrequest", "wget": "invoke-webrequest", "cpp": "copy-itemproperty", "rp": "remove-itemproperty",
}
"""Windows PowerShell's aliases (``curl`` and ``wget`` are ``Invoke-WebRequest`` there; with curl's own options
they are read as curl.exe, which PowerShell 7 runs)."""

SAFE_VERBS = frozenset({"get", "select", "where", "foreach", "sort", "measure", "format", "convertto", "convertfrom",
                        "out", "write", "test", "join", "split", "resolve", "compare", "group", "wait", "read", "show",
                        "trace", "receive", "exit", "clear", "debug", "pop", "push", "use", "limit", "skip"})
"""Verbs of cmdlets that read or shape data: one of these the reader does not know passes (``Get-Date``,
``Sort-Object``); any other verb it does not know is ``win_unknown`` (fails closed)."""
SAFE_CMDLETS = frozenset({"start-sleep", "stop-process", "new-guid", "new-timespan", "new-variable", "set-variable",
                          "remove-variable", "add-member", "set-strictmode", "stop-job", "remove-job", "start-transcript",
                          "stop-transcript", "new-object", "add-content", "invoke-expression", "set-psdebug",
                          "enter-pssession", "exit-pssession"})

SAFE_TYPES = frozenset({"math", "string", "int", "int16", "int32", "int64", "uint32", "uint64", "long", "double",
                        "float", "single", "decimal", "bool", "boolean", "char", "byte", "datetime", "datetimeoffset",
                        "timespan", "guid", "regex", "text.regularexpressions.regex", "convert", "version", "uri",
                        "text.encoding", "io.path", "array", "enum", "bitconverter", "console", "text.stringbuilder",
                        "collections.arraylist", "collections.hashtable", "collections.generic.list[string]",
                        "collections.generic.list[object]", "collections.generic.list[int]", "pscustomobject",
                        "ordered", "stringcomparison", "globalization.cultureinfo", "io.searchoption", "char[]",
                        "string[]", "int[]", "object[]", "object", "psobject", "hashtable", "xml", "switch"})
""".NET types whose static members the reader lets pass: pure values, no files, processes or network."""
SAFE_METHODS = frozenset({
    "tostring", "trim", "trimstart", "trimend", "split", "replace", "tolower", "toupper", "tolowerinvariant",
    "toupperinvariant", "substring", "contains", "startswith", "endswith", "indexof", "lastindexof", "padleft",
    "padright", "equals", "gettype", "compareto", "add", "remove", "removeat", "insert", "toarray", "containskey",
    "containsvalue", "getenumerator", "where", "foreach", "adddays", "addhours", "addminutes", "addseconds",
    "addmonths", "addyears", "format", "normalize", "clone", "getvalue", "getbytes", "getstring", "tochararray",
    "join", "reverse", "sort", "clear", "ismatch", "match", "matches", "abs", "round", "floor", "ceiling", "max",
    "min", "pow", "sqrt", "parse", "tryparse", "isnullorempty", "isnullorwhitespace", "tobase64string",
    "frombase64string", "toint32", "toint64", "todouble", "toboolean", "getfilename", "getextension",
    "getdirectoryname", "getfilenamewithoutextension", "combine", "changeextension", "isnumber", "isletter",
    "isdigit", "iswhitespace", "now", "utcnow", "today", "new", "append", "appendline", "appendformat",
    "escape", "unescape", "compare", "concat", "copyto", "count", "keys", "values", "tolocaltime",
    "touniversaltime", "getfullpath", "haschanges", "getattribute", "selectnodes", "selectsinglenode",
    "writeline", "write", "toupperfirst", "gethashcode", "isdefined", "getnames", "getvalues", "has",
})
"""Methods the reader lets pass: on strings, numbers, dates, collections and paths. Any other method call
(``.DownloadFile(``, ``.Invoke(``, ``.Start(``, ``::WriteAllText(``) is ``ps_dynamic``."""

_SWITCH_WORD = frozenset("/")


def _is_switch(value: str | None) -> bool:
    """cmd's style of switch (``/s``, ``/Q``, ``/y``, ``/?``, ``/-y``): never a path."""
    return value is not None and value.startswith("/") and 2 <= len(value) <= 4 and "/" not in value[1:] \
        and "\\" not in value and "." not in value


def _is_registry(path: str | None) -> bool:
    low = (path or "").lower()
    return low.startswith(("hkcu:", "hklm:", "hkcr:", "hku:", "hkcc:", "registry::", "hkey_"))


def _is_env_drive(path: str | None) -> bool:
    return (path or "").lower().startswith("env:")


_PROFILE_NAMES = ("profile.ps1", "microsoft.powershell_profile.ps1", "microsoft.vscode_profile.ps1")
_STARTUP = "\\start menu\\programs\\startup\\"


def autorun_path(path: str) -> str | None:
    """A label when writing ``path`` makes Windows or PowerShell run code later: a PowerShell profile, the
    Startup folder."""
    low = path.replace("/", "\\").lower()
    if low.rsplit("\\", 1)[-1] in _PROFILE_NAMES:
        return f"{path} (a PowerShell profile: runs at every start)"
    if _STARTUP in low:
        return f"{path} (the Startup folder: runs at every logon)"
    return None


# -- parameters ------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Spec:
    """How a cmdlet binds its words: positional parameters in order, and the named ones that take a value."""

    positional: tuple[str, ...]
    values: frozenset[str]


def _spec(positional: tuple[str, ...], *values: str) -> Spec:
    return Spec(positional, frozenset((*positional, *values, *_COMMON_VALUES)))


_COMMON_VALUES = ("erroraction", "ea", "errorvariable", "ev", "warningaction", "wa", "warningvariable", "wv",
                  "informationaction", "infa", "informationvariable", "iv", "outvariable", "ov", "outbuffer", "ob",
                  "pipelinevariable", "pv", "progressaction", "proga", "credential", "encoding", "filter", "include",
                  "exclude", "stream", "delimiter", "readcount", "totalcount", "tail", "first", "last", "head",
                  "depth", "attributes", "width", "useculture")
_PATHS = ("path", "literalpath", "lp", "pspath")
SPECS: dict[str, Spec] = {
    "get-content": _spec(("path",), "literalpath", "lp", "pspath"),
    "import-csv": _spec(("path",), "literalpath", "lp", "header"),
    "import-clixml": _spec(("path",), "literalpath", "lp"),
    "get-filehash": _spec(("path",), "literalpath", "lp", "algorithm"),
    "format-hex": _spec(("path",), "literalpath", "lp", "count", "offset"),
    "select-string": _spec(("pattern", "path"), "literalpath", "lp", "context"),
    "get-childitem": _spec(("path", "filter"), "literalpath", "lp"),
    "set-content": _spec(("path", "value"), "literalpath", "lp"),
    "add-content": _spec(("path", "value"), "literalpath", "lp"),
    "clear-content": _spec(("path",), "literalpath", "lp"),
    "out-file": _spec(("filepath", "encoding"), "literalpath", "lp", "inputobject"),
    "tee-object": _spec(("filepath",), "literalpath", "lp", "variable", "inputobject"),
    "export-csv": _spec(("path",), "literalpath", "lp", "inputobject"),
    "export-clixml": _spec(("path",), "literalpath", "lp", "inputobject"),
    "new-item": _spec(("path",), "name", "itemtype", "type", "value", "target"),
    "copy-item": _spec(("path", "destination"), "literalpath", "lp", "tosession", "fromsession"),
    "move-item": _spec(("path", "destination"), "literalpath", "lp"),
    "remove-item": _spec(("path",), "literalpath", "lp"),
    "rename-item": _spec(("path", "newname"), "literalpath", "lp"),
    "mkdir": _spec(("path",), "name", "value"),
    "set-location": _spec(("path",), "literalpath", "lp", "stackname"),
    "push-location": _spec(("path",), "literalpath", "lp", "stackname"),
    "pop-location": _spec((), "stackname"),
    "invoke-webrequest": _spec(("uri",), "outfile", "infile", "method", "body", "headers", "proxy", "contenttype",
                               "useragent", "timeoutsec", "sessionvariable", "websession", "maximumredirection",
                               "form", "customethod", "certificate", "token", "authentication"),
    "invoke-restmethod": _spec(("uri",), "outfile", "infile", "method", "body", "headers", "proxy", "contenttype",
                               "useragent", "timeoutsec", "sessionvariable", "websession", "maximumredirection",
                               "form", "custommethod", "certificate", "token", "authentication"),
    "start-bitstransfer": _spec(("source", "destination"), "displayname", "priority", "transfertype"),
    "start-process": _spec(("filepath", "argumentlist"), "workingdirectory", "verb", "windowstyle",
                           "redirectstandardoutput", "redirectstandardinput", "redirectstandarderror", "args"),
    "invoke-command": _spec(("scriptblock",), "filepath", "computername", "cn", "session", "argumentlist", "args",
                            "connectionuri", "uri", "hostname", "vmname", "containerid"),
    "start-job": _spec(("scriptblock",), "filepath", "argumentlist", "name", "initializationscript"),
    "invoke-item": _spec(("path",), "literalpath", "lp"),
    "import-module": _spec(("name",), "prefix", "argumentlist", "requiredversion", "minimumversion"),
    "expand-archive": _spec(("path", "destinationpath"), "literalpath", "lp"),
    "compress-archive": _spec(("path", "destinationpath"), "literalpath", "lp", "compressionlevel"),
    "invoke-expression": _spec(("command",)),
    "set-alias": _spec(("name", "value"), "scope", "option", "description"),
    "new-alias": _spec(("name", "value"), "scope", "option", "description"),
    "new-object": _spec(("typename", "argumentlist"), "comobject", "property"),
    "set-itemproperty": _spec(("path", "name", "value"), "literalpath", "lp", "type", "propertytype"),
    "new-itemproperty": _spec(("path", "name", "value"), "literalpath", "lp", "propertytype", "type"),
    "remove-itemproperty": _spec(("path", "name"), "literalpath", "lp"),
    "copy-itemproperty": _spec(("path", "destination", "name"), "literalpath", "lp"),
    "set-item": _spec(("path", "value"), "literalpath", "lp"),
    "write-output": _spec(("inputobject",)),
    "test-netconnection": _spec(("computername", "port"), "port", "commonport", "traceroute", "hops",
                                "informationlevel"),
    "resolve-dnsname": _spec(("name", "type"), "server"),
    "send-mailmessage": _spec(("to", "subject", "body"), "smtpserver", "from", "cc", "bcc", "attachments",
                              "port"),
}
for _name in ("install-module", "install-script", "install-package", "install-psresource", "save-module",
              "save-script", "save-package", "save-psresource", "update-module", "update-script", "find-module",
              "find-script", "find-package", "publish-module", "publish-script", "publish-psresource",
              "register-psrepository", "register-packagesource", "set-psrepository", "update-psresource"):
    SPECS[_name] = _spec(("name",), "repository", "source", "sourcelocation", "publishlocation", "path",
                         "literalpath", "requiredversion", "minimumversion", "maximumversion", "scope", "nugetapikey",
                         "proxy", "destination", "uri", "location")
_AUTORUN_CMDLETS = {
    "register-scheduledtask": "a scheduled task", "set-scheduledtask": "a scheduled task",
    "new-scheduledtask": "a scheduled task", "new-scheduledtaskaction": "a scheduled task's action",
    "new-service": "a service", "set-service": "a service", "register-objectevent": "an event handler",
    "register-wmievent": "an event handler", "register-engineevent": "an event handler",
    "register-cimindicationevent": "an event handler", "new-psdrive": "a drive mapping",
}
"""Cmdlets that arm code to run later, by themselves: an autorun setting."""
_DYNAMIC_CMDLETS = frozenset({"add-type", "set-alias", "new-alias", "invoke-wmimethod", "invoke-cimmethod",
                              "set-wmiinstance", "new-ciminstance", "update-typedata", "new-module",
                              "import-pssession", "export-pssession", "invoke-ascurrentuser"})
_GALLERY = "https://www.powershellgallery.com/api/v2"


def _param_name(word: Word, names: frozenset[str]) -> tuple[str, Word | None]:
    """(canonical lowercase name, the value given with ``:``); an abbreviation names the one parameter it
    starts (``-Dest`` is ``-Destination``), an unknown or ambiguous one is kept as written."""
    raw = word.value if word.value is not None else word.text
    name, colon, rest = raw[1:].partition(":")
    low = name.lower()
    if low not in names:
        found = [n for n in names if n.startswith(low)]
        if len(found) == 1:
            low = found[0]
    value = Word(rest, rest if word.value is not None else None) if colon else None
    return low, value


def bind(spec: Spec, words: list[Word]) -> dict[str, list[Word]]:
    """Parameters by canonical name; ``_extra`` holds positional words beyond the spec's; ``_switch`` the
    switches. Comma-separated arrays (``gc a.txt, b.txt``) stay with their parameter."""
    out: dict[str, list[Word]] = {}
    positional = list(spec.positional)
    i = 0
    last: str | None = None
    while i < len(words):
        w = words[i]
        if w.kind == "op" and w.text == "," and last is not None and i + 1 < len(words):
            out[last].append(words[i + 1])
            i += 2
            continue
        if w.kind == "param":
            name, attached = _param_name(w, spec.values)
            if attached is not None:
                out.setdefault(name, []).append(attached)
                last = name
            elif name in spec.values and i + 1 < len(words) and words[i + 1].kind != "param":
                out.setdefault(name, []).append(words[i + 1])
                last = name
                i += 1
            else:
                out.setdefault("_switch", []).append(Word(name, name))
                last = None
            if name in positional:
                positional.remove(name)
            i += 1
            continue
        if _is_switch(w.value):
            out.setdefault("_switch", []).append(w)
            i += 1
            continue
        name = positional.pop(0) if positional else "_extra"
        out.setdefault(name, []).append(w)
        last = name
        i += 1
    return out


def _values(bound: dict[str, list[Word]], *names: str) -> list[str | None]:
    return [w.value for n in names for w in bound.get(n, [])]


def _literal_join(bound: dict[str, list[Word]], *names: str) -> str | None:
    given = [w.value for n in names for w in bound.get(n, [])]
    return None if any(v is None for v in given) else "\n".join(v for v in given if v is not None)


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

    # -- PowerShell --------------------------------------------------------------------------------
    def powershell(self, text: str, depth: int, feed: list[str], stdin: str | None) -> None:
        self._budget(text, depth)
        try:
            for _sep, pipeline in ps_pipelines(text, self.lookup):
                ran: list[str] = list(feed)
                piped: str | None = None
                for n, cmd in enumerate(pipeline.commands):
                    self.walker._count(depth)
                    out, piped = self._ps_command(cmd, depth, ran, stdin if n == 0 else "pipe",
                                                  piped if n else None, n > 0)
                    ran = [*ran, *out]
        except LexError as e:
            raise Unreadable("ps_error", str(e)) from None

    def _nested(self, words: list[Word], depth: int) -> None:
        """Read the code inside groups, blocks and expandable strings; judge member calls."""
        for k, w in enumerate(words):
            if w.kind in ("group", "block") and w.inner.strip() or w.inner.strip():
                self.powershell(w.inner, depth + 1, [], None)
            if w.kind == "member" and w.call:
                self._member_call(words, k)
            if w.kind == "var" and (w.text.lower().startswith("$executioncontext") or w.text.lower() == "$host"):
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
        if name in SAFE_METHODS:
            return
        raise Unreadable("ps_dynamic", f"{member.text}()")

    def _ps_command(self, cmd: Command, depth: int, feed: list[str], stdin: str | None, piped: str | None,
                    in_pipe: bool) -> tuple[list[str], str | None]:
        """Judge one pipeline element; return (programs it runs, the text it writes when the line shows it)."""
        words = cmd.words
        self._nested(words, depth)
        if not words:
            self._redirects(cmd, None, depth)
            return [], None
        head = words[0]
        if head.kind == "op" and head.text in ("&", "."):
            return self._invoke(head.text, words[1:], cmd, depth, feed, stdin), None
        if head.kind == "var" and len(words) > 1 and words[1].kind == "op" and words[1].text.endswith("="):
            self._assign(head, words[2:], depth, feed)
            return [], None
        if head.kind != "word" or head.value is None:
            for k, w in enumerate(words):  # an expression: ``[IO.File]::...``, ``"x" | ...``, ``$x.M()``
                if w.kind == "type" and k + 1 < len(words) and words[k + 1].kind == "member":
                    continue
            self._redirects(cmd, self._expression_text(words), depth)
            return [], self._expression_text(words)
        name = head.value.lower()
        if name in _KEYWORDS:
            return [], None  # if/foreach/function...: their groups and blocks were read above
        canonical = ALIASES.get(name, name)
        if name in ("curl", "wget") and not any(w.kind == "param" and len(w.text) > 2 and w.text[1:].lower()
                                                in _IWR_PARAMS for w in words[1:]):
            canonical = name  # curl.exe's own options (``curl -sSLo x URL``): the real curl
        return self._cmdlet(canonical, head, words[1:], cmd, depth, feed, stdin, piped, in_pipe)

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

    def _invoke(self, how: str, words: list[Word], cmd: Command, depth: int, feed: list[str],
                stdin: str | None) -> list[str]:
        """``& X args``, ``. X``: X is a script block (read above), a command or file named by a literal, or,
        built at run time, a program the line does not show (``ps_dynamic``)."""
        if not words:
            raise Unreadable("ps_error", f"{how} without a command")
        target = words[0]
        if target.kind == "block":
            return []
        if target.value is None or target.kind in ("var", "group", "type"):
            raise Unreadable("ps_dynamic", f"{how} {target.text}")
        args = [w.value for w in words[1:]]
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
                stdin: str | None, piped: str | None, in_pipe: bool) -> tuple[list[str], str | None]:
        w = self.walker
        spec = SPECS.get(name)
        bound = bind(spec, args) if spec is not None else {}
        handler = _HANDLERS.get(name)
        self._redirects(cmd, _literal_join(bound, "inputobject") if name == "write-output" else None, depth)
        if handler is not None:
            return handler(self, name, bound, depth, feed, stdin, piped, in_pipe), None
        if name == "write-output":
            w._record({"program": "echo", "options": [], "fed_by": [], "script": None, "stdin": stdin})
            return ["echo"], _literal_join(bound, "inputobject")
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
            if verb.isalpha() and noun.replace("-", "").isalnum():
                raise Unreadable("win_unknown", str(head.value))
        return self._run(str(head.value), [a.value for a in args], depth, feed, stdin), None

    # -- cmd.exe -----------------------------------------------------------------------------------
    def cmd(self, text: str, depth: int, feed: list[str], stdin: str | None) -> None:
        self._budget(text, depth)
        try:
            for _sep, pipeline in cmd_pipelines(text, self.lookup):
                ran: list[str] = list(feed)
                for n, command in enumerate(pipeline.commands):
                    self.walker._count(depth)
                    ran = [*ran, *self._cmd_command(command, depth, ran, stdin if n == 0 else "pipe")]
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
            handler = _HANDLERS[canonical]
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


_KEYWORDS = frozenset({"if", "elseif", "else", "while", "for", "foreach", "do", "until", "switch", "try", "catch",
                       "finally", "trap", "function", "filter", "return", "throw", "exit", "break", "continue",
                       "param", "begin", "process", "end", "data", "class", "enum", "using", "workflow",
                       "parallel", "sequence", "dynamicparam"})
_IWR_PARAMS = frozenset({"uri", "outfile", "method", "body", "infile", "usebasicparsing", "headers", "proxy",
                         "contenttype", "usedefaultcredentials", "sessionvariable", "websession", "form",
                         "skipcertificatecheck", "timeoutsec", "maximumredirection", "useragent"})
_CMD_BUILTINS = {"type": "get-content", "copy": "copy-item", "move": "move-item", "del": "remove-item",
                 "erase": "remove-item", "rd": "remove-item", "rmdir": "remove-item", "ren": "rename-item",
                 "rename": "rename-item", "md": "mkdir", "mkdir": "mkdir", "cd": "set-location",
                 "chdir": "set-location", "pushd": "push-location", "popd": "pop-location", "dir": "get-childitem"}
"""cmd's builtins that do what a cmdlet does: read through the same handlers."""


# -- handlers: a cmdlet's effect as the bash commands that have it --------------------------------------
Handler = Callable[[Reader, str, dict[str, list[Word]], int, list[str], str | None, str | None, bool], list[str]]


def _paths(bound: dict[str, list[Word]], *names: str) -> list[str | None]:
    return [v for v in _values(bound, *names, "_extra") if not _is_switch(v)]


def _argv(program: str, *parts: str | None) -> list[str | None]:
    return [program, *parts]


def _read(r: Reader, name: str, b: dict[str, list[Word]], depth: int, feed: list[str], stdin: str | None,
          piped: str | None, in_pipe: bool) -> list[str]:
    keys = ("path", *_PATHS[1:]) if name != "select-string" else ("path", "literalpath", "lp")
    paths = [p for p in _paths(b, *keys) if p is not None]
    if any(_is_registry(p) or _is_env_drive(p) for p in paths):
        return []  # reading the registry or the environment: no file
    program = "ls" if name == "get-childitem" else "cat"
    if not paths:
        r.walker._record({"program": program, "options": [], "fed_by": [], "script": None, "stdin": stdin})
        return [program]
    return r.walker.argv([program, "--", *paths], depth + 1, feed, stdin)


def _write_content(r: Reader, name: str, b: dict[str, list[Word]], depth: int, feed: list[str], stdin: str | None,
                   piped: str | None, in_pipe: bool) -> list[str]:
    keys = ("filepath", "literalpath", "lp") if name in ("out-file", "tee-object") else _PATHS
    if name in ("set-content", "add-content"):
        text = _literal_join(b, "value") if "value" in b else piped if in_pipe else ""
    elif name == "clear-content":
        text = ""
    else:
        text = piped if in_pipe else _literal_join(b, "inputobject")
    for path in _paths(b, *keys):
        if path is None:
            continue
        if _is_registry(path):
            r.walker.facts.autorun.append(f"{path} (a registry write)")
            continue
        r._write(path, text)
    r.walker._record({"program": name, "options": [], "fed_by": sorted(set(feed)), "script": None, "stdin": stdin})
    return [name]


def _new_item(r: Reader, name: str, b: dict[str, list[Word]], depth: int, feed: list[str], stdin: str | None,
              piped: str | None, in_pipe: bool) -> list[str]:
    kind = (_literal_join(b, "itemtype", "type") or "file").lower()
    names = _values(b, "name")
    bases = _paths(b, "path") or ["."]
    paths = [ntpath.join(base, n) if n else base for base in bases for n in (names or [""])
             if base is not None and (n is not None or not names)]
    if any(_is_registry(p) for p in paths):
        r.walker.facts.autorun.append(f"{paths[0]} (a registry write)")
        return [name]
    if name == "mkdir" or kind.startswith("dir"):
        return r.walker.argv(["mkdir", "-p", *paths], depth + 1, feed, stdin)
    if kind in ("symboliclink", "junction", "hardlink"):
        target = _values(b, "value", "target")
        return r.walker.argv(["ln", "-s", *(target[:1] or [None]), *paths], depth + 1, feed, stdin)
    text = _literal_join(b, "value") if "value" in b else piped if in_pipe else ""
    for path in paths:
        r._write(path, text)
    return [name]


def _copy_move(r: Reader, name: str, b: dict[str, list[Word]], depth: int, feed: list[str], stdin: str | None,
               piped: str | None, in_pipe: bool) -> list[str]:
    sources = _paths(b, *_PATHS)
    dest = _values(b, "destination")[:1] or ["."]
    if any(_is_registry(p) for p in [*sources, *dest]):
        r.walker.facts.autorun.append("a registry copy")
        return [name]
    program = ["cp", "-r"] if name == "copy-item" else ["mv"]
    return r.walker.argv([*program, *sources, *dest], depth + 1, feed, stdin)


def _remove(r: Reader, name: str, b: dict[str, list[Word]], depth: int, feed: list[str], stdin: str | None,
            piped: str | None, in_pipe: bool) -> list[str]:
    paths = _paths(b, *_PATHS)
    if any(_is_registry(p) for p in paths):
        r.walker.facts.autorun.append("a registry change")
        return [name]
    return r.walker.argv(["rm", "-rf", *paths], depth + 1, feed, stdin) if paths else []


def _rename(r: Reader, name: str, b: dict[str, list[Word]], depth: int, feed: list[str], stdin: str | None,
            piped: str | None, in_pipe: bool) -> list[str]:
    paths = _paths(b, *_PATHS)
    new = _values(b, "newname")
    if not paths or not new:
        return []
    source = paths[0]
    target = None if source is None or new[0] is None else ntpath.join(ntpath.dirname(source), new[0])
    return r.walker.argv(["mv", source, target], depth + 1, feed, stdin)


def _location(r: Reader, name: str, b: dict[str, list[Word]], depth: int, feed: list[str], stdin: str | None,
              piped: str | None, in_pipe: bool) -> list[str]:
    if name == "pop-location":
        return r.walker.argv(["popd"], depth + 1, feed, stdin)
    paths = _paths(b, *_PATHS)
    program = "pushd" if name == "push-location" else "cd"
    return r.walker.argv([program, *(paths[:1] or ["~"])], depth + 1, feed, stdin)


def _web(r: Reader, name: str, b: dict[str, list[Word]], depth: int, feed: list[str], stdin: str | None,
         piped: str | None, in_pipe: bool) -> list[str]:
    """``Invoke-WebRequest``/``Invoke-RestMethod``/``Start-BitsTransfer`` as the curl that does the same."""
    uri_key, out_key = ("source", "destination") if name == "start-bitstransfer" else ("uri", "outfile")
    uris = b.get(uri_key, []) or b.get("_extra", [])
    argv: list[str | None] = ["curl"]
    for option, key in (("-o", out_key), ("-T", "infile"), ("-x", "proxy"), ("-X", "method")):
        for value in _values(b, key):
            argv += [option, value]
    if "body" in b or "form" in b:
        argv += ["-d", "x"]
    prefixes: dict[int, str] = {}
    for n, u in enumerate(uris):
        argv.append(u.value)
        if u.value is None:
            prefixes[len(uris) - n] = _literal_start(u.text)
    if not uris:
        argv.append(None)
        prefixes[1] = ""
    r.walker.prefixes = prefixes
    return r.walker.argv(argv, depth + 1, feed, stdin)


def _literal_start(text: str) -> str:
    """The fixed start of a word built at run time (``"https://h/?q=$x"`` -> ``https://h/?q=``)."""
    body = text.strip("'\"")
    cut = min((i for i in (body.find("$"), body.find("`"), body.find("%")) if i >= 0), default=len(body))
    return body[:cut]


def _eval(r: Reader, name: str, b: dict[str, list[Word]], depth: int, feed: list[str], stdin: str | None,
          piped: str | None, in_pipe: bool) -> list[str]:
    r.walker._record({"program": "eval", "options": [], "fed_by": sorted(set(feed)), "script": "inline",
                      "stdin": stdin})
    return ["eval"]


def _start_process(r: Reader, name: str, b: dict[str, list[Word]], depth: int, feed: list[str],
                   stdin: str | None, piped: str | None, in_pipe: bool) -> list[str]:
    files = _values(b, "filepath")
    if not files:
        return []
    arguments = b.get("argumentlist", []) + b.get("args", [])
    args: list[str | None] = []
    for a in arguments:  # one string is a command line the program splits; an array, its words
        args += (a.value.split() if a.value is not None and len(arguments) == 1 else [a.value])
    for value in _values(b, "workingdirectory"):
        r.walker._path("read", value or "")
    for value in _values(b, "redirectstandardoutput", "redirectstandarderror"):
        if value is not None:
            r._write(value, None)
    for value in _values(b, "redirectstandardinput"):
        if value is not None:
            r.walker._path("read", value)
    return r._start(files[0], args, depth, feed, stdin)


def _invoke_command(r: Reader, name: str, b: dict[str, list[Word]], depth: int, feed: list[str],
                    stdin: str | None, piped: str | None, in_pipe: bool) -> list[str]:
    for host in _values(b, "computername", "cn", "hostname", "vmname", "connectionuri", "uri"):
        r.walker.facts.urls.append(f"winrm://{host}" if host and "://" not in host else host or "opaque:a remote "
                                   "computer named at run time")
    ran: list[str] = []
    for script in _values(b, "filepath"):
        ran += r.walker.argv(["pwsh", "-File", script], depth + 1, feed, stdin)
    return ran or [name]


def _invoke_item(r: Reader, name: str, b: dict[str, list[Word]], depth: int, feed: list[str], stdin: str | None,
                 piped: str | None, in_pipe: bool) -> list[str]:
    ran: list[str] = []
    for path in _paths(b, *_PATHS):
        if path is None:
            raise Unreadable("ps_dynamic", "Invoke-Item of a file named at run time")
        ran += r._run(path if "\\" in path or "/" in path else ".\\" + path, [], depth, feed, stdin)
    return ran


def _import_module(r: Reader, name: str, b: dict[str, list[Word]], depth: int, feed: list[str],
                   stdin: str | None, piped: str | None, in_pipe: bool) -> list[str]:
    ran: list[str] = []
    for module in _values(b, "name", "_extra"):
        if module is None:
            raise Unreadable("ps_dynamic", "Import-Module of a module named at run time")
        if "\\" in module or "/" in module or module.lower().endswith((".ps1", ".psm1", ".dll", ".psd1")):
            ran += r.walker.argv(["source", module], depth + 1, feed, stdin)
    return ran or [name]


def _archive(r: Reader, name: str, b: dict[str, list[Word]], depth: int, feed: list[str], stdin: str | None,
             piped: str | None, in_pipe: bool) -> list[str]:
    sources = _paths(b, *_PATHS)
    dest = _values(b, "destinationpath")[:1]
    if name == "expand-archive":
        return r.walker.argv(["unzip", *sources[:1], "-d", *(dest or ["."])], depth + 1, feed, stdin)
    return r.walker.argv(["zip", "-r", *(dest or [None]), *sources], depth + 1, feed, stdin)


def _new_object(r: Reader, name: str, b: dict[str, list[Word]], depth: int, feed: list[str], stdin: str | None,
                piped: str | None, in_pipe: bool) -> list[str]:
    if "comobject" in b:
        raise Unreadable("ps_dynamic", "New-Object -ComObject")
    for t in _values(b, "typename"):
        if t is None or t.lower().removeprefix("system.") not in SAFE_TYPES:
            raise Unreadable("ps_dynamic", f"New-Object {t or '(a type named at run time)'}")
    return [name]


def _property(r: Reader, name: str, b: dict[str, list[Word]], depth: int, feed: list[str], stdin: str | None,
              piped: str | None, in_pipe: bool) -> list[str]:
    paths = _paths(b, *_PATHS)
    if any(p is None or _is_registry(p) for p in paths):
        r.walker.facts.autorun.append(f"{paths[0] or 'a registry key'} (a registry write)")
        return [name]
    if any(_is_env_drive(p) for p in paths):
        for p in paths:  # ``Set-Item Env:PATH '.;...'``: a setting, as ``$env:PATH = ...``
            r.walker._setting(str(p)[4:], _literal_join(b, "value"), depth, _literal_join(b, "value") or "$")
        return [name]
    return r.walker.argv(["touch", *paths], depth + 1, feed, stdin)


def _gallery(r: Reader, name: str, b: dict[str, list[Word]], depth: int, feed: list[str], stdin: str | None,
             piped: str | None, in_pipe: bool) -> list[str]:
    sources = [v for v in _values(b, "sourcelocation", "publishlocation", "uri", "location", "source")
               if v is None or "://" in v]
    named = _values(b, "repository")
    r.walker.facts.urls += [v or "opaque:a repository named at run time" for v in sources] or \
        ([_GALLERY] if not named or "psgallery" in [(n or "").lower() for n in named] else
         ["opaque:a repository registered earlier"])
    for value in _values(b, "path", "literalpath", "destination"):
        if value is not None:
            r.walker._path("write", value)
    r.walker._record({"program": name, "options": [], "fed_by": [], "script": None, "stdin": stdin})
    return [name]


def _network(r: Reader, name: str, b: dict[str, list[Word]], depth: int, feed: list[str], stdin: str | None,
             piped: str | None, in_pipe: bool) -> list[str]:
    if name == "resolve-dnsname":
        return r.walker.argv(["dig", *_values(b, "name")], depth + 1, feed, stdin)
    if name == "send-mailmessage":
        servers = _values(b, "smtpserver")
        r.walker.facts.urls += [f"smtp://{s}" if s else "opaque:a mail server named at run time"
                                for s in servers] or ["opaque:the mail server in $PSEmailServer"]
        for attachment in _values(b, "attachments"):
            r.walker._path("read", attachment or "")
        return [name]
    hosts = _values(b, "computername")
    return r.walker.argv(["nc", *hosts[:1], "443"], depth + 1, feed, stdin) if hosts else [name]


_HANDLERS: dict[str, Handler] = {
    **dict.fromkeys(("get-content", "import-csv", "import-clixml", "get-filehash", "format-hex", "select-string",
                     "get-childitem"), _read),
    **dict.fromkeys(("set-content", "add-content", "clear-content", "out-file", "tee-object", "export-csv",
                     "export-clixml"), _write_content),
    "new-item": _new_item, "mkdir": _new_item, "copy-item": _copy_move, "move-item": _copy_move,
    "remove-item": _remove, "rename-item": _rename, "set-location": _location, "push-location": _location,
    "pop-location": _location, "invoke-webrequest": _web, "invoke-restmethod": _web, "start-bitstransfer": _web,
    "invoke-expression": _eval, "start-process": _start_process, "invoke-command": _invoke_command,
    "start-job": _invoke_command, "invoke-item": _invoke_item, "import-module": _import_module,
    "expand-archive": _archive, "compress-archive": _archive, "new-object": _new_object,
    **dict.fromkeys(("set-itemproperty", "new-itemproperty", "remove-itemproperty", "copy-itemproperty",
                     "set-item"), _property),
    **dict.fromkeys(("install-module", "install-script", "install-package", "install-psresource", "save-module",
                     "save-script", "save-package", "save-psresource", "update-module", "update-script",
                     "find-module", "find-script", "find-package", "publish-module", "publish-script",
                     "publish-psresource", "register-psrepository", "register-packagesource", "set-psrepository",
                     "update-psresource"), _gallery),
    **dict.fromkeys(("test-netconnection", "resolve-dnsname", "send-mailmessage"), _network),
}


# -- Windows programs, from any shell -------------------------------------------------------------------
CODE_RUNNERS = frozenset({"mshta", "rundll32", "rundll", "regsvr32", "regsvr", "regasm", "regsvcs", "installutil",
                           "odbcconf", "pcalua", "wmic", "msiexec", "cmstp", "control", "msxsl", "forfiles",
                           "scriptrunner", "syncappvpublishingserver", "hh", "infdefaultinstall", "ieexec",
                           "presentationhost"})
"""System programs that run code the line does not show (a URL, a DLL's entry, a COM scriptlet); by
``program_name`` too (``rundll32`` is ``rundll``: a version suffix is dropped)."""
MACHINE = frozenset({"netsh", "bcdedit", "vssadmin", "wevtutil", "icacls", "cacls", "takeown", "runas", "setx",
                      "sc", "net", "net1", "diskpart", "format", "cipher", "auditpol", "secedit", "manage-bde"})
"""System programs that change the machine's settings, accounts or permissions."""
_MACHINE_READ = {"net": frozenset({"view", "statistics", "time", "help"}), "sc": frozenset({"query", "queryex", "qc",
                                                                                             "qdescription"}),
                 "icacls": frozenset(), "setx": frozenset()}


def windows_program(walker: _Walker, program: str, args: list[str | None], depth: int, feed: list[str],
                    stdin: str | None) -> list[str] | None:
    """What a Windows system program does, for any shell that runs it; None when ``program`` is not one."""
    low = [(a or "").lower() for a in args]
    if program == "certutil":
        if "-urlcache" in low or "/urlcache" in low or "-verifyctl" in low:
            rest = [a for a in args if a is not None and not a.startswith(("-", "/"))]
            if rest:
                return walker.argv(["curl", "-o", rest[1] if len(rest) > 1 else rest[0].rsplit("/", 1)[-1],
                                    rest[0]], depth + 1, feed, stdin)
        if "-decode" in low or "-decodehex" in low or "/decode" in low:
            files: list[str | None] = [a for a in args if a is None or not a.startswith(("-", "/"))]
            if len(files) >= 2:
                return walker.argv(["dd", f"if={files[0]}", f"of={files[1]}"], depth + 1, feed, stdin) \
                    if None not in files[:2] else walker.argv(["dd", None, None], depth + 1, feed, stdin)
        return ["certutil"]
    if program == "bitsadmin":
        if "/transfer" in low or "/addfile" in low:
            urls: list[str | None] = [a for a in args if a is not None
                                      and a.lower().startswith(("http://", "https://", "ftp://"))]
            at = args.index(urls[0]) if urls else -1
            dest = args[at + 1] if 0 <= at < len(args) - 1 else None
            return walker.argv(["curl", "-o", dest, *(urls[:1] or [None])], depth + 1, feed, stdin)
        return ["bitsadmin"]
    if program == "reg":
        verb = low[0] if low else ""
        if verb in ("add", "import", "copy", "restore", "load", "delete", "unload"):
            walker.facts.autorun.append(f"reg {verb} (a registry write)")
        for i, a in enumerate(low):
            if verb in ("import", "load", "restore") and i > 0 and args[i] is not None and not a.startswith("/"):
                walker._path("read", str(args[i]))
        return ["reg"]
    if program in ("schtasks", "at"):
        if program == "at" or "/create" in low or "/change" in low or "/run" in low:
            walker.facts.autorun.append(f"{program} (a scheduled task: runs code later)")
        return [program]
    if program in CODE_RUNNERS:
        raise Unreadable("win_unknown", program)
    if program in MACHINE:
        allowed = _MACHINE_READ.get(program)
        if allowed is not None and low and low[0] in allowed or program == "sc" and not low:
            return [program]
        raise Unreadable("win_unknown", program)
    if program == "wsl":  # ``wsl [-d X] [-u U] [--cd D] [-e|--exec|--] CMD ARGS``: a Linux command line
        i = 0
        while i < len(args) and (args[i] or "").startswith("-") and args[i] not in ("-e", "--exec", "--"):
            i += 2 if args[i] in ("-d", "--distribution", "-u", "--user", "--cd") else 1
        line = args[i + 1:] if i < len(args) and args[i] in ("-e", "--exec", "--") else args[i:]
        if not line:
            walker._record({"program": "bash", "options": [], "fed_by": sorted(set(feed)), "script": "stdin",
                            "stdin": stdin})
            return ["wsl"]
        return walker.argv(list(line), depth + 1, feed, stdin)
    if program in ("cscript", "wscript"):
        scripts = [a for a in args if a is None or not a.startswith(("/", "//"))]
        return walker.argv(["sh", *scripts[:1]], depth + 1, feed, stdin) if scripts else [program]
    return None


def read_code(walker: _Walker, dialect: str, text: str, depth: int, feed: list[str], stdin: str | None) -> None:
    """Read ``text`` as ``dialect`` (``powershell`` or ``cmd``) into ``walker``; raises ``Unreadable``."""
    reader = Reader(walker, dialect)
    if dialect == "cmd":
        reader.cmd(text, depth, feed, stdin)
    else:
        reader.powershell(text, depth, feed, stdin)


def program_of(word: str) -> str:
    """A Windows command word's program (``C:\\x\\certutil.exe`` -> ``certutil``), lowercased."""
    return program_name(word).lower()
