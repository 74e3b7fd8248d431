"""Which commands write files, and through which options or operands: a table, not code paths.

Each entry says how one program (or one git/pip subcommand: ``"git clone"``, ``"git worktree add"``)
names the files it writes. The shell analysis applies every entry the same way (``written_files``),
and the path rules then judge those files like any tool's writes (containment, privileged places,
the manifest, read-before-write, ``.git``). Extend the table, not the walker.

The older readers in ``guardrails.tools.commands`` (``cp``, ``mv``, ``tee``, ``sed -i``, ``dd of=``...) and
``guardrails.tools.network`` (``curl -o``, ``wget -O``) still do what they did; this table adds the
programs whose writes they did not know (``sponge``, ``wget -P``, ``git clone URL DEST``,
``ssh-keygen -f``, ``sqlite3``, ``sort -o``, ``tar -x -C``, ``unzip -d``...). A path written twice
is judged twice; that costs nothing a rule notices.

Pure argv readers: no filesystem, no environment.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass

from guardrails.tools.commands import Argv, not_a_file, options_with_values, split_operands


@dataclass(frozen=True, slots=True)
class Writes:
    """How one program names what it writes."""

    files: frozenset[str] = frozenset()
    """Options whose value is a file it writes (``-o F``, ``--output=F``, ``-oF``)."""
    folders: frozenset[str] = frozenset()
    """Options whose value is a folder it writes files into (``-P DIR``, ``-C DIR``, ``-d DIR``)."""
    operands: tuple[int, ...] = ()
    """Positions of the operands it writes (0 = the first; -1 = the last)."""
    min_operands: int = 0
    """The written operand is there only with at least this many operands (``git clone URL`` alone
    writes a folder named after the URL, in the current folder)."""
    values: frozenset[str] = frozenset()
    """Its other options that take a value, so that the operands are counted right."""
    when: frozenset[str] = frozenset()
    """The entry applies only when one of these options is given (``tar -x``); empty: always."""
    read_only: frozenset[str] = frozenset()
    """Options with which it only reads: the files named by ``files`` are then reads (``ssh-keygen -l -f``)."""
    op: str = "write"
    """``write`` (content: every path rule), or ``change`` (made or altered, not overwritten blind:
    containment, privileged places, the manifest and ``.git``, not read-before-write)."""


def _o(*names: str) -> frozenset[str]:
    return frozenset(names)


_TAR_VALUES = _o("-f", "--file", "-C", "--directory", "-T", "--files-from", "-X", "--exclude-from", "-b",
                 "--blocking-factor", "-H", "--format", "-K", "--starting-file", "-N", "--newer", "-L",
                 "--tape-length", "-g", "--listed-incremental", "-V", "--label", "-I", "--use-compress-program")
_CLONE_VALUES = _o("-b", "--branch", "-o", "--origin", "-c", "--config", "--depth", "--reference",
                   "--reference-if-able", "--separate-git-dir", "-u", "--upload-pack", "--template", "-j", "--jobs",
                   "--filter", "--shallow-since", "--shallow-exclude", "--server-option", "--bundle-uri")

TABLE: Mapping[str, tuple[Writes, ...]] = {
    # stdin into a file, at the end of a pipeline
    "sponge": (Writes(operands=(0,)),),
    # downloads: the folder; the files (``-o``/``-O`` joined to it) are ``network.downloaded_files``, which
    # also follows them as downloads (``curl -o x.sh .. && ./x.sh``)
    "wget": (Writes(folders=_o("-P", "--directory-prefix"),
                    values=_o("-e", "--execute", "-o", "--output-file", "-a", "--append-output", "-t", "--tries",
                              "-T", "--timeout", "-U", "--user-agent", "-i", "--input-file")),),
    "curl": (Writes(folders=_o("--output-dir"),
                    values=_o("-d", "--data", "-H", "--header", "-X", "--request", "-u", "--user", "-x", "--proxy",
                              "-A", "--user-agent", "-e", "--referer", "-F", "--form", "-T", "--upload-file")),),
    "aria2c": (Writes(files=_o("-o", "--out"), folders=_o("-d", "--dir")),),
    # git: folders and files it makes
    "git clone": (Writes(operands=(1,), min_operands=2, values=_CLONE_VALUES),),
    "git archive": (Writes(files=_o("-o", "--output"), values=_o("--format", "--prefix", "--remote", "--exec")),),
    "git worktree add": (Writes(operands=(0,), values=_o("-b", "-B", "--reason")),),
    "git submodule add": (Writes(operands=(1,), min_operands=2, values=_o("-b", "--branch", "--name", "--depth",
                                                                            "--reference")),),
    "git bundle create": (Writes(operands=(0,)),),
    "git format-patch": (Writes(folders=_o("-o", "--output-directory"), files=_o("--output")),),
    "git diff": (Writes(files=_o("--output")),),
    "git log": (Writes(files=_o("--output")),),
    "git show": (Writes(files=_o("--output")),),
    "git init": (Writes(operands=(0,), op="change", values=_o("-b", "--initial-branch", "--object-format",
                                                              "--template", "--separate-git-dir", "--shared")),),
    # pieces of a file
    "split": (Writes(operands=(1,), min_operands=2, values=_o("-l", "-b", "-C", "-n", "-a", "-t", "--lines",
                                                              "--bytes", "--line-bytes", "--number", "--suffix-length",
                                                              "--additional-suffix", "--separator", "--filter")),),
    "csplit": (Writes(files=_o("-f", "--prefix"), values=_o("-b", "--suffix-format", "-n", "--digits")),),
    # keys and databases
    "ssh-keygen": (Writes(files=_o("-f"), read_only=_o("-l", "-y", "-F", "-B", "-e", "-D", "-Q", "-L", "-Y"),
                          values=_o("-t", "-b", "-C", "-N", "-P", "-E", "-I", "-n", "-O", "-V", "-Z", "-a", "-m",
                                    "-M", "-r", "-s", "-z", "-w")),),
    "sqlite": (Writes(operands=(0,), op="change", values=_o("-cmd", "-init", "-separator", "-newline",
                                                              "-nullvalue", "-vfs", "-mmap", "-lookaside",
                                                              "-pagecache", "-maxsize")),),
    # text tools with an output option or operand
    "sort": (Writes(files=_o("-o", "--output")),),
    "shuf": (Writes(files=_o("-o", "--output")),),
    "uniq": (Writes(operands=(1,), min_operands=2, values=_o("-f", "-s", "-w", "--skip-fields", "--skip-chars",
                                                             "--check-chars")),),
    "xxd": (Writes(operands=(1,), min_operands=2, values=_o("-c", "-g", "-l", "-s", "-o", "-n")),),
    "iconv": (Writes(files=_o("-o", "--output"), values=_o("-f", "-t", "--from-code", "--to-code")),),
    "gpg": (Writes(files=_o("-o", "--output")),),
    "pandoc": (Writes(files=_o("-o", "--output")),),
    "cc": (Writes(files=_o("-o")),), "gcc": (Writes(files=_o("-o")),), "g++": (Writes(files=_o("-o")),),
    "clang": (Writes(files=_o("-o")),), "clang++": (Writes(files=_o("-o")),), "rustc": (Writes(files=_o("-o")),),
    "go build": (Writes(files=_o("-o")),),
    # archives
    "tar": (Writes(folders=_o("-C", "--directory"), when=_o("-x", "--extract", "--get"), values=_TAR_VALUES),
            Writes(files=_o("-f", "--file"), when=_o("-c", "--create", "-r", "--append", "-u", "--update", "-A",
                                                      "--catenate", "--concatenate"), values=_TAR_VALUES)),
    "unzip": (Writes(folders=_o("-d"), values=_o("-x", "-P")),),
    "7z": (Writes(folders=_o("-o")),), "7za": (Writes(folders=_o("-o")),),
    # package installs into a folder of the model's choice
    "pip download": (Writes(folders=_o("-d", "--dest")),),
    "pip install": (Writes(folders=_o("-t", "--target", "--prefix", "--root")),),
}
"""program (or ``"program subcommand"``) -> how it names what it writes. Programs by
``commands.program_name``: ``sqlite3`` is ``sqlite`` (a version suffix is dropped)."""

_GIT_GLOBAL_VALUES = _o("-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path", "--config-env",
                        "--super-prefix")


def _first_operand(args: Argv, values: frozenset[str]) -> int | None:
    """Where the first operand is (a subcommand), skipping options and the values they take."""
    i = 0
    while i < len(args):
        a = args[i]
        if a is None:
            return None
        if not a.startswith("-"):
            return i
        i += 2 if a in values else 1
    return None


def _entry(program: str, args: Argv) -> tuple[tuple[Writes, ...], Argv]:
    """The table's entries for this command and the arguments they read (after any subcommand)."""
    if program in TABLE:
        return TABLE[program], args
    at = _first_operand(args, _GIT_GLOBAL_VALUES if program == "git" else frozenset())
    if at is None:
        return (), args
    key, rest = f"{program} {args[at]}", args[at + 1:]
    if key in TABLE:
        return TABLE[key], rest
    nested = _first_operand(rest, frozenset())
    if nested is not None and f"{key} {rest[nested]}" in TABLE:
        return TABLE[f"{key} {rest[nested]}"], rest[nested + 1:]
    return (), args


