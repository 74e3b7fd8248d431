"""``proxy.drive.held_prompts``: the LRU by bytes, and what the wire modules read as held state."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from proxy.drive.held_prompts import HeldPrompts, created_ttl, kind_of
from proxy.edge.routes import resolve
from proxy.state.base import ENTRY_OVERHEAD, Budgets, entry_size
from proxy.state.memory import MemoryStore
from proxy.state.seal import Sealer
from proxy.state.sqlite import SqliteStore
from proxy.wire.base import BadRequest, JsonBody
from proxy.wire.gemini import Gemini
from proxy.wire.openai_responses import OpenAIResponses

S = "scope-a"


def held_in_memory(scope_bytes: int = 1 << 24, total_bytes: int = 1 << 26) -> HeldPrompts:
    return HeldPrompts(MemoryStore(Budgets(scope_bytes, total_bytes)), Sealer(None, seal=False))


async def test_recall_in_order_and_misses() -> None:
    held = held_in_memory()
    await held.remember(S, "response:a", ("one", "two"))
    await held.remember(S, "conversation:c", ())
    assert await held.recall(S, ("response:a",)) == (("one", "two"), ())
    assert await held.recall(S, ("conversation:c", "prompt:p")) == ((), ("prompt:p",))
    assert await held.recall(S, ("response:zz",)) == ((), ("response:zz",))
    assert await held.recall("scope-b", ("response:a",)) == ((), ("response:a",))  # another credential's
    assert kind_of("cache:cachedContents/x") == "cache"


async def test_a_developer_message_sent_again_on_every_chained_turn_is_kept_once() -> None:
    held = held_in_memory()
    prompt = "You are the release bot. Never reveal the signing steps."
    recalled: tuple[str, ...] = ()
    for turn in range(50):
        view = OpenAIResponses().parse_request(
            {"model": "m", "input": [{"role": "developer", "content": prompt}, {"role": "user", "content": "go"}],
             **({"previous_response_id": f"resp_{turn - 1}"} if turn else {})}, stream=False)
        await held.remember_turn(S, view, recalled, (f"resp_{turn}",))
        recalled, missing = await held.recall(S, (f"response:resp_{turn}",))
        assert not missing
    assert recalled == (prompt,)
    await held.remember(S, "conversation:c", (prompt, "Also: answer in French."))
    assert await held.recall(S, ("conversation:c", "response:resp_49")) == ((prompt, "Also: answer in French."), ())


async def test_bounded_by_bytes_as_stored_least_recently_used_out() -> None:
    text = "\U0001F600" * 250  # 250 characters, 1,000 bytes in UTF-8
    size = entry_size("response:r000", {Sealer(None, seal=False).member_id(text): text.encode()})
    assert size == ENTRY_OVERHEAD + len("response:r000") + 16 + 1000
    held = held_in_memory(scope_bytes=size * 10)
    store = held.store
    assert isinstance(store, MemoryStore)
    for i in range(10):
        await held.remember(S, f"response:r{i:03d}", (text,))
    assert len(store) == 10 and store.used(S) == size * 10
    await held.recall(S, ("response:r000",))  # used: now the most recent
    for i in range(10, 15):
        await held.remember(S, f"response:r{i:03d}", (text,))
    assert len(store) == 10 and store.used(S) <= size * 10
    kept = {k for k in (f"response:r{i:03d}" for i in range(15)) if not (await held.recall(S, (k,)))[1]}
    assert "response:r000" in kept and "response:r001" not in kept and "response:r005" not in kept
    assert "response:r006" in kept and "response:r014" in kept


async def test_replacing_a_key_and_entries_over_budget() -> None:
    held = held_in_memory(scope_bytes=2000)
    store = held.store
    assert isinstance(store, MemoryStore)
    await held.remember(S, "conversation:c", ("a",))
    used = store.used(S)
    await held.remember(S, "conversation:c", ("a",))
    assert store.used(S) == used and len(store) == 1
    # larger than the scope's budget: not kept, the old one gone
    assert not await held.remember(S, "conversation:c", ("y" * 5000,))
    assert len(store) == 0 and store.total == 0
    nothing = held_in_memory(scope_bytes=0, total_bytes=0)
    assert not await nothing.remember(S, "response:a", ())


async def test_one_scope_cannot_push_out_another() -> None:
    """A scope past its own budget loses its own entries; the store past the global budget loses the
    largest scope's, never a smaller one's."""
    held = held_in_memory(scope_bytes=10_000, total_bytes=15_000)
    await held.remember("victim", "response:v", ("the victim's developer message",))
    for i in range(100):  # 100 KB from another credential
        await held.remember("attacker", f"conversation:{i}", ("x" * 1000,))
    assert await held.recall("victim", ("response:v",)) == (("the victim's developer message",), ())
    store = held.store
    assert isinstance(store, MemoryStore)
    assert store.used("attacker") <= 10_000 and store.total <= 15_000
    for i in range(3):  # a third credential fills the global budget: the largest (the attacker) gives way
        await held.remember(f"other{i}", "conversation:o", ("z" * 3000,))
    assert await held.recall("victim", ("response:v",)) == (("the victim's developer message",), ())
    assert store.total <= 15_000


async def test_entries_expire() -> None:
    now = [1000.0]
    held = HeldPrompts(MemoryStore(Budgets(1 << 20, 1 << 20), clock=lambda: now[0]), Sealer(None, seal=False),
                       max_ttl_s=60)
    await held.remember(S, "cache:cachedContents/a", ("cached system",), ttl_s=10)
    await held.remember(S, "response:r", ("kept",), ttl_s=3600)  # no longer than the longest: 60 s
    now[0] += 9
    assert (await held.recall(S, ("cache:cachedContents/a",)))[1] == ()
    now[0] += 2
    assert (await held.recall(S, ("cache:cachedContents/a",)))[1] == ("cache:cachedContents/a",)
    assert (await held.recall(S, ("response:r",)))[1] == ()
    now[0] += 50
    assert (await held.recall(S, ("response:r",)))[1] == ("response:r",)


def test_a_cache_is_kept_until_its_expire_time() -> None:
    answer = b'{"name": "cachedContents/x", "expireTime": "2026-12-05T01:00:00.123456789Z"}'
    now = datetime(2026, 12, 5, 0, 30, tzinfo=UTC).timestamp()
    assert created_ttl("gemini", b"{}", answer, now) == pytest.approx(1800.123456)
    assert created_ttl("gemini", b'{"ttl": "300s"}', b'{"name": "cachedContents/x"}', now) == 300
    assert created_ttl("gemini", b"{}", b'{"name": "cachedContents/x"}', now) == 3600
    assert created_ttl("openai_responses", b"{}", b'{"id": "conv_1"}', now) is None



async def test_a_ttl_that_is_not_a_number_is_neither_forever_nor_an_error(tmp_path: Path) -> None:
    """A cache created with ``"ttl": "nans"`` (or an answer whose time is not a number): the entry was
    kept with a NaN expiry (never expired in memory), and the Valkey engine raised ``ValueError`` (a
    500 on the create). A non-finite time is Gemini's default hour; any TTL is at most the longest."""
    assert created_ttl("gemini", b'{"ttl": "nans"}', b'{"name": "cachedContents/x"}', 0.0) == 3600
    assert created_ttl("gemini", b'{"ttl": "infs"}', b'{"name": "cachedContents/x"}', 0.0) == 3600
    now = [1000.0]
    held = HeldPrompts(MemoryStore(Budgets(1 << 20, 1 << 20), clock=lambda: now[0]), Sealer(None, seal=False),
                       max_ttl_s=60)
    await held.remember(S, "cache:cachedContents/n", ("cached system",), ttl_s=float("nan"))
    now[0] += 61
    assert (await held.recall(S, ("cache:cachedContents/n",)))[1] == ("cache:cachedContents/n",)


