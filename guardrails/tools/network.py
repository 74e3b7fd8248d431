"""What network programs connect to (pure argv readers; see ``guardrails.tools.commands`` for the rest).

- ``network_targets``: the hosts a program connects to, as URLs (``curl``, ``wget``, ``nc``, ``ssh``,
  ``scp``, ``rsync``, ``git clone``, ``pip install URL``...), including proxies and resolver overrides;
- ``setting_targets``: the hosts an environment variable sends programs to (``HTTPS_PROXY=``,
  ``PIP_INDEX_URL=``...);
- ``downloaded_files``: the files a downloader writes (to spot ``curl -o x && sh x``).

A host the proxy cannot see (a ``curl --config`` file, a ``wget -i`` URL list) is returned as
``opaque(what)``: the egress rule blocks it, since it cannot decide.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from guardrails.tools.commands import DOWNLOADERS, Argv, options_with_values, split_operands
from guardrails.tools.egress import OPAQUE

_NET_VALUE_OPTS: dict[str, frozenset[str]] = {
    "curl": frozenset({"-o", "-H", "-d", "-X", "-u", "-A", "-e", "-b", "-c", "-F", "-T", "-w", "-m", "-r",
                       "-K", "-E", "-U", "-C", "-Y", "-y", "-z", "-D", "-t", "-Q", "-P", "--output",
                       "--header", "--data", "--data-raw", "--data-binary", "--data-urlencode", "--request",
                       "--user", "--user-agent", "--referer", "--cookie", "--cookie-jar", "--form",
                       "--upload-file", "--write-out", "--max-time", "--connect-timeout", "--retry",
                       "--config", "--cert", "--key", "--cacert", "--resolve", "--connect-to",
                       "--dump-header", "--proxy-user", "--range", "--json", "--output-dir", "--oauth2-bearer",
                       "-x", "--proxy", "--preproxy", "--socks4", "--socks4a", "--socks5", "--socks5-hostname",
                       "--doh-url", "--url", "--data-ascii", "--netrc-file", "--trace", "--trace-ascii", "--stderr",
                       "--libcurl", "--etag-save", "--hsts", "--alt-svc"}),
    "wget": frozenset({"-O", "-o", "-a", "-P", "-U", "-t", "-T", "-w", "-i", "-e", "-Q", "-l", "-A", "-R",
                       "-D", "--output-document", "--header", "--user-agent", "--post-data", "--post-file",
                       "--user", "--password", "--directory-prefix", "--tries", "--timeout", "--input-file",
                       "--execute", "--config", "--body-file", "--method", "--body-data", "--output-file",
                       "--append-output", "--load-cookies", "--save-cookies", "--warc-file"}),
    "nc": frozenset({"-p", "-s", "-w", "-i", "-q", "-x", "-X", "-I", "-O", "-T", "-V", "-W", "-M", "-m"}),
    "ssh": frozenset({"-p", "-i", "-l", "-o", "-F", "-J", "-L", "-R", "-D", "-b", "-c", "-E", "-e", "-m",
                      "-O", "-Q", "-S", "-W", "-w", "-B", "-I"}),
    "scp": frozenset({"-P", "-i", "-o", "-F", "-J", "-c", "-l", "-S", "-D", "-X"}),
    "rsync": frozenset({"-e", "--rsh", "--exclude", "--include", "-f", "--filter", "--port"}),
    "telnet": frozenset({"-l", "-e", "-n", "-b"}),
}
_NET_VALUE_OPTS.update({
    "ping": frozenset({"-c", "-i", "-W", "-w", "-s", "-t", "-I", "-p", "-l", "-Q", "-M", "-m", "-S"}),
    "traceroute": frozenset({"-f", "-m", "-p", "-q", "-w", "-s", "-i", "-z", "-N", "-t", "-g"}),
    "ftp": frozenset({"-P", "-o", "-r", "-T", "-u", "-s"}),
    "lftp": frozenset({"-u", "-p", "-e", "-f", "-c"}),
    "dig": frozenset({"-b", "-c", "-f", "-k", "-p", "-q", "-t", "-x", "-y"}),
    "host": frozenset({"-c", "-N", "-R", "-t", "-W", "-m"}),
    "nslookup": frozenset(),
})
_NET_VALUE_OPTS["curlie"] = _NET_VALUE_OPTS["curl"]
_NET_VALUE_OPTS["aria2c"] = frozenset({"-d", "--dir", "-o", "--out", "-x", "-s", "-j", "-k", "-t", "-m", "-U",
                                       "--user-agent", "--header", "--timeout", "--max-tries", "--split"})
_NET_VALUE_OPTS.update({p: frozenset({"-o", "--output", "-a", "--auth", "-A", "--auth-type", "--cert", "--cert-key",
                                      "--session", "-p", "--print", "--verify"})
                        for p in ("http", "https", "xh", "xhs", "httpie")})
_NET_ALIASES = {"ncat": "nc", "netcat": "nc", "mosh": "ssh", "autossh": "ssh", "pip3": "pip", "ping6": "ping",
                "tracepath": "traceroute", "mtr": "traceroute", "tftp": "ftp", "podman": "docker"}
_HOST_FIRST = frozenset({"nc", "ssh", "telnet", "sftp", "ping", "traceroute", "ftp", "lftp"})
_RESOLVERS = frozenset({"dig", "host", "nslookup", "drill", "kdig"})
"""DNS tools: every name they look up reaches that name's servers (data can ride in the name)."""
_DNS_WORDS = re.compile(r"^(?:[A-Z0-9]+|IN|CH|HS|ANY|any|a|aaaa|mx|ns|txt|cname|soa|ptr|srv|caa)$")
_IMAGE_REGISTRY = re.compile(r"^([a-z0-9-]+(?:\.[a-z0-9-]+)+|localhost|[a-z0-9.-]+:\d+)(?::\d+)?/", re.IGNORECASE)
_DOCKER_VERBS = frozenset({"pull", "push", "run", "create", "tag", "login", "logout", "search", "import"})
_VCS = frozenset({"svn", "hg", "bzr", "fossil"})
_NET_VALUE_OPTS["sftp"] = _NET_VALUE_OPTS["scp"]


