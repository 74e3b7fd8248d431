"""Network egress: URL facts (what gets recorded) and the allowlist check (pure).

Only facts about a URL are recorded (scheme, host, whether it carried userinfo or an IP literal),
never the URL itself: paths and query strings routinely carry tokens.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable

import httpx

from guardrails.text.suffixes import public_suffixes

ALLOWED_SCHEMES = frozenset({"http", "https"})
COMMAND_SCHEMES = frozenset({"http", "https", "ssh", "git", "tcp", "ftp", "ftps", "rsync", "socks4", "socks4a",
                             "socks5", "socks5h", "dns", "svn", "svn+ssh"})
OPAQUE = "opaque:"
"""A command's target the proxy cannot see (``guardrails.tools.network.opaque``): recorded as
``{"error": "opaque", "source": "curl --config"}``, always blocked."""
"""Schemes a host named in a shell command may carry (``ssh://`` for ``ssh host``, ``tcp://`` for ``nc``):
the host is what is judged. A tool's own URL parameter takes http(s) only."""
_URL_IN_TEXT = re.compile(r"https?://[^\s<>\"'`)\]}]+", re.IGNORECASE)
# Hosts that every resolver turns into an address although they are not dotted quads:
# "2130706433", "0x7f000001", "127.1", "0177.0.0.1". Any host made only of numeric labels is one.
_NUMERIC_HOST = re.compile(r"(?:0x[0-9a-f]*|\d+)(?:\.(?:0x[0-9a-f]*|\d+))*\.?", re.IGNORECASE)


def urls_in(value: str) -> list[str]:
    """A single URL-ish value as itself; free text (a Gemini ``web_fetch`` prompt) as its URLs."""
    text = value.strip()
    if text and not any(c.isspace() for c in text) and ("://" in text or "." in text):
        return [text]
    return _URL_IN_TEXT.findall(value)


def is_ip_literal(host: str) -> bool:
    bare = host.strip("[]")
    try:
        ipaddress.ip_address(bare)
        return True
    except ValueError:
        return bool(_NUMERIC_HOST.fullmatch(bare))


def url_facts(raw: str, param: str) -> dict[str, object]:
    """What the egress rule needs to know about one URL. A scheme-less value (``example.com/x``)
    is read as https, as the fetch tools themselves do."""
    text = raw.strip()
    if text.startswith(OPAQUE):
        return {"param": param, "scheme": None, "host": None, "userinfo": False, "ip_literal": False,
                "error": "opaque", "source": text[len(OPAQUE):]}
    if "://" not in text:
        text = "https://" + text
    facts: dict[str, object] = {"param": param}
    try:
        url = httpx.URL(text)
    except (httpx.InvalidURL, ValueError):
        return {**facts, "scheme": None, "host": None, "userinfo": False, "ip_literal": False,
                "error": "unparseable"}
    host = url.host.rstrip(".").lower()
    return {**facts, "scheme": url.scheme, "host": host or None, "userinfo": bool(url.userinfo),
            "ip_literal": bool(host) and is_ip_literal(host), "error": None}



def known_suffix(host: str) -> bool:
    """Whether ``host`` ends in a public suffix the bundled list knows (``evil.com``; not ``app.main``)."""
    return public_suffixes().publicsuffix(host.lower(), accept_unknown=False) is not None


def too_broad(entry: str) -> bool:
    """A suffix entry (".x") admits more than one registrable domain: ".com", ".co.uk", ".github.io"
    (a public suffix, private ones included), or a suffix of an unknown top-level label (".example")."""
    bare = entry.strip().lower().strip(".")
    if not entry.strip().startswith(".") or is_ip_literal(bare):
        return False
    return not bare or public_suffixes().privatesuffix(bare) is None


def host_allowed(host: str, allow: Iterable[str]) -> bool:
    """Exact entry, or an entry starting with "." that the host ends with (a dot boundary: ".github.com"
    admits "api.github.com", not "evilgithub.com" and not "github.com" itself). A suffix entry broader
    than one registrable domain (``too_broad``) admits nothing: a grant of ".com" is not a grant."""
    for raw in allow:
        entry = raw.strip().lower().rstrip(".")
        if not entry:
            continue
        if host == entry:
            return True
        if entry.startswith(".") and host.endswith(entry) and not too_broad(entry):
            return True
    return False


def egress_violation(facts: dict[str, object], allow: Iterable[str]) -> str | None:
    """Why this URL may not be fetched, as a short phrase for the rationale; None when it may."""
    entries = list(allow)
    host = facts.get("host")
    if facts.get("param") == "content":
        return _source_violation(facts, entries)
    if facts.get("error") == "opaque":
        return (f"`{facts.get('source')}` reads the hosts to contact from a file or setting the proxy cannot "
                f"see; name the URL on the command line instead")
    if facts.get("error") or not isinstance(host, str):
        return "the URL could not be parsed to a host"
    schemes = COMMAND_SCHEMES if facts.get("param") in ("command", "content") else ALLOWED_SCHEMES
    if facts.get("scheme") not in schemes:
        return f"the scheme {facts.get('scheme')}:// is not allowed"
    if facts.get("userinfo"):
        return "URLs with embedded credentials (user@host) are not allowed"
    if facts.get("ip_literal"):
        # IP literals pass only when listed literally: a suffix entry must never admit an address.
        if any(host == e.strip().lower().strip("[]") for e in entries):
            return None
        return f"the IP address {host} is not on the allowlist"
    if host_allowed(host, entries):
        return None
    return f"the host {host} is not on the allowlist"


def _source_violation(facts: dict[str, object], entries: list[str]) -> str | None:
    """``egress_violation`` for a host that a written package or VCS settings file names as a source
    (``guardrails.tools.sources``): the same rule, told in terms of the file."""
    file = facts.get("file")
    if facts.get("error") == "opaque":
        if facts.get("source") == "unseen":
            return (f"what this call writes into {file} (a package or VCS settings file) is not spelled out in "
                    f"the call, so the hosts it names cannot be checked; write the file with the file-writing "
                    f"tool (or a heredoc), naming only allowed hosts")
        return f"{file} holds {facts.get('source')}, whose host cannot be checked; write the host out"
    why = egress_violation({k: v for k, v in facts.items() if k != "param"} | {"param": "command"}, entries)
    if why is None:
        return None
    return (f"{file} would send installs or fetches to {facts.get('host') or 'a host'} (a registry, index, "
            f"proxy or dependency URL), and {why}; name only hosts on the egress allowlist there, or leave the "
            f"setting out")
