"""Process settings from the environment (prefix ``GUARDPROXY_``). Read once, passed explicitly."""

from __future__ import annotations

import base64
import difflib
from collections.abc import Iterable, Mapping
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict
from pydantic_settings import SettingsError as _SourceError

from config.errors import ConfigError

_MIB = 1024 * 1024


class SettingsError(ConfigError):
    """A setting that cannot be used. The message names the environment variable."""


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="GUARDPROXY_", extra="ignore")

    host: str = "127.0.0.1"
    port: int = Field(default=8790, ge=0, le=65535)
    openai_base_url: str = "https://api.openai.com"
    anthropic_base_url: str = "https://api.anthropic.com"
    gemini_base_url: str = "https://generativelanguage.googleapis.com"
    policy: str | None = None
    """Path of a TOML policy file; unset: the shipped default policy."""
    guardrails_enabled: bool = True
    """``false``: pure passthrough, no guardrail runs."""
    audit_log: str | None = None
    """JSON-lines audit log path; ``-`` writes the lines to standard output."""
    metrics_port: int | None = Field(default=None, ge=1, le=65535)
    """A second listener that answers only ``GET /metrics``, without a token (for scrapers)."""
    metrics_host: str | None = None
    """Where the metrics listener binds (default: ``HOST``)."""
    upstream_connect_timeout_s: float = Field(default=10.0, gt=0)
    upstream_read_timeout_s: float = Field(default=300.0, gt=0)
    """Idle time allowed between upstream bytes; a stall past it ends the stream with an error."""
    upstream_ca_bundle: str | None = None
    """A PEM file of CA certificates trusted for TLS upstreams (forwarding and side calls), on top of
    the system's store (or ``SSL_CERT_FILE``): a company's TLS-inspecting proxy, a private CA."""
    upstream_idle_s: float = Field(default=4.0, ge=0)
    """How long an idle upstream connection is kept for reuse (less when the upstream announces a
    shorter ``Keep-Alive: timeout=``); below the 5 s after which uvicorn, Node and Apache close them."""
    max_body_bytes: int = Field(default=32 * 1024 * 1024, gt=0)
    max_head_bytes: int = Field(default=64 * 1024, ge=1024, le=16 * _MIB)
    """Largest request head (request line and headers); larger gets 431 (414 for the line alone)."""
    max_headers: int = Field(default=100, ge=8, le=10_000)
    """Most header lines in a request; more gets 431."""
    head_timeout_s: float = Field(default=10.0, gt=0, le=3600)
    """Time for a request head to arrive, from the connection's start or the request's first byte;
    past it 408 and the connection is closed (a silent or one-byte-a-second client)."""
    body_idle_timeout_s: float = Field(default=30.0, gt=0, le=3600)
    """Longest pause between two pieces of a request body; past it 408."""
    body_timeout_s: float = Field(default=300.0, gt=0, le=86_400)
    """Longest time to receive a whole request body; past it 408."""
    auth_token: str | None = None
    """When set, clients must send it in the ``x-guardproxy-token`` header (checked in constant time,
    never forwarded). Required to listen beyond loopback unless ``allow_unauthenticated_remote``."""
    allow_unauthenticated_remote: bool = False
    """Waive the token requirement for non-loopback listening addresses."""
    log_level: Literal["debug", "info", "warning", "error", "critical"] = "info"
    shutdown_grace_s: float = Field(default=10.0, ge=0)
    """Open exchanges get this long to finish at shutdown, then are cancelled (0: at once)."""
    audit_max_field_chars: int = Field(default=512, ge=16, le=1_000_000)
    """Longest string written in an audit-log field (tool names, paths, rationales); longer is cut."""
    max_response_bytes: int = Field(default=64 * _MIB, ge=1024)
    """Largest upstream answer on a guarded route (a non-streamed body, or a stream in total); past
    it the answer ends with that API's error (fail closed)."""
    max_decoded_ratio: int = Field(default=100, ge=2, le=100_000)
    """Most decoded bytes per compressed byte of an upstream answer the proxy decompresses (after its
    first MiB); past it the answer fails closed (a compression bomb costs at most this)."""
    max_frame_bytes: int = Field(default=8 * _MIB, ge=1024)
    """Largest single SSE frame or Gemini array element; a frame that never ends fails closed here."""
    max_tool_calls: int = Field(default=256, ge=1, le=100_000)
    """Most tool calls in one message; more fail closed (each is assessed and held)."""
    max_json_depth: int = Field(default=64, ge=4, le=10_000)
    """Deepest nesting of a tool call's JSON arguments; deeper fails closed instead of recursing."""
    check_concurrency: int = Field(default=512, ge=1, le=100_000)
    """Message checks (judge, webhook, moderation) in flight at once; more wait for a slot. The wait
    is not part of a check's ``timeout_s``; a check still waiting after ``check_queue_timeout_s``
    fails open as unavailable (counted in ``/metrics``)."""
    check_queue_timeout_s: float = Field(default=10.0, gt=0, le=600)
    workers: int = Field(default=1, ge=1)
    """Processes sharing the listening socket (``guardproxy serve --workers N``)."""
    policies: dict[str, str] = {}
    """More named policies besides ``default`` (``GUARDPROXY_POLICY``): JSON, name -> TOML file."""
    client_tokens: dict[str, str] = {}
    """JSON, proxy token -> policy name. Each is also accepted as ``x-guardproxy-token``; the policy
    follows the token, so a client cannot choose it."""
    route_policies: dict[str, str] = {}
    """JSON, route -> policy name: a provider (``anthropic``) or a provider and endpoint
    (``anthropic/messages``); see ``proxy.drive.policies.route_table``."""
    allow_policy_header: bool = False
    """Let a client pick a named policy with ``x-guardproxy-policy`` (after token and route)."""
    watch_policy: bool = True
    """Reload the policies when their files change (as well as on SIGHUP)."""
    feed_max_subscribers: int = Field(default=8, ge=0, le=10_000)
    """Most ``GET /events`` subscribers at once (per process); more get 503."""
    feed_buffer_bytes: int = Field(default=1 * _MIB, ge=1024)
    """What one feed subscriber may have waiting; records past it are dropped for that subscriber only."""
    held_prompts_bytes: int = Field(default=64 * _MIB, ge=0)
    """Memory for the system prompts the upstream holds (``proxy.drive.held_prompts``: Responses ids and
    conversations, Gemini caches) in all, counted in bytes as stored; past it the largest scope's
    least recently used entries go first. 0 remembers none."""
    held_prompts_scope_bytes: int = Field(default=16 * _MIB, ge=0)
    """Most of ``held_prompts_bytes`` one upstream credential's state may hold (its own least recently
    used out first): what one client sends cannot push out another's."""
    held_prompts_max_ttl_s: float = Field(default=30 * 24 * 3600.0, gt=0)
    """Longest a held prompt is kept: a stored Responses answer's retention (30 days at OpenAI); a
    Gemini cache is kept until its own ``expireTime`` when sooner."""
    state_url: str | None = None
    """Where shared state lives (``proxy.state``): unset, the embedded store (in memory; a SQLite file
    shared by ``serve --workers N``); ``sqlite:///path``; ``redis://``, ``rediss://``, ``valkey://``
    (host:port/db): a Valkey or Redis server shared by replicas."""
    state_timeout_s: float = Field(default=0.05, gt=0, le=10)
    """Longest wait for the state store per call; past it the request gets the canary's
    ``unseen_prompt`` choice (counted and audited)."""
    state_key: SecretStr | None = None
    """32 random bytes in base64: seals values in a shared store (AES-256-GCM) and keys its digests."""

    @field_validator("state_url")
    @classmethod
    def _state_url(cls, value: str | None) -> str | None:
        if not value:
            return None
        parts = urlsplit(value)
        if parts.scheme == "sqlite":
            if not parts.path.startswith("/") or parts.netloc:
                raise ValueError("sqlite:///absolute/path/state.db (three slashes, an absolute path)")
            return value
        if parts.scheme not in ("redis", "rediss", "valkey", "valkeys") or not parts.hostname:
            raise ValueError("must be redis://, rediss:// or valkey://host:port/db (or sqlite:///path)")
        return value

    @field_validator("state_key")
    @classmethod
    def _state_key(cls, value: SecretStr | None) -> SecretStr | None:
        text = value.get_secret_value().strip() if value is not None else ""
        if not text:
            return None
        try:
            raw = base64.b64decode(text.replace("-", "+").replace("_", "/"), validate=True)
        except ValueError:
            raw = b""
        if len(raw) != 32:
            raise ValueError("must be 32 random bytes in base64 (openssl rand -base64 32)")
        return value
    @field_validator("openai_base_url", "anthropic_base_url", "gemini_base_url")
    @classmethod
    def _absolute_url(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError("must be an absolute http(s) URL such as https://api.example.com")
        return value

    prometheus_multiproc_dir: str | None = Field(default=None, validation_alias="PROMETHEUS_MULTIPROC_DIR")
    """prometheus-client's own variable (no prefix): where workers share metric values. ``serve`` sets
    it to a fresh directory when running several workers and it is unset."""


def _env_name(loc: tuple[int | str, ...]) -> str:
    field = str(loc[0]) if loc else "?"
    if field == "prometheus_multiproc_dir":
        return "PROMETHEUS_MULTIPROC_DIR"
    return f"GUARDPROXY_{field.upper()}"


def load_settings(**overrides: Any) -> Settings:
    """``Settings`` from the environment and ``overrides``; a bad value raises ``SettingsError``
    naming its variable (no traceback, no value that could be a secret)."""
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        lines = [f"{_env_name(e['loc'])}: {e['msg']}" for e in exc.errors()]
        raise SettingsError("invalid settings\n  " + "\n  ".join(lines)) from None
    except _SourceError as exc:  # a JSON-valued variable that is not JSON
        field = str(exc).split('"')[1] if str(exc).count('"') >= 2 else "?"
        raise SettingsError(f"invalid settings\n  {_env_name((field,))}: not valid JSON") from None


_NOT_SETTINGS = ("GUARDPROXY_TEST_", "GUARDPROXY_E2E_", "GUARDPROXY_INTERNAL_", "GUARDPROXY_SKIP_E2E")
"""Prefixes of ``GUARDPROXY_`` names that are not settings: the test suite's switches and keys, and
what ``serve --workers`` hands its workers."""


def unknown_variables(environ: Mapping[str, str], referenced: Iterable[str] = ()) -> list[str]:
    """One line per ``GUARDPROXY_*`` variable that no setting reads, with the nearest known name.

    A misspelled variable (``GUARDPROXY_GUARDRAIL_ENABLED=false``) would otherwise be ignored and the
    proxy serve as if it was never set. ``referenced``: names a policy reads on purpose (an
    ``api_key_env`` may well be called ``GUARDPROXY_JUDGE_KEY``)."""
    known = {"GUARDPROXY_" + name.upper() for name in Settings.model_fields}
    skip = set(referenced)
    lines = []
    for name in sorted(environ):
        upper = name.upper()
        if (not upper.startswith("GUARDPROXY_") or upper in known or name in skip
                or upper.startswith(_NOT_SETTINGS) or upper + "_" in _NOT_SETTINGS):
            continue
        # compared without the shared prefix, which would make any two names look alike
        near = difflib.get_close_matches(upper[11:], sorted(k[11:] for k in known), n=1, cutoff=0.75)
        lines.append(f"{name}: no such setting" + (f" (did you mean GUARDPROXY_{near[0]}?)" if near else ""))
    return lines