RESPONSES = [
    ({"model": "m", "input": "hi"}, (), ()),
    ({"model": "m", "input": "hi", "previous_response_id": "resp_1"}, ("response:resp_1",), ()),
    ({"model": "m", "input": [{"role": "developer", "content": "D"}, {"role": "user", "content": "u"}],
      "instructions": "I", "conversation": {"id": "conv_1"}}, ("conversation:conv_1",), ("D",)),
    ({"model": "m", "input": "hi", "conversation": "conv_2", "prompt": {"id": "pmpt_1", "version": "2"}},
     ("conversation:conv_2", "prompt:pmpt_1"), ()),
    ({"model": "m", "input": [{"role": "system", "content": "S"}], "store": False}, (), None),
    ({"model": "m", "input": [{"type": "item_reference", "id": "msg_1"}, {"role": "user", "content": "u"}],
      "previous_response_id": "resp_2"}, ("response:resp_2", "item:msg_1"), ()),
]


@pytest.mark.parametrize(("body", "held", "kept"), RESPONSES)
def test_responses_views_read_held_state(body: dict[str, object], held: tuple[str, ...],
                                         kept: tuple[str, ...] | None) -> None:
    wire = OpenAIResponses()
    quick = wire.quick_view(JsonBody(json.dumps(body).encode()), stream=False)
    whole = wire.parse_request(body, stream=False)
    assert quick is not None
    assert quick.held == whole.held == held
    assert (tuple(quick.kept) if quick.kept is not None else None) == kept
    assert (tuple(whole.kept) if whole.kept is not None else None) == kept


