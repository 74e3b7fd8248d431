"""The request-side differential fuzzer: the proxy and the upstream read a request one way, or the
proxy refuses it (the mirror of ``tests/client_view/test_differential_fuzz.py``).

Hypothesis writes a request for each API (chat, Responses, Anthropic, Gemini) with a marker, an AWS
key from the secrets catalog, planted in a field the model reads (``WHERES``: a system prompt or the
instructions, a user message, a content part, a participant's name, a stored prompt's variables, a
tool result, nested blocks, a Gemini part, a structured function response; also a conversation's
items and a Gemini cache being created, ``KEPT_PATHS``), under a policy whose input guardrail
redacts or rejects it. It bends the JSON the ways real parsers disagree on (``BENDS``): a key
repeated at any level of the marker's path with a decoy before or after it (first or last wins), a
key in another case or a Unicode fold (``Messages``, ``ſystem``, the Kelvin sign), alone or beside
the exact one, the ``role``/``type`` beside the marker repeated or folded with a value the screen
skips, a role value in another case, unknown or missing, a text part without ``type``, Gemini's
snake_case name for a camelCase field, a Gemini part flagged ``thought``, one object where Gemini
wants a list, ``\\u`` escapes in keys and strings, unknown fields, field order, whitespace, numbers
spelt ``1e0``/``1.0``, a BOM, UTF-16/32, a duplicated content part. The body goes through the proxy
under uvicorn to the fake upstream over a real socket, which records the forwarded bytes; they are
read with each parser's semantics (``tests.edge.bent_json.READINGS``) and the texts the model reads
are taken from each reading. An agent's growing conversation (its next turn checked in what it adds)
and a marker cut across adjacent text parts get the same oracle.

The oracle: either the proxy refused the request with the API's 4xx error and nothing went upstream,
or under every reading the marker is absent from what the model reads. The control: the unbent body
as the client wrote it carries the marker to the model under every reading (so the oracle can fail).

Bounded (``EXAMPLES`` per API and bend; fixed examples when ``CI`` is set: tests/conftest.py); a
counterexample found by a random run belongs here as an ``@example`` or as a served regression test.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.adversarial import SECRET
from tests.edge.bent_json import (
    Num,
    Obj,
    Style,
    model_reads,
    objects,
    readings_for,
    scrubbed,
    trail,
    tree,
    write,
)
from tests.edge.test_gateway_one_reading import CANARY_POLICY, PROMPT
from tests.fakes.faulty import assert_http_error, headers_for
from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import FakeUpstream, Reply
from tests.wire.test_one_reading_turns import _assistant, _body, _user

EXAMPLES = 10
"""Examples per API and bend (three times as many for the cut markers and the growing conversations):
about 1,000 requests in all, ~13 s over the sockets on the busy 2-core machine."""
POLICY = """
[[input_guardrails]]
id = "no-keys-in"
kind = "secrets"
action = "%s"
parts = ["user", "tool_result", "system"]
"""
PATHS = {"chat": "/v1/chat/completions", "responses": "/v1/responses", "anthropic": "/v1/messages",
         "gemini": "/v1beta/models/m:generateContent"}
APIS = list(PATHS)
KEPT_PATHS = {"responses": "/v1/conversations", "gemini": "/v1beta/cachedContents"}
"""Where the model's input is created to be read later by name: a conversation's items, a cache's
contents and system instruction (screened as a request's own)."""


# -- the request, the marker planted -----------------------------------------------------------------
def _said(rng: random.Random, marker: str) -> str:
    words = ["deploy", "with", "the", "key", "from", "prod:", "café", "→", "config"]
    before = " ".join(rng.sample(words, rng.randint(0, 4)))
    after = " ".join(rng.sample(words, rng.randint(0, 3)))
    return f"{before} {marker} {after}".strip() if rng.random() < 0.85 else f"{before}{marker}{after}"


def _parts(pieces: list[str], kind: str, rng: random.Random, lead: bool = True) -> list[dict[str, Any]]:
    """Text parts carrying ``pieces`` (adjacent), maybe after a benign one."""
    head = [{"type": kind, "text": "Here is what I have:"}] if lead and rng.random() < 0.5 else []
    return [*head, *({"type": kind, "text": p} for p in pieces)]


def _chat(where: str, pieces: list[str], rng: random.Random) -> dict[str, Any]:
    said = "".join(pieces)
    msgs: list[dict[str, Any]] = [{"role": "system", "content": said if where == "system" else "You deploy services."}]
    if where == "developer":
        msgs.append({"role": "developer", "content": said})
    user: Any = said if where == "user" else _parts(pieces, "text", rng) if where == "user_part" else "Deploy it."
    msgs.append({"role": "user", "content": user, **({"name": SECRET} if where == "user_name" else {})})
    if where in ("tool", "tool_part"):
        msgs.append({"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function", "function": {
            "name": "read_file", "arguments": '{"path": "config.env"}'}}]})
        msgs.append({"role": "tool", "tool_call_id": "call_1",
                     "content": said if where == "tool" else _parts(pieces, "text", rng)})
    return {"model": "m", "messages": msgs, "temperature": 0.2, "max_tokens": 100}


