"""Turn the policy's ``[[message_guardrails]]`` entries into guardrail objects, once, at start.

Everything that can be wrong with the configuration (a missing prompt file, a template without
``{agent_output}``) is raised here as ``PolicyError``, so a bad policy stops the proxy at start
instead of failing open on every message.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import httpx

from config.policy import JudgeGuardrail, ModerationGuardrail, PolicyError, WebhookGuardrail
from guardrails.message.base import AnySpec, ConfiguredGuardrail
from guardrails.message.judge import LlmJudge
from guardrails.message.moderation import Moderation
from guardrails.message.webhook import Webhook
from guardrails.seams import MessageGuardrail


def _field(spec: AnySpec, name: str) -> str:
    """How an error names a field: by the guardrail's id, which the user wrote, not its index."""
    return f"message_guardrails[id={spec.id!r}].{name}"


def load_template(spec: JudgeGuardrail, base_dir: Path) -> str:
    """The judge's prompt template: inline ``prompt``, or ``prompt_file`` relative to ``base_dir``."""
    if spec.prompt is not None and spec.prompt_file is not None:
        raise PolicyError(f"{_field(spec, 'prompt')}: set either prompt or prompt_file, not both")
    if spec.prompt is not None:
        template, where = spec.prompt, _field(spec, "prompt")
    elif spec.prompt_file is not None:
        where = _field(spec, "prompt_file")
        path = Path(spec.prompt_file).expanduser()
        path = path if path.is_absolute() else base_dir / path
        try:
            template = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise PolicyError(f"{where}: cannot read {str(path)!r}: {exc.strerror}") from exc
    else:
        raise PolicyError(f"{_field(spec, 'prompt_file')}: an llm_judge needs prompt_file or prompt")
    # Without the answer in it the judge would rule on nothing and pass or block at random.
    if "{agent_output}" not in template:
        raise PolicyError(f"{where}: the template must contain the placeholder {{agent_output}}")
    return template


def check_key_env(spec: AnySpec) -> None:
    """A named key variable must be set when the policy loads: unset, every check would fail open
    (and a judge with its own host must never fall back to the client's credentials)."""
    name = getattr(spec, "api_key_env", None)
    if name is not None and not os.environ.get(name):
        raise PolicyError(f"{_field(spec, 'api_key_env')}: the environment variable {name} is not set "
                          "(set it, or remove api_key_env)")


def build_message_guardrails(
    specs: Sequence[AnySpec],
    default_replacement: str,
    base_dir: Path,
    http: httpx.AsyncClient,
) -> list[MessageGuardrail]:
    """Build the enabled guardrails in policy order (the order the runner breaks ties by).

    ``http`` is shared by the webhook and moderation checks (side calls, not the hot path).
    Every returned object is a ``ConfiguredGuardrail`` carrying its ``spec``.
    """
    built: list[MessageGuardrail] = []
    for spec in specs:
        if not spec.enabled:
            continue
        check_key_env(spec)
        replacement = spec.replacement if spec.replacement is not None else default_replacement
        if isinstance(spec, JudgeGuardrail):
            built.append(LlmJudge(spec, load_template(spec, base_dir), replacement))
        elif isinstance(spec, WebhookGuardrail):
            built.append(Webhook(spec, replacement, http))
        elif isinstance(spec, ModerationGuardrail):
            built.append(Moderation(spec, replacement, http))
    return built


def specs_by_id(guardrails: Iterable[MessageGuardrail]) -> dict[str, AnySpec]:
    """Guardrail id -> its policy spec, for the proxy to look up what to do on a block."""
    return {g.id: g.spec for g in guardrails if isinstance(g, ConfiguredGuardrail)}


def timeouts_by_id(guardrails: Iterable[MessageGuardrail]) -> dict[str, float]:
    """Guardrail id -> ``timeout_s`` from its spec: the ``timeouts`` argument of the runner."""
    return {g.id: g.spec.timeout_s for g in guardrails if isinstance(g, ConfiguredGuardrail)}
