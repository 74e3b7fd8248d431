"""Reloads that cannot weaken the guard by accident (``proxy.edge.reload``, ``PolicyBook.reload``):
an empty or half-written file is refused unless it names what it disarms, a Kubernetes ConfigMap's
every ``..data`` swap is followed, a referenced rules file is watched and part of the version, and
an audit log written beside the policy never triggers a reload. The proxy under uvicorn, files on
disk, the watcher live."""

from __future__ import annotations

import os
import time
from pathlib import Path

import httpx

from tests.edge.test_policy_reload import ZEBRA, ask, policy_text
from tests.fakes.faulty import poll
from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import FakeUpstream, Reply
from tests.ops.test_ops import metric


def readyz(url: str) -> dict[str, object]:
    body: dict[str, object] = httpx.get(url + "/readyz", timeout=5).json()
    return body


def _blocked(proxy: ProxyServer, upstream: FakeUpstream) -> str:
    upstream.queue(Reply(text=ZEBRA))
    return ask(proxy.url).text


def test_an_empty_or_half_written_file_is_refused_and_the_guard_stays(tmp_path: Path, upstream: FakeUpstream) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(policy_text("A"))
    with ProxyServer(upstream.url, policy_file=str(policy)) as proxy:
        first = readyz(proxy.url)["policy_version"]
        policy.write_text("")  # an editor's truncate, before its write
        assert poll(lambda: readyz(proxy.url)["last_reload_error"] is not None, 10.0)
        status = readyz(proxy.url)
        assert "empty" in str(status["last_reload_error"]) and status["policy_version"] == first
        assert "[policy A]" in _blocked(proxy, upstream)
        metrics = httpx.get(proxy.url + "/metrics").text
        assert metric(metrics, "guardproxy_policy_last_reload_refused", reason="empty") == 1
        assert metric(metrics, "guardproxy_policy_reloads_total", outcome="refused") >= 1

        policy.write_text("[defaults]\nholdback_chars = 16\n")  # written up to its first section
        assert poll(lambda: "disarm" in str(readyz(proxy.url)["last_reload_error"]), 10.0)
        assert readyz(proxy.url)["policy_version"] == first
        assert "[policy A]" in _blocked(proxy, upstream)

        policy.write_text(policy_text("A").replace('replacement =', 'action = "log"\nreplacement ='))
        assert poll(lambda: "to log only" in str(readyz(proxy.url)["last_reload_error"]), 10.0)
        assert readyz(proxy.url)["last_reload"]["outcome"] == "refused"  # type: ignore[index]
        assert "[policy A]" in _blocked(proxy, upstream)  # turned to log only: refused as well

        policy.write_text('disarms = ["no-striped-horses"]\n[defaults]\nholdback_chars = 16\n')  # meant
        assert poll(lambda: readyz(proxy.url)["policy_version"] != first, 10.0)
        assert readyz(proxy.url)["last_reload_error"] is None
        assert "zebra" in _blocked(proxy, upstream)
        live = httpx.get(proxy.url + "/metrics").text
        assert metric(live, "guardproxy_policy_live", policy="default",
                      version=str(readyz(proxy.url)["policy_version"]).split("@")[1]) == 1


def _configmap_swap(mount: Path, n: int, text: str) -> None:
    """What the kubelet does: a new timestamped folder, ``..data`` renamed over, the old folder gone."""
    fresh = mount / f"..2026_12_05_{n:02d}"
    fresh.mkdir()
    (fresh / "policy.toml").write_text(text)
    old = os.readlink(mount / "..data")
    os.symlink(fresh.name, mount / "..data_tmp")
    os.replace(mount / "..data_tmp", mount / "..data")
    for f in (mount / old).iterdir():
        f.unlink()
    (mount / old).rmdir()


def test_every_configmap_swap_is_followed(tmp_path: Path, upstream: FakeUpstream) -> None:
    mount = tmp_path / "config"
    mount.mkdir()
    (mount / "..2026_12_05_00").mkdir()
    (mount / "..2026_12_05_00" / "policy.toml").write_text(policy_text("A"))
    os.symlink("..2026_12_05_00", mount / "..data")
    os.symlink("..data/policy.toml", mount / "policy.toml")
    with ProxyServer(upstream.url, policy_file=str(mount / "policy.toml")) as proxy:
        assert "[policy A]" in _blocked(proxy, upstream)
        for n, marker in ((1, "B"), (2, "C"), (3, "D")):
            _configmap_swap(mount, n, policy_text(marker))
            assert poll(lambda m=marker: f"[policy {m}]" in _blocked(proxy, upstream), 10.0), marker


RULES = """
[[rules]]
id = "acme-token"
regex = '''{regex}'''
"""
SECRETS_POLICY = """
[defaults]
holdback_chars = 32

[[stream_guardrails]]
id = "acme"
kind = "secrets"
categories = ["custom"]
rules_file = "rules/gitleaks.toml"
replacement = "[withheld]"
"""


def test_an_edit_of_a_referenced_rules_file_is_reloaded(tmp_path: Path, upstream: FakeUpstream) -> None:
    (tmp_path / "rules").mkdir()
    rules = tmp_path / "rules" / "gitleaks.toml"
    rules.write_text(RULES.format(regex=r"acme_live_[a-z0-9]{24}"))
    policy = tmp_path / "policy.toml"
    policy.write_text(SECRETS_POLICY)
    leak = "the token is zzz_live_abcdefghijklmnopqrstuvwx for you"
    with ProxyServer(upstream.url, policy_file=str(policy)) as proxy:
        first = readyz(proxy.url)["policy_version"]
        upstream.queue(Reply(text=leak))
        assert "zzz_live_" in ask(proxy.url).text
        rules.write_text(RULES.format(regex=r"(?:acme|zzz)_live_[a-z0-9]{24}"))
        assert poll(lambda: readyz(proxy.url)["policy_version"] != first, 10.0)
        upstream.queue(Reply(text=leak))
        assert "zzz_live_" not in ask(proxy.url).text


def test_an_audit_log_beside_the_policy_never_triggers_a_reload(tmp_path: Path, upstream: FakeUpstream) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(policy_text("A"))
    with ProxyServer(upstream.url, policy_file=str(policy), audit_log=str(tmp_path / "audit.jsonl")) as proxy:
        for _ in range(5):
            assert "[policy A]" in _blocked(proxy, upstream)  # each writes an audit record
        time.sleep(1.0)  # past the watcher's debounce: the touch below is a change of its own
        os.utime(policy)  # one real touch of the policy, so the watcher is known to be alive
        assert poll(lambda: metric(httpx.get(proxy.url + "/metrics").text, "guardproxy_policy_reloads_total",
                                   outcome="unchanged") >= 1, 10.0)
        metrics = httpx.get(proxy.url + "/metrics").text
        assert metric(metrics, "guardproxy_policy_reloads_total", outcome="unchanged") == 1