def _responses(where: str, pieces: list[str], rng: random.Random) -> dict[str, Any]:
    said = "".join(pieces)
    body: dict[str, Any] = {"model": "m", "instructions": said if where == "instructions" else "You deploy services."}
    if where == "input":
        return {**body, "input": said}
    if where in ("prompt_variable", "prompt_variable_part"):  # a stored prompt's variables, filled in upstream
        value = said if where == "prompt_variable" else {"type": "input_text", "text": said}
        return {**body, "prompt": {"id": "pmpt_1", "variables": {"city": value}}, "input": "Deploy it."}
    items: list[dict[str, Any]] = []
    if where == "system_item":
        items.append({"type": "message", "role": "developer", "content": said})
    items.append({"type": "message", "role": "user", "content": said if where == "user_item" else
                  _parts(pieces, "input_text", rng) if where == "user_part" else "Deploy it."})
    if where in ("tool_output", "tool_output_part"):
        items += [{"type": "function_call", "call_id": "call_1", "name": "read_file", "arguments": '{"path": "c.env"}'},
                  {"type": "function_call_output", "call_id": "call_1",
                   "output": said if where == "tool_output" else _parts(pieces, "input_text", rng)}]
    return {**body, "input": items, "max_output_tokens": 100}


def _anthropic(where: str, pieces: list[str], rng: random.Random) -> dict[str, Any]:
    said = "".join(pieces)
    system: Any = said if where == "system" else _parts(pieces, "text", rng) if where == "system_block" \
        else "You deploy services."
    user: Any = said if where == "user" else _parts(pieces, "text", rng) if where == "user_block" else "Deploy it."
    msgs: list[dict[str, Any]] = [{"role": "user", "content": user}]
    if where in ("tool_result", "tool_result_block"):
        msgs.append({"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Read",
                                                       "input": {"file_path": "/w/config.env"}}]})
        msgs.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                                  "content": said if where == "tool_result" else
                                                  _parts(pieces, "text", rng)}]})
    return {"model": "m", "max_tokens": 100, "system": system, "messages": msgs}


def _gemini(where: str, pieces: list[str], rng: random.Random) -> dict[str, Any]:
    said = "".join(pieces)
    texts = [{"text": p} for p in pieces]
    system = {"parts": texts if where == "system" else [{"text": "You deploy services."}]}
    contents: list[dict[str, Any]] = [{"role": "user", "parts": texts if where == "user" else [{"text": "Deploy it."}]}]
    if where.startswith("function_response"):
        response: Any = {"content": said} if where == "function_response" else \
            {"result": {"files": [{"name": "config.env", "lines": ["A=1", said]}]}} if where == "function_response_deep" \
            else {SECRET: "the key is the name"}
        contents += [{"role": "model", "parts": [{"functionCall": {"name": "read_file", "args": {"path": "c.env"}}}]},
                     {"role": "user", "parts": [{"functionResponse": {"name": "read_file", "response": response}}]}]
    return {"systemInstruction": system, "contents": contents, "generationConfig": {"temperature": 0.2}}