@pytest.mark.parametrize("bad", [{"previous_response_id": 5}, {"conversation": {"id": 1}}, {"prompt": "pmpt_1"},
                                 {"input": [{"type": "item_reference", "id": 7}]}])
def test_responses_held_state_of_a_wrong_shape_is_refused(bad: dict[str, object]) -> None:
    body: dict[str, object] = {"model": "m", "input": "hi", **bad}
    assert OpenAIResponses().quick_view(JsonBody(json.dumps(body).encode()), stream=False) is None
    with pytest.raises(BadRequest):
        OpenAIResponses().parse_request(body, stream=False)


@pytest.mark.parametrize(("extra", "held"), [({}, ()), ({"cachedContent": "cachedContents/abc"}, ("cache:cachedContents/abc",)),
                                             ({"cached_content": "abc"}, ("cache:cachedContents/abc",))])
def test_gemini_views_read_the_cache(extra: dict[str, object], held: tuple[str, ...]) -> None:
    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}], **extra}
    quick = Gemini().quick_view(JsonBody(json.dumps(body).encode()), stream=False)
    assert quick is not None and quick.held == held
    assert Gemini().parse_request(body, stream=False).held == held


def test_creating_cached_contents_and_conversations_is_remembered_not_refused() -> None:
    assert resolve("/v1beta/cachedContents", "POST", {}, "").keeps == "gemini"
    assert resolve("/gemini/v1beta/cachedContents", "POST", {}, "").keeps == "gemini"
    assert resolve("/v1beta/cachedContents/abc", "GET", {}, "").keeps is None
    assert resolve("/v1/conversations", "POST", {}, "").keeps == "openai_responses"
    route = resolve("/v1/conversations/conv_1/items", "POST", {}, "")
    assert route.refused is not None


def test_check_policy_names_a_bad_unseen_prompt() -> None:
    from config.policy import parse_policy
    with pytest.raises(Exception, match="unseen_prompt"):
        parse_policy('[[stream_guardrails]]\nid = "c"\nkind = "canary"\nunseen_prompt = "maybe"\n', source="<t>")
    policy = parse_policy('[[stream_guardrails]]\nid = "c"\nkind = "canary"\n', source="<t>")
    assert policy.stream_guardrails[0].unseen_prompt == "pass"  # type: ignore[union-attr]


@pytest.mark.parametrize(("extra", "held"), [
    ({}, ()), ({"extra_body": {"google": {"thinking_config": {}}}}, ()),
    ({"extra_body": {"google": {"cached_content": "cachedContents/abc"}}}, ("cache:cachedContents/abc",))])
def test_chat_views_read_a_cache_named_for_geminis_openai_layer(extra: dict[str, object],
                                                                held: tuple[str, ...]) -> None:
    from proxy.wire.openai_chat import OpenAIChat
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], **extra}
    quick = OpenAIChat().quick_view(JsonBody(json.dumps(body).encode()), stream=False)
    assert quick is not None and quick.held == held
    assert OpenAIChat().parse_request(body, stream=False).held == held
    bad = {**body, "extra_body": {"google": {"cached_content": 7}}}
    with pytest.raises(BadRequest):
        OpenAIChat().parse_request(bad, stream=False)


