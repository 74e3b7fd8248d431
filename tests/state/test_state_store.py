"""``proxy.state``: each engine keeps the same contract (members joined or replaced, byte budgets per
scope and in all, expiry, isolation between scopes); the shared engines between two instances, as
two processes see them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from proxy.state.base import ENTRY_OVERHEAD, Budgets, Store, StoreUnavailable
from proxy.state.memory import MemoryStore
from proxy.state.seal import Sealer, Unsealable
from proxy.state.sqlite import SqliteStore
from proxy.state.valkey import ValkeyStore
from tests.fakes.upstream import FakeUpstream
from tests.fakes.valkey import ValkeyServer

Clock = list[float]
Make = Callable[[Budgets], Store]


@pytest.fixture(scope="module")
def valkey() -> Iterator[ValkeyServer]:
    with ValkeyServer() as server:
        yield server


@pytest.fixture(params=["memory", "sqlite", "valkey"])
async def make(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[tuple[Make, Clock]]:
    """An engine's maker and its clock (Valkey keeps the server's time: a test that moves the clock
    runs on the embedded engines only)."""
    now: Clock = [1_000_000.0]
    made: list[Store] = []
    if request.param == "valkey":
        if "clock" in request.node.name or "expire" in request.node.name:
            pytest.skip("moves the clock: see test_valkey_entries_expire")
        server: ValkeyServer = request.getfixturevalue("valkey")
        server.client().flushall()

    def build(budgets: Budgets) -> Store:
        store: Store
        if request.param == "memory":
            store = MemoryStore(budgets, clock=lambda: now[0])
        elif request.param == "sqlite":
            store = SqliteStore(str(tmp_path / "state.db"), budgets, clock=lambda: now[0])
        else:
            store = ValkeyStore(server.url, budgets, timeout_s=2.0)
        made.append(store)
        return store

    yield build, now
    for store in made:
        await store.close()


BIG = Budgets(1 << 20, 1 << 22)


async def test_put_get_join_replace_delete(make: tuple[Make, Clock]) -> None:
    store = make[0](BIG)
    assert await store.get("s", "k") is None
    assert await store.put("s", "k", {b"a": b"one", b"b": b"two"}, 60)
    assert await store.get("s", "k") == [b"one", b"two"]
    assert await store.put("s", "k", {b"b": b"TWO", b"c": b"three"}, 60, join=True)
    assert await store.get("s", "k") == [b"one", b"two", b"three"]  # a member already there is kept
    assert await store.put("s", "k", {b"c": b"three"}, 60)
    assert await store.get("s", "k") == [b"three"]
    assert await store.put("s", "empty", {}, 60)
    assert await store.get("s", "empty") == []  # held, with nothing in it: not a miss
    await store.delete("s", "k")
    assert await store.get("s", "k") is None
    assert await store.get("other", "empty") is None  # scopes do not see each other


async def test_entries_expire_and_free_their_bytes(make: tuple[Make, Clock]) -> None:
    build, now = make
    store = build(Budgets(1000, 1000))
    assert await store.put("s", "short", {b"i": b"x" * 100}, 10)
    now[0] += 11
    assert await store.get("s", "short") is None
    for i in range(3):  # the expired one no longer counts: three of about 300 bytes fit
        assert await store.put("s", f"k{i}", {b"i": b"y" * 250}, 60)
    assert all([await store.get("s", f"k{i}") for i in range(3)])
    assert await store.put("s", "j", {b"i": b"z"}, 60, join=True)
    now[0] += 30
    assert await store.put("s", "j", {b"i2": b"z"}, 60, join=True)  # a join renews the TTL
    now[0] += 45
    assert await store.get("s", "j") == [b"z", b"z"]


async def test_budgets_count_bytes_as_stored(make: tuple[Make, Clock]) -> None:
    """An emoji is 4 bytes in UTF-8: 250 of them are 1,000 bytes, not 250 characters nor 4,000."""
    store = make[0](Budgets(scope_bytes=4 * (ENTRY_OVERHEAD + 2 + 1 + 1000), total_bytes=1 << 20))
    value = ("\U0001F600" * 250).encode()
    for i in range(5):
        assert await store.put("s", f"k{i}", {b"i": value}, 60)
    kept = [i for i in range(5) if await store.get("s", f"k{i}") is not None]
    assert kept == [1, 2, 3, 4]  # exactly four fit; the least recently used went
    assert not await store.put("s", "huge", {b"i": b"x" * 5000}, 60)  # larger than the scope's budget


async def test_one_scope_cannot_evict_another(make: tuple[Make, Clock]) -> None:
    build, now = make
    store = build(Budgets(scope_bytes=10_000, total_bytes=16_000))
    assert await store.put("victim", "response:v", {b"i": b"the victim's prompt"}, 60)
    for i in range(50):
        now[0] += 1
        await store.put("attacker", f"conversation:{i}", {b"i": b"x" * 1000}, 60)
        await store.put("attacker", "conversation:0", {bytes([i]): b"y" * 500}, 60, join=True)
    for i in range(4):  # the global budget: the largest scope (the attacker's) gives way
        now[0] += 1
        assert await store.put(f"other{i}", "c", {b"i": b"z" * 1400}, 60)
    assert await store.get("victim", "response:v") == [b"the victim's prompt"]
    assert all([await store.get(f"other{i}", "c") for i in range(4)])


async def test_two_instances_of_the_sqlite_store_share_entries_and_budgets(tmp_path: Path) -> None:
    """Two workers: each opens the file; a put by one is read by the other, and a join by both lands."""
    path = str(tmp_path / "state.db")
    a, b = SqliteStore(path, BIG), SqliteStore(path, BIG)
    try:
        await a.put("s", "conversation:c", {b"1": b"first"}, 60, join=True)
        await asyncio.gather(*(store.put("s", "conversation:c", {str(i).encode(): f"t{i}".encode()}, 60, join=True)
                               for i in range(2, 22) for store in (a, b)))
        got = await b.get("s", "conversation:c")
        assert got is not None and set(got) == {b"first", *(f"t{i}".encode() for i in range(2, 22))}
        assert a.used("s") == b.used("s") > 0
    finally:
        await a.close()
        await b.close()
    assert (tmp_path / "state.db").stat().st_mode & 0o077 == 0  # the owner's alone


def test_sealed_values_open_only_where_they_were_put() -> None:
    key = bytes(range(32))
    sealer = Sealer(key, seal=True)
    sealed = sealer.seal("scope-a", "response:r", "You are Orion.")
    assert b"Orion" not in sealed and len(sealed) == 12 + len("You are Orion.") + 16
    assert sealer.open("scope-a", "response:r", sealed) == "You are Orion."
    for scope, key_ in (("scope-b", "response:r"), ("scope-a", "response:other")):
        with pytest.raises(Unsealable):
            sealer.open(scope, key_, sealed)
    with pytest.raises(Unsealable):
        Sealer(bytes(32), seal=True).open("scope-a", "response:r", sealed)
    tampered = sealed[:-1] + bytes([sealed[-1] ^ 1])
    with pytest.raises(Unsealable):
        sealer.open("scope-a", "response:r", tampered)
    plain = Sealer(None, seal=True)
    assert plain.seal("s", "k", "text") == b"text" and plain.member_id("t") != sealer.member_id("t")


async def test_the_entry_just_put_is_never_the_one_evicted(make: tuple[Make, Clock]) -> None:
    store = make[0](Budgets(scope_bytes=1000, total_bytes=1000))
    assert await store.put("small", "a", {b"i": b"x" * 200}, 60)
    assert await store.put("big", "b", {b"i": b"y" * 800}, 60)  # the largest scope, this entry alone
    assert await store.get("big", "b") is not None and await store.get("small", "a") is None


async def test_valkey_entries_expire(valkey: ValkeyServer) -> None:
    """On the server's clock: a 300 ms entry is gone after it, and its bytes off the books at the next put."""
    valkey.client().flushall()
    store = ValkeyStore(valkey.url, BIG, timeout_s=2.0)
    try:
        assert await store.put("s", "short", {b"i": b"x" * 100}, 0.3)
        assert await store.get("s", "short") == [b"x" * 100]
        await asyncio.sleep(0.5)
        assert await store.get("s", "short") is None
        assert await store.put("s", "other", {b"i": b"y"}, 60)
        held = valkey.client().zscore("guardproxy:scopes", "s")
        assert held == ENTRY_OVERHEAD + len("other") + 2
    finally:
        await store.close()


