"""The replicas' engine: a Valkey or Redis server (``GUARDPROXY_STATE_URL=redis://``, ``rediss://``,
``valkey://``, ``valkeys://`` ``host:port/db``), through redis-py's maintained asyncio client.

Layout, under ``PREFIX`` (``{s}`` a scope, ``{k}`` a key):

- ``{s}:e:{k}``: a hash, member id -> value, plus ``MARK`` (an entry with no member still exists);
  expires with the entry (``PEXPIRE``), so the server itself never answers a stale one;
- ``{s}:lru``: a sorted set, key -> last use (ms); ``{s}:size``: a hash, key -> bytes counted;
- ``scopes``: a sorted set, scope -> bytes held; ``total``: bytes held in all; ``exp``: a sorted set,
  ``{s}\\n{k}`` -> expiry (ms), so a put first takes up to ``SWEEP`` expired entries off the books.

A put (with its join, accounting and evictions) and a get (with its use mark) are each one Lua script:
atomic on the server whatever the replicas do at once, one round trip. Times are the server's
(``TIME``), the one clock replicas share. The scripts name keys they compute, so the server must be a
single primary (or a primary with replicas), not a Redis/Valkey Cluster.

Connections: one pool per process (``max_connections``), connect and read timeouts of ``timeout_s``
(tens of ms), one retry after a short backoff on a connection error; a connection that broke is
dropped and the next call connects anew (reconnects are the pool's). Errors become ``StoreUnavailable``
naming the error's type, never a value.
"""

from __future__ import annotations

from typing import Any, cast

from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.exceptions import RedisError

from proxy.state.base import ENTRY_OVERHEAD, Budgets, Members, StoreUnavailable

PREFIX = "guardproxy:"
MARK = b""
"""The member that makes an empty entry exist (a hash with no field is no key at all)."""
SWEEP = 64
MAX_CONNECTIONS = 64
"""Connections per process: a call holds one for one round trip (sub-millisecond on a LAN)."""

_LIB = """
local P = ARGV[1]
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function drop(s, k)
  local size = tonumber(redis.call('HGET', P .. s .. ':size', k) or 0)
  redis.call('DEL', P .. s .. ':e:' .. k)
  redis.call('HDEL', P .. s .. ':size', k)
  redis.call('ZREM', P .. s .. ':lru', k)
  redis.call('ZREM', P .. 'exp', s .. '\\n' .. k)
  if size > 0 then
    if tonumber(redis.call('ZINCRBY', P .. 'scopes', -size, s)) <= 0 then redis.call('ZREM', P .. 'scopes', s) end
    redis.call('DECRBY', P .. 'total', size)
  end
end
"""

_GET = _LIB + """
local s, k = ARGV[2], ARGV[3]
local v = redis.call('HGETALL', P .. s .. ':e:' .. k)
if #v == 0 then return false end
redis.call('ZADD', P .. s .. ':lru', 'XX', now_ms(), k)
return v
"""

