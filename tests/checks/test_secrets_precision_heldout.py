"""Secrets precision, round 2: the shapes the first held-out half (auth libraries' docs and tests)
tripped on, each next to a real-looking value in the same place that must still trip.

Each benign line is a shape, not a repository's value: a path made of words, a configuration key's
path (``Section:Name:0``), a URN (a registered name, never a credential), a module's import path, a
host and API path after a provider's word, a database URL's demo password.
"""

from __future__ import annotations

import pytest

from tests.checks.test_secrets_catalog import blocked_category
from tests.stream_support import random_chunks

KEY = "Zx9Qw3Er7Ty1Ui5Op2As"


def _every_split(text: str) -> set[str | None]:
    return {blocked_category(text, [text]), blocked_category(text),
            blocked_category(text, list(random_chunks(text, seed=7)))}


@pytest.mark.parametrize("text", [
    # a file's path made of words, numbers and one-letter folders (``auth.d``), a suffix after it
    '\t\t"KEY_1": "VAL_1_etc/auth.d/50_auth.env",\n',
    '\t\t"KEY_2": "VAL_2_etc/auth.d/50_auth.json_updated",\n',
    # a configuration key's path: words and indexes joined by ``:``
    '[AuthorizeForScopes(ScopeKeySection = "DownstreamApis:TodoList:Scopes:0")]\n',
    # a URN, percent-encoded in a query string or not
    'body := "requested_token_type=urn%3Aietf%3Aparams%3Aoauth%3Atoken-type%3Aaccess_token&scope=x"\n',
    'requested_token_type = "urn:ietf:params:oauth:token-type:access_token"\n',
    # a header's name, a module's import path, a host and API path after a provider's word
    '\tawsIMDSv2SessionTokenHeader = "X-aws-ec2-metadata-token"\n',
    'import AzureB2C from "next-auth/providers/azure-ad-b2c"\n',
    '\tdefaultSpotifyAPIBase  = "api.spotify.com/v1"\n',
    # a database URL's demo password: the user's name again, a word doubled, a word for a password
    "DATABASE_URL=postgres://postgres:adminadmin@db.example.net:5432/db\n",
    "PG_DATABASE_URL: postgres://postgres:postgrespassword@postgres:5432/postgres\n",
    "AUTH_EDGEDB_DSN=edgedb://johndoe:supersecure@myhost.com:420\n",
    # a value encrypted under a key (JWE's JSON serialisation), an environment variable read in TypeScript
    '  "encrypted_key": "56GVudgRLIMEElQ7DpXsijJVRSWUSDNdbWkdV3g0GUNq6hcT_GkxwnxlPIWrTXCqRpVKQC8",\n',
    '  await page.type("#password", process.env.AUTH0_PASSWORD!)\n',
])
def test_heldout_shapes_pass(text: str) -> None:
    assert _every_split(text) == {None}, text


@pytest.mark.parametrize(("text", "family"), [
    (f'\t\t"KEY_1": "VAL_1_etc/auth.d/{KEY}",\n', "generic"),
    # (a name for a key, not for a configuration section: ``ScopeKeySection`` names where settings are)
    (f'[AuthorizeForScopes(ScopeKey = "DownstreamApis:{KEY}:0")]\n', "generic"),
    (f'requested_token = "{KEY}&scope=x"\n', "generic"),
    (f'\tawsIMDSv2SessionTokenHeader = "X-aws-{KEY}"\n', "generic"),
    (f'\tdefaultSpotifyAPIKey  = "{KEY}"\n', "spotify"),
    (f"DATABASE_URL=postgres://postgres:{KEY}@db.example.net:5432/db\n", "url_credentials"),
    ("DATABASE_URL=postgres://postgres:Tr0ub4dor3xQ@db.example.net:5432/db\n", "url_credentials"),
    (f'  "encryption_key": "56GVudgRLIMEElQ7DpXsijJVRSWUSDNdbWkdV3g0GUNq6hcT_{KEY}",\n', "generic"),
    (f'  await page.type("#password", "{KEY}!")\n', "generic"),
])
def test_heldout_neighbours_still_trip(text: str, family: str) -> None:
    assert _every_split(text) == {family}, text
