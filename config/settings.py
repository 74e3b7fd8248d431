"""Process settings from the environment (prefix ``GUARDPROXY_``). Read once, passed explicitly."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="GUARDPROXY_", extra="ignore")

    host: str = "127.0.0.1"
    port: int = 8790
    openai_base_url: str = "https://api.openai.com"
    anthropic_base_url: str = "https://api.anthropic.com"
    gemini_base_url: str = "https://generativelanguage.googleapis.com"
    policy: str | None = None
    """Path of a TOML policy file; unset: the shipped default policy."""
    guardrails_enabled: bool = True
    """``false``: pure passthrough, no guardrail runs."""
    audit_log: str | None = None
    upstream_connect_timeout_s: float = Field(default=10.0, gt=0)
    upstream_read_timeout_s: float = Field(default=300.0, gt=0)
    """Idle time allowed between upstream bytes; a stall past it ends the stream with an error."""
    max_body_bytes: int = Field(default=32 * 1024 * 1024, gt=0)
    auth_token: str | None = None
    """When set, clients must send it in the ``x-guardproxy-token`` header (checked in constant time,
    never forwarded). Required to listen beyond loopback unless ``allow_unauthenticated_remote``."""
    allow_unauthenticated_remote: bool = False
    """Waive the token requirement for non-loopback listening addresses."""
    log_level: str = "info"
    shutdown_grace_s: float = Field(default=10.0, ge=0)
    workers: int = Field(default=1, ge=1)
    """Processes sharing the listening socket (``guardproxy serve --workers N``)."""
    policies: dict[str, str] = {}
    """More named policies besides ``default`` (``GUARDPROXY_POLICY``): JSON, name -> TOML file."""
    client_tokens: dict[str, str] = {}
    """JSON, proxy token -> policy name. Each is also accepted as ``x-guardproxy-token``; the policy
    follows the token, so a client cannot choose it."""
    route_policies: dict[str, str] = {}
    """JSON, route (``openai_chat``, ``openai_responses``, ``anthropic``, ``gemini``) -> policy name."""
    allow_policy_header: bool = False
    """Let a client pick a named policy with ``x-guardproxy-policy`` (after token and route)."""
    watch_policy: bool = True
    """Reload the policies when their files change (as well as on SIGHUP)."""
    prometheus_multiproc_dir: str | None = Field(default=None, validation_alias="PROMETHEUS_MULTIPROC_DIR")
    """prometheus-client's own variable (no prefix): where workers share metric values. ``serve`` sets
    it to a fresh directory when running several workers and it is unset."""