_PUT = _LIB + """
local s, k, ttl, join = ARGV[2], ARGV[3], tonumber(ARGV[4]), ARGV[5] == '1'
local scope_budget, total_budget, overhead = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local now = now_ms()
for _, m in ipairs(redis.call('ZRANGEBYSCORE', P .. 'exp', '-inf', now, 'LIMIT', 0, tonumber(ARGV[9]))) do
  local i = string.find(m, '\\n', 1, true)
  drop(string.sub(m, 1, i - 1), string.sub(m, i + 1))
end
local e = P .. s .. ':e:' .. k
local ids, vals, seen = {}, {}, {}
if join then
  local cur = redis.call('HGETALL', e)
  for i = 1, #cur, 2 do
    if cur[i] ~= '' then ids[#ids + 1] = cur[i]; vals[#vals + 1] = cur[i + 1]; seen[cur[i]] = true end
  end
end
for i = 10, #ARGV, 2 do
  if not seen[ARGV[i]] then ids[#ids + 1] = ARGV[i]; vals[#vals + 1] = ARGV[i + 1]; seen[ARGV[i]] = true end
end
drop(s, k)
local size = overhead + string.len(k)
for i = 1, #ids do size = size + string.len(ids[i]) + string.len(vals[i]) end
if size > scope_budget or size > total_budget then return 0 end
redis.call('HSET', e, '', '')
for start = 1, #ids, 500 do  -- (in slices: unpack's arguments are bounded)
  local fields = {}
  for i = start, math.min(#ids, start + 499) do fields[#fields + 1] = ids[i]; fields[#fields + 1] = vals[i] end
  redis.call('HSET', e, unpack(fields))
end
redis.call('PEXPIRE', e, ttl)
redis.call('HSET', P .. s .. ':size', k, size)
redis.call('ZADD', P .. s .. ':lru', now, k)
redis.call('ZADD', P .. 'exp', now + ttl, s .. '\\n' .. k)
redis.call('ZINCRBY', P .. 'scopes', size, s)
redis.call('INCRBY', P .. 'total', size)
local function oldest(scope)
  for _, c in ipairs(redis.call('ZRANGE', P .. scope .. ':lru', 0, 1)) do
    if scope ~= s or c ~= k then return c end
  end
  return nil
end
while tonumber(redis.call('ZSCORE', P .. 'scopes', s) or 0) > scope_budget do
  local c = oldest(s)
  if c == nil then break end
  drop(s, c)
end
while tonumber(redis.call('GET', P .. 'total') or 0) > total_budget do
  local done = false
  for _, big in ipairs(redis.call('ZREVRANGE', P .. 'scopes', 0, 1)) do
    local c = oldest(big)
    if c ~= nil then drop(big, c); done = true; break end
  end
  if not done then break end
end
return 1
"""

_DELETE = _LIB + """
drop(ARGV[2], ARGV[3])
return 1
"""


def client_url(url: str) -> str:
    """redis-py's spelling of a ``valkey://`` or ``valkeys://`` URL."""
    if url.startswith("valkeys://"):
        return "rediss://" + url[len("valkeys://"):]
    if url.startswith("valkey://"):
        return "redis://" + url[len("valkey://"):]
    return url


class ValkeyStore:
    engine = "valkey"
    shared = True
    waits = True

    def __init__(self, url: str, budgets: Budgets, timeout_s: float = 0.05) -> None:
        self.budgets = budgets
        self._client = Redis.from_url(
            client_url(url), socket_timeout=timeout_s, socket_connect_timeout=timeout_s,
            retry=Retry(ExponentialBackoff(cap=timeout_s, base=timeout_s / 8), retries=1),
            health_check_interval=30, max_connections=MAX_CONNECTIONS, decode_responses=False)
        self._get = self._client.register_script(_GET)
        self._put = self._client.register_script(_PUT)
        self._delete = self._client.register_script(_DELETE)

    async def get(self, scope: str, key: str) -> list[bytes] | None:
        found = await self._call(self._get, PREFIX, scope, key)
        if not found:
            return None
        pairs = cast(list[bytes], found)
        return [pairs[i + 1] for i in range(0, len(pairs), 2) if pairs[i] != MARK]

    async def put(self, scope: str, key: str, members: Members, ttl_s: float, *, join: bool = False) -> bool:
        flat: list[bytes] = [b for pair in members.items() for b in pair]
        kept = await self._call(self._put, PREFIX, scope, key, max(1, int(ttl_s * 1000)), "1" if join else "0",
                                self.budgets.scope_bytes, self.budgets.total_bytes, ENTRY_OVERHEAD, SWEEP, *flat)
        return bool(kept)

    async def delete(self, scope: str, key: str) -> None:
        await self._call(self._delete, PREFIX, scope, key)

    async def close(self) -> None:
        try:
            await self._client.aclose()
        except RedisError:
            pass  # (closing a pool whose server is gone)

    async def _call(self, script: Any, *args: Any) -> Any:
        try:
            return await script(args=list(args))
        except RedisError as exc:
            raise StoreUnavailable(f"valkey: {type(exc).__name__}") from None
        except OSError as exc:
            raise StoreUnavailable(f"valkey: {type(exc).__name__}") from None