BUILDERS = {"chat": _chat, "responses": _responses, "anthropic": _anthropic, "gemini": _gemini}
WHERES = {
    "chat": ["system", "developer", "user", "user_part", "user_name", "tool", "tool_part"],
    "responses": ["instructions", "input", "system_item", "user_item", "user_part", "tool_output", "tool_output_part",
                  "prompt_variable", "prompt_variable_part"],
    "anthropic": ["system", "system_block", "user", "user_block", "tool_result", "tool_result_block"],
    "gemini": ["system", "user", "function_response", "function_response_deep", "function_response_key"],
}
SPLIT_WHERES = {"chat": ["user_part", "tool_part"], "responses": ["user_part", "tool_output_part"],
                "anthropic": ["system_block", "user_block", "tool_result_block"], "gemini": ["system", "user"]}
"""Where the marker can be cut across adjacent text parts."""


# -- bends -------------------------------------------------------------------------------------------
BENDS = ["repeat", "fold", "sibling", "extra", "order", "space", "escape", "number", "bom", "dup_part", "typeless",
         "role_value", "utf16", "long", "stream"]
BENDS_OF = {"chat": BENDS, "responses": BENDS, "anthropic": BENDS,
            "gemini": [*(b for b in BENDS if b not in ("typeless", "stream")), "snake", "thought", "singleton"]}
DECOYS = {"role": {"chat": "assistant", "responses": "assistant", "anthropic": "assistant", "gemini": "model"},
          "type": {"chat": "image_url", "responses": "reasoning", "anthropic": "thinking", "gemini": "thought"}}
"""For ``sibling``: a role or type the input screen does not read."""
_EXTRA: list[tuple[str, Any]] = [("x_note", "benign"), ("debug", {"text": "benign"}), ("x_list", [1, 2.5]),
                                  ("x_null", None)]
"""Fields no API names, for ``extra``."""
_CAMEL = {"systemInstruction": "system_instruction", "functionResponse": "function_response"}


def _fold_variant(key: str, rng: random.Random) -> str | None:
    """``key`` spelled so that a case-insensitive parser reads it as ``key``."""
    options = {key.upper(), key.capitalize(), "".join(c.upper() if rng.random() < 0.5 else c for c in key)}
    for plain, folded in (("s", "\u017f"), ("k", "\u212a"), ("K", "\u212a"), ("i", "\u0131")):
        if plain in key:
            at = rng.choice([i for i, c in enumerate(key) if c == plain])
            options.add(key[:at] + folded + key[at + 1:])
    options.discard(key)
    return rng.choice(sorted(options)) if options else None


