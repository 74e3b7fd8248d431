"""One true-positive template per catalog rule, written from the providers' documented formats.

``{kind:n}`` fields are filled with ``n`` random characters of ``kind`` at run time (so no
credential-shaped literal sits in the repository); ``fake()`` fills the same template with a
placeholder run instead, which every rule must let pass. Kinds: ``b62`` letters and digits,
``hex`` lowercase hex, ``HEX`` uppercase hex, ``dig`` digits, ``b64u`` base64url, ``b64``
base64, ``up`` uppercase and digits, ``b32`` base32, ``let`` letters, ``low`` lowercase and
digits, ``uuid`` a UUID, ``userpass`` base64 of ``deploy:<n base62>``, ``b64json`` base64url of a
JSON object holding n base62.
"""

from __future__ import annotations

import base64
import random
import re
import string

from guardrails.stream._scan import looks_random

ALPHABETS = {
    "b62": string.ascii_letters + string.digits,
    "hex": "0123456789abcdef",
    "HEX": "0123456789ABCDEF",
    "dig": string.digits,
    "b64u": string.ascii_letters + string.digits + "_-",
    "b64": string.ascii_letters + string.digits + "+/",
    "up": string.ascii_uppercase + string.digits,
    "b32": string.ascii_uppercase + "234567",
    "let": string.ascii_letters,
    "low": string.ascii_lowercase + string.digits,
    "age": "qpzry9x8gf2tvdw0s3jn54khce6mua7l".upper(),
}
_FIELD = re.compile(r"\{(\w+)(?::(\d+))?\}")