def opaque(what: str) -> str:
    return OPAQUE + what


@dataclass(frozen=True, slots=True)
class _Options:
    """What a program's options say about where it connects."""

    values: frozenset[str]
    """Every option that takes a value (so that clusters such as ``-sSLx host`` split right)."""
    hosts: frozenset[str] = frozenset()
    """Options whose value is a URL or a host it connects to (a proxy, an index)."""
    hidden: frozenset[str] = frozenset()
    """Options that name a file or setting holding hosts the proxy cannot see."""


_INDEX_OPTS = frozenset({"-i", "--index-url", "--extra-index-url", "-f", "--find-links", "--proxy", "--index",
                         "--default-index", "--registry"})
_OPTION_TABLE = {
    "curl": _Options(_NET_VALUE_OPTS["curl"], frozenset({"-x", "--proxy", "--preproxy", "--socks4", "--socks4a",
                     "--socks5", "--socks5-hostname", "--doh-url", "--url", "--data-ascii", "--netrc-file", "--trace", "--trace-ascii", "--stderr",
                       "--libcurl", "--etag-save", "--hsts", "--alt-svc"}), frozenset({"-K", "--config"})),
    "wget": _Options(_NET_VALUE_OPTS["wget"], hidden=frozenset({"-i", "--input-file", "--config"})),
    "ssh": _Options(_NET_VALUE_OPTS["ssh"], frozenset({"-J"}), frozenset({"-F"})),
    "scp": _Options(_NET_VALUE_OPTS["scp"], frozenset({"-J"}), frozenset({"-F"})),
    "sftp": _Options(_NET_VALUE_OPTS["scp"], frozenset({"-J"}), frozenset({"-F"})),
    **{p: _Options(_INDEX_OPTS, _INDEX_OPTS) for p in ("pip", "uv", "pipx", "poetry")},
}
_SSH_HOST_KEYS = frozenset({"hostname", "proxyjump"})
_WGETRC_PROXY = re.compile(r"^\s*(?:https?|ftp)_?proxy\s*=\s*(\S+)", re.IGNORECASE)
_WGETRC_HIDDEN = re.compile(r"^\s*(?:input|config)\s*=", re.IGNORECASE)


def _as_url(value: str, scheme: str = "http") -> str:
    return value if "://" in value else f"{scheme}://{value}"