class Bender:
    def __init__(self, rng: random.Random, api: str, needles: list[str]) -> None:
        self.rng, self.api, self.needles = rng, api, needles

    def on_path(self, body: Obj) -> list[tuple[Obj, int]]:
        """The objects on the marker's path, with the index of the pair leading to it (not a pair
        whose key is the marker, nor the wrapper of a turn's items: ``ITEMS``)."""
        found = trail(body, self.needles) or []
        return [(o, i) for o, i in found if isinstance(o, Obj)
                and not any(n in o.pairs[i][0] for n in self.needles) and o.pairs[i][0] != ITEMS]

    def decoy(self, value: Any) -> Any:
        return self.rng.choice([scrubbed(value, self.needles), scrubbed(value, self.needles), None, ""])

    def _twin(self, obj: Obj, i: int, key: str, value: Any) -> None:
        obj.pairs.insert(i + self.rng.randint(0, 1), [key, value])

    def repeat(self, body: Obj) -> None:
        path = self.on_path(body)
        if path:
            obj, i = self.rng.choice(path)
            key, value = obj.pairs[i]
            self._twin(obj, i, key, self.decoy(value))

    def fold(self, body: Obj) -> None:
        path = self.on_path(body)
        if not path:
            return
        obj, i = self.rng.choice(path)
        key, value = obj.pairs[i]
        variant = _fold_variant(key, self.rng)
        if variant is None:
            return
        how = self.rng.choice(["shadow", "beside", "lone"])
        if how == "beside":  # the marker under the exact key, a decoy under the folded one
            self._twin(obj, i, variant, self.decoy(value))
            return
        obj.pairs[i] = [variant, value]
        if how == "shadow":  # the marker under the folded key, a decoy under the exact one
            self._twin(obj, i, key, self.decoy(value))

    def sibling(self, body: Obj) -> None:
        """The ``role`` or ``type`` of an object on the marker's path given again (exactly or folded)
        with a value the screen does not read."""
        choices = [(o, j, k) for o, _ in self.on_path(body) for j, (k, _v) in enumerate(o.pairs)
                   if k in DECOYS]
        if not choices:
            return
        obj, j, key = self.rng.choice(choices)
        spelt = key if self.rng.random() < 0.5 else _fold_variant(key, self.rng) or key
        self._twin(obj, j, spelt, DECOYS[key][self.api])

    def snake(self, body: Obj) -> None:
        """Gemini: a camelCase field on the path under its snake_case name, alone or beside it."""
        choices = [(o, i) for o, i in self.on_path(body) if o.pairs[i][0] in _CAMEL]
        if not choices:
            return
        obj, i = self.rng.choice(choices)
        key, value = obj.pairs[i]
        if self.rng.random() < 0.5:
            obj.pairs[i] = [_CAMEL[key], value]
        else:
            self._twin(obj, i, _CAMEL[key], self.decoy(value))

    def typeless(self, body: Obj) -> None:
        """A text part on the path without its ``type`` (vLLM reads ``{"text": ...}`` as a text part)."""
        for obj, _ in self.on_path(body):
            obj.pairs = [p for p in obj.pairs if not (p[0] == "type" and p[1] in ("text", "input_text"))]

    def role_value(self, body: Obj) -> None:
        """The role of the marker's message in another case, unknown, or missing (a chat template
        renders any role it is given)."""
        for obj, _ in self.on_path(body):
            for pair in obj.pairs:
                if pair[0] == "role" and pair[1] not in ("assistant", "model"):
                    pair[1] = self.rng.choice([pair[1].upper(), pair[1].capitalize(), "human", "customer", None])
            if self.rng.random() < 0.2:
                obj.pairs = [p for p in obj.pairs if p[0] != "role"]

    def thought(self, body: Obj) -> None:
        """Gemini: the marker's part flagged as a thought."""
        path = self.on_path(body)
        parts = [o for o, i in path if any(k == "text" for k, _ in o.pairs)]
        for obj in parts[-1:]:
            obj.pairs.insert(self.rng.randint(0, len(obj.pairs)), ["thought", True])

    def singleton(self, body: Obj) -> None:
        """Gemini: a list on the path (``contents``, ``parts``) given as its marker's item alone, one
        object where a list is due: Gemini reads it as a list of one."""
        found = trail(body, self.needles) or []
        lists = [(found[n - 1][0], found[n - 1][1], found[n][1]) for n in range(1, len(found))
                 if isinstance(found[n][0], list) and isinstance(found[n - 1][0], Obj)]
        if lists:
            obj, j, i = self.rng.choice(lists)
            obj.pairs[j][1] = obj.pairs[j][1][i]

    def stream(self, body: Obj) -> None:
        """A streamed request (read by the quick view's streaming path)."""
        body.pairs.append(["stream", True])

    def extra(self, body: Obj) -> None:
        every = list(objects(body))
        for obj in self.rng.sample(every, min(len(every), self.rng.randint(1, 3))):
            key, value = self.rng.choice(_EXTRA)
            obj.pairs.insert(self.rng.randint(0, len(obj.pairs)), [key, tree(value)])

    def order(self, body: Obj) -> None:
        for obj in objects(body):
            self.rng.shuffle(obj.pairs)

    def number(self, body: Obj) -> None:
        spelt = self.rng.choice(["1e0", "1.0", "10E-1", "0.1e1", "1E+0"])
        target = next((v for k, v in body.pairs if k == "generationConfig"), body) if self.api == "gemini" else body
        target.pairs = [p for p in target.pairs if p[0] != "temperature"] + [["temperature", Num(spelt)]]
        if self.api == "anthropic" and self.rng.random() < 0.5:
            body.pairs = [p for p in body.pairs if p[0] != "max_tokens"] + [["max_tokens", Num("1e2")]]

    def dup_part(self, body: Obj) -> None:
        found = trail(body, self.needles) or []
        lists = [(o, i) for o, i in found if isinstance(o, list)]
        if lists:
            seq, i = lists[-1]
            seq.insert(i + 1, scrubbed(seq[i], []))