def _tar_style(program: str, args: Argv) -> Argv:
    """``tar xzf a.tgz``: the old style, a first word of letters without a dash, is a cluster."""
    if program == "tar" and args and args[0] is not None and args[0][:1].isalpha():
        return [f"-{args[0]}", *args[1:]]
    return args


def written_files(program: str, args: Argv) -> list[tuple[str, str]]:
    """[(op, path)] for what ``program`` writes according to the table; [] for a program not in it.
    ``op`` is ``write`` or ``change``, or ``read`` for a ``files`` option given with a read-only one.
    ``git -C DIR``: git's relative paths start in DIR."""
    found = _written(program, args)
    if program == "git":
        folder = next((v for o, v in options_with_values(args[:_first_operand(args, _GIT_GLOBAL_VALUES) or 0],
                                                          _GIT_GLOBAL_VALUES) if o == "-C"), None)
        if folder is None and "-C" in args[:_first_operand(args, _GIT_GLOBAL_VALUES) or 0]:
            return []  # git -C "$dir": where its paths start is not known
        if folder is not None:
            found = [(op, p if p.startswith(("/", "~")) else posixpath.join(folder, p)) for op, p in found]
    return found


def _written(program: str, args: Argv) -> list[tuple[str, str]]:
    entries, args = _entry(program, args)
    out: list[tuple[str, str]] = []
    for spec in entries:
        args = _tar_style(program, args)
        named = spec.files | spec.folders | spec.values
        given = options_with_values(args, named)
        present = {name for name, _ in given}
        if spec.when and not spec.when & present:
            continue
        reading = bool(spec.read_only & present)
        for name, value in given:
            if value is None or not_a_file(value) or name not in spec.files | spec.folders:
                continue
            out.append(("read" if reading and name in spec.files else spec.op, value))
        if spec.operands:
            _, operands = split_operands(args, named)
            if len(operands) >= max(spec.min_operands, 1):
                for at in spec.operands:
                    if -len(operands) <= at < len(operands) and (path := operands[at]) is not None \
                            and not not_a_file(path):
                        out.append((spec.op, path))
    return out