TEMPLATES: dict[str, str] = {
    "aws-access-key-id": "AKIA{up:16}",
    "aws-secret-access-key": "aws_secret_access_key = {b64:40}",
    "aws-bedrock-api-key": "ABSK{b64:120}",
    "gcp-api-key": "AIza{b64u:35}",
    "gcp-oauth-client-secret": "GOCSPX-{b64u:28}",
    "google-oauth-access-token": "ya29.{b64u:80}",
    "google-oauth-refresh-token": "1//0{b64u:60}",
    "azure-storage-account-key": "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={b64:86}==;",
    "azure-storage-key-88": 'AzuriteAccountKey{\n    "{b64:86}=="};',
    "azure-sas-signature": "https://acme.blob.core.windows.net/c?sv=2022-11-02&sp=r&sig={b62:40}%2B{b62:2}%3D",
    "azure-ad-client-secret": "{b62:3}8Q~{b62:31}",
    "azure-identifiable-key": "{b62:52}JQQJ99{b62:18}AZDO{b62:4}",
    "azure-container-registry-password": "{b64:42}+ACR{b62:6}",
    "alibaba-access-key-id": "LTAI{b62:20}",
    "tencent-secret-id": "AKID{b62:32}",
    "digitalocean-token": "dop_v1_{hex:64}",
    "heroku-api-key-v2": "HRKU-AA{b64u:58}",
    "fly-io-token": "FlyV1 fm2_{b64:120}",
    "render-api-key": "rnd_{b62:32}",
    "netlify-token": "nfp_{b62:36}",
    "vercel-token": "vcp_{b62:56}",
    "supabase-token": "sbp_{hex:40}",
    "planetscale-token": "pscale_tkn_{b64u:43}",
    "databricks-token": "dapi{hex:32}",
    "terraform-cloud-token": "{b62:14}.atlasv1.{b64u:67}",
    "vault-token": "hvs.{b64u:90}",
    "vault-legacy-token": "VAULT_TOKEN=s.{b62:24}",
    "pulumi-token": "pul-{hex:40}",
    "doppler-token": "dp.st.{b62:43}",
    "cloudflare-origin-ca-key": "v1.0-{hex:24}-{hex:146}",
    "openshift-token": "sha256~{b64u:43}",
    "dynatrace-token": "dt0c01.{up:24}.{up:64}",
    "yandex-key": "AQVN{b64u:36}",
    "github-token": "ghp_{b62:36}",
    "github-fine-grained-pat": "github_pat_{b62:22}_{b62:59}",
    "gitlab-token": "glpat-{b64u:20}",
    "bitbucket-app-password": "ATBB{b62:32}",
    "atlassian-api-token": "ATATT3xFfGF0{b64u:180}",
    "npm-token": "npm_{b62:36}",
    "pypi-token": "pypi-AgEIcHlwaS5vcmc{b64u:70}",
    "rubygems-token": "rubygems_{hex:48}",
    "nuget-key": "oy2{low:43}",
    "clojars-token": "CLOJARS_{low:60}",
    "docker-hub-token": "dckr_pat_{b64u:27}",
    "docker-config-auth": '{"auths": {"registry.acme.io": {"auth": "{userpass:20}"}}}',
    "jfrog-token": "AKCp{b62:69}",
    "sonar-token": "squ_{hex:40}",
    "buildkite-token": "bkua_{hex:40}",
    "circleci-token": "CCIPAT_{b62:22}_{hex:40}",
    "octopus-deploy-key": "API-{up:26}",
    "prefect-token": "pnu_{b62:36}",
    "sourcegraph-token": "sgp_{hex:16}_{hex:40}",
    "harness-token": "pat.{b64u:22}.{low:24}.{b62:20}",
    "infracost-key": "ico-{b62:32}",
    "readme-key": "rdme_{low:70}",
    "scalingo-token": "tk-us-{b64u:48}",
    "postman-key": "PMAK-{hex:24}-{hex:34}",
    "linear-key": "lin_api_{b62:40}",
    "figma-token": "figd_{b64u:40}",
    "notion-token": "ntn_{dig:11}{b62:35}",
    "airtable-token": "pat{b62:14}.{hex:64}",
    "airtable-oauth-token": "Key={b62:17}.v1.{b64json:40}.{hex:64}",
    "contentful-token": "CFPAT-{b64u:43}",
    "typeform-token": "tfp_{b64u:44}",
    "frameio-token": "fio-u-{b64u:64}",
    "grafana-token": "glsa_{b62:32}_{hex:8}",
    "sentry-token": "sntryu_{hex:64}",
    "intra42-secret": "s-s4t2ud-{hex:64}",
    "settlemint-token": "sm_pat_{b62:16}",
    "defined-networking-key": "dnkey-{low:26}-{low:52}",
    "slack-token": "xoxp-{dig:11}-{dig:12}-{dig:12}-{hex:32}",
    "slack-app-token": "xapp-1-A{up:10}-{dig:13}-{hex:64}",
    "slack-webhook": "https://hooks.slack.com/services/T{up:10}/B{up:10}/{b62:24}",
    "discord-webhook": "https://discord.com/api/webhooks/{dig:18}/{b64u:68}",
    "telegram-bot-token": "{dig:10}:AA{b64u:33}",
    "teams-webhook": ("https://acme.webhook.office.com/webhookb2/{uuid}@{uuid}/IncomingWebhook/{hex:32}/{uuid}"),
    "sendgrid-key": "SG.{b64u:22}.{b64u:43}",
    "mailgun-key": "key-{low:32}",
    "mailchimp-key": "{hex:32}-us12",
    "brevo-key": "xkeysib-{hex:64}-{b62:16}",
    "twitter-bearer-token": "AAAAAAAAAAAAAAAAAAAAA{b62:90}",
    "facebook-access-token": "EAAC{b62:120}",
    "facebook-app-token": "{dig:15}|{b64u:27}",
    "mapbox-secret-token": "sk.eyJ1{b64u:80}",
    "stripe-key": "sk_live_{b62:24}",
    "shopify-token": "shpat_{hex:32}",
    "square-token": "EAAA{b64u:60}",
    "rootly-key": "rootly_{hex:64}",
    "discord-bot-token": "DISCORD_BOT=MTk4NjIy{b64u:18}.{b64u:6}.{b64u:38}",
    "npmrc-auth-token": "//registry.npmjs.org/:_authToken={uuid}",
    "spectralops-token": "spu-{low:32}",
    "teamwork-token": "tkn.v1_{b62:71}=",
    "portainer-token": "ptr_{b62:43}",
    "ramp-key": "ramp_sec_{b62:48}",
    "trufflehog-enterprise-key": "thog-secret-{hex:32}",
    "zapier-webhook": "https://hooks.zapier.com/hooks/catch/{dig:7}/{low:7}/",
    "tines-webhook": "https://acme.tines.com/webhook/{low:32}/{low:32}",
    "square-legacy-token": "sq0atp-{b64u:22}",
    "paypal-braintree-token": "access_token$production${low:16}${hex:32}",
    "plaid-access-token": "access-sandbox-{uuid}",
    "flutterwave-key": "FLWSECK-{hex:32}-X",
    "shippo-token": "shippo_live_{hex:40}",
    "duffel-token": "duffel_test_{b64u:43}",
    "razorpay-key": "rzp_live_{b62:14}",
    "easypost-key": "EZAK{b62:54}",
    "hubspot-token": "pat-na1-{uuid}",
    "lob-key": "live_{hex:35}",
    "openai-key": "sk-proj-{b64u:120}",
    "anthropic-key": "sk-ant-api03-{b64u:93}",
    "anthropic-key-shape": "sk-ant-admin01-{b64u:93}AA",
    "huggingface-token": "hf_{let:34}",
    "groq-key": "gsk_{b62:52}",
    "xai-key": "xai-{b62:80}",
    "perplexity-key": "pplx-{b62:48}",
    "replicate-token": "r8_{b62:37}",
    "langsmith-key": "lsv2_pt_{hex:32}_{hex:10}",
    "pinecone-key": "pcsk_{b62:6}_{b62:63}",
    "tavily-key": "tvly-dev-{b62:32}",
    "elevenlabs-key": "sk_{hex:48}",
    "new-relic-key": "NRAK-{up:27}",
    "new-relic-license-key": "{hex:36}NRAL",
    "new-relic-mobile-token": "AA{hex:40}-NRMA",
    "launchdarkly-key": "sdk-{uuid}",
    "1password-token": "ops_eyJ{b64:200}",
    "adobe-client-secret": "p8e-{b62:32}",
    "age-secret-key": "AGE-SECRET-KEY-1{age:58}",
    "dropbox-token": "sl.{b64u:135}",
    "cloudinary-url": "cloudinary://{dig:15}:{b64u:27}@acme",
    "authress-key": "sc_{low:10}.{low:5}.acc_{low:20}.{b64u:60}",
    # (a key's body begins as DER does, a SEQUENCE and version 0, as every library writes it)
    "private-key": "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA{b64:48}\n",
    "putty-private-key": "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\n",
    "jwt": "eyJhbGciOiJSUzI1NiIsImtpZCI6IjEifQ.eyJ{b64u:60}.{b64u:43}",
    "url-credentials": "postgres://app:{b62:16}@db.internal:5432/app",
    "authorization-header": "Authorization: Bearer {b62:40}",
    "generic-assignment": 'DB_PASSWORD = "{b62:24}"',
}