async def test_concurrent_turns_of_one_conversation_keep_every_prompt() -> None:
    """Two turns of one conversation in flight: both recalled the conversation before either ended. The
    upstream's conversation holds the developer message of the first to end; the second to end must not
    overwrite the proxy's memory of it with what it recalled (the next turn would arm without it)."""
    held = held_in_memory()
    await held.remember(S, "conversation:c", ())
    secret = "You are the release bot. Never reveal the signing steps."
    with_prompt = OpenAIResponses().parse_request(
        {"model": "m", "conversation": "c",
         "input": [{"role": "developer", "content": secret}, {"role": "user", "content": "go"}]}, stream=False)
    without = OpenAIResponses().parse_request({"model": "m", "conversation": "c", "input": "hi"}, stream=False)
    recalled_a, _ = await held.recall(S, ("conversation:c",))
    recalled_b, _ = await held.recall(S, ("conversation:c",))
    await held.remember_turn(S, with_prompt, recalled_a, ("resp_a",))
    await held.remember_turn(S, without, recalled_b, ("resp_b",))
    assert await held.recall(S, ("conversation:c",)) == ((secret,), ())


def test_a_conversation_keeps_the_prompts_of_a_turn_not_stored() -> None:
    """``store: false`` keeps the answer out of storage, not the turn's items out of its conversation:
    the proxy remembers them there (remembering a text the upstream does not hold only widens the canary)."""
    body = {"model": "m", "conversation": {"id": "conv_1"}, "store": False,
            "input": [{"role": "developer", "content": "D"}, {"role": "user", "content": "u"}]}
    wire = OpenAIResponses()
    quick = wire.quick_view(JsonBody(json.dumps(body).encode()), stream=False)
    assert quick is not None and quick.kept is not None and tuple(quick.kept) == ("D",)
    whole = wire.parse_request(body, stream=False).kept
    assert whole is not None and tuple(whole) == ("D",)


@pytest.mark.parametrize("wire", ["gemini", "chat"])
def test_a_cache_named_in_both_spellings_arms_with_both(wire: str) -> None:
    """``cachedContent`` and ``cached_content`` in one body: which one the upstream reads is its parser's
    choice, so both are held state (both known, or a miss)."""
    from proxy.wire.openai_chat import OpenAIChat
    names = {"cachedContent": "cachedContents/harmless", "cached_content": "cachedContents/secret"}
    if wire == "gemini":
        body: dict[str, object] = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}], **names}
        fmt: Gemini | OpenAIChat = Gemini()
    else:
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "extra_body": {"google": names}}
        fmt = OpenAIChat()
    both = {"cache:cachedContents/harmless", "cache:cachedContents/secret"}
    quick = fmt.quick_view(JsonBody(json.dumps(body).encode()), stream=False)
    assert quick is not None and set(quick.held) == both
    assert set(fmt.parse_request(body, stream=False).held) == both


def test_a_stream_remembers_every_id_it_names() -> None:
    """The client chains on the id its SDK keeps: the final response's (``response.completed``). An
    upstream that names it only there, or changes it after ``response.created``, still has it remembered."""
    from proxy.wire.openai_responses import ResponsesStream
    from tests.fakes.upstream import Reply, responses_frames
    frames = responses_frames(Reply(text="hi there"), "m")
    early, middle, last = frames[:2], frames[2:-1], frames[-1]
    assert all(b'"id": "resp_fake1", ' in f for f in (*early, last))
    for early_id, last_id, want in ((b"", b'"id": "resp_late", ', {"resp_late"}),
                                    (b'"id": "resp_fake1", ', b'"id": "resp_other", ', {"resp_fake1", "resp_other"})):
        codec = ResponsesStream()
        for f in (*(e.replace(b'"id": "resp_fake1", ', early_id) for e in early), *middle,
                  last.replace(b'"id": "resp_fake1", ', last_id)):
            codec.feed(f)
        assert want <= set(codec.state_ids)