async def test_two_replicas_join_one_conversation_at_once(valkey: ValkeyServer) -> None:
    valkey.client().flushall()
    a, b = ValkeyStore(valkey.url, BIG, timeout_s=2.0), ValkeyStore(valkey.url, BIG, timeout_s=2.0)
    try:
        await asyncio.gather(*(store.put("s", "conversation:c", {str(i).encode(): f"t{i}".encode()}, 60, join=True)
                               for i in range(40) for store in (a, b)))
        got = await b.get("s", "conversation:c")
        assert got is not None and set(got) == {f"t{i}".encode() for i in range(40)}
    finally:
        await a.close()
        await b.close()


async def test_a_store_that_is_gone_is_unavailable_quickly(valkey: ValkeyServer) -> None:
    """Nothing listens: ``StoreUnavailable``, not a hang (the caller's timeout is the backstop)."""
    from tests.fakes.proxy import free_port
    store = ValkeyStore(f"redis://127.0.0.1:{free_port()}/0", BIG, timeout_s=0.05)
    try:
        with pytest.raises(StoreUnavailable):
            await asyncio.wait_for(store.get("s", "k"), 5)
    finally:
        await store.close()


async def test_a_sqlite_file_planted_by_someone_else_is_not_written(tmp_path: Path) -> None:
    """``sqlite:///path`` in a folder others can write to: a symlink planted where the file will be
    (pointing at a file its planter reads), or a file left readable by others, must not receive the
    system prompts. The store is unavailable (the policy's choice, counted), naming the cause."""
    planted = tmp_path / "theirs.db"
    planted.write_bytes(b"")
    planted.chmod(0o644)
    link = tmp_path / "state.db"
    link.symlink_to(planted)
    store = SqliteStore(str(link), Budgets(1 << 20, 1 << 20), busy_timeout_s=5.0)
    try:
        with pytest.raises(StoreUnavailable, match="symlink"):
            await store.put("s", "response:r", {b"i": b"You are Orion."}, 60)
        assert planted.read_bytes() == b""
    finally:
        await store.close()
    readable = tmp_path / "open.db"
    readable.write_bytes(b"")
    readable.chmod(0o644)
    store = SqliteStore(str(readable), Budgets(1 << 20, 1 << 20), busy_timeout_s=5.0)
    try:
        with pytest.raises(StoreUnavailable, match="others"):
            await store.put("s", "response:r", {b"i": b"You are Orion."}, 60)
        assert readable.read_bytes() == b""
    finally:
        await store.close()


def test_a_proxy_opens_its_shared_store_at_start(tmp_path: Path, upstream: FakeUpstream) -> None:
    """Opened by the first request instead, a slow open on a busy machine ran past that lookup's time
    limit (a counted miss, a 503 under ``refuse``)."""
    from tests.fakes.proxy import ProxyServer

    db = tmp_path / "state" / "s.db"
    with ProxyServer(upstream.url, state_url=f"sqlite:///{db}"):
        assert db.exists()
