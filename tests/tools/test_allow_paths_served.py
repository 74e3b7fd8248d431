"""``allow_paths`` on a ``secrets`` or ``pii`` guardrail: a file tool's write whose every file lies
under an allowlisted path (test fixtures holding example keys and addresses) reaches the client
whole, with the official SDKs as the judge; the same key written anywhere else, by a shell command
into the same folder, by a patch that also touches another file, or said in the answer, is withheld
as before. Every API, streamed and whole."""

from __future__ import annotations

import json
import random
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.apis import APIS, sdk_call
from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import FakeUpstream, Reply
from tests.secret_samples import TEMPLATES, fill

KEY = fill(TEMPLATES["github-token"], random.Random(7))
EMAIL = "jane.doe@corp-mail.net"
WITHHELD = "[withheld: credential]"


def _policy(root: Path) -> str:
    return f"""
[[stream_guardrails]]
id = "secrets"
kind = "secrets"
replacement = "{WITHHELD}"
allow_paths = ["tests/fixtures/*", "*.example.env"]

[[stream_guardrails]]
id = "pii"
kind = "pii"
categories = ["email"]
replacement = "[withheld: personal data]"
allow_paths = ["tests/fixtures/*"]

[tools]
workspace_root = {json.dumps(str(root))}
read_before_write = false
no_such_path = false
"""


@pytest.fixture(scope="module")
def root() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="gp-allow-", dir="/tmp") as tmp:
        yield Path(tmp).resolve()


@pytest.fixture(scope="module")
def proxy(upstream_server: FakeUpstream, root: Path) -> Iterator[ProxyServer]:
    with ProxyServer(upstream_server.url, _policy(root)) as p:
        yield p


def _patch(*paths: str) -> str:
    return "*** Begin Patch\n" + "".join(f"*** Add File: {p}\n+TOKEN={KEY}\n" for p in paths) + "*** End Patch\n"


PASSES = {
    "relative": ("write_file", {"file_path": "tests/fixtures/keys.env", "content": f"TOKEN={KEY}\n"}),
    "absolute": ("write_file", {"file_path": "{root}/tests/fixtures/deep/keys.env", "content": f"TOKEN={KEY}\n"}),
    "example": ("write_file", {"file_path": "{root}/deploy/prod.example.env", "content": f"TOKEN={KEY}\n"}),
    "email": ("write_file", {"file_path": "tests/fixtures/users.csv", "content": f"id,email\n1,{EMAIL}\n"}),
    "patch": ("apply_patch", {"input": _patch("tests/fixtures/a.env", "tests/fixtures/b.env")}),
}
BLOCKED = {
    "elsewhere": ("write_file", {"file_path": "src/settings.py", "content": f"TOKEN = '{KEY}'\n"}),
    "climbs out": ("write_file", {"file_path": "tests/fixtures/../../settings.env", "content": f"TOKEN={KEY}\n"}),
    "outside root": ("write_file", {"file_path": "/etc/tests/fixtures/k.env", "content": f"TOKEN={KEY}\n"}),
    "shell": ("run_shell_command", {"command": f"echo TOKEN={KEY} > tests/fixtures/keys.env"}),
    "patch with another file": ("apply_patch", {"input": _patch("tests/fixtures/a.env", "src/b.env")}),
}


def _args(args: dict[str, str], root: Path) -> dict[str, str]:
    return {k: v.replace("{root}", str(root)) for k, v in args.items()}


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("case", list(PASSES))
def test_a_write_into_allowlisted_files_reaches_the_client_whole(proxy: ProxyServer, upstream: FakeUpstream,
                                                                 root: Path, case: str, api: str, stream: bool) -> None:
    name, args = PASSES[case]
    args = _args(args, root)
    upstream.queue(Reply(text="Adding the fixture.", tool_calls=[(name, args)]))
    seen = sdk_call(proxy.url, api, stream=stream)
    assert seen.tool_calls == [(name, args)], seen.text


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("case", list(BLOCKED))
def test_the_same_key_anywhere_else_is_withheld(proxy: ProxyServer, upstream: FakeUpstream, root: Path,
                                                case: str, api: str, stream: bool) -> None:
    name, args = BLOCKED[case]
    upstream.queue(Reply(text="Adding the fixture.", tool_calls=[(name, _args(args, root))]))
    seen = sdk_call(proxy.url, api, stream=stream)
    assert not seen.tool_calls and KEY not in seen.text and WITHHELD in seen.text


@pytest.mark.parametrize("api", APIS)
def test_the_answer_text_is_read_as_always(proxy: ProxyServer, upstream: FakeUpstream, api: str) -> None:
    upstream.queue(Reply(text=f"I wrote TOKEN={KEY} into tests/fixtures/keys.env.", deltas=None))
    seen = sdk_call(proxy.url, api, stream=True)
    assert KEY not in seen.text and WITHHELD in seen.text