# Formats that are not random at all: no placeholder version of them exists to test.
NO_FAKE = frozenset({"putty-private-key"})


def keyed_template(keyword: str) -> str:
    return keyword.upper().strip("_") + '_API_KEY = "{hex:32}"'


def fill(template: str, rng: random.Random) -> str:
    def field(m: re.Match[str]) -> str:
        kind, n = m.group(1), int(m.group(2) or 0)
        if kind == "userpass":
            password = "".join(rng.choice(ALPHABETS["b62"]) for _ in range(n))
            return base64.b64encode(f"deploy:{password}".encode()).decode()
        if kind == "b64json":  # base64url of a JSON object holding n random characters
            body = "".join(rng.choice(ALPHABETS["b62"]) for _ in range(n))
            return base64.urlsafe_b64encode(f'{{"userId":"usr{body}"}}'.encode()).decode().rstrip("=")
        if kind == "uuid":
            h = "".join(rng.choice("0123456789abcdef") for _ in range(32))
            return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
        while True:
            value = "".join(rng.choice(ALPHABETS[kind]) for _ in range(n))
            if n < 12 or kind in ("dig", "age") or looks_random(value[:32], min_classes=1 if kind in (
                    "hex", "HEX", "up", "b32", "low", "let") else 2):
                return value
    return _FIELD.sub(field, template)


def fake(template: str) -> str:
    """The template with a placeholder run where the random parts were."""
    def field(m: re.Match[str]) -> str:
        if m.group(1) == "uuid":
            return "00000000-0000-0000-0000-000000000000"
        return "x" * int(m.group(2) or 0) if m.group(1) not in ("dig", "hex", "HEX", "up", "b32", "age") else \
            "0" * int(m.group(2) or 0)
    return _FIELD.sub(field, template)