def _bend(api: str, root: Obj, bends: frozenset[str], rng: random.Random, needles: list[str]) -> Style:
    b = Bender(rng, api, needles)
    for name in ("dup_part", "typeless", "role_value", "thought", "singleton", "stream", "extra", "number", "sibling",
                 "snake", "repeat", "fold", "order"):
        if name in bends:
            getattr(b, name)(root)
    return Style(rng, space=0.4 if "space" in bends else 0.0, escape_keys=0.3 if "escape" in bends else 0.0,
                 escape_text=0.2 if "escape" in bends else 0.0, bom="bom" in bends,
                 encoding=rng.choice(["utf-16", "utf-16-be", "utf-32-le"]) if "utf16" in bends else "utf-8")


def bent(api: str, body: dict[str, Any], bends: frozenset[str], rng: random.Random, needles: list[str]) -> bytes:
    root = tree(body)
    return write(root, _bend(api, root, bends, rng, needles))


ITEMS = "\x00items"
"""The key of the wrapper that holds a turn's new items while they are bent (never written)."""


def bent_items(api: str, items: list[Any], bends: frozenset[str], rng: random.Random,
               needles: list[str]) -> list[str]:
    """A turn's new history items, bent, each written as its own JSON text."""
    root = Obj([[ITEMS, tree(items)]])
    style = _bend(api, root, bends, rng, needles)
    return [write(item, style).decode() for item in next(v for k, v in root.pairs if k == ITEMS)]


# -- the oracle --------------------------------------------------------------------------------------
def assert_one_reading(api: str, client: httpx.Client, proxy: ProxyServer, upstream: FakeUpstream, raw: bytes,
                       marker: str, path: str | None = None) -> str:
    """The proxy refused ``raw`` with the API's 4xx and sent nothing, or no reading of what it sent
    shows the model the marker. Returns "refused" or "sent"."""
    upstream.reset()
    r = client.post(proxy.url + (path or PATHS[api]), content=raw, headers={"content-type": "application/json",
                                                                             **headers_for(api)})
    if r.status_code != 200:
        assert 400 <= r.status_code < 500, (r.status_code, r.text[:500])
        assert_http_error(api, r.status_code, r.content)
        assert upstream.seen == [], f"refused ({r.status_code}) but sent upstream: {r.text[:300]}"
        assert marker not in r.text
        return "refused"
    assert len(upstream.seen) == 1
    sent = upstream.seen[0].raw
    for name, reading in readings_for(api).items():
        shown = [t for t in model_reads(api, reading(sent)) if marker in t]
        at = max(0, sent.find(marker.encode()) - 1500) if marker.encode() in sent else max(0, len(sent) - 3000)
        assert not shown, f"{api}: read as {name}, the model is shown the marker: {shown[0][:200]!r}\nsent: {sent[at:at + 3000]!r}"
    return "sent"


def assert_control(api: str, body: dict[str, Any], marker: str) -> None:
    """The body as the client wrote it (unbent, unscreened) shows the model the marker under every reading."""
    raw = write(tree(body), Style(random.Random(0)))
    for name, reading in readings_for(api).items():
        assert any(marker in t for t in model_reads(api, reading(raw))), f"control: {name} does not read it"


@pytest.fixture(scope="module")
def proxies(upstream_server: FakeUpstream) -> Iterator[dict[str, ProxyServer]]:
    made = {action: ProxyServer(upstream_server.url, POLICY % action).start() for action in ("redact", "reject")}
    yield made
    for p in made.values():
        p.stop()


@pytest.fixture(scope="module")
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=15) as c:
        yield c


def _kept(api: str, body: dict[str, Any]) -> dict[str, Any]:
    """``body`` as the creation of a conversation (its input items) or of a Gemini cache."""
    if api == "responses":
        return {"items": body["input"]}
    return {"model": "models/m", **{k: v for k, v in body.items() if k != "generationConfig"}}


