"""``proxy.wire.base.loads`` (msgspec first, the standard library when msgspec refuses) reads every
input exactly as ``json.loads`` does: the same value, or the same refusal (``ValueError``)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from proxy.wire.base import loads

_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=20)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


def _outcome(fn: Any, data: bytes) -> tuple[str, Any]:
    try:
        return "ok", fn(data)
    except ValueError:
        return "error", None


@settings(max_examples=300, derandomize=True)
@given(_json_values)
def test_reads_every_serialised_value_as_the_standard_library(value: Any) -> None:
    for text in (json.dumps(value), json.dumps(value, ensure_ascii=False)):
        data = text.encode("utf-8", "surrogatepass")
        a, b = _outcome(loads, data), _outcome(json.loads, data)
        assert a[0] == b[0] and _same(a[1], b[1])


@settings(max_examples=300, derandomize=True)
@given(st.binary(max_size=40) | st.text(max_size=40).map(lambda t: t.encode("utf-8", "surrogatepass")))
def test_reads_arbitrary_bytes_as_the_standard_library(data: bytes) -> None:
    a, b = _outcome(loads, data), _outcome(json.loads, data)
    assert a[0] == b[0] and _same(a[1], b[1])


@pytest.mark.parametrize("data", [
    b'{"a":"\\ud800"}', b"[NaN, Infinity, -Infinity]", b"1e400", b"123456789012345678901234567890",
    b"\xef\xbb\xbf{}", b'{"a":1,"a":2}', b'"\\udc00\\ud800"', b"[1,]", b'{"a":1}x', b"",
])
def test_edge_cases_match_the_standard_library(data: bytes) -> None:
    a, b = _outcome(loads, data), _outcome(json.loads, data)
    assert a[0] == b[0] and _same(a[1], b[1])
