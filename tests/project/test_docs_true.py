"""The docs say what the code does: every name a user or operator types or reads (settings and their
defaults, policy keys and values, reason codes, audit events, x-guardproxy-* headers, CLI subcommands
and flags, metric names, types and labels) is documented, and every such name the docs mention
exists; TOML examples load with the policy loader; files, modules and links the docs point at exist.
No servers, no network: the code is read where it defines the names.

Each check takes its names from the code itself (the settings and policy models, the reason-code
constants and call sites, the CLI's own parser, the metrics registry), so a name added, renamed or
dropped in the code fails here until README.md or docs/*.md follow.

Markers a doc may carry (an HTML comment, invisible when rendered):

- ``<!-- docs-check: not a policy -->`` on the line before a ```` ```toml ```` fence: the block is some
  other TOML (an editor's config), not checked against the policy loader.
"""

from __future__ import annotations

import argparse
import ast
import functools
import json
import re
import types
import typing
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
README = REPO / "README.md"
NOT_A_POLICY = "<!-- docs-check: not a policy -->"


def _doc_files() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


# ------------------------------------------------------------------------------- markdown reading
_FENCE = re.compile(r"^```([A-Za-z]*)[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


def fences(text: str) -> Iterator[tuple[str, str, int, str]]:
    """(language, body, line of the fence, the line before it) for every fenced block."""
    for m in _FENCE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        yield m.group(1), m.group(2), line, before


def without_fences(text: str) -> str:
    return _FENCE.sub("", text)


def code_spans(text: str) -> list[str]:
    """The inline code spans of ``text`` (outside fenced blocks), single or double backticks."""
    return [m.group(2) for m in re.finditer(r"(`+)(.+?)\1", without_fences(text), re.DOTALL)]


def code_words(text: str, languages: tuple[str, ...] = ("toml",)) -> set[str]:
    """Every word written as code: in inline spans and in the fenced blocks of ``languages``."""
    pieces = code_spans(text) + [body for lang, body, _, _ in fences(text) if lang in languages]
    return {w for p in pieces for w in re.findall(r"[A-Za-z0-9_][A-Za-z0-9_-]*", p)}


def paragraphs(text: str) -> list[str]:
    """Blank-line separated blocks (a fenced block is one, a table is one, each row too)."""
    out = [body for _, body, _, _ in fences(text)]
    for block in re.split(r"\n\s*\n", without_fences(text)):
        out.append(block)
        out.extend(line for line in block.splitlines() if line.startswith("|"))
    return out


def table_after(text: str, heading: str) -> list[list[str]]:
    """The rows (cells, header and rule rows dropped) of the first table under ``heading``."""
    start = re.search(rf"^{re.escape(heading)}[ \t]*$", text, re.MULTILINE).start()  # type: ignore[union-attr]
    rows: list[list[str]] = []
    for line in text[start:].splitlines()[1:]:
        if line.startswith("|"):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
            rows.append(cells)
        elif rows or line.startswith("#"):
            break
    assert len(rows) > 2, f"no table under {heading!r}"
    return rows[2:] if set(rows[1][0]) <= set("-: ") else rows[1:]


def none_of(items: Collection[object], what: str) -> None:
    """Fail listing every item, one a line (an assertion diff would show only the first)."""
    listed = sorted(map(str, items))
    assert not listed, what + ":\n  " + "\n  ".join(listed)


def ticked(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


# ------------------------------------------------------------------------------- (1) settings
def setting_env_names() -> dict[str, str]:
    """field name -> the environment variable it is read from."""
    from config.settings import Settings

    prefix = Settings.model_config.get("env_prefix", "")
    out = {}
    for name, field in Settings.model_fields.items():
        alias = field.validation_alias
        out[name] = alias if isinstance(alias, str) else f"{prefix}{name}".upper()
    return out


def settings_table() -> set[str]:
    """The variables the table of docs/settings.md lists: bare names stand for ``GUARDPROXY_`` ones."""
    rows = table_after(_read(DOCS / "settings.md"), "# Settings (environment, prefix `GUARDPROXY_`)")
    names = {n for row in rows for n in ticked(row[0])}
    return {n if n.startswith(("GUARDPROXY_", "PROMETHEUS_")) else f"GUARDPROXY_{n}" for n in names}


def test_every_setting_is_a_row_of_the_settings_table() -> None:
    listed, real = settings_table(), set(setting_env_names().values())
    assert len(real) > 30
    none_of(real - listed, "settings missing from docs/settings.md's table")
    none_of(listed - real, "rows of docs/settings.md's table that no setting reads")


_UNITS = {"KiB": 1024, "MiB": 1024 * 1024, "days": 86400}


def _documented_default(text: str) -> tuple[bool, object]:
    """(whether the cell states a value, the value) for one default: `10`, `true`, `{}`, `info`,
    32 MiB, 30 days, unset. Prose (the official APIs) and another setting's name (`HOST`) state none."""
    text = text.strip()
    if text == "unset":
        return True, None
    if m := re.fullmatch(r"([\d.]+) (KiB|MiB|days)", text):
        return True, float(m.group(1)) * _UNITS[m.group(2)]
    if m := re.fullmatch(r"`([^`]+)`", text):
        if m.group(1).upper() == m.group(1) and m.group(1).isidentifier():
            return False, None  # falls back to that setting
        try:
            return True, json.loads(m.group(1))
        except ValueError:
            return True, m.group(1)
    return False, None


def test_the_settings_table_states_each_default_the_code_has() -> None:
    from config.settings import Settings

    rows = table_after(_read(DOCS / "settings.md"), "# Settings (environment, prefix `GUARDPROXY_`)")
    by_env = {env: name for name, env in setting_env_names().items()}
    checked, wrong = 0, []
    for row in rows:
        names = [n if n.startswith("PROMETHEUS_") else f"GUARDPROXY_{n}" for n in ticked(row[0])]
        defaults = [d for d in re.split(r",\s+(?=`|unset|\d)", row[1])]
        if len(defaults) != len(names):
            defaults = [row[1]] * len(names)
        for env, cell in zip(names, defaults):
            states, value = _documented_default(cell)
            if not states:
                continue
            checked += 1
            actual = Settings.model_fields[by_env[env]].default
            if value != actual:
                wrong.append(f"{env}: docs say {cell!r}, the code {actual!r}")
    assert checked > 30
    none_of(wrong, "defaults in docs/settings.md that are not the code's")


def test_the_route_policies_row_names_every_route_key_the_code_takes() -> None:
    """``GUARDPROXY_ROUTE_POLICIES`` refuses an unknown key at start: the row says which are known."""
    from proxy.drive.policies import _LEGACY_ROUTE_KEYS, ROUTE_ENDPOINTS, ROUTE_PROVIDERS

    [row] = [r for r in table_after(_read(DOCS / "settings.md"), "# Settings (environment, prefix `GUARDPROXY_`)")
             if "ROUTE_POLICIES" in ticked(r[0])]
    named = {t.lower() for t in ticked(row[2])}
    shown = named | {"/" + n.split("/", 1)[1] for n in named if n.split("/", 1)[0] in ROUTE_PROVIDERS and "/" in n}
    wanted = {*ROUTE_PROVIDERS, *_LEGACY_ROUTE_KEYS, *("/" + e for e in ROUTE_ENDPOINTS)}
    none_of(wanted - shown, "providers, endpoints (as provider/endpoint) and old keys the ROUTE_POLICIES row never shows")


def test_the_ops_routes_are_documented() -> None:
    from proxy.edge.app import _OPS

    text = _read(DOCS / "operations.md")
    none_of({r for r in _OPS if f"`{r}`" not in text}, "ops routes docs/operations.md never names")


TYPO_EXAMPLES = {"GUARDPROXY_AUDITLOG", "GUARDPROXY_GUARDRAIL_ENABLED"}
"""Misspelled names the docs show on purpose, as what ``serve`` refuses (kept honest below)."""


def test_every_guardproxy_variable_the_docs_name_is_a_setting() -> None:
    from config.settings import _NOT_SETTINGS

    real = set(setting_env_names().values())
    assert not TYPO_EXAMPLES & real
    wrong = []
    for path in _doc_files():
        for n, line in enumerate(_read(path).splitlines(), 1):
            for name in re.findall(r"GUARDPROXY_[A-Z0-9_]*", line):
                stem = name.rstrip("_")
                if (name in real or name == "GUARDPROXY_" or name in TYPO_EXAMPLES
                        or name.startswith(_NOT_SETTINGS) or stem + "_" in _NOT_SETTINGS or stem in _NOT_SETTINGS):
                    continue
                wrong.append(f"{path.relative_to(REPO)}:{n}: {name}")
    none_of(wrong, "GUARDPROXY_* names in the docs that no setting reads")


def test_the_documented_test_only_prefixes_are_the_ones_the_code_skips() -> None:
    """settings.md names the prefixes that are not settings; the code's list must match it."""
    from config.settings import _NOT_SETTINGS

    text = _read(DOCS / "settings.md")
    para = next(p for p in paragraphs(text) if "no such setting" in p and "GUARDPROXY_TEST_" in p)
    documented = {re.sub(r"\*$", "", n) for n in ticked(para) if re.fullmatch(r"GUARDPROXY_[A-Z0-9_]+\*?", n)}
    assert documented == set(_NOT_SETTINGS)


# ------------------------------------------------------------------------------- (2) policy
def _models_in(annotation: Any) -> Iterator[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
        return
    for arg in typing.get_args(annotation):
        yield from _models_in(arg)


def _literals_in(annotation: Any) -> Iterator[str]:
    if typing.get_origin(annotation) is Literal:
        yield from (str(v) for v in typing.get_args(annotation))
        return
    if isinstance(annotation, (types.UnionType,)) or typing.get_origin(annotation) is not None:
        for arg in typing.get_args(annotation):
            yield from _literals_in(arg)


INTERNAL_KEYS = {("Policy", "base_dir")}
"""Set by the loader, never written in a file (``policy_schema`` drops it too)."""


def policy_models() -> list[type[BaseModel]]:
    """Every model a policy file can reach from ``Policy``: the sections, each guardrail kind of each
    stage, the tools policy and its catalog entries."""
    from config.policy import Policy

    seen: list[type[BaseModel]] = []
    stack: list[type[BaseModel]] = [Policy]
    while stack:
        model = stack.pop()
        if model in seen:
            continue
        seen.append(model)
        for field in model.model_fields.values():
            stack.extend(_models_in(field.annotation))
    return seen


def _doc_of(model: type[BaseModel]) -> Path:
    from config.policy import ToolSpec, ToolsPolicy

    return DOCS / ("tools.md" if model in (ToolsPolicy, ToolSpec) else "policy.md")


def test_the_policy_walk_reaches_every_guardrail_kind() -> None:
    kinds = {v for m in policy_models() if "kind" in m.model_fields for v in _literals_in(m.model_fields["kind"].annotation)}
    assert {"regex", "canary", "secrets", "pii", "max_length", "hidden_text", "llm_judge", "webhook",
            "moderation"} <= kinds


def written_as_keys(text: str) -> set[str]:
    """Keys written as TOML assignments: ``key = ...`` lines of toml blocks, and inline spans
    ``key = ...`` or ``[section] key = ...``."""
    lines = [line for lang, body, _, _ in fences(text) if lang == "toml" for line in body.splitlines()]
    lines += code_spans(text)
    return {m.group(1).rsplit(".", 1)[-1] for line in lines
            if (m := re.match(r"\s*(?:\[[\w.]+\]\s+)?([\w.]+)\s*=", line))}


def test_every_policy_key_is_documented() -> None:
    """Named in a code span or a TOML example of its doc; a key that is also a reason code or a tool
    rule's name (``no_such_path``, ``tainted_egress``, ``autorun``) only counts written as ``key = ``."""
    from guardrails.tools import verdict

    ambiguous = set(code_reason_codes()) | {v for k, v in vars(verdict).items() if k.isupper() and isinstance(v, str)}
    missing = []
    texts = {p: _read(p) for p in (DOCS / "policy.md", DOCS / "tools.md")}
    words = {p: code_words(t) for p, t in texts.items()}
    keys = {p: written_as_keys(t) for p, t in texts.items()}
    for model in policy_models():
        doc = _doc_of(model)
        for key in model.model_fields:
            if (model.__name__, key) in INTERNAL_KEYS:
                continue
            if key not in keys[doc] and (key in ambiguous or key not in words[doc]):
                missing.append(f"{model.__name__}.{key} (in {doc.name})")
    none_of(missing, "policy keys no code span or TOML example of their doc names")


def test_every_value_a_policy_key_takes_is_documented() -> None:
    """Literal values: guardrail kinds, actions, modes, effects, on_block, tainted_egress..."""
    missing = []
    words = {p: code_words(_read(p)) for p in (DOCS / "policy.md", DOCS / "tools.md")}
    for model in policy_models():
        for key, field in model.model_fields.items():
            for value in _literals_in(field.annotation):
                if value not in words[_doc_of(model)]:
                    missing.append(f"{model.__name__}.{key} = {value!r} (in {_doc_of(model).name})")
    none_of(set(missing), "values of policy keys their doc never writes as code")


def _policy_section(start: str, end: str) -> str:
    text = _read(DOCS / "policy.md")
    i = text.index(start)
    return text[i:text.index(end, i)]


def test_each_guardrail_kind_has_its_keys_in_its_own_section() -> None:
    """A stream kind's keys in *Stream guardrails*, a message kind's in *Message guardrails*, the
    input stage's own keys in *Input guardrails* (its kinds take the options of the same kind above)."""
    from config.policy import InputGuardrailSpec, MessageGuardrailSpec, StreamGuardrailSpec, _InputBase

    sections = {"stream": _policy_section("## Stream guardrails", "## Message guardrails"),
                "message": _policy_section("## Message guardrails", "## Input guardrails"),
                "input": _policy_section("## Input guardrails", "## What a trip does")}
    wanted = {"stream": {(m.__name__, k) for m in _models_in(StreamGuardrailSpec) for k in m.model_fields},
              "message": {(m.__name__, k) for m in _models_in(MessageGuardrailSpec) for k in m.model_fields},
              "input": {(m.__name__, k) for m in _models_in(InputGuardrailSpec)
                        for k in (*_InputBase.model_fields, "id", "kind", "action", "enabled")}}
    missing = [f"{model}.{key} (in {stage})" for stage, pairs in wanted.items()
               for model, key in pairs if key not in code_words(sections[stage])]
    none_of(set(missing), "guardrail keys missing from their stage's section of docs/policy.md")


def test_each_kind_row_lists_the_options_of_its_kind() -> None:
    """The kinds tables of *Stream guardrails* and *Message guardrails*: a kind's row names every key
    of its own (beyond the common keys) in its options cell."""
    from config.policy import MessageGuardrailSpec, StreamGuardrailSpec, _MessageBase, _StreamBase

    missing = []
    for spec, base, section in ((StreamGuardrailSpec, _StreamBase, _policy_section("## Stream guardrails", "## Message guardrails")),
                                (MessageGuardrailSpec, _MessageBase, _policy_section("## Message guardrails", "## Input guardrails"))):
        rows = {m.group(1): line for line in section.splitlines() if (m := re.match(r"\| `(\w+)` \|", line))}
        for model in _models_in(spec):
            [kind] = _literals_in(model.model_fields["kind"].annotation)
            if kind not in rows:
                missing.append(f"{kind}: no row")
                continue
            options = {w for span in ticked(rows[kind].rstrip().rstrip("|").rsplit("|", 1)[-1])
                       for w in re.findall(r"[\w-]+", span)}
            missing += [f"{kind}.{k}" for k in set(model.model_fields) - set(base.model_fields) - {"kind"} - options]
    none_of(missing, "kind options missing from their row of docs/policy.md")


def test_the_answer_keys_input_guardrails_refuse_are_named_as_refused() -> None:
    from config.policy import PolicyError, SecretsGuardrail, parse_policy

    refused = []
    for key, field in SecretsGuardrail.model_fields.items():
        if key in ("id", "kind", "action"):
            continue
        literal = json.dumps("x" if field.default is None else field.default)  # its own default: valid
        try:
            parse_policy(f'[[input_guardrails]]\nid = "a"\nkind = "secrets"\n{key} = {literal}\n')
        except PolicyError as exc:
            if "not used by input guardrails" in str(exc):
                refused.append(key)
    assert refused
    para = next(p for p in paragraphs(_policy_section("## Input guardrails", "## What a trip does"))
                if "refused" in p and p.startswith("Keys:"))
    none_of(set(refused) - set(ticked(para)), "keys input guardrails refuse that the Keys paragraph does not name")


def test_the_stream_kinds_said_to_redact_are_the_ones_that_can() -> None:
    """The stream section's common keys name the kinds that take ``action = "redact"``."""
    from config.policy import _NO_REDACT, StreamGuardrailSpec

    kinds = {v for m in _models_in(StreamGuardrailSpec) for v in _literals_in(m.model_fields["kind"].annotation)}
    text = _read(DOCS / "policy.md")
    section = text[text.index("## Stream guardrails"):]
    para = next(p for p in paragraphs(section) if p.startswith("Common keys"))
    m = re.search(r"`redact` for ((?:`\w+`(?:, | and )?)+)", para)
    assert m, "the stream guardrails' common keys no longer say which kinds redact"
    assert set(ticked(m.group(1))) == kinds - _NO_REDACT


def toml_blocks() -> Iterator[tuple[str, str]]:
    for path in _doc_files():
        for lang, body, line, before in fences(_read(path)):
            if lang == "toml" and before.strip() != NOT_A_POLICY:
                yield f"{path.relative_to(REPO)}:{line}", body


def test_every_toml_example_in_the_docs_is_a_policy_the_loader_takes() -> None:
    from config.policy import PolicyError, parse_policy

    blocks = list(toml_blocks())
    assert len(blocks) >= 5
    bad = []
    for where, body in blocks:
        try:
            parse_policy(body, source=where)
        except PolicyError as exc:
            bad.append(str(exc))
    none_of(bad, "wrong")


def _key_annotations() -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for model in policy_models():
        for key, field in model.model_fields.items():
            out.setdefault(key, []).append(field.annotation)
    return out


def test_every_inline_key_value_the_policy_docs_write_is_a_value_the_key_takes() -> None:
    """`unseen_prompt = "refuse"`, `metadata_emails = true`, `[defaults] mode_pinned = true`: each
    inline span written as a policy key and a TOML value must be a value that key accepts."""
    import tomllib

    from pydantic import TypeAdapter, ValidationError

    annotations = _key_annotations()
    checked, bad = 0, []
    for path in (DOCS / "policy.md", DOCS / "tools.md", DOCS / "security.md", DOCS / "settings.md", README):
        for span in code_spans(_read(path)):
            m = re.fullmatch(r"(?:\[[\w.]+\]\s+)?(\w+)\s*=\s*(.+)", span.strip())
            if not m or m.group(1) not in annotations:
                continue
            try:
                value = tomllib.loads(f"v = {m.group(2)}")["v"]
            except tomllib.TOMLDecodeError:
                continue  # prose shorthand such as `disarms = [...]`
            checked += 1
            ok = False
            for annotation in annotations[m.group(1)]:
                try:
                    TypeAdapter(annotation).validate_python(value, strict=True)  # "yes" is no TOML boolean
                    ok = True
                except ValidationError:
                    pass
            if not ok:
                bad.append(f"{path.name}: `{span}`")
    assert checked > 10
    none_of(bad, "wrong")


# ------------------------------------------------------------------------------- (3) reason codes
_CODE_DIRS = ("proxy", "guardrails", "config")


def _strings(node: ast.AST) -> Iterator[str]:
    for n in ast.walk(node):
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value:
            yield n.value


def _call_name(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


class _ReasonVisitor(ast.NodeVisitor):
    """Strings passed as ``reason=``/``reason_code=``, directly or through a name the same function
    (or the module, at its top level) assigned, and strings stored in ``self.reason``."""

    def __init__(self, where: str, found: dict[str, set[str]]) -> None:
        self.where, self.found = where, found
        self.scopes: list[dict[str, set[str]]] = []

    def _add(self, values: Iterator[str] | set[str], line: int, what: str = "") -> None:
        for s in values:
            self.found.setdefault(s, set()).add(f"{self.where}:{line} {what}".strip())

    def _scope(self, node: ast.AST) -> None:
        local: dict[str, set[str]] = {}
        for child in _own_nodes(node):
            if isinstance(child, ast.Assign):
                for target in child.targets:
                    if isinstance(target, ast.Name):
                        local.setdefault(target.id, set()).update(_strings(child.value))
        self.scopes.append(local)
        self.generic_visit(node)
        self.scopes.pop()

    visit_Module = visit_FunctionDef = visit_AsyncFunctionDef = _scope

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            if (isinstance(target, ast.Attribute) and target.attr in ("reason", "reason_code")
                    and isinstance(target.value, ast.Name) and target.value.id == "self"):
                self._add(_strings(node.value), node.lineno)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        for kw in node.keywords:
            if kw.arg in ("reason", "reason_code"):
                values = (self.scopes[-1].get(kw.value.id, set()) if isinstance(kw.value, ast.Name)
                          else set(_strings(kw.value)))
                self._add(values, node.lineno, _call_name(node))
        self.generic_visit(node)


def _own_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a function or module body, not of the functions nested in it."""
    for child in ast.iter_child_nodes(node):
        yield child
        if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            yield from _own_nodes(child)


@functools.cache
def code_reason_codes() -> dict[str, set[str]]:
    # (cached: the AST walk over every module is the slow part of this file; callers only read it)
    """code -> where it comes from: the constants of ``guardrails.decision`` (every Block, Redact and
    tool rule's code is one of them), the coverage guard's code, and every string the code passes as
    ``reason_code=`` or ``reason=`` (an audit record, a ``Fail``, an ``UpstreamError``, the
    fail-closed metric), directly or through a local name it assigned, or stores in ``self.reason``
    (``UpstreamError``'s defaults)."""
    from guardrails import decision
    from proxy.core import choice_guard

    found: dict[str, set[str]] = {}
    for name, value in vars(decision).items():
        if name.isupper() and isinstance(value, str):
            found.setdefault(value, set()).add(f"guardrails.decision.{name}")
    found.setdefault(choice_guard.UNVETTED, set()).add("proxy.core.choice_guard.UNVETTED")
    for top in _CODE_DIRS:
        for path in sorted((REPO / top).rglob("*.py")):
            _ReasonVisitor(str(path.relative_to(REPO)), found).visit(ast.parse(path.read_text(encoding="utf-8")))
    return found


def reason_table() -> dict[str, list[str]]:
    rows = table_after(_read(DOCS / "operations.md"), "## Reason codes")
    out = {}
    for row in rows:
        [code] = ticked(row[0])
        assert len(row) == 4 and all(row), f"a reason code row needs four cells: {row}"
        assert code not in out, f"{code} listed twice"
        out[code] = row
    return out


def test_the_reason_code_collection_sees_every_kind_of_source() -> None:
    codes = code_reason_codes()
    assert {"secret_leak", "path_outside_workspace", "unvetted_output", "unseen_prompt", "upstream_error",
            "refused_endpoint", "unreachable", "stalled", "broke"} <= set(codes)


def test_every_reason_code_the_code_emits_is_in_the_reference_table() -> None:
    codes, table = code_reason_codes(), reason_table()
    missing = [f"{c} ({', '.join(sorted(w)[:2])})" for c, w in codes.items() if c not in table]
    none_of(missing, "reason codes missing from docs/operations.md, Reason codes")


def test_every_code_in_the_reference_table_exists_in_the_code() -> None:
    codes, table = code_reason_codes(), reason_table()
    none_of(set(table) - set(codes), "rows of the Reason codes table no code emits")


def test_every_audit_event_is_in_the_audit_table_and_no_other() -> None:
    """The events ``AuditLog.record`` accepts are the rows of docs/policy.md's event table
    (``guardproxy tail --event`` filters on them)."""
    from proxy.ops.audit import EVENTS

    rows = table_after(_read(DOCS / "policy.md"), "The events (`proxy/ops/audit.py` refuses any other):")
    documented = {ticked(row[0])[0] for row in rows}
    none_of(set(EVENTS) - documented, "audit events missing from docs/policy.md")
    none_of(documented - set(EVENTS), "rows of the audit event table the audit log refuses")


def test_the_x_guardproxy_headers_of_the_code_and_the_docs_are_the_same() -> None:
    """Request and response headers the proxy reads or sets (``x-guardproxy-mode``, ``-token``,
    ``-replaced``...): each is documented, and the docs name no other."""
    pattern = re.compile(r"x-guardproxy-[a-z-]*[a-z]")
    in_code = {h for top in _CODE_DIRS for p in (REPO / top).rglob("*.py")
               for h in pattern.findall(p.read_text(encoding="utf-8"))}
    in_docs = {h for p in _doc_files() for h in pattern.findall(_read(p))}
    assert len(in_code) > 5
    none_of(in_code - in_docs, "x-guardproxy-* headers the docs never name")
    none_of(in_docs - in_code, "x-guardproxy-* headers the docs name that the code never reads or sets")


def test_every_fail_closed_reason_the_docs_quote_is_a_code() -> None:
    """``guardproxy_fail_closed_total{reason="..."}`` written anywhere in the docs."""
    codes = code_reason_codes()
    quoted = [(p.name, m.group(1)) for p in _doc_files()
              for m in re.finditer(r'fail_closed_total\{reason="(\w+)"', _read(p))]
    assert quoted
    none_of({f"{name}: {code}" for name, code in quoted if code not in codes}, "reasons the docs quote that no code emits")


# ------------------------------------------------------------------------------- files and modules
def test_every_file_and_module_the_docs_name_exists() -> None:
    """`proxy/drive/held_prompts.py`, `bench/tool_cost.py`, `proxy.drive.policies.route_table`: a doc
    that points at code names what is there (a file a run writes is marked "not committed")."""
    wrong = []
    for path in _doc_files():
        for para in paragraphs(_read(path)):
            for span in {s.strip() for s in code_spans(para)}:
                if m := re.fullmatch(r"((?:proxy|guardrails|config|tests|bench|deploy|docs)/[\w./-]+?)/?(?:::\w+)?", span):
                    if "*" not in span and not (REPO / m.group(1)).exists() and "not committed" not in para:
                        wrong.append(f"{path.name}: {span}")
                elif re.fullmatch(r"(?:proxy|guardrails|config)(?:\.\w+)+", span):
                    parts = span.split(".")
                    found = next((i for i in range(len(parts), 0, -1)
                                  if (REPO / ("/".join(parts[:i]) + ".py")).exists()
                                  or (REPO / "/".join(parts[:i]) / "__init__.py").exists()), 0)
                    if found < len(parts) - 1:  # a module, or one name in a module
                        wrong.append(f"{path.name}: {span}")
    none_of(set(wrong), "files and modules the docs name that are not in the repository")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(text: str) -> set[str]:
    out: set[str] = set()
    seen: dict[str, int] = {}
    for m in re.finditer(r"^#+\s+(.+)$", without_fences(text), re.MULTILINE):
        slug = _slug(m.group(1))
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def test_links_between_docs_reach_a_file_and_a_heading() -> None:
    wrong, linked = [], {README}
    for path in _doc_files():
        for m in re.finditer(r"\]\(([^)\s]+)\)", without_fences(_read(path))):
            if re.match(r"[a-z]+:", m.group(1)):
                continue
            name, _, anchor = m.group(1).partition("#")
            target = (path.parent / name).resolve() if name else path
            linked.add(target)
            if not target.exists():
                wrong.append(f"{path.name}: {m.group(1)} (no such file)")
            elif anchor and target.suffix == ".md" and anchor not in _anchors(_read(target)):
                wrong.append(f"{path.name}: {m.group(1)} (no such heading)")
    none_of(wrong, "broken links")
    none_of({p.name for p in _doc_files()} - {p.name for p in linked}, "docs no page links to")


def test_the_readme_stays_a_short_front_page() -> None:
    assert len(_read(README).splitlines()) < 250


# ------------------------------------------------------------------------------- (4) the CLI
class _Parsed(Exception):
    def __init__(self, parser: argparse.ArgumentParser) -> None:
        self.parser = parser


def cli_parser(monkeypatch: pytest.MonkeyPatch) -> argparse.ArgumentParser:
    """The parser ``guardproxy`` builds, caught as it parses (nothing runs)."""
    from proxy.commands import cli

    def catch(self: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> Any:
        raise _Parsed(self)

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", catch)
    with pytest.raises(_Parsed) as caught:
        cli.main(["--version"])
    return caught.value.parser


def cli_surface(parser: argparse.ArgumentParser) -> dict[str, list[str]]:
    """subcommand ("" for the top level) -> its long flags."""
    out: dict[str, list[str]] = {"": []}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out[name] = [o for a in sub._actions for o in a.option_strings
                             if o.startswith("--") and o != "--help"]
        else:
            out[""].extend(o for o in action.option_strings if o.startswith("--") and o != "--help")
    return out


def _mentions_command(paragraph: str, command: str) -> bool:
    if f"guardproxy {command}" in paragraph:
        return True
    return any(re.search(rf"(?<![\w-]){re.escape(command)}(?![\w-])", p) for p in code_spans(paragraph)) or (
        paragraph.lstrip().startswith(("guardproxy", "python")) and command in paragraph)


def test_the_cli_surface_is_read_from_the_real_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    surface = cli_surface(cli_parser(monkeypatch))
    assert {"serve", "check-policy", "replay", "tail"} <= set(surface)
    assert "--workers" in surface["serve"] and "--version" in surface[""]


def test_every_cli_subcommand_and_flag_is_documented(monkeypatch: pytest.MonkeyPatch) -> None:
    """A subcommand as ``guardproxy NAME``; each of its flags in a paragraph, table row or code block
    that also names the subcommand (``--json`` of ``scan`` is not ``--json`` of ``tail``)."""
    surface = cli_surface(cli_parser(monkeypatch))
    text = "\n\n".join(_read(p) for p in _doc_files())
    paras = paragraphs(text)
    missing = []
    for command, flags in surface.items():
        if command and f"guardproxy {command}" not in text:
            missing.append(f"guardproxy {command}")
        for flag in flags:
            pattern = re.compile(rf"(?<![\w-]){re.escape(flag)}(?![\w-])")
            if not any(pattern.search(p) and (not command or _mentions_command(p, command)) for p in paras):
                missing.append(f"guardproxy {command} {flag}".replace("  ", " "))
    none_of(missing, "CLI subcommands and flags the README and docs never show")


def test_every_cli_invocation_the_docs_show_uses_real_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    """`guardproxy tail --decision block`, `guardproxy serve --workers 4`...: in code spans and shell
    blocks, each flag given to a subcommand is one it takes."""
    surface = cli_surface(cli_parser(monkeypatch))
    wrong = []
    for path in _doc_files():
        text = _read(path)
        pieces = code_spans(text) + [line.split(" #", 1)[0] for lang, body, _, _ in fences(text)
                                     if lang in ("sh", "") for line in body.splitlines()]
        for piece in pieces:
            for m in re.finditer(r"(?:guardproxy|python -m proxy|python -m guardproxy)\s+([a-z][\w-]*)([^|;&`]*)", piece):
                command, flags = m.group(1), re.findall(r"(?<![\w-])(--[a-z][\w-]*)", m.group(2))
                if command not in surface:
                    if flags:
                        wrong.append(f"{path.name}: `{m.group(0).strip()}` (no subcommand {command})")
                    continue
                wrong.extend(f"{path.name}: `{m.group(0).strip()}` ({f})" for f in flags
                             if f not in surface[command] and f not in surface[""])
    none_of(set(wrong), "CLI flags the docs show that the parser does not take")


# ------------------------------------------------------------------------------- (5) metrics
def exported_metrics() -> dict[str, tuple[str, tuple[str, ...]]]:
    """name as scraped -> (type, label names), from a fresh ``Metrics``."""
    from prometheus_client.metrics import MetricWrapperBase

    from proxy.ops.metrics import Metrics

    out = {}
    for value in vars(Metrics()).values():
        if isinstance(value, MetricWrapperBase) and not getattr(value, "_labelvalues", ()):
            [family] = value.describe()
            name = family.name + ("_total" if family.type == "counter" else "")
            out[name] = (family.type, tuple(getattr(value, "_labelnames", ())))
    return out


def metrics_table() -> dict[str, list[str]]:
    rows = table_after(_read(DOCS / "operations.md"), "## Metrics")
    return {ticked(row[0])[0]: row for row in rows}


def test_the_metric_collection_sees_the_registry() -> None:
    metrics = exported_metrics()
    assert metrics["guardproxy_fail_closed_total"] == ("counter", ("reason",))
    assert len(metrics) > 20


def test_every_exported_metric_is_in_the_operations_table_with_its_type_and_labels() -> None:
    metrics, table = exported_metrics(), metrics_table()
    missing = sorted(set(metrics) - set(table))
    none_of(missing, "metrics missing from docs/operations.md, Metrics")
    wrong = []
    for name, (kind, labels) in metrics.items():
        row = table[name]
        if row[1] != kind or set(ticked(row[2])) != set(labels):
            wrong.append(f"{name}: docs say {row[1]} {ticked(row[2])}, code {kind} {list(labels)}")
    none_of(wrong, "wrong")


def test_every_metric_name_the_docs_mention_is_exported() -> None:
    metrics = exported_metrics()
    wrong = []
    for path in _doc_files():
        for name in set(re.findall(r"\bguardproxy_[a-z0-9_]*[a-z0-9]\b", _read(path))):
            if name not in metrics:
                wrong.append(f"{path.name}: {name}")
    none_of(wrong, "wrong")
