"""The policy file schema (TOML). Validated once at start; every unknown key is an error naming it."""

from __future__ import annotations

import difflib
import tomllib
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal, Self
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from config.errors import ConfigError

Action = Literal["replace", "retry", "reject", "log", "redact"]
Mode = Literal["interactive", "non-interactive"]
Delivery = Literal["live", "buffered"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Defaults(_Strict):
    mode: Mode = "interactive"
    """A request may pick with the ``x-guardproxy-mode`` header, unless ``mode_pinned``."""
    mode_pinned: bool | None = None
    """``true``: the operator's ``mode`` holds; a request whose ``x-guardproxy-mode`` asks for the
    other mode gets a 400 (asking for the pinned mode itself is fine). ``false``: a request may ask
    for either. Unset: a ``non-interactive`` mode is pinned (a client may not turn the clean failure
    its operator chose into an interactive answer), an ``interactive`` one is not (a client may
    always ask for the clean failure)."""
    delivery: Delivery | None = None
    """``live`` streams with a hold-back window; ``buffered`` releases only vetted messages.
    Unset: ``buffered`` when a message guardrail is configured, else ``live``."""
    holdback_chars: int = Field(default=0, ge=0, le=65536)
    """An optional fixed minimum: text is held at least this far behind the checked end, besides
    what the armed checks' horizons hold (only what could still become part of a match)."""
    replacement: str = "[guardproxy: the answer was withheld by a guardrail]"

    def mode_for(self, header: str | None) -> Mode:
        """The mode of a request sending ``x-guardproxy-mode: header`` (None: not sent). Raises
        ``ValueError`` (a 400 for the client) for a value that is not a mode, or for the other mode
        when the mode is pinned. Case and surrounding spaces do not matter."""
        if header is None:
            return self.mode
        asked = header.strip().lower()
        if asked not in ("interactive", "non-interactive"):
            raise ValueError("x-guardproxy-mode must be 'interactive' or 'non-interactive'")
        pinned = self.mode == "non-interactive" if self.mode_pinned is None else self.mode_pinned
        if pinned and asked != self.mode:
            raise ValueError(f"x-guardproxy-mode: this proxy's mode is pinned to '{self.mode}'")
        return "interactive" if asked == "interactive" else "non-interactive"


def _http_url(value: str) -> str:
    """An absolute http(s) URL with a host; anything else would fail open on every message."""
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("must be an absolute http(s) URL such as https://host/path")
    return value


class _StreamBase(_Strict):
    id: str
    action: Action = "replace"
    replacement: str | None = None
    """What the client sees instead; defaults to ``defaults.replacement``."""
    max_attempts: int = Field(default=3, ge=1, le=10)
    mandate: str | None = None
    """Corrective system mandate appended on ``retry``."""
    enabled: bool = True

    @model_validator(mode="after")
    def _action_the_kind_can_do(self) -> Self:
        # ``redact`` masks the matched span in place: a kind that finds no span of its own (a length,
        # a leak judged over the whole prompt, a pattern) cannot, and used to become ``replace`` silently
        kind = getattr(self, "kind", "")
        if self.action == "redact" and kind in _NO_REDACT:
            raise ValueError(f"kind {kind!r} cannot redact (its actions: replace, retry, reject, log)")
        return self


_NO_REDACT = frozenset({"regex", "canary", "max_length"})
"""Stream kinds without an in-place mask; the others (pii, hidden_text, secrets) mask the span."""


MAX_PATTERN_NESTING = 64
"""Groups a pattern may nest: Python's own parser recurses per group, and a few hundred levels end in
a RecursionError (a traceback instead of a policy error naming the pattern)."""


def _nesting(pattern: str) -> int:
    """How deep ``pattern``'s groups nest (escapes and character classes skipped; a parenthesis in
    a verbose-mode comment counts too: it errs on the deep side)."""
    depth = deepest = 0
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "[":
            i += 2 if pattern.startswith("[^", i) else 1
            i += 1 if i < n and pattern[i] == "]" else 0  # a ']' first in a class is a literal
            while i < n and pattern[i] != "]":
                i += 2 if pattern[i] == "\\" else 1
        elif ch == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif ch == ")":
            depth = max(0, depth - 1)
        i += 1
    return deepest


class RegexGuardrail(_StreamBase):
    kind: Literal["regex"]
    patterns: list[str]
    flags: list[Literal["i", "m", "s", "x"]] = []
    window: int = Field(default=256, ge=1, le=65536)
    """Longest text a pattern may match; text is held back this far."""

    @field_validator("patterns")
    @classmethod
    def _not_too_deep(cls, patterns: list[str]) -> list[str]:
        for number, pattern in enumerate(patterns, start=1):
            if _nesting(pattern) > MAX_PATTERN_NESTING:
                raise ValueError(f"pattern #{number} nests its groups more than {MAX_PATTERN_NESTING} deep "
                                 "(write it flatter)")
        return patterns


class CanaryGuardrail(_StreamBase):
    kind: Literal["canary"]
    min_chars: int = Field(default=40, ge=8, le=4096)
    tool_min_chars: int = Field(default=200, ge=8, le=65536)
    """The shortest run of the system prompt that counts in a tool call's arguments (a file written,
    a command, a URL): agents copy shorter runs of their prompts into calls on purpose (a commit
    trailer, a memory file's path). The planted token counts at any length."""
    plant_token: bool = False
    unseen_prompt: Literal["pass", "refuse"] = "pass"
    """A request whose system prompt the upstream holds (``previous_response_id``, ``conversation``,
    a stored ``prompt``, Gemini's ``cachedContent``) and this process never saw go up: ``pass``
    relays it with the canary watching only the prompts it knows (counted and audited as
    ``unseen_prompt``); ``refuse`` answers 400 in the API's error format, asking the client to
    send its system prompt in the request."""


class SecretsGuardrail(_StreamBase):
    kind: Literal["secrets"]
    allow: list[str] = []
    categories: list[str] = []
    """Empty: every category."""
    mask: str = "[redacted by {guardrail}: {rule}]"
    """With ``action = "redact"``: what stands in place of a credential. ``{guardrail}``, ``{rule}``
    and ``{category}`` name what was found (never the value); the replacement text takes them too."""
    allow_rules: list[str] = []
    """Rule ids (``generic-assignment``) or categories (``jwt``) that never trip."""
    allow_patterns: list[str] = []
    """Regexes (Python ``re``): a match they find anywhere in (``search``) is no credential."""
    stopwords: list[str] = []
    """Words (case-insensitive): a match that holds one is no credential (gitleaks' stopwords)."""
    allow_paths: list[str] = []
    """``fnmatch`` globs (``tests/fixtures/*``; ``*`` crosses ``/``) of files a tool may write a
    match into: a file tool's write (``write_file``, ``Edit``, ``apply_patch``... with no command or
    URL) whose every file matches one, taken relative to ``[tools] workspace_root``, is not read by
    this guardrail. Shell commands and text outside such a write are read as always."""

    rules_file: str | None = None
    """A gitleaks-format TOML rules file (relative to the policy file): the operator's own rules,
    category ``custom``."""


class PiiGuardrail(_StreamBase):
    kind: Literal["pii"]
    allow: list[str] = []
    categories: list[str] = []
    regions: list[str] = []
    """ISO 3166 country codes whose national phone formats and national ids are recognised
    (empty: the built-in default set). International ``+<cc>`` numbers match in every region."""
    allow_paths: list[str] = []
    """``fnmatch`` globs (``tests/fixtures/*``; ``*`` crosses ``/``) of files a tool may write a
    match into: a file tool's write (``write_file``, ``Edit``, ``apply_patch``... with no command or
    URL) whose every file matches one, taken relative to ``[tools] workspace_root``, is not read by
    this guardrail. Shell commands and text outside such a write are read as always."""
    metadata_emails: bool = False
    """True: an email in code metadata trips too. False (default): it passes where the text writes it
    as a package's author (``authors``/``maintainers``/``contributors`` keys and the lists they open,
    ``author_email=``, a gemspec's ``spec.email``) or in a commit trailer (``Signed-off-by:``,
    ``Co-authored-by:``...); see docs/policy.md for why."""
    example_emails: bool = True
    """True: an address at a reserved example domain (RFC 2606/6761: ``example.com`` and hosts below
    it, ``.test``, ``.example``, ``.invalid``, ``.localhost``) is an email like any other (a model
    writes real-looking ones there: ``john@mail.eu.west.example.com``); false lets them pass, for
    agents writing docs and tests full of ``user@example.com``."""


class MaxLengthGuardrail(_StreamBase):
    kind: Literal["max_length"]
    max_chars: int = Field(ge=1)


class HiddenTextGuardrail(_StreamBase):
    kind: Literal["hidden_text"]
    bidi: bool = True
    """Also trip on the bidirectional embedding, override and isolate controls (U+202A-202E,
    U+2066-2069): they make a client draw text in another order than the one it is read in."""


StreamGuardrailSpec = Annotated[
    RegexGuardrail | CanaryGuardrail | SecretsGuardrail | PiiGuardrail | MaxLengthGuardrail | HiddenTextGuardrail,
    Field(discriminator="kind"),
]


class _MessageBase(_Strict):
    id: str
    action: Literal["replace", "retry", "reject", "log"] = "replace"
    replacement: str | None = None
    timeout_s: float = Field(default=3.0, gt=0, le=120)
    max_attempts: int = Field(default=3, ge=1, le=10)
    mandate: str | None = None
    final_action: Literal["replace", "reject", "log"] = "replace"
    """What happens when ``retry`` runs out of attempts."""
    enabled: bool = True
    on_content_error: Literal["block", "pass"] = "block"
    """When the content itself makes the check fail (the checker refuses it as too long, it cannot
    be encoded, the check crashes on it): ``block`` acts as a block with reason ``unjudgeable``;
    ``pass`` fails open. An unavailable checker (down, slow, 5xx, 429) always fails open, except:"""
    on_long_timeout: Literal["block", "pass"] = "block"
    """A check that times out on an answer longer than one of its parts (``max_chars`` of a judge,
    webhook or moderation check: judged in several requests): the answer's length is a cause the
    content chose, so ``block`` acts as a block with reason ``unjudgeable``; ``pass`` fails open as
    a timeout on a short answer does."""


class JudgeGuardrail(_MessageBase):
    kind: Literal["llm_judge"]
    model: str | None = None
    """Model name sent to the judge's upstream; None: the request's own model."""
    prompt_file: str | None = None
    prompt: str | None = None
    """Inline template; ``{user_query}`` and ``{agent_output}`` are filled in."""
    upstream: Literal["request", "openai_chat", "anthropic", "gemini"] = "request"
    base_url: str | None = None
    api_key_env: str | None = None
    """Environment variable holding the key for a judge that names its own upstream."""
    @field_validator("base_url")
    @classmethod
    def _absolute_base_url(cls, value: str | None) -> str | None:
        return value if value is None else _http_url(value)

    only_final_text: bool = True
    """Judge the visible text only (a message with tool calls is judged on its text whenever it has
    some); ``false``: the tool calls are judged too."""
    on_unreadable: Literal["pass", "block", "retry"] = "retry"
    """A judge reply with no readable verdict: ``retry`` asks once more for one word and blocks if
    that is unreadable too; ``block``; ``pass`` fails open."""
    max_chars: int = Field(default=32_000, ge=1_000, le=2_000_000)
    """Longest answer text sent in one judge call; a longer one is judged in parts of this size."""
    max_parts: int = Field(default=4, ge=1, le=64)
    """Most parts judged per message (concurrently); past it the first ``max_parts - 1`` parts and
    the last are judged, and the judge is told how much was left out between them."""


class WebhookGuardrail(_MessageBase):
    kind: Literal["webhook"]
    url: str
    headers: dict[str, str] = {}
    max_chars: int = Field(default=32_000, ge=1_000, le=2_000_000)
    """Most characters of text in one request (answer part, query and tool calls together); a longer
    answer is sent in parts, one request each, and every part must pass."""
    max_parts: int = Field(default=4, ge=1, le=64)
    """Most parts sent per message; past it the first ``max_parts - 1`` and the last are sent, each
    request saying how much was left out before it."""

    @field_validator("url")
    @classmethod
    def _absolute_url(cls, value: str) -> str:
        return _http_url(value)


class ModerationGuardrail(_MessageBase):
    kind: Literal["moderation"]
    url: str = "https://api.openai.com/v1/moderations"
    model: str = "omni-moderation-latest"
    api_key_env: str | None = "OPENAI_API_KEY"
    thresholds: dict[str, float] = {}
    """Category -> score at or above which the message is flagged; empty: the endpoint's ``flagged``."""
    max_chars: int = Field(default=32_000, ge=1_000, le=2_000_000)
    """Longest text sent as one ``input``; a longer one is sent as a list of parts."""

    @field_validator("url")
    @classmethod
    def _absolute_url(cls, value: str) -> str:
        return _http_url(value)
    max_parts: int = Field(default=8, ge=1, le=64)
    """Most parts sent; past it the first ``max_parts - 1`` and the last are sent."""


MessageGuardrailSpec = Annotated[
    JudgeGuardrail | WebhookGuardrail | ModerationGuardrail, Field(discriminator="kind")
]


# ---------------------------------------------------------------- input guardrails (issue #33)
InputPart = Literal["user", "tool_result", "system"]
"""What a request carries that an input guardrail reads: the user's turns, tool results (Responses
``function_call_output``, Anthropic ``tool_result``, Gemini ``functionResponse``) and system text."""


class _InputBase(_Strict):
    parts: list[InputPart] = Field(default=["user", "tool_result"], min_length=1)
    taints: bool | None = None
    """Whether content this guardrail flags taints the conversation (``[tools] tainted_egress``).
    Unset: ``hidden_text``, ``regex`` and the message checks taint; ``secrets`` and ``pii`` do not
    (a pasted key is the user's own, not an injected instruction)."""

    @model_validator(mode="after")
    def _no_answer_keys(self) -> Self:
        """The keys of an answer's trip (what the client is shown, retries) mean nothing on input."""
        unused = sorted(self.model_fields_set & {"replacement", "max_attempts", "mandate", "final_action"})
        if unused:
            raise ValueError(f"{', '.join(unused)}: not used by input guardrails (actions: redact, reject, log)")
        return self


class InputSecretsGuardrail(_InputBase, SecretsGuardrail):
    action: Literal["redact", "reject", "log"] = "redact"
    mask: str = "[REDACTED:{category}]"
    """What stands in the request instead of a value (``{category}`` is filled in)."""


class InputPiiGuardrail(_InputBase, PiiGuardrail):
    action: Literal["redact", "reject", "log"] = "redact"
    mask: str = "[REDACTED:{category}]"


class InputRegexGuardrail(_InputBase, RegexGuardrail):
    action: Literal["redact", "reject", "log"] = "reject"
    mask: str = "[REDACTED]"


class InputHiddenTextGuardrail(_InputBase, HiddenTextGuardrail):
    action: Literal["redact", "reject", "log"] = "redact"
    """``redact`` drops the hidden characters and keeps the visible text."""


class InputJudgeGuardrail(_InputBase, JudgeGuardrail):
    action: Literal["reject", "log"] = "reject"


class InputWebhookGuardrail(_InputBase, WebhookGuardrail):
    action: Literal["reject", "log"] = "reject"


class InputModerationGuardrail(_InputBase, ModerationGuardrail):
    action: Literal["reject", "log"] = "reject"


InputGuardrailSpec = Annotated[
    InputSecretsGuardrail | InputPiiGuardrail | InputRegexGuardrail | InputHiddenTextGuardrail
    | InputJudgeGuardrail | InputWebhookGuardrail | InputModerationGuardrail,
    Field(discriminator="kind"),
]

Effect = Literal["file_read", "file_write", "exec", "network", "none"]


class ToolSpec(_Strict):
    effect: Effect
    path: str | None = None
    paths: str | None = None
    command: str | None = None
    url: str | None = None
    patch: str | None = None
    content: str | None = None
    """The parameter holding the text a file tool writes (read for the sources of package settings files)."""


class ToolsPolicy(_Strict):
    enabled: bool = True
    workspace_root: str | None = None
    """The workspace as the proxy sees it (a sidecar mount)."""
    agent_workspace_root: str = ""
    """The same folder as the agent names it, when it differs."""
    privileged: list[str] = ["~/.ssh", "~/.aws", "~/.gnupg", "/etc", "/root", "/proc", "/sys"]
    write_manifest: list[str] = []
    egress_allow: list[str] = []
    egress_enabled: bool = True
    interpreters: list[str] | None = None
    """Shell forms to block; None: the built-in list (bash -c, python -c, node -e, eval, curl|sh...)."""
    read_before_write: bool = True
    no_such_path: bool = True
    on_block: Literal["feedback", "replace", "reject"] = "feedback"
    max_feedback_rounds: int = Field(default=2, ge=0, le=10)
    catalog: dict[str, ToolSpec] = {}
    allow_computer_use: bool = False
    """Responses ``computer_call`` items (clicks, typed text) are blocked unless this is true."""
    untrusted_tools: list[str] = []
    """Tools whose results taint the conversation (names or ``fnmatch`` globs: ``web_fetch``, ``mcp__*``)."""
    tainted_egress: Literal["block", "log", "allow"] = "block"
    """Once untrusted content is in the conversation (``untrusted_tools``, or content an input
    guardrail flagged): ``block`` tool calls that send data out (``guardrails.tools.taint``), also to
    allowed hosts; ``log`` records them as ``tainted_egress`` and lets them through; ``allow``."""
    autorun: Literal["block", "allow"] = "block"
    """``block``: writes into ``.git/`` and settings that make programs run code later by themselves
    (``git config core.hooksPath``/``alias.x '!...'``/filters, ``git init --template``, ``direnv allow``) are
    blocked (``autorun_setting``; see ``guardrails.tools.autorun``). ``allow``: not checked."""


class Policy(_Strict):
    defaults: Defaults = Defaults()
    stream_guardrails: list[StreamGuardrailSpec] = []
    message_guardrails: list[MessageGuardrailSpec] = []
    input_guardrails: list[InputGuardrailSpec] = []
    """Checks on the request before it goes upstream (``proxy.input_guard``)."""
    tools: ToolsPolicy | None = None
    disarms: list[str] = []
    """Guardrail ids (``tools`` for the tool rules) this version removes on purpose: a live reload
    that would drop a running guardrail is refused unless it is named here."""
    empty: bool = False
    """This file arms nothing, on purpose. A policy file that arms no guardrail and no tool rule is
    otherwise refused (at start, in ``check-policy`` and on reload): an editor's truncate-then-write or
    a half-done write by a config tool reads as exactly that."""

    def arms_nothing(self) -> bool:
        return (not any(g.enabled for g in (*self.stream_guardrails, *self.message_guardrails))
                and not any(getattr(g, "enabled", True) for g in self.input_guardrails)
                and (self.tools is None or not self.tools.enabled))
    base_dir: Path = Path(".")
    """Folder that relative paths in the policy (``prompt_file``) are resolved against."""

    @field_validator("stream_guardrails", "message_guardrails", "input_guardrails")
    @classmethod
    def _unique_ids(cls, value: list[_StreamBase] | list[_MessageBase]) -> list[_StreamBase] | list[_MessageBase]:
        seen: set[str] = set()
        for item in value:
            if item.id in seen:
                raise ValueError(f"duplicate guardrail id {item.id!r}")
            seen.add(item.id)
        return value


class PolicyError(ConfigError):
    """A policy file that cannot be used. The message names the file, and for each problem the line
    (where the file has one) and the key; ``problems`` holds the same as data (``check-policy --json``)."""

    def __init__(self, message: str, problems: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.problems: list[dict[str, Any]] = problems if problems is not None else [{"message": message}]


def _field_names() -> set[str]:
    """Every key any part of a policy may have (for "did you mean")."""
    names: set[str] = set()
    stack: list[type[BaseModel]] = [Policy]
    seen: set[type[BaseModel]] = set()
    while stack:
        model = stack.pop()
        if model in seen:
            continue
        seen.add(model)
        names.update(model.model_fields)
        for sub in _Strict.__subclasses__():
            stack.append(sub)
            stack.extend(sub.__subclasses__())
    return names


def _line_of(text: str, loc: tuple[Any, ...]) -> int | None:
    """The line (1-based) of the key at ``loc`` in a policy's TOML, or None when it cannot be told.

    Follows ``[table]`` / ``[[array.of.tables]]`` headers and ``key =`` lines: enough for the shapes
    a policy takes (tables, arrays of tables, keys), not a TOML parser (tomllib keeps no positions)."""
    lines = text.splitlines()
    header, index, start = "", -1, 0
    keys = [str(k) for k in loc]
    # the table part of the path: as many leading keys as name a header in the file
    for n in range(len(keys), 0, -1):
        name = ".".join(k for k in keys[:n] if not k.isdigit())
        if any(line.strip() in (f"[{name}]", f"[[{name}]]") for line in lines):
            header = name
            digits = [k for k in keys[:n + 1] if k.isdigit()]
            index = int(digits[0]) if digits else 0
            break
    if header:
        seen = -1
        for i, line in enumerate(lines):
            if line.strip() in (f"[{header}]", f"[[{header}]]"):
                seen += 1
                if seen == index:
                    start = i
                    break
        else:
            return None
    key = next((k for k in reversed(keys) if not k.isdigit()), "")
    for i in range(start + (1 if header else 0), len(lines)):
        stripped = lines[i].strip()
        if header and i > start and stripped.startswith("["):
            break
        if stripped.split("=", 1)[0].strip().strip('"') == key and "=" in stripped:
            return i + 1
    return start + 1 if header else None


def _problems(path: str, text: str, err: ValidationError) -> list[dict[str, Any]]:
    known = sorted(_field_names())
    out: list[dict[str, Any]] = []
    for e in err.errors():
        # a discriminated union puts the tag (the guardrail's kind) into the path: not a key of the file
        loc = tuple(p for i, p in enumerate(e["loc"])
                    if not (i and isinstance(e["loc"][i - 1], int) and isinstance(p, str) and p not in known))
        key = ".".join(str(p) for p in loc)
        message = e["msg"]
        if e["type"] == "extra_forbidden" and loc:
            near = difflib.get_close_matches(str(loc[-1]), known, n=1, cutoff=0.75)
            message = "unknown key" + (f" (did you mean {near[0]!r}?)" if near else "")
        out.append({"file": path, "line": _line_of(text, loc), "key": key, "message": message})
    return out


def _format_problems(path: str, problems: list[dict[str, Any]]) -> str:
    lines = [f"{path}: invalid policy ({len(problems)} problem{'s' if len(problems) != 1 else ''})"]
    for p in problems:
        where = f"line {p['line']}: " if p.get("line") else ""
        lines.append(f"  {where}{p['key']}: {p['message']}")
    return "\n".join(lines)


def parse_policy(text: str, *, source: str = "<policy>", base_dir: Path | None = None) -> Policy:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line = getattr(exc, "lineno", None)
        raise PolicyError(f"{source}: not valid TOML: {exc}",
                          [{"file": source, "line": line, "key": "", "message": f"not valid TOML: {exc}"}]) from exc
    if base_dir is not None:
        data["base_dir"] = str(base_dir)
    try:
        return Policy.model_validate(data)
    except ValidationError as exc:
        problems = _problems(source, text, exc)
        raise PolicyError(_format_problems(source, problems), problems) from exc


def policy_schema() -> dict[str, Any]:
    """The policy file's JSON Schema (``guardproxy schema``), for editors that check TOML against one
    (taplo / Even Better TOML). ``base_dir`` is the proxy's own, never written in a file."""
    schema = Policy.model_json_schema()
    schema.get("properties", {}).pop("base_dir", None)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "guardproxy policy"
    return schema


def default_policy_text() -> str:
    return resources.files("config").joinpath("default.toml").read_text(encoding="utf-8")


def load_policy(path: str | None) -> Policy:
    """Load the policy at ``path``, or the shipped default when ``path`` is None or empty."""
    if not path:
        return parse_policy(default_policy_text(), source="config/default.toml",
                            base_dir=Path(str(resources.files("config"))).parent)
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise PolicyError(f"{path}: cannot read policy: {exc.strerror}") from exc
    return parse_policy(text, source=path, base_dir=p.resolve().parent)


def refuse_if_empty(policy: Policy, source: str) -> None:
    """A policy file that arms nothing is refused at start and by ``check-policy`` unless it says so
    (``empty = true``, or a ``disarms`` list): an editor's truncate-then-write or a half-done write reads
    as exactly that. (A reload has its own, stricter rule: ``proxy.edge.reload``.)"""
    if policy.arms_nothing() and not policy.empty and not policy.disarms:
        message = ("arms no guardrail and no tool rule (an empty or half-written file?); if that is "
                   "meant, say so with a top-level 'empty = true'")
        raise PolicyError(f"{source}: {message}", [{"file": source, "line": None, "key": "", "message": message}])