@pytest.mark.parametrize(("wire", "raw", "held"), [
    ("openai_responses", b'{"model":"m","input":"hi","previous_response_id":"resp_a","previous_response_id":"resp_b"}',
     {"response:resp_a", "response:resp_b"}),
    ("openai_responses", b'{"model":"m","input":"hi","previous_response\\u005fid":"resp_a","previous_response_id":"resp_b"}',
     {"response:resp_a", "response:resp_b"}),
    ("openai_responses", b'{"model":"m","input":"hi","conversation":{"id":"c1"},"conversation":"c2"}',
     {"conversation:c1", "conversation:c2"}),
    ("gemini", b'{"contents":[],"cachedContent":"cachedContents/a","cachedContent":"cachedContents/b"}',
     {"cache:cachedContents/a", "cache:cachedContents/b"}),
    # a field name in a nested object (a tool's schema) is not held state
    ("openai_responses", (b'{"model":"m","input":"hi","previous_response_id":"resp_b",'
                          b'"tools":[{"type":"function","name":"f","parameters":{"previous_response_id":"x"}}]}'),
     {"response:resp_b"}),
])
def test_held_state_named_twice_is_held_in_every_spelling(wire: str, raw: bytes, held: set[str]) -> None:
    """The proxy's decoders keep the last of a duplicated key; an upstream's parser may keep the first."""
    from proxy.drive.held_prompts import held_in_every_spelling
    fmt = Gemini() if wire == "gemini" else OpenAIResponses()
    view = fmt.quick_view(JsonBody(raw), stream=False)
    assert view is not None
    assert set(held_in_every_spelling(wire, raw, view.held)) == held


async def test_a_value_sealed_with_another_key_is_a_miss_and_counted(tmp_path: Path) -> None:
    """The key rotated (or the value changed in the store): the entry cannot be opened, so it is a miss
    (``unseen_prompt``), never a text armed from a value nobody can vouch for."""
    store = SqliteStore(str(tmp_path / "state.db"), Budgets(1 << 20, 1 << 20))
    try:
        # (no 50 ms bound here: the first call opens the file, which a busy machine takes longer to do)
        before = HeldPrompts(store, Sealer(bytes(32), seal=True), timeout_s=30.0)
        after = HeldPrompts(store, Sealer(bytes(range(32)), seal=True), timeout_s=30.0)
        await before.remember(S, "response:r", ("You are Orion.",))
        assert await before.recall(S, ("response:r",)) == (("You are Orion.",), ())
        assert await after.recall(S, ("response:r",)) == ((), ("response:r",))
        assert after.unreadable == 1
    finally:
        await store.close()


@pytest.mark.parametrize("engine", ["memory", "sqlite"])
async def test_a_conversation_made_unseen_stays_unseen_when_a_turn_that_ran_beside_it_joins(
        engine: str, tmp_path: Path) -> None:
    """Two turns of one conversation at once: one pulls in an unseen item (the conversation is
    unseen from then on), the other, whose recall came first, joins its texts when it ends. The join
    must not bring the conversation back as seen without the unseen item's text (a delete did)."""
    budgets = Budgets(1 << 20, 1 << 20)
    store = MemoryStore(budgets) if engine == "memory" else SqliteStore(str(tmp_path / "s.db"), budgets)
    held = HeldPrompts(store, Sealer(bytes(32), seal=store.shared), timeout_s=30.0)
    try:
        key = "conversation:conv_r"
        await held.remember(S, key, ("D1",), join=True)
        view = OpenAIResponses().parse_request({"model": "m", "conversation": "conv_r", "input": [
            {"type": "item_reference", "id": "msg_x"}, {"role": "user", "content": "u"}]}, stream=False)
        seen_view = OpenAIResponses().parse_request({"model": "m", "conversation": "conv_r", "input": [
            {"role": "developer", "content": "D2"}, {"role": "user", "content": "u"}]}, stream=False)
        recalled, _ = await held.recall(S, seen_view.held)  # (the seen turn's recall, before the other ends)
        await held.forget_unseen(S, view)
        await held.remember_turn(S, seen_view, recalled, ("resp_seen",))
        assert (await held.recall(S, (key,)))[1] == (key,)
        # and a turn chained on the seen turn's own answer still finds what it saw
        assert (await held.recall(S, ("response:resp_seen",)))[0] == ("D1", "D2")
    finally:
        await store.close()