def bracket(host: str) -> str:
    """An IPv6 address as a URL's host (``[::1]``)."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def _option_targets(prog: str, args: Argv) -> list[str]:
    """Hosts given through options: proxies, indexes, jump hosts, resolver overrides, hidden lists."""
    table = _OPTION_TABLE.get(prog)
    if table is None:
        return []
    out: list[str] = []
    for name, value in options_with_values(args, table.values | table.hosts | table.hidden):
        if not value:
            continue  # ``-x ''``: no proxy
        if name in table.hidden:
            out.append(opaque(f"{prog} {name}"))
        elif name == "-J":
            out += ["ssh://" + bracket(j.rsplit("@", 1)[-1].rsplit(":", 1)[0]) for j in value.split(",") if j]
        elif name in table.hosts:
            out.append(_as_url(value, "https" if prog in _PACKAGERS or prog in ("pip", "pipx") else "http"))
        elif prog == "curl" and name == "--resolve":
            out += ["http://" + bracket(a.strip("[]")) for a in value.split(":", 2)[-1].split(",") if a]
        elif prog == "curl" and name == "--connect-to":
            m = re.match(r"^(?:\[[^]]*\]|[^:]*):[^:]*:(\[[^]]*\]|[^:]*)", value)
            out += ["http://" + m.group(1)] if m and m.group(1) else []
        elif prog == "wget" and name in ("-e", "--execute"):
            proxy = _WGETRC_PROXY.match(value)
            out += [_as_url(proxy.group(1))] if proxy else []
            out += [opaque("wget -e")] if _WGETRC_HIDDEN.match(value) else []
        elif prog in ("ssh", "scp", "sftp") and name == "-o":
            key, _, host = value.replace("=", " ", 1).partition(" ")
            out += ["ssh://" + host.strip()] if key.lower() in _SSH_HOST_KEYS and host.strip() else []
    return out


_SETTING_NAMES = re.compile(r"^(?!NO_PROXY$)(?:\w*_PROXY|GOPROXY|\w*INDEX_URL|\w*_INDEX|\w*FIND_LINKS|\w*REGISTRY"
                            r"|\w*REGISTRY_SERVER|\w*_MIRROR)$", re.IGNORECASE)
_SETTING_KEYWORDS = frozenset({"direct", "off", "none", ""})


_CONFIG_FILE_SETTINGS = frozenset({"PIP_CONFIG_FILE", "NPM_CONFIG_USERCONFIG", "NPM_CONFIG_GLOBALCONFIG", "UV_CONFIG_FILE",
                                   "CARGO_HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG", "CONDARC",
                                   "YARN_RC_FILENAME", "BUNDLE_USER_CONFIG", "GEMRC"})
"""Variables that point a package manager or git at a settings file of any name: its hosts are not in the line."""
_CONFIG_FILE_OPTS = {"npm": frozenset({"--userconfig", "--globalconfig"}), "yarn": frozenset({"--use-yarnrc"}),
                     "uv": frozenset({"--config-file"}), "cargo": frozenset({"--config"})}
_CONFIG_FILE_OPTS.update(npx=_CONFIG_FILE_OPTS["npm"], pnpm=_CONFIG_FILE_OPTS["npm"])


def _config_files(prog: str, args: Argv) -> list[str]:
    """``npm --userconfig F``, ``uv --config-file F``, ``cargo --config F``: settings read from a file the
    line names, whose hosts the proxy cannot see (``cargo --config 'KEY=VALUE'`` is inline: its URLs)."""
    opts = _CONFIG_FILE_OPTS.get(prog)
    if opts is None:
        return []
    out: list[str] = []
    for name, value in options_with_values(args, opts):
        if name not in opts or value in (None, "/dev/null"):
            continue
        if prog == "cargo" and value is not None and "=" in value:
            out += re.findall(r"[A-Za-z][\w+.-]*://[^\s\"']+", value)
        else:
            out.append(opaque(f"{prog} {name}"))
    return out


def setting_targets(name: str, value: str) -> list[str]:
    """Hosts an environment variable sends programs to: proxies (``HTTPS_PROXY``, ``all_proxy``) and
    package indexes (``PIP_INDEX_URL``, ``UV_INDEX``, ``npm_config_registry``, ``GOPROXY``); a settings
    file it names (``PIP_CONFIG_FILE``, ``GIT_CONFIG_GLOBAL``) holds hosts the proxy cannot see."""
    if name.upper() in _CONFIG_FILE_SETTINGS:
        return [] if value in ("", "/dev/null") else [opaque(name)]
    if not _SETTING_NAMES.match(name):
        return []
    return [_as_url(v) for v in re.split(r"[\s,|]+", value) if v.lower() not in _SETTING_KEYWORDS]
_URL_OPTS = ("--url", "--proxy", "-x", "--index-url", "-i", "--extra-index-url", "--registry",
             "--find-links", "-f")
_SCP_LIKE = re.compile(r"^(?:[^@/\s:]+@)?(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9_.-]+):(?!//)")
_URLISH = re.compile(r"^[a-z][a-z0-9+.-]*://", re.IGNORECASE)
_GIT_REMOTE_VERBS = frozenset({"clone", "fetch", "pull", "push", "ls-remote", "remote", "submodule", "archive"})
_PACKAGERS = frozenset({"pip", "pip3", "uv", "pipx", "npm", "npx", "yarn", "pnpm", "gem", "cargo", "go",
                        "poetry", "conda", "mamba", "bundle", "composer", "apt-get", "apt", "brew",
                        "helm", "docker", "podman", "pdm", "pipenv", "bun", "bunx", "rye", "hatch", "pixi",
                        "micromamba", "deno"})


def _scheme_url(word: str) -> str | None:
    """A word as a URL when it spells one (``git+https://`` -> ``https://``)."""
    if "://" in word:
        return word.split("+", 1)[1] if re.match(r"^[a-z]+\+[a-z]+://", word, re.IGNORECASE) else word
    return None


def scp_host(word: str) -> str | None:
    m = _SCP_LIKE.match(word)
    if not m or "/" in word.split(":", 1)[0]:
        return None
    return "ssh://" + m.group(1)


_HTTPIE = frozenset({"http", "https", "xh", "xhs", "httpie"})
_METHOD = re.compile(r"^[A-Z]+$")


def network_targets(program: str, args: Argv) -> list[str]:
    """URLs (``ssh://host``, ``tcp://host`` for bare hosts) that a network program connects to."""
    prog = _NET_ALIASES.get(program, program)
    if prog == "python" and "-m" in args:  # python -m pip install ...
        at = list(args).index("-m")
        module = args[at + 1] if at + 1 < len(args) else None
        return network_targets(module, args[at + 2:]) if module in ("pip", "uv", "pipx") else []
    literal = [a for a in args if a is not None]
    out: list[str] = _option_targets(prog, args) + _config_files(prog, args)
    for i, a in enumerate(literal):
        if a in _URL_OPTS and i + 1 < len(literal) and prog in _PACKAGERS and prog not in _OPTION_TABLE:
            value = literal[i + 1]
            out.append(value if "://" in value else "https://" + value)
        elif a.startswith(("--url=", "--proxy=", "--index-url=", "--extra-index-url=", "--registry=")):
            value = a.split("=", 1)[1]
            out.append(value if "://" in value else "https://" + value)
    if prog in DOWNLOADERS:
        _, operands = split_operands(args, _NET_VALUE_OPTS.get(prog, frozenset()))
        if prog in _HTTPIE:  # [METHOD] URL [items: name=value, Header:value, field:=json, @file]
            operands = operands[1:] if operands and operands[0] is not None and _METHOD.match(operands[0]) \
                else operands
            operands = operands[:1]
        out += [o if _URLISH.match(o) else "http://" + o for o in operands if o is not None and o]
    elif prog in _HOST_FIRST:
        _, operands = split_operands(args, _NET_VALUE_OPTS[prog])
        if operands and operands[0] is not None:
            host = operands[0].rsplit("@", 1)[-1]
            if prog == "sftp":
                host = (scp_host(operands[0]) or "ssh://" + host).removeprefix("ssh://")
            scheme = "ssh://" if prog in ("ssh", "sftp") else "ftp://" if prog in ("ftp", "lftp") else "tcp://"
            out.append(scheme + host)
    elif prog in ("scp", "rsync"):
        _, operands = split_operands(args, _NET_VALUE_OPTS[prog])
        for o in operands:
            if o is None:
                continue
            url = _scheme_url(o) or scp_host(o.replace("::", ":", 1))
            if url:
                out.append(url)
    elif prog in _RESOLVERS:
        _, operands = split_operands(args, _NET_VALUE_OPTS.get(prog, frozenset()))
        names = [o for o in operands if o is not None and not o.startswith("+") and not _DNS_WORDS.match(o)]
        out += ["dns://" + n.lstrip("@") for n in names]
    elif prog == "openssl":
        if "s_client" in literal:
            hosts = [v for o, v in options_with_values(args, frozenset({"-connect", "-proxy", "-host"}))
                     if o in ("-connect", "-proxy", "-host") and v]
            hosts += [o for o in split_operands(args, frozenset())[1] if o and o != "s_client"]
            out += ["tcp://" + h for h in hosts]
    elif prog == "docker" and set(literal) & _DOCKER_VERBS:
        for o in literal:
            m = _IMAGE_REGISTRY.match(o)
            if m:
                out.append("https://" + m.group(1))
        if "login" in literal or "logout" in literal:
            _, operands = split_operands(args, frozenset({"-u", "--username", "-p", "--password"}))
            out += ["https://" + o for o in operands[1:2] if o is not None]
    elif prog in _VCS:
        out += [u for u in (_scheme_url(o) for o in literal if not o.startswith("-")) if u]
    elif prog == "socat":
        for o in literal:
            m = re.match(r"^(?:tcp[46]?|udp[46]?|openssl|ssl)(?:-connect)?:([^:,]+)", o, re.IGNORECASE)
            if m:
                out.append("tcp://" + m.group(1))
    elif prog == "git" and (settings := _git_settings(args)):
        out += settings
    if prog == "git" or prog in _PACKAGERS:
        if prog == "git" and not set(literal) & _GIT_REMOTE_VERBS:
            return out
        for o in literal:
            if o.startswith("-"):
                continue
            key, eq, value = o.partition("=")
            if eq and "://" in value and "://" not in key:  # npm config set registry=URL, go env -w GOPROXY=URL
                out += setting_targets(key, value) or [value]
                continue
            url = _scheme_url(o) or (scp_host(o) if prog == "git" else None)
            if url:
                out.append(url)
        out += _proxy_setting(literal)
    return out


def _proxy_setting(literal: list[str]) -> list[str]:
    """``pip config set global.proxy host:port`` (``KEY VALUE`` or ``KEY=VALUE``): a proxy without a scheme,
    which pip and cargo take, so no URL above."""
    words = [o for o in literal if not o.startswith("-")]
    at = next((i for i in range(len(words) - 1) if words[i] == "config" and words[i + 1] == "set"), None)
    if at is None or len(words) < at + 3:
        return []
    key, eq, value = words[at + 2].partition("=")
    value = value if eq else (words[at + 3] if len(words) > at + 3 else "")
    if not re.search(r"proxy$", key, re.IGNORECASE) or "://" in value or value.lower() in _SETTING_KEYWORDS:
        return []
    return [_as_url(value)]


_CURL_SENDS = frozenset({"-d", "--data", "--data-binary", "--data-ascii", "--json", "--data-urlencode"})
_CURL_FORMS = frozenset({"-F", "--form"})
_CURL_READS = frozenset({"-T", "--upload-file", "-b", "--cookie", "--netrc-file"})
_CURL_WRITES = frozenset({"-c", "--cookie-jar", "-D", "--dump-header", "--trace", "--trace-ascii", "--stderr",
                          "--libcurl", "--etag-save", "--hsts", "--alt-svc"})
_WGET_READS = frozenset({"--post-file", "--body-file", "--load-cookies", "--ca-certificate", "--certificate",
                         "--private-key"})
_WGET_WRITES = frozenset({"-o", "--output-file", "-a", "--append-output", "--save-cookies", "--save-headers",
                          "--warc-file"})


def _sent_file(option: str, value: str) -> str | None:
    """The file a curl data or form option sends: ``-d @f``, ``--data-urlencode name@f``, ``-F k=@f;type=x``,
    ``-F k=<f``; None for inline data."""
    if option in _CURL_FORMS:
        _, eq, field = value.partition("=")
        return field[1:].split(";", 1)[0] if eq and field[:1] in ("@", "<") else None
    if option == "--data-urlencode":
        name, at, path = value.partition("@")
        return path if at and "=" not in name else None
    return value[1:] if value.startswith("@") else None


def transfer_files(program: str, args: Argv) -> list[tuple[str, str]]:
    """[(op, path)] for the files curl/wget upload or read (``-d @f``, ``-T f``, ``--post-file``) and the
    files they write besides the download (cookie jars, headers, logs); ``-``/``@-`` is stdin."""
    if program not in ("curl", "wget"):
        return []
    table = _OPTION_TABLE[program]
    reads, writes = (_CURL_READS, _CURL_WRITES) if program == "curl" else (_WGET_READS, _WGET_WRITES)
    out: list[tuple[str, str]] = []
    for name, value in options_with_values(args, table.values | reads | writes):
        path = None
        if value is None:
            continue
        if program == "curl" and name in _CURL_SENDS | _CURL_FORMS:
            path = _sent_file(name, value)
        elif name in reads or name in writes:
            path = value
        if path and path != "-":
            out.append(("write" if name in writes else "read", path))
    return out


_KNOWN_AUTHORITY = re.compile(r"^(?:([a-z][a-z0-9+.-]*)://)?((?:[^@/?#\s\\]*@)?(?:\[[^\]]*\]|[^/?#:@\s\\]+)"
                              r"(?::\d+)?)(?=[/?#])", re.IGNORECASE)


def _operand_indices(args: Argv, values: frozenset[str]) -> list[int]:
    """Where ``split_operands`` finds the operands."""
    out: list[int] = []
    i, ended = 0, False
    while i < len(args):
        a = args[i]
        if not ended and a == "--":
            ended = True
        elif not ended and a is not None and a.startswith("-") and a != "-":
            i += a in values or (not a.startswith("--") and a[:2] in values and len(a) == 2)
        else:
            out.append(i)
        i += 1
    return out


def built_targets(program: str, args: Argv, prefixes: dict[int, str]) -> list[str]:
    """For the operands built at run time (``curl "https://x.io/?d=$(cat f)"``; ``prefixes`` holds each
    one's literal start by index): the host when the start spells it out, else ``opaque``."""
    prog = _NET_ALIASES.get(program, program)
    if prog in DOWNLOADERS:
        spots = _operand_indices(args, _NET_VALUE_OPTS.get(prog, frozenset()))
    elif prog in _HOST_FIRST:
        spots = _operand_indices(args, _NET_VALUE_OPTS[prog])[:1]
    elif prog in _RESOLVERS:
        spots = _operand_indices(args, _NET_VALUE_OPTS.get(prog, frozenset()))
    else:
        return []
    out: list[str] = []
    for i in spots:
        if args[i] is not None:
            continue
        start = prefixes.get(i, "")
        known = _KNOWN_AUTHORITY.match(start) if prog in DOWNLOADERS else None
        if known and (known.group(1) or "://" not in start):
            out.append(f"{known.group(1) or 'http'}://{known.group(2)}/")
        else:
            out.append(opaque(f"{program} with a host built at run time"))
    return out


_GIT_URL_KEY = re.compile(r"^url\.(.+)\.(?:push)?insteadof$", re.IGNORECASE)
_GIT_HOST_KEYS = re.compile(r"^(?:https?\.(?:.+\.)?proxy|remote\..+\.(?:url|pushurl|proxy)|submodule\..+\.url)$",
                            re.IGNORECASE)


def _git_settings(args: Argv) -> list[str]:
    """Hosts that git settings send it to: ``-c KEY=VALUE`` and ``git config KEY VALUE`` for
    ``url.<base>.insteadOf`` (the base), ``http.proxy``, ``remote.<name>.url``/``pushurl``."""
    pairs = [(k, v) for k, _, v in (str(val).partition("=") for o, val in options_with_values(args, frozenset({"-c"}))
                                    if o == "-c" and val is not None)]
    if "config" in args:
        _, operands = split_operands(args[args.index("config") + 1:], frozenset({"-f", "--file", "--type"}))
        if len(operands) >= 2 and operands[0] is not None and operands[1] is not None:
            pairs.append((operands[0], operands[1]))
    out: list[str] = []
    for key, value in pairs:
        base = _GIT_URL_KEY.match(key)
        if re.match(r"^include(?:if\..+)?\.path$", key, re.IGNORECASE):
            out.append(opaque(f"git {key}"))  # another config file, with its own insteadOf and remotes
        elif base:
            out.append(_scheme_url(base.group(1)) or scp_host(base.group(1)) or _as_url(base.group(1), "https"))
        elif _GIT_HOST_KEYS.match(key) and value:
            out.append(_scheme_url(value) or scp_host(value) or _as_url(value))
    return out


def _short_cluster(arg: str) -> str:
    return arg[1:] if arg.startswith("-") and not arg.startswith("--") else ""


_OTHER_DOWNLOADS: dict[str, tuple[frozenset[str], frozenset[str], frozenset[str]]] = {
    "aria2c": (frozenset({"-o", "--out"}), frozenset({"-d", "--dir"}), frozenset()),
    "fetch": (frozenset({"-o", "--output"}), frozenset(), frozenset()),
    **{p: (frozenset({"-o", "--output"}), frozenset(), frozenset({"-d", "--download"}))
       for p in ("http", "https", "xh", "xhs", "httpie")},
}
"""Other downloaders: (options naming the file, options naming its folder, options that save the body
under the URL's name). aria2c and fetch save under the URL's name by default."""


def _other_downloads(program: str, args: Argv) -> list[str]:
    files, folders, saves = _OTHER_DOWNLOADS[program]
    given = options_with_values(args, files | folders)
    named = [v for o, v in given if o in files and v]
    folder = next((v for o, v in reversed(given) if o in folders and v), None)
    if not named and (program in ("aria2c", "fetch") or any(o in saves for o, _ in given)):
        named = [posixpath.basename(u.split("?", 1)[0]) or "index.html" for u in network_targets(program, args)]
    return [posixpath.join(folder, f) if folder and not f.startswith(("/", "~")) else f for f in named if f != "-"]


def downloaded_files(program: str, args: Argv) -> list[str]:
    """Files a downloader writes (``curl -o F``, ``curl -sSLo F``, ``curl -O``, ``wget -O F``, ``aria2c -o``,
    ``xh -d -o``...), to spot ``... && sh F``."""
    if program in _OTHER_DOWNLOADS:
        return _other_downloads(program, args)
    if program == "curlie":
        program = "curl"
    if program not in ("curl", "wget"):
        return []
    out_flag, long_out = ("o", "--output") if program == "curl" else ("O", "--output-document")
    out: list[str] = []
    remote = False
    literal = list(args)
    for i, a in enumerate(literal):
        if a is None:
            continue
        cluster = _short_cluster(a)
        nxt = literal[i + 1] if i + 1 < len(literal) else None
        if a == long_out and nxt is not None:
            out.append(nxt)
        elif a.startswith(long_out + "="):
            out.append(a.split("=", 1)[1])
        elif out_flag in cluster:
            tail = cluster[cluster.index(out_flag) + 1:]
            value = tail or nxt
            if value is not None:
                out.append(value)
        remote = remote or (program == "curl" and ("O" in cluster or a == "--remote-name"))
    folder = _download_folder(program, args)
    if program == "curl" and folder:  # --output-dir D: every -o and -O file goes there
        out = [f if f.startswith(("/", "~")) or f == "-" else posixpath.join(folder, f) for f in out]
    if remote or (program == "wget" and not out):
        names = [posixpath.basename(u.split("?", 1)[0]) or "index.html" for u in network_targets(program, args)]
        out += [posixpath.join(folder, n) if folder else n for n in names]  # wget -P D; curl -O --output-dir D
    return [f for f in out if f != "-"]


_DOWNLOAD_FOLDERS = {"curl": frozenset({"--output-dir"}), "wget": frozenset({"-P", "--directory-prefix"})}


def _download_folder(program: str, args: Argv) -> str | None:
    """The folder a downloader saves into (``curl --output-dir D``, ``wget -P D``); the last one given wins."""
    names = _DOWNLOAD_FOLDERS[program]
    found = [v for o, v in options_with_values(args, _OPTION_TABLE[program].values | names) if o in names and v]
    return found[-1] if found else None
