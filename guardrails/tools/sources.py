"""Package and VCS settings files: which files they are, and the hosts their text sends programs to (pure).

A package manager or VCS reads where to fetch from out of files in the workspace: ``.npmrc``
(``registry=``), ``pip.conf``, ``requirements.txt`` (``--index-url``, ``pkg @ URL``), ``pyproject.toml``
(``[[tool.uv.index]]``, ``[tool.poetry.source]``, direct references), ``.cargo/config.toml``,
``.gitmodules``, lockfiles (``resolved``)... A model that writes such a file and then runs ``npm install``
sends the install to a host the command line never named. So the text a call writes into one of these
files is read here for the hosts it names as sources, and each must pass the egress rule a ``curl`` to it
would (``guardrails.tools.rules``).

Three readers, by what the file's format lets us tell apart:

- ``lines`` (INI/YAML/npmrc-style settings, text lockfiles): every URL outside comment lines; these
  files name no URL that is not a source, proxy or registry. ``.gitmodules`` also ``git@host:path``.
- ``requirements`` (pip's format): every URL outside comments (option values, direct references,
  archive URLs). Also used for a file of any name whose text has pip option lines (``--index-url``),
  since ``pip install -r`` takes any name.
- ``structured`` (TOML through ``tomllib``, JSON through ``json``): the values of source keys (``url``,
  ``index-url``, ``registry``, ``git``, ``resolved``...) and PEP 508 direct references, anywhere except
  the metadata tables (``[project.urls]``, ``funding``...), which name homepages, not sources;
  ``package.json`` dependency specs that are URLs or git/GitHub shorthands. A fragment that does not
  parse on its own (an edit's ``new_string``) is read line by line: ``key = URL`` for a source key,
  direct references, and ``git+``/``sparse+`` URLs.

A setting whose value is built from an environment variable (``registry=${REG}``) names a host the
proxy cannot see: it comes back as ``OPAQUE``. Cost: each reader is one pass over the text (regexes
are anchored per line and bounded); the structured walk visits each value once.
"""

from __future__ import annotations

import fnmatch
import json
import posixpath
import re
import tomllib
from collections.abc import Iterator

from guardrails.tools.egress import OPAQUE
from guardrails.tools.network import scp_host

_LINES_FILES = frozenset({".npmrc", ".yarnrc", ".yarnrc.yml", ".condarc", "condarc", ".pypirc", "pip.conf",
                          "pip.ini", ".gitmodules", ".gemrc", "pnpm-workspace.yaml", "yarn.lock", "pnpm-lock.yaml",
                          "gemfile.lock", "poetry.lock", "uv.lock", "pdm.lock", "cargo.lock"})
"""Files in which every URL is a source (settings, and lockfiles, whose URLs are what gets fetched)."""
_TOML_FILES = frozenset({"pyproject.toml", "uv.toml", "pipfile", "poetry.toml", "cargo.toml", "bunfig.toml",
                         ".bunfig.toml", "pdm.toml"})
_JSON_FILES = frozenset({"package.json", "package-lock.json", "npm-shrinkwrap.json", "pipfile.lock",
                         "composer.json"})
_REQUIREMENTS = re.compile(r"^(?:.*[-_.])?(?:requirements|constraints|requires)(?:[-_.].*)?\.(?:txt|in)$",
                           re.IGNORECASE)
_IN_FOLDER = {".cargo": ("config", "config.toml"), ".bundle": ("config",)}
_GLOB_CANDIDATES = (*sorted(_LINES_FILES | _TOML_FILES | _JSON_FILES), "requirements.txt", "requirements.in",
                    "constraints.txt", "config", "config.toml")
"""Names a glob in a written path is tried against (as bash, a leading ``*`` does not match a dot file)."""


def settings_kind(path: str) -> str | None:
    """``lines`` | ``requirements`` | ``toml`` | ``json`` for a settings file a package manager or VCS
    reads sources from; None for any other path. By name only: the proxy never reads the file."""
    # Lowercased: on a case-insensitive disk (macOS, Windows) npm opens ``.NPMRC`` as ``.npmrc``.
    # ``\\`` separates on Windows, which also drops a name's trailing dots and spaces (``.npmrc.``)
    path = posixpath.normpath(path.replace("\\", "/"))  # ``.npmrc/.``, ``web/./pip.conf``
    base = posixpath.basename(path).lower().rstrip(". ") or posixpath.basename(path).lower()
    folder = posixpath.basename(posixpath.dirname(path)).lower().rstrip(". ")
    if any(c in base for c in "*?["):  # ``> .np*rc``: bash expands a redirect's word when it matches one file
        return next((kind for name in _GLOB_CANDIDATES if (kind := settings_kind(posixpath.join(folder, name)))
                     and name.startswith(".") == base.startswith(".") and fnmatch.fnmatchcase(name, base)), None)
    if base in _IN_FOLDER.get(folder, ()):
        return "toml" if folder == ".cargo" else "lines"
    if base in _LINES_FILES:
        return "lines"
    if base in _TOML_FILES:
        return "toml"
    if base in _JSON_FILES:
        return "json"
    if _REQUIREMENTS.match(base) or (folder.lower() == "requirements" and base.endswith((".txt", ".in"))):
        return "requirements"
    return None