def _run(api: str, proxies: dict[str, ProxyServer], upstream: FakeUpstream, client: httpx.Client, seed: int,
         where: str, bends: frozenset[str], action: str, cuts: int, kept: bool = False) -> str:
    rng = random.Random(seed)
    said = _said(rng, SECRET)
    if "long" in bends:  # past OFF_LOOP_CHARS: the screen runs in a worker thread
        said = "The tide tables say nothing new today. " * 900 + said
    if cuts > 1:  # the marker cut across adjacent text parts
        at = sorted(rng.sample(range(1, len(SECRET)), cuts - 1))
        start = said.index(SECRET)
        bounds = [0, *(start + a for a in at), len(said)]
        pieces = [said[a:b] for a, b in itertools.pairwise(bounds)]
        needles = [SECRET[:at[0]]]
    else:
        pieces, needles = [said], [SECRET]
    body = BUILDERS[api](where, pieces, rng)
    kept = kept and api in KEPT_PATHS and where not in ("instructions", "input", "prompt_variable",
                                                        "prompt_variable_part")
    if kept:
        body = _kept(api, body)
    assert_control(api, body, SECRET)
    raw = bent(api, body, bends, rng, needles)
    return assert_one_reading(api, client, proxies[action], upstream, raw, SECRET, KEPT_PATHS[api] if kept else None)


FOUND: dict[tuple[str, str], list[dict[str, Any]]] = {
    ("responses", "number"): [  # a stored prompt's variable part with ``text`` folded (``TEXT``): Go read it
        {"seed": 2589445347, "where": "prompt_variable_part", "more": frozenset({"extra", "fold"}),
         "action": "redact", "kept": False},
        {"seed": 92885055, "where": "prompt_variable_part", "more": frozenset({"fold", "sibling"}),
         "action": "redact", "kept": True},
    ],
}
"""Counterexamples random runs found, by (API, bend), replayed first on every run (``@example``). The
ones here passed before ``key_folds`` walked a prompt's ``variables`` at the part level (16cc4c0)."""


@pytest.mark.parametrize(("api", "bend"), [(api, bend) for api in APIS for bend in BENDS_OF[api]])
def test_a_bent_request_is_refused_or_reaches_the_model_masked_under_every_reading(
        proxies: dict[str, ProxyServer], upstream_server: FakeUpstream, client: httpx.Client, api: str,
        bend: str) -> None:
    """Each bend with up to two others, in each place and action drawn."""
    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(seed=st.integers(min_value=0, max_value=2**32 - 1), where=st.sampled_from(WHERES[api]),
           more=st.frozensets(st.sampled_from(BENDS_OF[api]), max_size=2), action=st.sampled_from(["redact", "reject"]),
           kept=st.booleans())
    def run(seed: int, where: str, more: frozenset[str], action: str, kept: bool) -> None:
        _run(api, proxies, upstream_server, client, seed, where, more | {bend}, action, 1, kept)

    for found in FOUND.get((api, bend), []):
        run = example(**found)(run)
    run()


HISTORY = {"chat": "messages", "responses": "input", "anthropic": "messages", "gemini": "contents"}
GROWTH_WHERES = {"chat": WHERES["chat"], "responses": ["system_item", "user_item", "user_part", "tool_output"],
                 "anthropic": ["user", "user_block", "tool_result", "tool_result_block"],
                 "gemini": ["user", "function_response", "function_response_deep"]}
"""Places in the history list (what an agent's next turn adds)."""
GROWTH_BENDS = ["repeat", "fold", "sibling", "role_value", "typeless", "escape", "space", "order", "extra", "dup_part"]


