"""Sealing a destination's secret for the dispatcher, so the CRM can write a
token it cannot read back (dispatcher/secrets/sealed_secret.hpp is the same in
C++; docs/destinations.md, "Secrets", says what it protects against).

X25519 with an ephemeral key, HKDF-SHA256 (salt: both public keys), AES-256-GCM
with a random 96-bit nonce; the secret's context "provider/name/key" is the
associated data. The stored text is "sealed:v1:<key id>:<base64 blob>", the
blob being ephemeral public key || nonce || ciphertext || tag.
"""
import base64
import hashlib
import os

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

PREFIX = "sealed:v1:"
_INFO = b"outbox-dispatcher sealed secret v1"


def key_id(public_key: bytes) -> str:
    """16 hex digits of SHA-256 of the raw 32-byte public key."""
    return hashlib.sha256(public_key).hexdigest()[:16]


def context(provider: str, name: str, key: str) -> str:
    return f"{provider}/{name}/{key}"


def _raw(public: X25519PublicKey) -> bytes:
    return public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def _key(shared: bytes, salt: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=salt, info=_INFO).derive(shared)


def seal(public_key: bytes, plaintext: str, secret_context: str) -> str:
    """Seals `plaintext` for the dispatcher's raw 32-byte X25519 public key."""
    recipient = X25519PublicKey.from_public_bytes(public_key)
    ephemeral = X25519PrivateKey.generate()
    ephemeral_raw = _raw(ephemeral.public_key())
    key = _key(ephemeral.exchange(recipient), ephemeral_raw + public_key)
    nonce = os.urandom(12)
    sealed = AESGCM(key).encrypt(nonce, plaintext.encode(), secret_context.encode())
    blob = base64.b64encode(ephemeral_raw + nonce + sealed).decode()
    return f"{PREFIX}{key_id(public_key)}:{blob}"


def open_sealed(private_key_pem: bytes, sealed: str, secret_context: str) -> str:
    """The dispatcher's side, for tests and tools: raises ValueError when it does not open."""
    private = serialization.load_pem_private_key(private_key_pem, password=None)
    if not isinstance(private, X25519PrivateKey):
        raise ValueError("not an X25519 private key")
    public_raw = _raw(private.public_key())
    if not sealed.startswith(PREFIX):
        raise ValueError("not a sealed value")
    sealed_id, _, blob_text = sealed[len(PREFIX):].partition(":")
    if sealed_id != key_id(public_raw):
        raise ValueError(f"sealed for key {sealed_id}")
    blob = base64.b64decode(blob_text, validate=True)
    ephemeral_raw, nonce, rest = blob[:32], blob[32:44], blob[44:]
    key = _key(private.exchange(X25519PublicKey.from_public_bytes(ephemeral_raw)), ephemeral_raw + public_raw)
    try:
        return AESGCM(key).decrypt(nonce, rest, secret_context.encode()).decode()
    except Exception as error:  # cryptography's InvalidTag
        raise ValueError("does not open: altered, or sealed for another destination or key") from error