_PIP_OPTION_LINE = re.compile(r"^[ \t]*(?:-i|-f|--index-url|--extra-index-url|--find-links)(?:[ \t=]|$)",
                              re.MULTILINE)
_DIRECT_REF_LINE = re.compile(r"^[ \t]*[A-Za-z0-9][A-Za-z0-9._-]*[ \t]*(?:\[[^\]\n]*\])?[ \t]*@[ \t]*"
                              r"[A-Za-z][A-Za-z0-9+.-]*://\S+[ \t]*(?:;[^\n]*)?$", re.MULTILINE)


def looks_like_requirements(text: str) -> bool:
    """Text pip would read as a requirements file with a source in it, whatever the file is called
    (``pip install -r deps.in``): a pip option line naming an index, or a line that is a direct reference."""
    return bool(_PIP_OPTION_LINE.search(text) or _DIRECT_REF_LINE.search(text))


EXPANSION = "\x1b"
"""Stands for text the shell fills in at run time (``$X``, ``$(...)``) in what a command line writes."""
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>`,;|)\]}\x1b]+")
_FIXED_HOST = re.compile(r"//[^/\s\x1b$]+/")
_NPM_AUTH_HOST = re.compile(r"^[ \t]*[\"']?//([^/\s:\"']+)")
"""``//host/:_authToken=...`` in .npmrc (a scheme-relative registry URL)."""
_URL_SETTING = re.compile(r"^[ \t]*url[ \t]*=[ \t]*(\S+)", re.IGNORECASE)
"""``url = git@host:path`` in ``.gitmodules``: the value read as git reads a remote (``network.scp_host``)."""
_COMMENT_LINE = re.compile(r"^[ \t]*[#;]")
_PROXY_LINE = re.compile(r"^[ \t]*[\"']?[\w.-]*proxy[\"']?[ \t]*[=:][ \t]*[\"']?([A-Za-z0-9.-]+:\d+)", re.IGNORECASE)
"""``proxy = host:port`` without a scheme (pip, cargo and others take it so)."""
_PIP_COMMENT = re.compile(r"(?:^|[ \t])#.*$")


def _lines(text: str, scp: bool) -> Iterator[str]:
    for line in text.splitlines():
        if _COMMENT_LINE.match(line):
            continue
        yield from _URL.findall(line)
        auth = _NPM_AUTH_HOST.match(line)
        if auth:
            yield "https://" + auth.group(1) + "/"
        proxy = _PROXY_LINE.match(line)
        if proxy:
            yield "http://" + proxy.group(1) + "/"
        if scp and (m := _URL_SETTING.match(line)) and (host := scp_host(m.group(1))):
            yield host + "/"


_PIP_COMMENT_LINE = re.compile(r"(?:^|\s+)#")


def _pip_lines(text: str) -> Iterator[str]:
    """The lines pip reads: a line ending in ``\\`` is joined with the next, backslashes stripped
    (``--index-url https\\`` + ``://host/``), unless it is a comment line; as pip's ``join_lines``."""
    joined: list[str] = []
    for line in text.splitlines():
        comment = _PIP_COMMENT_LINE.match(line) is not None
        if line.endswith("\\") and not comment:
            joined.append(line.strip("\\"))
            continue
        if joined:
            yield "".join([*joined, " " + line if comment else line])
            joined = []
        else:
            yield line
    if joined:
        yield "".join(joined)


def _requirements(text: str) -> Iterator[str]:
    for line in _pip_lines(text):
        yield from _URL.findall(_PIP_COMMENT.sub("", line))


_SOURCE_KEYS = frozenset({"url", "index-url", "extra-index-url", "find-links", "index", "default-index", "registry",
                          "registry-index", "git", "file", "proxy", "http-proxy", "https-proxy", "resolved", "tarball",
                          "source", "dl", "api", "mirror", "python-install-mirror", "pypy-install-mirror",
                          "npmregistryserver", "repository-url", "sources", "channels", "channel-alias",
                          "default-channels"})
_METADATA = frozenset({"urls", "funding", "bugs", "repository", "homepage", "documentation", "author", "authors",
                       "maintainers", "contributors", "license", "readme", "description", "scripts", "keywords",
                       "classifiers", "$schema", "support"})
"""Tables and fields that name web pages, not sources (``[project.urls]``, package.json ``repository``);
``scripts`` are code (see the README: build scripts are out of scope)."""
_DEPENDENCY_MAPS = frozenset({"dependencies", "devdependencies", "optionaldependencies", "peerdependencies",
                              "overrides", "resolutions", "bundledependencies", "require", "require-dev"})
_DIRECT_REF = re.compile(r"^\s*[A-Za-z0-9][A-Za-z0-9._-]*\s*(?:\[[^\]]*\])?\s*@\s*([A-Za-z][A-Za-z0-9+.-]*://\S+)")
_NPM_SHORTHAND = re.compile(r"^(?:(github|gitlab|bitbucket|gist):)?([\w.-]+)/([\w.-]+)(?:#.*)?$")
_SHORTHAND_HOSTS = {"github": "github.com", "gitlab": "gitlab.com", "bitbucket": "bitbucket.org",
                    "gist": "gist.github.com", None: "github.com"}
_PATH_FIELDS = frozenset({"main", "module", "types", "typings", "bin", "browser", "exports", "imports", "files",
                          "directories", "workspaces", "man", "style", "source", "unpkg", "jsdelivr", "react-native",
                          "name", "version", "engines", "packagemanager", "type", "private"})
"""package.json fields whose values are paths or plain words: ``"main": "dist/index.js"`` is no shorthand."""
_MAX_NODES = 1_000_000


def _key(name: str) -> str:
    return name.strip().lower().replace("_", "-")


def _dependency_spec(value: str) -> list[str]:
    """A package.json dependency version that fetches from a host: a URL, ``git+...``, ``git@host:...``, or
    a GitHub-style shorthand (``user/repo``, ``gitlab:user/repo``)."""
    if "://" in value:
        return _URL.findall(value)
    if value.startswith("git@"):
        return ["ssh://" + value[4:].split(":", 1)[0] + "/"]
    m = _NPM_SHORTHAND.match(value.strip())
    if m and not value.startswith(("file:", "link:", "workspace:", "npm:", "portal:", "patch:")):
        return ["https://" + _SHORTHAND_HOSTS[m.group(1)] + "/"]
    return []


def _walk(value: object) -> Iterator[str]:
    """Source URLs in a parsed TOML/JSON document: iterative, each value visited once."""
    stack: list[tuple[str, object]] = [("", value)]
    budget = _MAX_NODES
    while stack and budget > 0:
        budget -= 1
        key, cur = stack.pop()
        if isinstance(cur, dict):
            for k, v in cur.items():
                name = _key(str(k))
                if name in _METADATA:
                    continue
                if name in _DEPENDENCY_MAPS and isinstance(v, dict):
                    stack.extend(("dependency", x) for x in v.values())
                    stack.extend((name, x) for x in v.values() if isinstance(x, (dict, list)))
                    continue
                stack.append((name, v))
        elif isinstance(cur, list):
            stack.extend((key, v) for v in cur)
        elif isinstance(cur, str):
            if key == "dependency":
                yield from _dependency_spec(cur)
                continue
            ref = _DIRECT_REF.match(cur)
            if ref:
                yield ref.group(1)
            elif key in _SOURCE_KEYS or cur.startswith(("git+", "sparse+", "registry+")):
                yield from _URL.findall(cur)
                if key.endswith("proxy") and "://" not in cur and cur.strip():
                    yield "http://" + cur.strip() + "/"  # [http] proxy = "host:port"
                if key in ("git", "url") and cur.startswith("git@"):
                    yield "ssh://" + cur[4:].split(":", 1)[0] + "/"
    if stack:
        yield OPAQUE + "a settings file too large to read"


_KEY_VALUE = re.compile(r"^[ \t]*(?:\"([^\"\n]*)\"|'([^'\n]*)'|([\w.@/$-]+))[ \t]*[=:](?!//)[ \t]*(.*)$")
_QUOTED = re.compile(r"\"([^\"\\\n]*(?:\\.[^\"\\\n]*)*)\"|'([^'\n]*)'")


_STRING_ESCAPE = re.compile(r"\\(?:u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|x([0-9A-Fa-f]{2})|(/)|\r?\n[ \t]*)")


def with_escapes_decoded(text: str) -> str:
    """``text``, then (when it has a backslash) the same text with the string escapes of JSON, TOML and YAML
    double-quoted strings decoded (``\\u002f``, ``\\U0000002f``, ``\\x2f``, ``\\/``) and escaped line breaks
    joined (TOML ``\"\"\"`` and YAML strings): ``"https:\\u002f\\u002fhost"`` names ``https://host`` to the
    package manager, and the per-line readers would see no ``://``."""
    if "\\" not in text:
        return text

    def one(m: re.Match[str]) -> str:
        code = m.group(1) or m.group(2) or m.group(3)
        return chr(min(int(code, 16), 0x10FFFF)) if code else (m.group(4) or "")
    return text + "\n" + _STRING_ESCAPE.sub(one, text)


def _fragment(kind: str, text: str) -> Iterator[str]:
    """A TOML or JSON fragment that does not parse alone (an edit's replacement text), per line: direct
    references and ``git+``/``sparse+`` URLs anywhere; the URLs of a source key (TOML: ``url = ...``,
    not ``Changelog = ...`` of ``[project.urls]``); in JSON any field's URL or git shorthand but the
    metadata fields (a dependency is ``"name": "spec"``). Read as written and with string escapes decoded."""
    for line in with_escapes_decoded(text).splitlines():
        if ("://" not in line and "git@" not in line and (kind != "json" or "/" not in line)) \
                or _COMMENT_LINE.match(line):
            continue  # nothing on it can name a host
        kv = _KEY_VALUE.match(line)
        name = _key(kv.group(1) or kv.group(2) or kv.group(3)) if kv else ""
        if name in _METADATA:
            continue
        value = kv.group(4) if kv else line
        for double, single in _QUOTED.findall(value) or [(value.strip().rstrip(","), "")]:
            s = double or single
            ref = _DIRECT_REF.match(s)
            if ref:
                yield ref.group(1)
            elif s.startswith(("git+", "sparse+", "registry+")) or (name in _SOURCE_KEYS and name != "source"):
                yield from _URL.findall(s)
            elif kind == "json" and kv and name not in _PATH_FIELDS:
                yield from _dependency_spec(s)


MAX_SETTINGS_TEXT = 4 << 20
"""Text written to a settings file past this is not read, and the write is blocked (the readers are linear,
about 30-200 ms per MiB; no hand-written settings file comes near it)."""
STRUCTURED_MAX = 256 * 1024
"""Longer TOML text is read by the line reader (``_fragment``): ``tomllib`` is pure Python, about 140 ms
per MiB here, against about 90 for the line reader; a TOML settings file that size is no hand-written one.
(``json`` parses in C: JSON is parsed whole up to ``MAX_SETTINGS_TEXT``.)"""


def _structured(kind: str, text: str) -> Iterator[str]:
    if kind == "toml" and len(text) > STRUCTURED_MAX:
        yield from _fragment(kind, text)
        return
    try:
        doc: object = tomllib.loads(text) if kind == "toml" else json.loads(text)
    except (tomllib.TOMLDecodeError, ValueError, RecursionError):
        yield from _fragment(kind, text)
        return
    yield from _walk(doc)


_HOST_WORD = re.compile(r"(?<![\w.@-])(?:[A-Za-z0-9-]+\.)+[A-Za-z][A-Za-z0-9-]{1,62}(?![\w-])")
_FILE_EXTENSIONS = frozenset({"py", "sh", "md", "rs", "js", "ts", "mjs", "cjs", "jsx", "tsx", "toml", "txt", "json",
                              "yml", "yaml", "cfg", "ini", "lock", "in", "go", "rb", "java", "html", "css", "whl",
                              "tgz", "gz", "zip", "tar", "so", "exe", "cc", "pl", "ps", "mk", "am", "ac"})


_JSON_KEY_END = re.compile(r'\\?"[ \t]*:')
"""After a word, the end of a JSON key (``"socket.io": "^4.7"``): a package name, never a source."""


def sed_hosts(script: str) -> str:
    """A ``sed`` script run on a settings file rewrites text the proxy does not see, so each word in it
    shaped like a host name (a top-level domain of the public suffix list; file names such as ``app.py``
    excepted) is read as a source: ``s/registry.npmjs.org/evil.com/`` puts evil.com there. Returned as
    ``git+https://HOST/`` lines, which every reader above takes as a source URL."""
    from guardrails.tools.egress import known_suffix

    hosts = [w for m in _HOST_WORD.finditer(script) if not _JSON_KEY_END.match(script, m.end())
             and (w := m.group()).rsplit(".", 1)[-1].lower() not in _FILE_EXTENSIONS and known_suffix(w)]
    return "".join(f"\ngit+https://{h}/" for h in dict.fromkeys(hosts))


_FRAGMENT_SOURCE_KEYS = _SOURCE_KEYS - {"source"}
"""``source`` is also coverage's list of packages (``source = ["app.api"]``); as in ``_fragment``."""


_TOML_TABLE = re.compile(r"^[ \t]*\[\[?[\w.\-\"' ]+\]\]?[ \t]*(?:#.*)?$")


def fragment_hosts(kind: str | None, text: str) -> str:
    """The host-shaped words of an edit's replacement text (``sed_hosts``): it lands inside text the proxy
    does not see, so ``registry.npmjs.org`` -> ``attacker.com`` moves the registry of
    ``registry=https://registry.npmjs.org/`` without naming a URL. Comment lines are skipped; in TOML and
    JSON only lines that are a bare value or a source key's are read, never a key or another field
    (``"socket.io": "^4.7.0"``, ``packages = ["src.app"]``), where a bare host is no source."""
    kept: list[str] = []
    for line in with_escapes_decoded(text).splitlines():
        if _COMMENT_LINE.match(line):
            continue
        if kind == "requirements":
            line = _PIP_COMMENT.sub("", line)
        elif kind in ("toml", "json"):
            if kind == "toml" and _TOML_TABLE.match(line):
                continue  # ``[tool.coverage.run]``: a table name
            kv = _KEY_VALUE.match(line)
            if kv and _key(kv.group(1) or kv.group(2) or kv.group(3)) not in _FRAGMENT_SOURCE_KEYS:
                continue
        kept.append(line)
    return sed_hosts("\n".join(kept))


def _built_at_run_time(text: str, markers: tuple[str, ...]) -> list[str]:
    """A line with text filled in at run time (``EXPANSION`` from the shell; ``${VAR}``, which npm, yarn and
    pip expand in their own files) before any fixed ``//host/``: it may spell any host (``registry=$R``,
    ``https:$(printf //)evil``), so it cannot be checked. After a fixed host it is a path or a token
    (``//registry.npmjs.org/:_authToken=${NPM_TOKEN}``) and passes."""
    if not any(m in text for m in markers):
        return []
    for line in text.splitlines():
        at = min((i for i in (line.find(m) for m in markers) if i >= 0), default=-1)
        if at >= 0 and not _COMMENT_LINE.match(line) and not _FIXED_HOST.search(line, 0, at):
            return [OPAQUE + "text filled in at run time (a variable or a command's output)"]
    return []


def source_urls(kind: str, text: str, path: str = "") -> list[str]:
    """The URLs (or ``OPAQUE`` markers) that ``text``, written to a ``kind`` settings file, names as
    sources, one per scheme and authority (the rule judges those, not paths). Local ones (``file:``,
    relative paths) are not hosts and are left out."""
    if len(text) > MAX_SETTINGS_TEXT:
        return [OPAQUE + f"more than {MAX_SETTINGS_TEXT >> 20} MiB of text, which is not read"]
    late = _built_at_run_time(text, (EXPANSION, "${") if kind in ("lines", "requirements") else (EXPANSION,))
    if kind == "lines":  # YAML double-quoted strings (.yarnrc.yml, .condarc) decode escapes
        found = _lines(with_escapes_decoded(text), scp=posixpath.basename(path) == ".gitmodules")
    elif kind == "requirements":
        found = _requirements(text)
    else:
        found = _structured(kind, text)
    out: list[str] = []
    authorities: set[str] = set()
    for url in dict.fromkeys([*late, *found]):
        if url.startswith(OPAQUE):
            out.append(url)
            continue
        plain = re.sub(r"^(?:git|sparse|registry|hg|svn|bzr)\+", "", url, flags=re.IGNORECASE)
        if plain.lower().startswith("file:"):
            continue
        if plain.lower().startswith(("ssh://", "git://")):  # the ssh user is no credential: git@github.com
            scheme, rest = plain.split("://", 1)
            plain = f"{scheme}://{rest.split('/', 1)[0].rsplit('@', 1)[-1]}/"
        authority = plain.split("/", 3)[:3]
        key = "/".join(authority).lower()
        if key in authorities:
            continue  # the facts judged are the scheme and host: a lockfile's 10,000 URLs are a few hosts
        authorities.add(key)
        out.append(plain.rstrip(".,"))
    return out
