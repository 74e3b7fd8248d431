"""What the store keeps of a value, and under whose name (``GUARDPROXY_STATE_KEY``).

With a key (32 random bytes, base64: ``openssl rand -base64 32``), every value that leaves the
process (``Store.shared``) is sealed with AES-256-GCM (``cryptography``'s ``AESGCM``): a 12-byte random
nonce, the ciphertext and its 16-byte tag, the scope and entry key as associated data (a value copied
under another key or scope fails to open; a member taken out of its entry, or an older copy of the
entry, is not detected: each member is sealed alone so that a join stays one server-side step). Member ids and scopes are HMAC-SHA256 digests under a key
derived from it (HKDF), so the store holds no digest an attacker could test guesses against offline.

Without a key, values are stored as UTF-8 and ids and scopes are plain SHA-256 digests: whoever can
read the store (its host, its backups, anyone on its network path without TLS) reads the system
prompts. The in-memory engine never seals (nothing leaves the process).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

ID_BYTES = 16
"""Length of a member id (a digest of its text): collisions are out of reach, and it is counted."""
_NONCE = 12


class Unsealable(Exception):
    """A stored value failed authentication (another key, or changed in the store)."""


def parse_key(text: str) -> bytes:
    """``GUARDPROXY_STATE_KEY``: 32 bytes, base64 (standard or URL-safe). Raises ValueError."""
    try:
        raw = base64.b64decode(text.strip().replace("-", "+").replace("_", "/"), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("must be 32 random bytes in base64 (openssl rand -base64 32)") from None
    if len(raw) != 32:
        raise ValueError(f"must be 32 bytes in base64, not {len(raw)} (openssl rand -base64 32)")
    return raw


def _derive(key: bytes, info: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=info).derive(key)


class Sealer:
    def __init__(self, key: bytes | None, seal: bool) -> None:
        """``key``: the operator's (None: unset). ``seal``: the store is shared (values sealed when a
        key is set)."""
        self._aead = AESGCM(_derive(key, b"guardproxy state values")) if key is not None and seal else None
        self._mac = _derive(key, b"guardproxy state names") if key is not None else None

    @property
    def seals(self) -> bool:
        return self._aead is not None

    def digest(self, data: bytes) -> bytes:
        if self._mac is None:
            return hashlib.sha256(data).digest()
        return hmac.new(self._mac, data, hashlib.sha256).digest()

    def member_id(self, text: str) -> bytes:
        return self.digest(b"text\0" + text.encode())[:ID_BYTES]

    def seal(self, scope: str, key: str, text: str) -> bytes:
        data = text.encode()
        if self._aead is None:
            return data
        nonce = os.urandom(_NONCE)
        return nonce + self._aead.encrypt(nonce, data, f"{scope}\0{key}".encode())

    def open(self, scope: str, key: str, value: bytes) -> str:
        """The text of a stored value; ``Unsealable`` when it fails authentication or decoding."""
        if self._aead is not None:
            try:
                value = self._aead.decrypt(value[:_NONCE], value[_NONCE:], f"{scope}\0{key}".encode())
            except (InvalidTag, ValueError):
                raise Unsealable("a stored value failed authentication") from None
        try:
            return value.decode()
        except UnicodeDecodeError:
            raise Unsealable("a stored value is not text") from None