@pytest.mark.parametrize("api", APIS)
def test_an_agents_next_turn_bent_in_what_it_adds_is_refused_or_masked_under_every_reading(
        proxies: dict[str, ProxyServer], upstream_server: FakeUpstream, client: httpx.Client, api: str) -> None:
    """A conversation over ``conversation_delta.MIN_BYTES`` takes two clean turns (kept, so the next
    is checked in what it adds only), then a turn adding the bent items after the last turn or in
    place of it (an earlier anchor)."""
    @settings(max_examples=3 * EXAMPLES, deadline=None, database=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(seed=st.integers(min_value=0, max_value=2**32 - 1), where=st.sampled_from(GROWTH_WHERES[api]),
           bends=st.frozensets(st.sampled_from(GROWTH_BENDS), min_size=1, max_size=3),
           action=st.sampled_from(["redact", "reject"]))
    def run(seed: int, where: str, bends: frozenset[str], action: str) -> None:
        rng = random.Random(seed)
        tag = f"grow-{seed}-{where}-{action}"
        items = [_user(api, "hi")]
        for n in range(2):
            assert assert_one_reading(api, client, proxies[action], upstream_server, _body(api, items, tag),
                                      SECRET) == "sent"
            items += [_assistant(api, f"answer {n}"), _user(api, f"question {n}")]
        added = BUILDERS[api](where, [_said(rng, SECRET)], rng)[HISTORY[api]]
        kept = items if rng.random() < 0.7 else items[:1]
        raw = _body(api, [*kept, *bent_items(api, added, bends, rng, [SECRET])], tag)
        assert_one_reading(api, client, proxies[action], upstream_server, raw, SECRET)

    run()


@pytest.mark.parametrize("api", APIS)
def test_a_marker_cut_across_adjacent_parts_is_refused_or_masked_under_every_reading(
        proxies: dict[str, ProxyServer], upstream_server: FakeUpstream, client: httpx.Client, api: str) -> None:
    @settings(max_examples=3 * EXAMPLES, deadline=None, database=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(seed=st.integers(min_value=0, max_value=2**32 - 1), where=st.sampled_from(SPLIT_WHERES[api]),
           bends=st.frozensets(st.sampled_from(["order", "space", "escape", "extra"]), max_size=2),
           action=st.sampled_from(["redact", "reject"]), cuts=st.integers(min_value=2, max_value=3))
    def run(seed: int, where: str, bends: frozenset[str], action: str, cuts: int) -> None:
        _run(api, proxies, upstream_server, client, seed, where, bends, action, cuts)

    run()


# -- the canary: armed with the system prompt the upstream reads ----------------------------------------
SYSTEM_WHERES = {"chat": ["system", "developer"], "responses": ["instructions", "system_item"],
                 "anthropic": ["system", "system_block"], "gemini": ["system"]}
KNOWN_CANARY_HOLES: dict[str, set[str]] = {"chat": {"role_value"}, "responses": {"role_value"}, "anthropic": set(),
                                           "gemini": set()}
"""Bends left out of the canary's scene: ``role_value`` turns the prompt into a user message for some
readings (``human``, none: no system prompt to guard; a role in another case is read as system by
every codec, ``test_a_system_prompt_the_upstream_reads_arms_the_canary``). No hole is left: an untyped
Anthropic block, a ``System`` role and a Gemini thought part were (the codecs' system-prompt readers
skipped them), and now read as the input screen reads them (``input_parts.is_system``, ``_kind``)."""


@pytest.fixture(scope="module")
def canary_proxy(upstream_server: FakeUpstream) -> Iterator[ProxyServer]:
    with ProxyServer(upstream_server.url, CANARY_POLICY) as p:
        yield p


def _leaked(text: str) -> bool:
    return "refund override" in text


@pytest.mark.parametrize("api", APIS)
def test_a_bent_system_prompt_arms_the_canary_or_is_refused(canary_proxy: ProxyServer, upstream_server: FakeUpstream,
                                                             client: httpx.Client, api: str) -> None:
    """The system prompt planted and bent; the upstream answers by repeating it. Either the proxy
    refused the request with the API's 4xx, or no reading of what it sent shows the model the prompt,
    or the client does not see the answer's copy of it."""
    bends = [b for b in BENDS_OF[api] if b not in KNOWN_CANARY_HOLES[api] and b != "stream"]  # (unary answers)

    @settings(max_examples=3 * EXAMPLES, deadline=None, database=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(seed=st.integers(min_value=0, max_value=2**32 - 1), where=st.sampled_from(SYSTEM_WHERES[api]),
           chosen=st.frozensets(st.sampled_from(bends), min_size=1, max_size=3))
    def run(seed: int, where: str, chosen: frozenset[str]) -> None:
        rng = random.Random(seed)
        raw = bent(api, BUILDERS[api](where, [PROMPT], rng), chosen, rng, [PROMPT])
        upstream_server.reset()
        upstream_server.queue(Reply(text=f"My rules: {PROMPT}"))
        r = client.post(canary_proxy.url + PATHS[api], content=raw,
                        headers={"content-type": "application/json", **headers_for(api)})
        if r.status_code != 200:
            assert 400 <= r.status_code < 500, (r.status_code, r.text[:500])
            assert_http_error(api, r.status_code, r.content)
            assert not _leaked(r.text)
            return
        sent = upstream_server.seen[0].raw
        read = [name for name, reading in readings_for(api).items()
                if any(PROMPT in t for t in model_reads(api, reading(sent)))]
        assert not (read and _leaked(r.text)), f"{api}: read by {read}, the answer's copy shown: {sent[:1500]!r}"

    run()


@pytest.mark.parametrize(("api", "body"), [
    ("chat", {"model": "m", "messages": [{"role": "System", "content": PROMPT}, {"role": "user", "content": "rules?"}]}),
    ("chat", {"model": "m", "messages": [{"role": "user", "content": "hi"}, {"role": "Developer", "content": PROMPT},
                                         {"role": "user", "content": "rules?"}]}),
    ("responses", {"model": "m", "input": [{"role": "System", "content": PROMPT}, {"role": "user", "content": "rules?"}]}),
    ("responses", {"model": "m", "input": [{"type": "message", "role": "DEVELOPER", "content": PROMPT},
                                           {"role": "user", "content": "rules?"}]}),
    ("responses", {"model": "m", "input": [{"type": None, "role": "developer", "content": PROMPT},
                                           {"role": "user", "content": "rules?"}]}),
    ("anthropic", {"model": "m", "max_tokens": 50, "system": [{"text": PROMPT}],
                   "messages": [{"role": "user", "content": "rules?"}]}),
    ("anthropic", {"model": "m", "max_tokens": 50, "system": [{"type": None, "text": PROMPT}],
                   "messages": [{"role": "user", "content": "rules?"}]}),
    ("gemini", {"systemInstruction": {"parts": [{"text": PROMPT, "thought": True}]},
                "contents": [{"role": "user", "parts": [{"text": "rules?"}]}]}),
    ("chat", {"model": "m", "messages": [{"role": "system", "content": [{"text": PROMPT}]},
                                         {"role": "user", "content": "rules?"}]}),
])
def test_a_system_prompt_the_upstream_reads_arms_the_canary(canary_proxy: ProxyServer, upstream: FakeUpstream,
                                                            client: httpx.Client, api: str,
                                                            body: dict[str, Any]) -> None:
    upstream.queue(Reply(text=f"My rules: {PROMPT}"))
    r = client.post(canary_proxy.url + PATHS[api], json=body, headers=headers_for(api))
    assert r.status_code in (200, 400), r.text
    assert not _leaked(r.text), r.text[:300]


@pytest.mark.parametrize(("api", "added"), [
    ("chat", '{"role":"System","content":"%s"}'), ("chat", '{"role":"DEVELOPER","content":"%s"}'),
    ("responses", '{"type":"message","role":"System","content":"%s"}'),
    ("anthropic", '{"role":"System","content":[{"text":"%s"}]}'),
])
def test_an_agents_next_turn_adding_a_system_message_spelt_otherwise_arms_the_canary(
        canary_proxy: ProxyServer, upstream_server: FakeUpstream, client: httpx.Client, api: str, added: str) -> None:
    """The agent fast path (a turn read from what it adds to a kept body, ``conversation_delta``) reads
    the system text the whole reader reads: a later turn adding ``System`` arms the canary with it."""
    tag = f"canary-turn-{api}-{len(added)}-{added.count('D')}"
    items = [_user(api, "hi")]
    for n in range(2):
        upstream_server.reset()
        upstream_server.queue(Reply(text="fine"))
        r = client.post(canary_proxy.url + PATHS[api], content=_body(api, items, tag),
                        headers={"content-type": "application/json", **headers_for(api)})
        assert r.status_code == 200, r.text[:300]
        items += [_assistant(api, f"answer {n}"), _user(api, f"question {n}")]
    upstream_server.reset()
    upstream_server.queue(Reply(text=f"My rules: {PROMPT}"))
    r = client.post(canary_proxy.url + PATHS[api], content=_body(api, [*items, added % PROMPT], tag),
                    headers={"content-type": "application/json", **headers_for(api)})
    assert r.status_code in (200, 400), r.text[:300]
    assert not _leaked(r.text), r.text[:300]
