"""Windows system programs, read the same from PowerShell, cmd and Git Bash: downloads (``certutil
-urlcache``, ``bitsadmin /transfer``), ``certutil -decode``, registry and scheduled-task writes (autorun),
``wsl CMD`` (a Linux command line), ``cscript``/``wscript`` (a script file), and the programs that run code
the line does not show or change the machine (``win_unknown``: fails closed). Pure: no I/O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from guardrails.tools.wincmdlets import Unreadable

if TYPE_CHECKING:
    from guardrails.tools.shell import _Walker


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
