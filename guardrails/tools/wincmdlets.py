"""PowerShell's names, as the Windows readers (``guardrails.tools.winshell``) need them: aliases, the
variables whose value is known, the cmdlets' parameters (``Spec``, ``bind``), the verbs, types and
methods that only read or shape data, and each file- or network-touching cmdlet's effect as the bash
command that has it (``HANDLERS``: ``Copy-Item`` is ``cp -r``, ``Invoke-WebRequest -OutFile`` is ``curl -o``).
Extend the tables here. Pure: no I/O.
"""

from __future__ import annotations

import ntpath
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from guardrails.tools.winlex import Word

if TYPE_CHECKING:
    from guardrails.tools.winshell import Reader


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
                        "trace", "receive", "exit", "clear", "debug", "pop", "push", "use", "limit", "skip", "convert",
                        "search", "hide", "step", "switch", "watch", "assert", "confirm"})
"""Verbs of cmdlets that read or shape data: one of these the reader does not know passes (``Get-Date``,
``Sort-Object``); another of PowerShell's approved verbs (``APPROVED_VERBS``) it does not know is
``win_unknown`` (fails closed: ``Set-``, ``New-``, ``Install-``, ``Invoke-``...)."""
APPROVED_VERBS = frozenset({
    "add", "close", "copy", "enter", "find", "lock", "move", "new", "open", "optimize", "redo", "remove", "rename",
    "reset", "resize", "set", "undo", "unlock", "connect", "disconnect", "send", "backup", "checkpoint", "compress",
    "dismount", "edit", "expand", "export", "import", "initialize", "merge", "mount", "publish", "restore", "save",
    "sync", "unpublish", "update", "ping", "repair", "approve", "build", "complete", "deny", "deploy", "disable",
    "enable", "install", "invoke", "register", "request", "restart", "resume", "start", "stop", "submit", "suspend",
    "uninstall", "unregister", "block", "grant", "protect", "revoke", "unblock", "unprotect"})
"""PowerShell's approved verbs (``Get-Verb``) that change things. A name with any other verb (``Say-Verbose``,
``Create-Directory``) is no cmdlet of a module: a function of the user's, read as an unknown program."""
SAFE_CMDLETS = frozenset({"start-sleep", "stop-process", "new-guid", "new-timespan", "new-variable", "set-variable",
                          "remove-variable", "add-member", "set-strictmode", "stop-job", "remove-job", "start-transcript",
                          "stop-transcript", "new-object", "add-content", "invoke-expression", "set-psdebug",
                          "enter-pssession", "exit-pssession", "invoke-pester", "clear-host", "remove-module"})

SAFE_TYPES = frozenset({"math", "string", "int", "int16", "int32", "int64", "uint32", "uint64", "long", "double",
                        "float", "single", "decimal", "bool", "boolean", "char", "byte", "datetime", "datetimeoffset",
                        "timespan", "guid", "regex", "text.regularexpressions.regex", "convert", "version", "uri",
                        "text.encoding", "io.path", "array", "enum", "bitconverter", "console", "text.stringbuilder",
                        "collections.arraylist", "collections.hashtable", "collections.generic.list[string]",
                        "collections.generic.list[object]", "collections.generic.list[int]", "pscustomobject",
                        "ordered", "stringcomparison", "globalization.cultureinfo", "io.searchoption", "char[]",
                        "string[]", "int[]", "object[]", "object", "psobject", "hashtable", "xml", "switch",
                        "environment", "io.file", "io.directory"})
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
    "escape", "unescape", "compare", "concat", "count", "keys", "values", "tolocaltime",
    "getenvironmentvariable", "getenvironmentvariables", "getfolderpath", "expandenvironmentvariables", "exists",
    "getlogicaldrives", "newguid", "gettemppath", "getrandomfilename", "appendchild", "createelement",
    "setattribute", "removechild", "removeattribute", "createattribute", "importnode", "dispose", "close",
    "insertafter", "insertbefore", "createtextnode", "getelementsbytagname",
    "touniversaltime", "getfullpath", "haschanges", "getattribute", "selectnodes", "selectsinglenode",
    "writeline", "write", "toupperfirst", "gethashcode", "isdefined", "getnames", "getvalues", "has",
})
"""Methods the reader lets pass: on strings, numbers, dates, collections and paths, and the environment's
and file system's questions (``[Environment]::GetEnvironmentVariable``, ``[IO.File]::Exists``). Any other
method call (``.DownloadFile(``, ``.Invoke(``, ``.CopyTo(``, ``::WriteAllText(``, ``::SetEnvironmentVariable(``)
is ``ps_dynamic``; ``.Replace(`` given a path (a file's ``Replace(dest, backup)`` writes dest) too."""

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
    "set-executionpolicy": _spec(("executionpolicy", "scope")),
    "test-connection": _spec(("targetname", "source"), "computername", "count", "buffersize", "delay"),
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
SPECS_JOIN = _spec(("path", "childpath"), "additionalchildpath", "resolve")
"""``Join-Path A B [C...]``: read to know a path a group spells (``(Join-Path $HOME '.ssh')``)."""
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
Handler = Callable[["Reader", str, dict[str, list[Word]], int, list[str], str | None, str | None, bool], list[str]]


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
    hosts = _values(b, "computername", "targetname")
    return r.walker.argv(["nc", *hosts[:1], "443"], depth + 1, feed, stdin) if hosts else [name]


HANDLERS: dict[str, Handler] = {
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
    **dict.fromkeys(("test-netconnection", "test-connection", "resolve-dnsname", "send-mailmessage"), _network),
}
