"""Named policies, built once each, chosen per request, swapped whole on reload.

A ``Guard`` is one policy with its guardrails built: immutable, so a request that took one keeps it
to its last byte however often the policies are reloaded meanwhile (a reload builds new ``Guard``
objects and swaps the book's dict in one assignment; in-flight requests hold the old ones).

Which policy a request gets, first match wins:
1. its proxy token (``GUARDPROXY_CLIENT_TOKENS``: token -> policy name);
2. its route (``GUARDPROXY_ROUTE_POLICIES``): the provider the request goes to and the endpoint it
   calls (``anthropic/chat/completions``), else the provider alone (``anthropic``): by where the
   request goes, not by its wire format, so every spelling that reaches a provider gets its policy;
3. the ``x-guardproxy-policy`` header, only when the operator set ``GUARDPROXY_ALLOW_POLICY_HEADER``
   (a client must not be able to pick a weaker guard for itself by default);
4. the ``default`` policy (``GUARDPROXY_POLICY``, or the shipped one).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

import httpx
import structlog

from config.policy import Policy, PolicyError, load_policy, refuse_if_empty
from config.settings import Settings
from guardrails.findings import OnTrip
from guardrails.input.build import InputCheck, build_input_checks
from guardrails.message import build_message_guardrails
from guardrails.seams import MessageGuardrail, StreamGuardrail
from guardrails.stream import build_stream_guardrails
from guardrails.tools import ToolAssessor

log = structlog.get_logger("guardproxy")

DEFAULT = "default"
T = TypeVar("T")


@dataclass(frozen=True)
class Guard:
    """One named policy, validated and built."""

    name: str
    policy: Policy
    version: str
    """Content hash of the validated policy (12 hex digits): the same file gives the same version."""
    stream_guardrails: list[StreamGuardrail] = field(default_factory=list)
    message_guardrails: list[MessageGuardrail] = field(default_factory=list)
    assessor: ToolAssessor | None = None
    specs: dict[str, Any] = field(default_factory=dict)
    """Guardrail id -> its policy entry."""
    on_trip: dict[str, OnTrip] = field(default_factory=dict)
    """Guardrail id -> what its block does (action, replacement, attempts, mandate, final action)."""
    input_checks: list[InputCheck] = field(default_factory=list)
    """The ``[[input_guardrails]]``, built (``proxy.input_guard``)."""
    _memo: dict[Hashable, Any] = field(default_factory=dict, compare=False, repr=False)

    @cached_property
    def label(self) -> str:
        return f"{self.name}@{self.version}"

    @cached_property
    def guardrail_ids(self) -> list[str]:
        ids = [g.id for g in self.stream_guardrails] + [g.id for g in self.message_guardrails]
        return ids + (["tools"] if self.assessor is not None else []) + [c.id for c in self.input_checks]

    def once(self, key: Hashable, make: Callable[..., T], *args: Any) -> T:
        """``make(*args)``, computed once per policy load: what every request would otherwise derive
        anew from the same immutable policy (the guardrails of a lane, the log-only set). ``args``
        rather than a closure: a hit then builds no function object."""
        try:
            return self._memo[key]  # type: ignore[no-any-return]
        except KeyError:
            value = self._memo[key] = make(*args)
            return value


_REFERENCE_FIELDS = ("rules_file", "prompt_file")
"""Policy entry fields that name a file the built guardrail reads (relative to the policy's folder)."""


def referenced_files(policy: Policy) -> list[tuple[str, Path]]:
    """(as written, as the guardrails read it) for every file the policy's entries name."""
    out: list[tuple[str, Path]] = []
    for spec in [*policy.stream_guardrails, *policy.message_guardrails, *policy.input_guardrails]:
        for name in _REFERENCE_FIELDS:
            written = getattr(spec, name, None)
            if isinstance(written, str) and written:
                path = Path(written).expanduser()
                out.append((written, path if path.is_absolute() else Path(policy.base_dir) / path))
    return out


def policy_version(policy: Policy) -> str:
    """Content hash of the validated policy and of every file it references (a changed judge prompt
    or rules file is a new version, reloaded like an edit of the policy itself)."""
    digest = hashlib.sha256(policy.model_dump_json().encode())
    for written, path in referenced_files(policy):
        digest.update(b"\0" + written.encode() + b"\0")
        try:
            digest.update(path.read_bytes())
        except OSError:
            digest.update(b"<unreadable>")
    return digest.hexdigest()[:12]


class PolicyRefused(PolicyError):
    """A reload that would weaken the running policies by accident (an empty file, guardrails gone
    that the new file does not name in ``disarms``): the running policies stay."""


def build_guard(name: str, policy: Policy, settings: Settings, http: httpx.AsyncClient) -> Guard:
    """Validate and build every guardrail now, so a bad policy fails here, not on a request."""
    try:
        return _build_guard(name, policy, settings, http)
    except RecursionError as exc:  # a pattern or rule nested past what a parser recurses through
        raise PolicyError("a pattern or rule in the policy nests too deeply to be parsed; write it flatter") from exc


def _build_guard(name: str, policy: Policy, settings: Settings, http: httpx.AsyncClient) -> Guard:
    specs = {s.id: s for s in [*policy.stream_guardrails, *policy.message_guardrails]}
    actions = {gid: on_trip(spec, policy.defaults.replacement) for gid, spec in specs.items()}
    if not settings.guardrails_enabled:
        return Guard(name, policy, policy_version(policy), specs=specs, on_trip=actions)
    try:
        stream = build_stream_guardrails(policy.stream_guardrails, policy.defaults.replacement,
                                         Path(policy.base_dir))
    except ValueError as exc:
        raise PolicyError(f"stream_guardrails: {exc}") from exc
    message = build_message_guardrails(policy.message_guardrails, policy.defaults.replacement,
                                       Path(policy.base_dir), http)
    assessor = None
    if policy.tools is not None and policy.tools.enabled:
        try:
            assessor = ToolAssessor(policy.tools, Path(policy.base_dir))
        except ValueError as exc:
            raise PolicyError(str(exc)) from exc
    inputs = build_input_checks(policy.input_guardrails, Path(policy.base_dir), http, policy.defaults.replacement)
    return Guard(name, policy, policy_version(policy), stream, message, assessor, specs, actions, inputs)


def on_trip(spec: Any, default_replacement: str) -> OnTrip:
    """A guardrail's policy entry as the typed action the turn acts on (stream entries have no
    ``final_action`` or ``timeout_s``: their defaults apply)."""
    return OnTrip(action=spec.action, replacement=spec.replacement or default_replacement,
                  max_attempts=spec.max_attempts, mandate=spec.mandate,
                  final_action=getattr(spec, "final_action", "replace"), timeout_s=getattr(spec, "timeout_s", 3.0))


def policy_sources(settings: Settings) -> dict[str, str | None]:
    """Policy name -> file (None: the shipped default)."""
    return {DEFAULT: settings.policy, **settings.policies}


ROUTE_PROVIDERS = ("openai", "anthropic", "gemini")
ROUTE_ENDPOINTS = ("chat/completions", "responses", "messages", "generatecontent")
"""The guarded endpoints as ``ROUTE_POLICIES`` keys name them (after the provider and a ``/``)."""
_LEGACY_ROUTE_KEYS = {"openai_chat": "openai/chat/completions", "openai_responses": "openai/responses"}
"""Keys of the first version, which named wire formats; ``anthropic`` and ``gemini`` now name the
provider (every endpoint that reaches it)."""
ENDPOINT_KEYS = {"/chat/completions": "chat/completions", "/responses": "responses", "/v1/messages": "messages",
                 ":generateContent": "generatecontent", ":streamGenerateContent": "generatecontent"}
"""``Route.endpoint`` -> its key's endpoint part."""


def route_table(mapping: dict[str, str]) -> dict[str, str]:
    """``GUARDPROXY_ROUTE_POLICIES`` with its keys checked and normalised (lower case, legacy names
    mapped); an unknown key raises ``PolicyError`` (it would map nothing, silently)."""
    table: dict[str, str] = {}
    for key, name in mapping.items():
        norm = key.strip().lower().strip("/")
        norm = _LEGACY_ROUTE_KEYS.get(norm, norm)
        provider, _, endpoint = norm.partition("/")
        if provider not in ROUTE_PROVIDERS or (endpoint and endpoint not in ROUTE_ENDPOINTS):
            raise PolicyError(
                f"GUARDPROXY_ROUTE_POLICIES: unknown route {key!r}; a route is a provider "
                f"({', '.join(ROUTE_PROVIDERS)}), or a provider and an endpoint such as 'anthropic/messages' "
                f"or 'gemini/chat/completions' (endpoints: {', '.join(ROUTE_ENDPOINTS)})")
        if norm in table and table[norm] != name:
            raise PolicyError(f"GUARDPROXY_ROUTE_POLICIES: route {key!r} is given twice with different policies")
        table[norm] = name
    return table


def check_policy_names(settings: Settings) -> None:
    names = set(policy_sources(settings))
    for where, mapping in (("CLIENT_TOKENS", settings.client_tokens),
                           ("ROUTE_POLICIES", settings.route_policies)):
        unknown = sorted(set(mapping.values()) - names)
        if unknown:
            raise PolicyError(f"GUARDPROXY_{where} names unknown policies {unknown}; known: {sorted(names)}")
    route_table(settings.route_policies)


def _blank(path: str) -> bool:
    try:
        return not Path(path).read_bytes().strip()
    except OSError:
        return False  # unreadable: load_policy says so


def _actions(guard: Guard) -> dict[str, str]:
    acts = {gid: trip.action for gid, trip in guard.on_trip.items()}
    acts.update({spec.id: str(getattr(spec, "action", "")) for spec in guard.policy.input_guardrails})
    return acts


def check_disarms(running: Guard, fresh: Guard) -> None:
    """Refuse a reload whose policy lacks guardrails the running one has (by id; ``tools`` for the
    tool rules), or turns one that acts into ``log`` only, unless the new policy names them in
    ``disarms``: an empty or half-written file, a lost section, must not switch guardrails off by
    accident."""
    gone = [g for g in running.guardrail_ids if g not in fresh.guardrail_ids and g not in fresh.policy.disarms]
    before, after = _actions(running), _actions(fresh)
    logged = [g for g, act in before.items()  # a guardrail kept but turned to log only disarms it too
              if act != "log" and after.get(g) == "log" and g in fresh.guardrail_ids and g not in fresh.policy.disarms]
    if gone or logged:
        what = ([f"would disarm {', '.join(map(repr, gone))}"] if gone else []) + (
            [f"would turn {', '.join(map(repr, logged))} to log only"] if logged else [])
        raise PolicyRefused(f"policy {fresh.name!r}: the new file {' and '.join(what)}, against the running policy; "
                            "if that is meant, list them in the file's top-level 'disarms = [...]'; the running "
                            "policies stay")


class PolicyBook:
    """The live named policies. ``reload`` re-reads every file; all or nothing."""

    def __init__(self, settings: Settings, http: httpx.AsyncClient, default: Policy | None = None) -> None:
        check_policy_names(settings)
        self.settings, self._http = settings, http
        self._fixed_default = default
        """A policy handed in as an object (tests, ``create_app(settings, policy)``) has no file to
        re-read; it stays until the process ends."""
        self.guards: dict[str, Guard] = self._build_all()
        self.generation = 1
        self._tokens = [(t.encode(), name) for t, name in settings.client_tokens.items()]
        self._routes = route_table(settings.route_policies)

    def _build_all(self, reloading: bool = False) -> dict[str, Guard]:
        built: dict[str, Guard] = {}
        for name, path in policy_sources(self.settings).items():
            if name == DEFAULT and self._fixed_default is not None:
                policy = self._fixed_default
            else:
                if reloading and path and _blank(path):
                    raise PolicyRefused(f"{path}: the policy file is empty (a write in progress?); the running "
                                        "policies stay")
                policy = load_policy(path)
                if path and not reloading:
                    refuse_if_empty(policy, path)  # (a reload refuses weakening by its own rule)
            built[name] = build_guard(name, policy, self.settings, self._http)
        return built

    @property
    def default(self) -> Guard:
        return self.guards[DEFAULT]

    @property
    def watched_files(self) -> list[Path]:
        """Every policy file and every file the live policies reference, as named (not resolved: a
        Kubernetes ConfigMap swaps the ``..data`` symlink their names go through, and the folder a
        resolved name points into is deleted by the next swap)."""
        files: list[Path] = []
        for name, path in policy_sources(self.settings).items():
            if not path or (name == DEFAULT and self._fixed_default is not None):
                continue
            policy_file = Path(path).absolute()
            files.append(policy_file)
            for written, _read in referenced_files(self.guards[name].policy):
                ref = Path(written).expanduser()
                files.append(ref if ref.is_absolute() else policy_file.parent / ref)
        return files

    def referenced_env(self) -> set[str]:
        """Every environment variable the live policies name (``api_key_env`` and the like)."""
        names: set[str] = set()

        def walk(value: object, key: str = "") -> None:
            if isinstance(value, dict):
                for k, v in value.items():
                    walk(v, str(k))
            elif isinstance(value, list):
                for v in value:
                    walk(v, key)
            elif isinstance(value, str) and key.endswith("_env"):
                names.add(value)

        for guard in self.guards.values():
            walk(guard.policy.model_dump())
        return names

    def reload(self) -> bool:
        """Re-read and rebuild every policy; swap them in only if all are good. Returns whether the
        live policies changed. A bad file raises ``PolicyError`` and the last good ones stay live; a
        file that would disarm what runs raises ``PolicyRefused`` (``check_disarms``)."""
        fresh = self._build_all(reloading=True)
        if {n: g.version for n, g in fresh.items()} == {n: g.version for n, g in self.guards.items()}:
            return False
        for name, guard in fresh.items():
            check_disarms(self.guards[name], guard)
        self.guards = fresh  # one assignment: a request sees either the old dict or the new one
        self.generation += 1
        return True

    @property
    def versions(self) -> dict[str, str]:
        return {n: g.version for n, g in self.guards.items()}

    def token_matches(self, given: str) -> str | None:
        """The policy name of the client token ``given`` is, if any. Constant time over every token."""
        found = None
        raw = given.encode()
        for token, name in self._tokens:
            if hmac.compare_digest(raw, token) and found is None:
                found = name
        return found

    def choose(self, token: str, provider: str, endpoint: str | None, header: str | None) -> Guard:
        """``provider``: where the request goes; ``endpoint``: the guarded endpoint it calls
        (``Route.endpoint``), None for a passthrough."""
        guards = self.guards
        name = self.token_matches(token) if token else None
        if name is None and self._routes:
            key = ENDPOINT_KEYS.get(endpoint or "")
            name = self._routes.get(f"{provider}/{key}") if key else None
            name = name or self._routes.get(provider)
        if name is None and header and self.settings.allow_policy_header and header in guards:
            name = header
        return guards[name or DEFAULT]
