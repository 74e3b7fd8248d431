"""deploy/kubernetes/*.yaml: valid against the Kubernetes schemas (offline: kubernetes-validate ships
them in its wheel) and true to what guardproxy needs (probes, grace, non-root, read-only root,
policies that load). No cluster is involved; see the README for what that leaves unexercised."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import kubernetes_validate
import pytest
import yaml

from config.policy import parse_policy
from config.settings import Settings, load_settings
from proxy.drive.policies import build_guard

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = sorted((ROOT / "deploy" / "kubernetes").glob("*.yaml"))
K8S_VERSION = "1.33.0"
"""A version old enough for most clusters in use and new enough for native sidecars (1.29+)."""


def docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def all_docs() -> list[dict[str, Any]]:
    return [d for p in MANIFESTS for d in docs(p)]


def of_kind(kind: str) -> list[dict[str, Any]]:
    return [d for d in all_docs() if d["kind"] == kind]


def proxy_container(deployment: dict[str, Any]) -> dict[str, Any]:
    spec = deployment["spec"]["template"]["spec"]
    return next(c for c in [*spec.get("initContainers", []), *spec["containers"]] if c["name"] == "guardproxy")


def env_of(container: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in container.get("env", [])}


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_manifests_validate_against_the_kubernetes_schemas(path: Path) -> None:
    for doc in docs(path):
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)  # raises on any error


def test_the_validator_catches_a_wrong_field() -> None:
    doc = docs(ROOT / "deploy" / "kubernetes" / "guardproxy.yaml")[1]
    doc["spec"]["template"]["spec"]["containers"][0]["readinessProb"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def test_the_gateway_has_every_piece() -> None:
    kinds = {d["kind"] for d in docs(ROOT / "deploy" / "kubernetes" / "guardproxy.yaml")}
    assert kinds == {"ConfigMap", "Deployment", "Service", "HorizontalPodAutoscaler", "PodDisruptionBudget"}


def proxies() -> list[dict[str, Any]]:
    """The Deployments that run guardproxy (not the Valkey beside them)."""
    return [d for d in of_kind("Deployment")
            if any(c["name"] == "guardproxy" for c in [*d["spec"]["template"]["spec"].get("initContainers", []),
                                                        *d["spec"]["template"]["spec"]["containers"]])]


@pytest.mark.parametrize("deployment", proxies(), ids=lambda d: d["metadata"]["name"])
def test_the_proxy_container_is_locked_down_probed_and_drains(deployment: dict[str, Any]) -> None:
    pod = deployment["spec"]["template"]["spec"]
    c = proxy_container(deployment)
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] != 0
    assert c["securityContext"]["readOnlyRootFilesystem"] is True
    assert c["securityContext"]["allowPrivilegeEscalation"] is False
    assert c["securityContext"]["capabilities"]["drop"] == ["ALL"]
    grace = float(env_of(c)["GUARDPROXY_SHUTDOWN_GRACE_S"])
    assert pod["terminationGracePeriodSeconds"] > grace + 5  # + the preStop pause
    probes = json.dumps([c["livenessProbe"], c["readinessProbe"]])
    assert "/healthz" in json.dumps(c["livenessProbe"]) and "/readyz" in json.dumps(c["readinessProbe"]), probes
    mounts = {m["mountPath"] for m in c["volumeMounts"]}
    assert "/tmp" in mounts  # tempfiles and the metrics folder on a read-only root


def test_the_sidecar_sees_the_workspace_read_only_and_listens_on_loopback() -> None:
    agent = next(d for d in of_kind("Deployment") if d["metadata"]["name"] == "agent")
    proxy = proxy_container(agent)
    assert env_of(proxy)["GUARDPROXY_HOST"] == "127.0.0.1"
    workspace = next(m for m in proxy["volumeMounts"] if m["name"] == "workspace")
    assert workspace["readOnly"] is True and workspace["mountPath"] == "/workspace"
    agent_c = next(c for c in agent["spec"]["template"]["spec"]["containers"] if c["name"] == "agent")
    assert not next(m for m in agent_c["volumeMounts"] if m["name"] == "workspace").get("readOnly", False)
    assert all("127.0.0.1:8790" in v for k, v in env_of(agent_c).items() if k.endswith("BASE_URL"))


def test_every_policy_in_a_configmap_loads_and_builds() -> None:
    settings = Settings()
    for cm in of_kind("ConfigMap"):
        for name, text in cm["data"].items():
            if name.endswith(".toml"):
                policy = parse_policy(text, source=f"{cm['metadata']['name']}/{name}", base_dir=ROOT)
                build_guard(name, policy, settings, httpx.AsyncClient())


def test_the_named_policies_the_gateway_points_at_are_in_its_configmap() -> None:
    gateway = next(d for d in of_kind("Deployment") if d["metadata"]["name"] == "guardproxy")
    env = env_of(proxy_container(gateway))
    files = {env["GUARDPROXY_POLICY"], *json.loads(env["GUARDPROXY_POLICIES"]).values()}
    mount = next(m for m in proxy_container(gateway)["volumeMounts"] if m["name"] == "policy")["mountPath"]
    keys = set(next(c for c in of_kind("ConfigMap") if c["metadata"]["name"] == "guardproxy-policy")["data"])
    assert {f.removeprefix(mount + "/") for f in files} <= keys


def test_the_gateway_is_scraped_on_its_metrics_port_and_probed_over_http() -> None:
    """Prometheus's annotations cannot send a token: they name the metrics-only port, which the
    container exposes and the proxy is told to open; readiness is an HTTP probe (no process forked)."""
    gateway = next(d for d in of_kind("Deployment") if d["metadata"]["name"] == "guardproxy")
    c = proxy_container(gateway)
    annotations = gateway["spec"]["template"]["metadata"]["annotations"]
    port = int(annotations["prometheus.io/port"])
    assert env_of(c)["GUARDPROXY_METRICS_PORT"] == str(port)
    assert port in {p["containerPort"] for p in c["ports"]} and port != 8790
    assert "httpGet" in c["readinessProbe"] and "exec" not in c["readinessProbe"]


def test_the_gateway_replicas_share_the_valkey_beside_them() -> None:
    """The proxies' GUARDPROXY_STATE_URL names the Valkey Service and its port, the Service selects the
    Valkey pods (and not the proxies), the key that seals values comes from a Secret, and only the
    proxies' pods may connect."""
    gateway = next(d for d in of_kind("Deployment") if d["metadata"]["name"] == "guardproxy")
    c = proxy_container(gateway)
    env = env_of(c)
    url = urlsplit(env["GUARDPROXY_STATE_URL"])
    service = next(s for s in of_kind("Service") if s["metadata"]["name"] == url.hostname)
    assert url.scheme == "redis" and url.port == service["spec"]["ports"][0]["port"]
    load_settings(state_url=env["GUARDPROXY_STATE_URL"].replace("$(VALKEY_PASSWORD)", "x"))  # a URL it accepts
    names = [e["name"] for e in c["env"]]
    assert names.index("VALKEY_PASSWORD") < names.index("GUARDPROXY_STATE_URL")  # defined before its use
    key = next(e for e in c["env"] if e["name"] == "GUARDPROXY_STATE_KEY")
    assert key["valueFrom"]["secretKeyRef"]["name"] == "guardproxy-state"
    valkey = next(d for d in of_kind("Deployment") if d["metadata"]["name"] == url.hostname)
    pod_labels = valkey["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()
    proxy_service = next(s for s in of_kind("Service") if s["metadata"]["name"] == "guardproxy")
    assert not proxy_service["spec"]["selector"].items() <= pod_labels.items()  # the proxies' Service skips it
    policy = next(n for n in of_kind("NetworkPolicy") if n["metadata"]["name"] == url.hostname)
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= pod_labels.items()
    allowed = policy["spec"]["ingress"][0]["from"][0]["podSelector"]["matchLabels"]
    assert allowed.items() <= gateway["spec"]["template"]["metadata"]["labels"].items()


def test_the_valkey_is_locked_down_in_memory_and_never_evicts_on_its_own() -> None:
    valkey = next(d for d in of_kind("Deployment") if d["metadata"]["name"] == "guardproxy-valkey")
    pod = valkey["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] != 0
    assert c["securityContext"]["readOnlyRootFilesystem"] is True
    assert c["securityContext"]["capabilities"]["drop"] == ["ALL"]
    args = c["args"]
    assert args[args.index("--maxmemory-policy") + 1] == "noeviction"  # guardproxy keeps the budgets
    assert args[args.index("--save") + 1] == "" and args[args.index("--appendonly") + 1] == "no"
    assert "--requirepass" in args
