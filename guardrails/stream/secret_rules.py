"""The secrets catalog: one row per credential shape, written from each provider's documented format.

Data only; ``guardrails.stream.keyword_scan`` runs it. A row says:

- ``keywords``: lowercase literals, one of which every match holds, starting at most ``back``
  characters after the match's start. The scanner finds them with one Aho-Corasick pass over the
  new text and runs the row's regex only there. The characters between a match's start and its
  keyword are never whitespace (the hold-back relies on it).
- ``regex``: Python ``re`` syntax, bounded length. The named group ``s`` is the random part that
  must look random (``looks_random`` with ``min_classes``); without it the row needs no test. A
  regex that ends in a lookahead is settled one character after its match (or at the end of the
  message); one that ends in a fixed count (a distinctive prefix of an unbounded token) at once.
- ``checksum``: a named check of the format's own checksum (GitHub/npm CRC32); a token that
  passes it needs no randomness test, one that fails it is judged on randomness alone.
  ``"shape"``: the regex spells the whole documented format (prefix, version, length, suffix),
  so a match is a key whatever its letters look like (only a run of one repeated character,
  ``aaaaaa``, marks a placeholder).
- A part ``t`` (or ``t2``) is the tail of an alternative whose structure is distinctive on its own
  (Slack's legacy tokens: numeric ids, then hex): only a repeated run fails it. A part ``j`` is
  base64 of a JSON object (1Password service tokens): it must decode to one. A part ``a`` is
  base64 of ``user:password`` (a Docker registry login): it must decode to one.

``KEYED`` lists providers whose keys carry no prefix (32 hex, a UUID, 40 base62): they are found
where a provider word names them (``DATADOG_API_KEY=...``, ``"twilio_token": "..."``).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SecretRule:
    id: str
    family: str
    """The policy category that selects the rule (``categories = ["github"]``)."""
    keywords: tuple[str, ...]
    regex: str
    back: int = 0
    """How many characters before its keyword a match may start."""
    min_classes: int = 2
    """Character classes (lower, upper, digit) the random part must mix."""
    checksum: str | None = None
    spans_space: bool = False
    """The match may contain whitespace after its keyword (assignments, PEM blocks): a pending
    keyword stays alive across spaces until the rule's width has passed, or while ``alive``
    (when given) still matches all the text from the keyword on."""
    alive: str | None = None


_B62 = "[A-Za-z0-9]"
_B64URL = r"[A-Za-z0-9_-]"
_HEX = "[a-f0-9]"
_UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_LB = r"(?<![A-Za-z0-9_])"       # a token starts here (not inside a word)
_LBD = r"(?<![A-Za-z0-9_.-])"    # ... nor inside a dotted or dashed name
_END = "(?![A-Za-z0-9])"
_END64 = r"(?![A-Za-z0-9_-])"
# An upper-case key id ends where its run of capitals ends, or where a word or a number is glued on
# (``...BWP3Nothing``, ``...BWP3NNothing``: the next capital starts a lower-case word; ``...BWP3N42``:
# digits after it). Scanners such as nosey parker end it at a word boundary and miss the glued key; a
# guard must not relay it. The key's own format decides where it ends: 20 characters.
_END_CAPS = "(?![A-Z](?![a-z]))"
# What may follow a keyword in an assignment before its value is complete (the ``alive`` grammar).
_ASSIGNING = r"[\w.-]{0,24}[\"'\]]{0,2}\s{0,3}[:=>]{0,3}\s{0,3}[\"'`]?[A-Za-z0-9+/=]{0,100}"


def _p(id: str, family: str, kw: str | tuple[str, ...], regex: str, **kw_args: object) -> SecretRule:
    keywords = (kw,) if isinstance(kw, str) else kw
    return SecretRule(id, family, tuple(k.lower() for k in keywords), regex, **kw_args)  # type: ignore[arg-type]


# JWT: a JSON header (``eyJ`` is ``{"``), then a payload that opens with ``{"`` too. A header of up
# to JWT_HEADER_MAX characters; the whole payload (``p``, up to JWT_PAYLOAD_MAX) is read, so that a
# documentation sample's claims (``{"sub": "1234567890", "name": "John Doe"}``) can be told from a
# real token's. The token is settled where it ends, as an ``Authorization`` header around it is (both
# rules then settle on the same character, whatever the split, and the earlier match wins); a
# signature (``g``) under 16 characters is none: an unsigned or cut token authenticates nobody.
# A payload longer than JWT_PAYLOAD_MAX, or a signature longer than JWT_SIGNATURE_MAX (an RSA
# 8192 signature is 1366), is blocked unread.
JWT_HEADER_MAX = 600
JWT_PAYLOAD_MAX = 1500
JWT_SIGNATURE_MAX = 1400
# The base64 of three digits, each spelling the regex below allows (``MTk4`` is "198").
DISCORD_ID_STARTS = tuple(sorted(base64.b64encode(f"{n:03d}".encode()).decode() for n in range(1000)))

RULES: tuple[SecretRule, ...] = (
    # --- cloud -------------------------------------------------------------------------------------
    _p("aws-access-key-id", "aws", ("akia", "asia", "abia", "acca", "a3t"),
       rf"(?<![A-Z])(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)(?P<s>[A-Z0-9]{{16}}){_END_CAPS}", min_classes=1),
    _p("aws-secret-access-key", "aws", ("aws_secret", "awssecret", "secret"),
       r"(?i:(?:aws_?)?secret_?access_?key|aws_?secret_?key)[\"']?\s{0,3}[:=]{1,2}>?\s{0,3}[\"']?"
       r"(?P<s>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])", back=4, spans_space=True, alive=_ASSIGNING),
    _p("aws-bedrock-api-key", "aws", "absk", rf"{_LB}ABSK(?P<s>[A-Za-z0-9+/]{{40}})"),
    _p("gcp-api-key", "gcp", "aiza", rf"{_LB}AIza(?P<s>{_B64URL}{{35}}){_END64}"),
    _p("gcp-oauth-client-secret", "gcp", "gocspx-", rf"{_LB}GOCSPX-(?P<s>{_B64URL}{{28}})"),
    _p("google-oauth-access-token", "google_oauth", "ya29.", rf"{_LBD}ya29\.(?P<s>{_B64URL}{{32}})"),
    _p("google-oauth-refresh-token", "google_oauth", "1//0", rf"(?<![\w/])1//0(?P<s>{_B64URL}{{38}})"),
    _p("azure-storage-account-key", "azure", ("accountkey", "account_key", "sharedaccesskey", "shared_access_key",
                                             "sharedaccess_key", "shared_accesskey"),
       r"(?i:account_?key|shared_?access_?key)[\"']?\s{0,3}[=:]\s{0,3}[\"']?(?P<s>[A-Za-z0-9+/]{40})",
       spans_space=True, alive=_ASSIGNING),
    # A storage account key is 64 random bytes: 86 base64 characters and ``==``. Named by a
    # storage or account key, it may follow any short separator (``{``, ``||``, a line break, a
    # command-line flag's space), not only an ``=``.
    _p("azure-storage-key-88", "azure", ("accountkey", "account_key", "storagekey", "storage_key", "storage-key",
                                        "account-key"),
       r"(?i:account|storage)[_-]?(?i:key)[\w\"']{0,12}[\s\"'`=:{(|,>-]{1,16}(?P<s>[A-Za-z0-9+/]{86}==)(?![A-Za-z0-9+/=])",
       spans_space=True,
       alive=r"(?i:account|storage)[_-]?(?i:key)[\w\"']{0,12}[\s\"'`=:{(|,>-]{0,16}[A-Za-z0-9+/]{0,86}={0,2}"),
    _p("azure-sas-signature", "azure", "sig=", r"(?<![\w])sig=(?P<s>[A-Za-z0-9%+/]{30,100}?)(?:%3D|=)"),
    _p("azure-ad-client-secret", "azure", "q~",
       r"(?<![\w~.-])[A-Za-z0-9_~.]{3}\dQ~(?P<s>[A-Za-z0-9_~.-]{31,34})(?![\w~.-])", back=4),
    _p("azure-identifiable-key", "azure", "jqqj9",
       r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{52}JQQJ9[9DH](?P<s>[A-Za-z0-9+/]{18})"
       r"(?:AZDO|AzSe|ACDb|AZEG|AzFu|APIM|AzCa|AIoT|AStC|AZSB|ARSe)[A-Za-z0-9+/]{4}", back=52),
    _p("azure-container-registry-password", "azure", "+acr",
       r"(?<![A-Za-z0-9+/])(?P<s>[A-Za-z0-9+/]{42})\+ACR[A-Za-z0-9]{6}(?![A-Za-z0-9+/])", back=42),
    _p("alibaba-access-key-id", "alibaba", "ltai", rf"{_LB}LTAI(?P<s>{_B62}{{12,20}}){_END}"),
    _p("tencent-secret-id", "tencent", "akid", rf"{_LB}AKID(?P<s>{_B62}{{32}}){_END}"),
    _p("digitalocean-token", "digitalocean", ("dop_v1_", "doo_v1_", "dor_v1_"),
       rf"{_LB}do[opr]_v1_(?P<s>{_HEX}{{64}}){_END}"),
    _p("heroku-api-key-v2", "heroku", "hrku-", rf"{_LB}HRKU-AA(?P<s>[0-9A-Za-z_-]{{58}}){_END64}"),
    _p("fly-io-token", "flyio", ("fo1_", "fm1a_", "fm1r_", "fm2_"),
       rf"{_LB}(?:fo1|fm1[ar]|fm2)_(?P<s>[A-Za-z0-9_+/=-]{{40}})"),
    _p("render-api-key", "render", "rnd_", rf"{_LB}rnd_(?P<s>{_B62}{{32}}){_END}"),
    _p("netlify-token", "netlify", "nfp_", rf"{_LB}nfp_(?P<s>{_B62}{{36}}){_END}"),
    _p("vercel-token", "vercel", ("vcp_", "vci_", "vca_"), rf"{_LB}vc[pia]_(?P<s>{_B62}{{24}})"),
    _p("supabase-token", "supabase", ("sbp_", "sb_secret_"),
       rf"{_LB}(?:sbp_(?:oauth_)?(?P<s>[a-z0-9]{{40}}){_END}|sb_secret_[A-Za-z0-9_-]{{31}})"),
    _p("planetscale-token", "planetscale", ("pscale_tkn_", "pscale_pw_", "pscale_oauth_"),
       rf"{_LB}pscale_(?:tkn|pw|oauth)_(?P<s>[A-Za-z0-9_=.-]{{32}})"),
    _p("databricks-token", "databricks", "dapi", rf"{_LB}dapi(?P<s>{_HEX}{{32}})(?:-\d)?{_END}"),
    _p("terraform-cloud-token", "terraform", ".atlasv1.",
       r"(?<![A-Za-z0-9])[A-Za-z0-9]{14}\.atlasv1\.(?P<s>[A-Za-z0-9_=-]{60})", back=14),
    # Vault 1.10+ tokens: ``hvs.``/``hvb.``/``hvr.`` then base64url (a batch token's body opens with
    # a constant ``AAAAAQ``, skipped); before 1.10, ``s.``/``b.``/``r.`` then 24 base62.
    _p("vault-token", "vault", ("hvs.", "hvb.", "hvr."), rf"{_LBD}hv(?:[sr]\.|b\.{_B64URL}{{6}})(?P<s>{_B64URL}{{24}})"),
    _p("vault-legacy-token", "vault", "s.", r"(?<![\w.$/@-])s\.(?P<s>[A-Za-z0-9]{24})(?![\w.-])", min_classes=3),
    _p("pulumi-token", "pulumi", "pul-", rf"{_LB}pul-(?P<s>[a-z0-9]{{40}}){_END}"),
    _p("doppler-token", "doppler", ("dp.pt.", "dp.st.", "dp.sa.", "dp.ct.", "dp.scim.", "dp.audit."),
       rf"{_LBD}dp\.(?:pt|st|sa|ct|scim|audit)\.(?P<s>{_B62}{{40}})"),
    _p("cloudflare-origin-ca-key", "cloudflare", "v1.0-", rf"{_LBD}v1\.0-{_HEX}{{24}}-(?P<s>{_HEX}{{64}})"),
    _p("openshift-token", "openshift", "sha256~", rf"{_LB}sha256~(?P<s>{_B64URL}{{43}}){_END64}"),
    _p("dynatrace-token", "dynatrace", "dt0c01.", rf"{_LB}dt0c01\.{_B62}{{24}}\.(?P<s>{_B62}{{64}})"),
    _p("yandex-key", "yandex", ("aqvn", "t1."),
       rf"{_LB}(?:AQVN(?P<s>[A-Za-z0-9_-]{{35,38}}){_END64}"
       rf"|t1\.[A-Z0-9a-z_-]{{8,200}}[=]{{0,2}}\.[A-Z0-9a-z_-]{{86}})"),
    # --- code hosting, CI, packages ----------------------------------------------------------------
    # Keys glued to their neighbours (#29 class 4): a GitHub, GitLab, Slack or Stripe key after a
    # letter, ``_`` or a digit, a GitHub key before them, are still keys: each format starts with a
    # prefix of its own and has a fixed length, so the key's format, not its neighbours, says where
    # it is (``xghp_...``, ``ghp_<36>abc``, ``1xoxb-...``, ``my_sk_live_...``).
    _p("github-token", "github", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
       rf"gh[pousr]_(?P<s>{_B62}{{36}})", checksum="crc32_base62"),
    _p("github-fine-grained-pat", "github", "github_pat_", rf"github_pat_{_B62}{{22}}_(?P<s>{_B62}{{20}})"),
    _p("gitlab-token", "gitlab",
       ("glpat-", "gldt-", "glrt-", "glptt-", "glsoat-", "glcbt-", "glimt-", "gloas-", "glft-", "glffct-",
        "glagent-", "glwt-", "gr1348941"),
       rf"(?<!-)(?:gl(?:pat|dt|rt|ptt|soat|cbt|imt|oas|ft|ffct|agent|wt)-|GR1348941)(?P<s>{_B64URL}{{20}})"),
    _p("bitbucket-app-password", "bitbucket", "atbb", rf"{_LB}ATBB(?P<s>[A-Za-z0-9_=.-]{{32}})"),
    _p("atlassian-api-token", "atlassian", ("atatt3", "atctt3", "atstt3"),
       rf"{_LB}AT[ACS]TT3(?P<s>[A-Za-z0-9_=-]{{32}})"),
    _p("npm-token", "npm", "npm_", rf"{_LB}npm_(?P<s>{_B62}{{36}}){_END}", checksum="crc32_base62"),
    # ``.npmrc``: ``//registry.npmjs.org/:_authToken=<token>`` (a legacy token is a UUID).
    _p("npmrc-auth-token", "npm", "_authtoken",
       rf"_authToken[ \t]?=[ \t]?[\"']?(?P<s>{_UUID}|[A-Za-z0-9_+/=.-]{{24,200}})(?![A-Za-z0-9_+/=.-])", spans_space=True,
       alive=r"_authToken[ \t]?=?[ \t]?[\"']?[A-Za-z0-9_+/=.-]{0,200}"),
    _p("pypi-token", "pypi", ("pypi-ageicHlwaS5vcmc", "pypi-agendgvzdc5wexbplm9yzw"),
       rf"{_LB}pypi-(?:AgEIcHlwaS5vcmc|AgENdGVzdC5weXBpLm9yZw){_B64URL}{{50}}", checksum="shape"),
    _p("rubygems-token", "rubygems", "rubygems_", rf"{_LB}rubygems_(?P<s>[a-z0-9]{{48}}){_END}"),
    _p("nuget-key", "nuget", "oy2", rf"{_LB}oy2(?P<s>[a-z0-9]{{43}}){_END}"),
    _p("clojars-token", "clojars", "clojars_", rf"{_LB}CLOJARS_(?P<s>[a-z0-9]{{60}}){_END}"),
    _p("docker-hub-token", "docker", ("dckr_pat_", "dckr_oat_"), rf"{_LB}dckr_(?:pat|oat)_(?P<s>{_B64URL}{{27}})"),
    # A registry login in a Docker config (``"auths": {"<registry>": {"auth": "<base64 of user:password>"}}``),
    # quotes escaped up to three times when the JSON sits in a string.
    _p("docker-config-auth", "docker", tuple("auth" + "\\" * n + '"' for n in range(4)),
       r'"auth\\{0,3}"[ \t]{0,3}:[ \t]{0,3}\\{0,3}"(?P<a>[A-Za-z0-9+/]{8,4000}={0,2})\\{0,3}"', back=1,
       spans_space=True, alive=r'auth\\{0,3}"[ \t]{0,3}:?[ \t]{0,3}\\{0,3}"?[A-Za-z0-9+/]{0,4000}={0,2}\\{0,3}"?'),
    _p("jfrog-token", "jfrog", ("akcp", "cmvmdgtu"),
       rf"{_LB}(?:AKCp(?P<s>{_B62}{{32}})|cmVmdGtu{_B62}{{56}})"),
    _p("sonar-token", "sonar", ("squ_", "sqp_", "sqa_"), rf"{_LB}sq[upa]_(?P<s>{_HEX}{{40}}){_END}"),
    _p("buildkite-token", "buildkite", "bkua_", rf"{_LB}bkua_(?P<s>{_HEX}{{40}}){_END}"),
    _p("circleci-token", "circleci", "ccipat_", rf"{_LB}CCIPAT_{_B62}{{22}}_(?P<s>{_HEX}{{40}}){_END}"),
    _p("octopus-deploy-key", "octopus", "api-", rf"{_LB}API-(?P<s>[A-Z0-9]{{26}}){_END}", min_classes=1),
    _p("prefect-token", "prefect", "pnu_", rf"{_LB}pnu_(?P<s>{_B62}{{36}}){_END}"),
    _p("sourcegraph-token", "sourcegraph", "sgp_",
       rf"{_LB}sgp_(?:(?:[a-fA-F0-9]{{16}}|local)_)?(?P<s>[a-fA-F0-9]{{40}}){_END}"),
    _p("harness-token", "harness", ("pat.", "sat."),
       rf"{_LBD}(?:pat|sat)\.{_B64URL}{{22}}\.(?P<s>[a-z0-9]{{24}})\.{_B62}{{20}}"),
    _p("infracost-key", "infracost", "ico-", rf"{_LBD}ico-(?P<s>{_B62}{{32}}){_END}"),
    _p("readme-key", "readme", "rdme_", rf"{_LB}rdme_(?P<s>[a-z0-9]{{70}}){_END}"),
    _p("scalingo-token", "scalingo", "tk-us-", rf"{_LB}tk-us-(?P<s>{_B64URL}{{48}}){_END64}"),
    _p("postman-key", "postman", "pmak-", rf"{_LB}PMAK-(?P<s>{_B62}{{24}})-?{_B62}{{34}}{_END}"),
    _p("linear-key", "linear", ("lin_api_", "lin_oauth_"),
       rf"{_LB}lin_(?:api_(?P<s>{_B62}{{40}})|oauth_{_HEX}{{64}}){_END}"),
    _p("figma-token", "figma", "figd_", rf"{_LB}figd_(?P<s>{_B64URL}{{40}})"),
    _p("notion-token", "notion", ("secret_", "ntn_"),
       rf"{_LB}(?:secret_(?P<s>{_B62}{{43}})|ntn_\d{{11}}{_B62}{{35}}){_END}"),
    _p("airtable-token", "airtable", "pat", rf"{_LB}pat{_B62}{{14}}\.(?P<s>{_HEX}{{64}}){_END}"),
    # OAuth access tokens: an id, ``.v1.``, a base64url JSON payload, ``.`` and a hex signature.
    _p("airtable-oauth-token", "airtable", ".v1.eyj", r"(?<![A-Za-z0-9])[A-Za-z0-9]{14,24}\.v1\.(?P<j>eyJ[A-Za-z0-9_-]{41})",
       back=24),
    _p("contentful-token", "contentful", "cfpat-", rf"{_LB}CFPAT-(?P<s>{_B64URL}{{43}}){_END64}"),
    _p("typeform-token", "typeform", "tfp_", rf"{_LB}tfp_(?P<s>[A-Za-z0-9_=.-]{{40}})"),
    _p("frameio-token", "frameio", "fio-u-", rf"{_LB}fio-u-(?P<s>[A-Za-z0-9_=-]{{64}})"),
    _p("grafana-token", "grafana", ("glc_", "glsa_", "eyjrijoi"),
       rf"{_LB}(?:glc_(?P<s>[A-Za-z0-9+/]{{32}})|glsa_{_B62}{{32}}_{_HEX}{{8}}|eyJrIjoi{_B62}{{70}})"),
    _p("sentry-token", "sentry", ("sntrys_", "sntryu_"),
       rf"{_LB}(?:sntrys_eyJ(?P<s>[A-Za-z0-9_=+/-]{{32}})|sntryu_{_HEX}{{64}}{_END})"),
    _p("intra42-secret", "intra42", "s-s4t2", rf"{_LB}s-s4t2(?:ud|af)-(?P<s>{_HEX}{{64}}){_END}"),
    _p("settlemint-token", "settlemint", ("sm_aat_", "sm_pat_", "sm_sat_"),
       rf"{_LB}sm_(?:aat|pat|sat)_(?P<s>{_B62}{{16}}){_END}"),
    _p("defined-networking-key", "defined_networking", "dnkey-",
       r"(?<![\w-])dnkey-[a-z0-9=_-]{26}-(?P<s>[a-z0-9=_-]{52})"),
    _p("rootly-key", "rootly", "rootly_", rf"{_LB}rootly_(?P<s>{_HEX}{{64}}){_END}"),
    _p("spectralops-token", "spectralops", "spu-", rf"{_LB}spu-(?P<s>[a-z0-9]{{32}}){_END}"),
    _p("teamwork-token", "teamwork", "tkn.v1_", rf"{_LBD}tkn\.v1_(?P<s>{_B62}{{71}})"),
    _p("portainer-token", "portainer", "ptr_", rf"{_LB}ptr_(?P<s>[A-Za-z0-9/_+=-]{{24,60}})(?![A-Za-z0-9/_+=-])",
       min_classes=3),
    _p("ramp-key", "ramp", ("ramp_id_", "ramp_sec_"), rf"{_LB}ramp_(?:id|sec)_(?P<s>{_B62}{{40}})"),
    _p("trufflehog-enterprise-key", "trufflehog", ("thog-key-", "thog-secret-"),
       rf"{_LB}thog-(?:key-(?P<s>{_HEX}{{16}})|secret-{_HEX}{{32}}){_END}"),
    # --- chat, mail, messaging ---------------------------------------------------------------------
    _p("slack-token", "slack", ("xoxb-", "xoxp-", "xoxa-", "xoxo-", "xoxs-", "xoxr-", "xoxe-", "xoxe.xox", "xoxc-"),
       rf"(?<![.-])(?:xoxe\.)?xox[abceoprs]-(?:\d{{1,2}}-)?(?:(?:\d{{8,16}}-){{0,4}}(?P<s>{_B62}{{24}})"
       # legacy user/workspace tokens: three or four numeric ids, then a short hex tail
       r"|(?:\d{8,16}-){2,4}(?P<t>[a-f0-9]{10,64})(?![A-Za-z0-9])"
       # a team id and a user id, then whatever tail (cut, or in an older shape)
       r"|\d{10,13}-(?P<t2>\d{10,13})[A-Za-z0-9]{0,2}(?![A-Za-z0-9-]))"),
    _p("slack-app-token", "slack", "xapp-", rf"xapp-\d-[A-Z0-9]{{9,12}}-\d{{10,14}}-(?P<s>{_HEX}{{16}})"),
    _p("slack-webhook", "slack", "hooks.slack.com/",
       r"hooks\.slack\.com/(?:services|workflows|triggers)/T[A-Z0-9]{8,12}/(?:[A-Z0-9]{8,12}/)?(?:\d{6,20}/)?"
       r"(?P<s>[A-Za-z0-9]{20})", min_classes=1),
    _p("zapier-webhook", "zapier", "hooks.zapier.com/hooks/catch/",
       r"hooks\.zapier\.com/hooks/catch/(?P<s>[A-Za-z0-9/]{16})", min_classes=1),
    _p("tines-webhook", "tines", ".tines.com/webhook/", r"\.tines\.com/webhook/[a-z0-9]{32}/(?P<s>[a-z0-9]{32})"),
    _p("discord-webhook", "discord", ("discord.com/api/webhooks/", "discordapp.com/api/webhooks/"),
       r"discord(?:app)?\.com/api/webhooks/\d{17,20}/(?P<s>[A-Za-z0-9_-]{32})"),
    # A bot token: base64 of the bot's numeric user id (a snowflake of 17-20 digits, so its first
    # four characters encode three digits: the keywords), ``.``, a 6-character timestamp, ``.``,
    # an HMAC of 27 (older) or 38 characters.
    _p("discord-bot-token", "discord", DISCORD_ID_STARTS,
       r"(?<![A-Za-z0-9_.-])(?:[MN][DTjz]|O[DT])[AEIMQUYcgk][w-z0-5][A-Za-z0-9_-]{20,23}\.[A-Za-z0-9_-]{6}\."
       r"(?P<s>[A-Za-z0-9_-]{27})"),
    _p("telegram-bot-token", "telegram", ":a", r"(?<![\w:])\d{8,10}:A(?P<s>[A-Za-z0-9_-]{34})(?![\w-])", back=10),
    _p("teams-webhook", "teams", ("webhookb2/", "incomingwebhook/"),
       r"(?:webhookb2/[a-z0-9-]{36}@[a-z0-9-]{36}/)?IncomingWebhook/(?P<s>[a-z0-9]{32})/[a-z0-9-]{36}"),
    _p("sendgrid-key", "sendgrid", "sg.", rf"{_LBD}SG\.(?P<s>{_B64URL}{{16,32}})\.{_B64URL}{{40,50}}{_END64}"),
    _p("mailgun-key", "mailgun", "key-", rf"(?<![\w-])key-(?P<s>[a-z0-9]{{32}}){_END}"),
    _p("mailchimp-key", "mailchimp", "-us", rf"(?<![a-f0-9])(?P<s>{_HEX}{{32}})-us\d{{1,2}}{_END}", back=32),
    _p("brevo-key", "brevo", ("xkeysib-", "xsmtpsib-"), rf"{_LB}x(?:keysib|smtpsib)-(?P<s>{_HEX}{{64}})-{_B62}{{16}}"),
    _p("twitter-bearer-token", "twitter", "aaaaaaaaaaaaaaaaaaaaa",
       r"(?<![A-Za-z0-9])A{21,23}(?P<s>[A-Za-z0-9%]{40})"),
    _p("facebook-access-token", "facebook", "eaa", rf"{_LB}EAA[B-Za-z0-9](?P<s>{_B62}{{40}})"),  # EAAA: Square
    # An app access token: the app id, ``|``, and the app secret (32 hex) or a 27-character hash.
    _p("facebook-app-token", "facebook", "|",
       rf"(?<![\w|])\d{{15,16}}\|(?P<s>{_HEX}{{32}}|{_B64URL}{{27}}){_END64}", back=16),
    _p("mapbox-secret-token", "mapbox", "sk.eyj", rf"{_LBD}sk\.eyJ1(?P<s>[A-Za-z0-9_.-]{{40}})"),
    # --- payments, commerce ------------------------------------------------------------------------
    _p("stripe-key", "stripe", ("sk_live_", "rk_live_", "sk_test_", "rk_test_", "sk_prod_", "rk_prod_", "whsec_"),
       rf"(?:[sr]k_(?:live|test|prod)_(?P<s>{_B62}{{24}})|whsec_{_B62}{{32}})"),
    _p("shopify-token", "shopify", ("shpat_", "shpca_", "shppa_", "shpss_"),
       rf"{_LB}shp(?:at|ca|pa|ss)_(?P<s>[a-fA-F0-9]{{32}}){_END}"),
    _p("square-token", "square", "eaaa", rf"{_LB}EAAA(?P<s>[A-Za-z0-9_+=-]{{60}})"),
    # Access tokens (``sq0atp-``, sandbox ``sq0atb-``) and application secrets (``sq0csp-``,
    # ``sq0csb-``): the prefix is the format; only a repeated run marks a placeholder.
    _p("square-legacy-token", "square", ("sq0atp-", "sq0atb-", "sq0c"),
       rf"(?<![A-Za-z0-9_])sq0(?:at[pb]-{_B64URL}{{22}}|c[a-z]{{2}}-{_B64URL}{{40,50}}){_END64}", checksum="shape"),
    _p("paypal-braintree-token", "paypal", "access_token$production$",
       r"access_token\$production\$[0-9a-z]{16}\$(?P<s>[0-9a-f]{32})"),
    _p("plaid-access-token", "plaid", ("access-sandbox-", "access-development-", "access-production-"),
       rf"{_LB}access-(?:sandbox|development|production)-(?P<s>{_UUID})"),
    _p("flutterwave-key", "flutterwave", "flwseck",
       r"(?<![\w])FLWSECK(?:_TEST)?-?(?P<s>[a-h0-9]{12,32})(?:-X)?(?![a-h0-9])"),
    _p("shippo-token", "shippo", ("shippo_live_", "shippo_test_"),
       rf"{_LB}shippo_(?:live|test)_(?P<s>{_HEX}{{40}}){_END}"),
    _p("duffel-token", "duffel", ("duffel_test_", "duffel_live_"), rf"{_LB}duffel_(?:test|live)_(?P<s>[A-Za-z0-9_=-]{{43}})"),
    _p("razorpay-key", "razorpay", ("rzp_live_", "rzp_test_"), rf"{_LB}rzp_(?:live|test)_(?P<s>{_B62}{{14}}){_END}"),
    _p("easypost-key", "easypost", ("ezak", "eztk"), rf"{_LB}EZ[AT]K(?P<s>{_B62}{{54}}){_END}"),
    _p("hubspot-token", "hubspot", ("pat-na", "pat-eu"), rf"{_LB}pat-(?:na|eu)\d-(?P<s>{_UUID})"),
    _p("lob-key", "lob", ("live_", "test_"), rf"{_LB}(?:live|test)_(?:pub_)?(?P<s>{_HEX}{{31}}(?:{_HEX}{{4}})?){_END}"),
    # --- AI providers ------------------------------------------------------------------------------
    _p("openai-key", "openai", "sk-", r"(?<![A-Za-z0-9_-])sk-(?!ant-)(?P<s>[A-Za-z0-9_-]{32})"),
    _p("anthropic-key", "anthropic", "sk-ant-", r"(?<![A-Za-z0-9_-])sk-ant-(?P<s>[A-Za-z0-9_-]{32})"),
    # The full documented shape (``sk-ant-api03-`` or ``-admin01-``, 93 base64url, ``AA``) is a key
    # whatever its letters look like.
    _p("anthropic-key-shape", "anthropic", "sk-ant-",
       r"(?<![A-Za-z0-9_-])sk-ant-(?:api|admin)\d\d-[A-Za-z0-9_-]{93}AA(?![A-Za-z0-9_-])", checksum="shape"),
    _p("huggingface-token", "huggingface", ("hf_", "api_org_"), rf"{_LB}(?:hf|api_org)_(?P<s>[A-Za-z]{{34}}){_END}"),
    _p("groq-key", "groq", "gsk_", rf"{_LB}gsk_(?P<s>{_B62}{{52}}){_END}"),
    _p("xai-key", "xai", "xai-", rf"{_LB}xai-(?P<s>{_B62}{{32}})"),
    _p("perplexity-key", "perplexity", "pplx-", rf"{_LB}pplx-(?P<s>{_B62}{{48}}){_END}"),
    _p("replicate-token", "replicate", "r8_", rf"{_LB}r8_(?P<s>{_B62}{{37}}){_END}"),
    _p("langsmith-key", "langsmith", ("lsv2_pt_", "lsv2_sk_"), rf"{_LB}lsv2_(?:pt|sk)_(?P<s>{_HEX}{{32}})_{_HEX}{{10}}"),
    _p("pinecone-key", "pinecone", "pcsk_", rf"{_LB}pcsk_(?P<s>[A-Za-z0-9_]{{40}})"),
    _p("tavily-key", "tavily", "tvly-", rf"{_LB}tvly-(?:dev-|prod-)?(?P<s>{_B62}{{32}}){_END}"),
    _p("elevenlabs-key", "elevenlabs", "sk_", rf"{_LB}sk_(?P<s>{_HEX}{{48}}){_END}"),
    # --- monitoring, SaaS --------------------------------------------------------------------------
    _p("new-relic-key", "newrelic", ("nrak-", "nrjs-", "nrbr-", "nrii-", "nraa-"),
       rf"{_LB}(?:NRAK-(?P<s>[A-Z0-9]{{27}})|NR(?:JS|BR)-{_HEX}{{19}}|NRII-[A-Za-z0-9_-]{{32}}|NRAA-{_HEX}{{27}}){_END}",
       min_classes=1),
    # License keys: 40 characters ending in ``NRAL`` (often ``FFFFNRAL``); mobile app tokens: ``AA`` and
    # 40 hex (or ``eu01xx`` and 36) then ``-NRMA``.
    _p("new-relic-license-key", "newrelic", "nral", rf"(?<![A-Za-z0-9])(?P<s>{_B62}{{32}}){_B62}{{4}}NRAL{_END}", back=36),
    _p("new-relic-mobile-token", "newrelic", "-nrma",
       rf"(?<![A-Za-z0-9])(?:AA{_HEX}{{4}}|eu01xx)(?P<s>{_HEX}{{36}})-NRMA{_END}", back=42),
    _p("launchdarkly-key", "launchdarkly", ("api-", "sdk-", "mob-"), rf"{_LB}(?:api|sdk|mob)-(?P<s>{_UUID})"),
    _p("1password-token", "1password", ("ops_eyj", "a3-"),
       rf"{_LB}(?:ops_(?P<j>eyJ[A-Za-z0-9_+/=-]{{41}})"
       r"|A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5})"),
    _p("adobe-client-secret", "adobe", "p8e-", rf"{_LB}p8e-(?P<s>{_B62}{{32}}){_END}"),
    _p("age-secret-key", "age", "age-secret-key-1",
       r"AGE-SECRET-KEY-1(?P<s>[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58})", min_classes=1),
    _p("dropbox-token", "dropbox", ("sl.", "aaaaaaaaaa"),
       rf"(?:{_LBD}sl\.(?:u\.)?(?P<s>[A-Za-z0-9_-]{{40}})|(?<![a-z0-9])[a-z0-9]{{11}}AAAAAAAAAA[a-z0-9_=-]{{43}})",
       back=11),
    _p("cloudinary-url", "cloudinary", "cloudinary://", r"cloudinary://\d{6,20}:(?P<s>[A-Za-z0-9_-]{27})@"),
    _p("authress-key", "authress", (".acc_", ".acc-"),
       r"(?<![\w])(?:sc|ext|scauth|authress)_[A-Za-z0-9]{5,30}\.[A-Za-z0-9]{4,6}\.acc[_-][A-Za-z0-9-]{10,32}"
       r"\.(?P<s>[A-Za-z0-9+/_=-]{30})", back=48),
    # --- structure ---------------------------------------------------------------------------------
    _p("private-key", "private_key", "-----begin",
       r"-----BEGIN[A-Z0-9 ]{0,24} PRIVATE KEY(?: BLOCK)?-----(?:\s|\\[rn]){1,64}(?:Proc-Type:|(?P<s>[A-Za-z0-9+/=]{32}))",
       spans_space=True),
    _p("putty-private-key", "private_key", "putty-user-key-file-",
       r"PuTTY-User-Key-File-\d: [\w-]{3,32}(?:\s|\\[rn]){1,4}Encryption: ", spans_space=True),
    _p("jwt", "jwt", "eyj",
       rf"{_LBD}eyJ[A-Za-z0-9_-]{{8,{JWT_HEADER_MAX}}}\.eyJ(?:(?P<p>[A-Za-z0-9_-]{{2,{JWT_PAYLOAD_MAX}}})"
       rf"(?:\.(?:(?P<g>[A-Za-z0-9_-]{{16,{JWT_SIGNATURE_MAX}}})(?![A-Za-z0-9_-])|[A-Za-z0-9_-]{{{JWT_SIGNATURE_MAX + 1}}}"
       r"|[A-Za-z0-9_-]{0,15}(?![A-Za-z0-9_-]))|(?![A-Za-z0-9_.-]))"
       rf"|[A-Za-z0-9_-]{{{JWT_PAYLOAD_MAX + 1}}})"),
    _p("url-credentials", "url_credentials", "://",
       r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{1,20}://(?P<u>[^\s:@/?#\"'`<>]{1,64})"
       r":(?P<s>[^\s:@/?#\"'`<>]{3,128})@[A-Za-z0-9_-]", back=22),
    _p("authorization-header", "auth_header", ("authorization", "bearer"),
       r"(?i:authorization[\"']?\s{0,3}[:=]\s{0,3}[\"']?(?:bearer|token|basic)|bearer)\s{1,3}"
       r"(?P<s>[A-Za-z0-9._~+/-]{20,400}={0,2})(?![A-Za-z0-9._~+/=-])", spans_space=True,
       alive=r"(?i:authorization|bearer)[\"']?\s{0,3}[:=]?\s{0,3}[\"']?[\w.~+/=-]{0,402}(?:\s{1,3}[\w.~+/=-]{0,402})?"),
)

# Providers whose keys have no prefix of their own: the provider's name, then within a short
# assignment (``NAME_API_KEY = "..."``, ``"name_secret": "..."``, ``name token - '...'``) a
# random value. Keywords are lowercase and at least five characters (shorter ones are words).
KEYED: dict[str, tuple[str, ...]] = {
    "datadog": ("datadog", "dd_api", "dd_app", "ddapi", "ddapp"),
    "twilio": ("twilio",),
    "adobe": ("adobe",),
    "jfrog": ("jfrog", "artifactory", "bintray"),
    "mailgun": ("mailgun",),
    "azure": ("azure", "cognitive", "appinsights", "devops"),
    "plaid": ("plaid",),
    "cloudflare": ("cloudflare", "cf_api", "cf_token"),
    "heroku": ("heroku",),
    "okta": ("okta",),
    "algolia": ("algolia",),
    "auth0": ("auth0",),
    "discord": ("discord",),
    "cloudinary": ("cloudinary",),
    "telegram": ("telegram",),
    "twitter": ("twitter", "tweet"),
    "facebook": ("facebook", "fb_app", "fb_secret"),
    "linkedin": ("linkedin",),
    "dropbox": ("dropbox",),
    "bitbucket": ("bitbucket",),
    "atlassian": ("atlassian", "confluence", "jira_"),
    "vercel": ("vercel",),
    "newrelic": ("newrelic", "new_relic"),
    "sentry": ("sentry",),
    "confluent": ("confluent",),
    "snyk": ("snyk",),
    "sumologic": ("sumologic", "sumo_", "sumo-", "sumotoken", "sumokey", "sumoaccess", "sumosecret"),
    "trello": ("trello",),
    "zendesk": ("zendesk",),
    "intercom": ("intercom",),
    "twitch": ("twitch",),
    "fastly": ("fastly",),
    "pagerduty": ("pagerduty",),
    "circleci": ("circleci", "circle_token"),
    "travis": ("travis",),
    "codecov": ("codecov",),
    "cohere": ("cohere",),
    "mistral": ("mistral",),
    "assemblyai": ("assemblyai",),
    "deepgram": ("deepgram",),
    "coinbase": ("coinbase",),
    "kraken": ("kraken",),
    "kucoin": ("kucoin",),
    "bittrex": ("bittrex",),
    "etsy": ("etsy",),
    "finnhub": ("finnhub",),
    "gitter": ("gitter",),
    "mattermost": ("mattermost",),
    "messagebird": ("messagebird", "message_bird", "message-bird"),
    "nytimes": ("nytimes",),
    "sendbird": ("sendbird",),
    "squarespace": ("squarespace",),
    "maxmind": ("maxmind",),
    "meraki": ("meraki",),
    "looker": ("looker",),
    "beamer": ("beamer",),
    "freshbooks": ("freshbooks",),
    "freemius": ("freemius",),
    "gocardless": ("gocardless",),
    "finicity": ("finicity",),
    "lob": ("lob_api", "lob_key", "lob_secret"),
    "rapidapi": ("rapidapi",),
    "privateai": ("privateai", "private_ai"),
    "sendinblue": ("sendinblue", "brevo"),
    "salesforce": ("salesforce", "sfdc"),
    "segment": ("segment_write", "segment_key"),
    "mapbox": ("mapbox",),
    "shopify": ("shopify",),
    "hubspot": ("hubspot",),
    "asana": ("asana",),
    "stripe": ("stripe",),
    "paypal": ("paypal", "braintree"),
    "clickhouse": ("clickhouse",),
    "kubernetes": ("kubernetes", "kubeconfig"),
    "vault": ("vault_token",),
    "firebase": ("firebase", "fcm_server"),
    "openai": ("openai",),
    "gcp": ("google_api", "gcp_api", "gcloud"),
    "yandex": ("yandex",),
    "sourcegraph": ("sourcegraph",),
    "npm": ("npm_token", "npmtoken", "npmrc", "npm_auth", "npm-token"),
    "ngrok": ("ngrok",),
    "mailjet": ("mailjet",),
    "vonage": ("vonage", "nexmo"),
    "plivo": ("plivo",),
    "pusher": ("pusher",),
    "sparkpost": ("sparkpost",),
    "postmark": ("postmark",),
    "mandrill": ("mandrill",),
    "zoom": ("zoom_api", "zoom_jwt", "zoom_secret", "zoom_client"),
    "docusign": ("docusign",),
    "shodan": ("shodan",),
    "virustotal": ("virustotal",),
    "ipinfo": ("ipinfo",),
    "unsplash": ("unsplash",),
    "giphy": ("giphy",),
    "spotify": ("spotify",),
    "etherscan": ("etherscan",),
    "infura": ("infura",),
    "alchemy": ("alchemy_api", "alchemy_key"),
    "bitly": ("bitly",),
    "openweather": ("openweather", "owm_api"),
    "weatherstack": ("weatherstack",),
    "coinmarketcap": ("coinmarketcap", "cmc_pro"),
    "browserstack": ("browserstack",),
    "saucelabs": ("saucelabs", "sauce_access"),
    "rollbar": ("rollbar",),
    "bugsnag": ("bugsnag",),
    "honeycomb": ("honeycomb",),
    "logdna": ("logdna", "mezmo"),
    "loggly": ("loggly",),
    "papertrail": ("papertrail",),
    "contentstack": ("contentstack",),
    "storyblok": ("storyblok",),
    "sanity": ("sanity_token", "sanity_api"),
    "strapi": ("strapi",),
    "hasura": ("hasura",),
    "fauna": ("faunadb", "fauna_secret"),
    "mongodb": ("mongodb_atlas", "atlas_api"),
    "elastic": ("elastic_api", "elasticsearch_api", "elastic_cloud"),
    "firebase_cm": ("fcm_api",),
    "gemini": ("gemini_api",),
    "together": ("together_api", "togetherai"),
    "fireworks": ("fireworks",),
    "anyscale": ("anyscale",),
    "wandb": ("wandb",),
    "modal": ("modal_token",),
    "runpod": ("runpod",),
    "stability": ("stability_api", "stabilityai"),
}

# Generic ``name = value`` assignments: a name that holds a secret word, an operator, a value.
# Forms: ``key = v``, ``key: v``, ``"key": "v"``, ``key => v``, ``KEY ?= v``, ``<password>v<``,
# ``<add key="DbPassword" value="v"/>``, ``setProperty("password", "v")``, ``env["TOKEN"] = "v"``.
# A value shorter than GENERIC_MIN is too weak to call random; a longer one than GENERIC_MAX is
# judged on its first GENERIC_MAX characters.
GENERIC_MIN = 16
GENERIC_MAX = 64
_VALUE = r"[A-Za-z0-9+/=_\-!@#$%^&*.:~]"
# Not a public key or token, nor an anti-forgery token of a web form (``publicToken``, ``csrf-token``,
# ``authenticity_token``).
_NOT_PUBLIC = "".join(f"(?<!{w})(?<!{w}_)(?<!{w}-)" for w in ("public", "Public", "PUBLIC", "csrf", "CSRF", "xsrf", "XSRF",
                                                         "authenticity"))
_GENERIC_NAME = (_NOT_PUBLIC +
                 r"(?P<n>(?i:(?:api[_.-]?|access[_.-]?)?(?:key|secret|token|passw(?:or)?d|pass|pwd|credentials?)"
                 r"[a-z0-9_.-]{0,24}))")
# A declared type between the name and the operator (``var apiToken string =``, ``val token: String =``).
_GENERIC_TYPE = r"(?:(?:[ \t]{1,2}|:[ \t]?)(?i:string|str))?"
_GENERIC_OP = (_GENERIC_TYPE + r"(?:[\"'\]]{0,2}[ \t]{0,3}(?:=|:{1,3}=|:|=>|\?\??=|\|\|=|\.=|<-|,|\|)[ \t]{0,3}"
               r"|>(?:\r?\n)?[ \t]{0,12}|[\"']\s{1,3}(?i:value)\s{0,2}=[ \t]{0,3})[\"'`]?")
GENERIC = SecretRule(
    "generic-assignment", "generic", ("key", "secret", "token", "pass", "pwd", "credential"),
    _GENERIC_NAME + _GENERIC_OP
    + rf"(?P<s>{_VALUE}{{{GENERIC_MIN},{GENERIC_MAX - 1}}}(?!{_VALUE})|{_VALUE}{{{GENERIC_MAX}}})",
    back=7, spans_space=True)
GENERIC_ALIVE = (_GENERIC_NAME + r"(?:(?:[ \t]{1,2}|:[ \t]?)(?i:s(?:t(?:r(?:i(?:n(?:g)?)?)?)?)?)?)?"
                 r"[\"'\]]{0,2}\s{0,3}(?:(?i:v(?:a(?:l(?:u(?:e)?)?)?)?)?\s{0,2}"
                 r"[=:?|<>,.-]{0,4}[ \t]{0,3}(?:\r?\n[ \t]{0,12})?[\"'`]?" + _VALUE + "{0,64})?")

# Separators: ``=``, ``:``, ``:=``, ``::=``, ``=>``, ``->``, ``?=``, ``.=``, ``,``, ``-``, or an XML
# element's ``>`` and a line break.
# A ``-`` separates only where a space or a quote stands beside it: glued to words on both sides it
# joins a hyphenated name (``firebase-functions-8d4d537a4464``, a slug), not a name and a value.
_KEYED_SEP = (r"[\"'\]\)]{0,2}[ \t]{0,3}(?:[:=]{1,3}>?|=>|->|[?.]=|,|(?<=[\s\"'\])])-|-(?=[\s\"'`])"
              r"|>[ \t]{0,3}\r?\n[ \t]{0,12})?"
              r"[ \t]{0,3}[\"'`]?")
# Every prefix of a separator (``?`` before ``?=``, ``>`` before its line break) keeps a hit alive.
_KEYED_SEP_ALIVE = r"[\"'\]\)]{0,2}[ \t]{0,3}[:=?.>,-]{0,4}[ \t]{0,3}\r?\n?[ \t]{0,12}[\"'`]?"
_KEYED_VALUE = (r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
                r"|[A-Za-z0-9][A-Za-z0-9_+/.:=-]{14,98}")
_KEYED_END = r"(?![A-Za-z0-9_+/.:=-])"
# A value starts after a separator, never inside the name (``SNYK_TOKEN=<uuid>`` would otherwise
# be read as the value ``TOKEN=<uuid>``, judged not random, and the key let through; nor
# ``firebase-functions-<id>``, a hyphenated name read as a name and the value ``functions-<id>``).
_KEYED_VALUE_START = r"(?<![A-Za-z0-9.])(?<![A-Za-z0-9][_-])"
# The provider's word as a host name (``partners.adobe.com/...``) or in a URL's path names no key.
_NOT_DOMAIN = r"(?!\.(?:com|net|org|io|co|dev|app|cloud|ai)\b)"
# Providers whose keys are shorter than a keyed value's 15 characters, with their documented shape:
# Sumo Logic access ids (``su`` and 12 base62), IPinfo tokens (14 hex).
KEYED_SHORT: dict[str, str] = {"sumologic": "su[A-Za-z0-9]{12}", "ipinfo": "[a-f0-9]{14}"}


def keyed_rule(family: str, keywords: tuple[str, ...]) -> tuple[SecretRule, str]:
    """A ``KEYED`` provider's rule and its ``alive`` grammar: the provider's word, a short name
    (``_API_KEY``, `` token``, ``Token string``, ``Token:``), a separator, then a random value
    on the same line (or, in XML, the next)."""
    # The word starts a name (``TWILIO_``, ``myTwilio``), not the middle of one (``CameraKit`` holds "meraki").
    name = r"(?:(?<![A-Za-z])|(?=[A-Z]))(?i:" + "|".join(k.replace(".", r"\.") for k in keywords) + ")"
    value = _KEYED_VALUE + (f"|{KEYED_SHORT[family]}" if family in KEYED_SHORT else "")
    rule = SecretRule(f"{family}-keyed", family, keywords,
                      r"(?<![/.@])" + name + _NOT_DOMAIN + r"[\w .:-]{0,40}?" + _KEYED_SEP + _KEYED_VALUE_START
                      + f"(?P<s>{value}){_KEYED_END}", spans_space=True)
    return rule, name + r"[\w .:-]{0,40}" + _KEYED_SEP_ALIVE + r"[A-Za-z0-9_+/.:=-]{0,100}"
