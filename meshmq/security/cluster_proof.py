"""Proving cluster membership without sending the cluster password.

Every process of a cluster holds the same cluster-user / cluster-password.
Sending the password itself on each call (as meshmq once did) hands it to
whoever the caller dials: a node a stranger registered in etcd, a plaintext
listener posing as the HA coordinator. So the password never leaves the
process. Both ends derive a *cluster key* from it (scrypt, so a captured
exchange is no cheap dictionary target), and a caller meets each peer with a
challenge before anything else (proto/meshmq/v1/identity.proto):

1. caller -> callee: ``Challenge(cluster_user, client_nonce)``, 16 fresh bytes;
2. callee -> caller: its own nonce, minted and signed with the cluster key and
   carrying its expiry, and ``HMAC(key, "server", user, client_nonce, server_nonce)``;
3. the caller checks that HMAC. A peer that cannot produce it is not a member:
   the caller refuses the call as if the peer had answered UNAUTHENTICATED,
   and has sent it nothing but a random nonce;
4. every call then carries ``x-meshmq-cluster-proof``: the caller's
   ``HMAC(key, "client", user, client_nonce, server_nonce)`` with both nonces.
   The callee checks it without keeping state: the server nonce's own MAC
   says a member minted it, its expiry bounds how long the proof is good.

What it does not do: without TLS, a peer that relays the challenge to a real
member in real time passes step 3, and whoever reads the wire can replay a
proof until its nonce expires (an hour). TLS closes both, which is why a
secured cluster without TLS on a non-loopback address must say
``insecure-cluster: true`` (docs/security.md).
"""

from __future__ import annotations

import asyncio
import base64
import functools
import hashlib
import hmac
import os
import secrets
import time
import weakref
from collections.abc import Mapping

import grpc

from meshmq.v1 import identity_pb2 as ipb
from meshmq.v1 import identity_pb2_grpc as igrpc

# Call metadata: who the caller says it is, and its proof (see the module's docstring).
CLUSTER_USER_KEY = "x-meshmq-cluster-user"
CLUSTER_PROOF_KEY = "x-meshmq-cluster-proof"
CHALLENGE_METHOD = "/meshmq.v1.ClusterIdentity/Challenge"
PROOF_VERSION = "v1"
# How long a proof over one server nonce is accepted. Clocks of the cluster's
# machines may differ by minutes without harm: the caller renews at half-life
# by its own clock, and the callee that minted the nonce judges its expiry.
NONCE_TTL_MS = 3_600_000
CLIENT_NONCE_BYTES = 16
# scrypt cost for deriving the key: ~50-70 ms once per process and password.
_SCRYPT = {"n": 2**14, "r": 8, "p": 1, "dklen": 32}


@functools.lru_cache(maxsize=8)
def cluster_key(user: str, password: str) -> bytes:
    """The key both ends derive from the cluster credential (computed once per process)."""
    salt = b"meshmq-cluster-key\x00" + user.encode()
    return hashlib.scrypt(password.encode(), salt=salt, **_SCRYPT)


def _mac(key: bytes, *parts: str | bytes) -> bytes:
    """HMAC-SHA256 over length-prefixed parts (no two part lists encode alike)."""
    h = hmac.new(key, digestmod=hashlib.sha256)
    for part in parts:
        raw = part.encode() if isinstance(part, str) else part
        h.update(len(raw).to_bytes(4, "big"))
        h.update(raw)
    return h.digest()


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _now_ms() -> int:
    return int(time.time() * 1000)


# --------------------------------------------------------------------------- the callee


def answer_challenge(key: bytes, user: str, client_nonce: bytes, now_ms: int | None = None) -> ipb.ChallengeReply:
    """The callee's side of step 2."""
    expires = (now_ms if now_ms is not None else _now_ms()) + NONCE_TTL_MS
    rand = _b64(secrets.token_bytes(12))
    server_nonce = f"{expires}.{rand}.{_b64(_mac(key, 'nonce', str(expires), rand))}"
    return ipb.ChallengeReply(server_nonce=server_nonce, server_proof=_mac(key, "server", user, client_nonce,
                                                                           server_nonce),
                              expires_in_ms=NONCE_TTL_MS)


def proof_problem(metadata: Mapping[str, str], key: bytes, user: str, now_ms: int | None = None) -> str | None:
    """Why call `metadata` does not prove membership of the cluster keyed `key`
    (None: it does). Step 4, checked in constant time where secrets are compared."""
    claimed_user = str(metadata.get(CLUSTER_USER_KEY, ""))
    proof = str(metadata.get(CLUSTER_PROOF_KEY, ""))
    if not proof:
        return "no cluster proof"
    try:
        version, client_nonce, mac, server_nonce = proof.split(".", 3)
        expires, rand, nonce_mac = server_nonce.split(".")
        client_nonce_raw, mac_raw, nonce_mac_raw = _unb64(client_nonce), _unb64(mac), _unb64(nonce_mac)
        expires_ms = int(expires)
    except ValueError:
        return "a malformed cluster proof"
    if version != PROOF_VERSION:
        return f"a cluster proof of unknown version {version[:16]!r}"
    user_ok = hmac.compare_digest(claimed_user.encode(), user.encode())
    nonce_ok = hmac.compare_digest(nonce_mac_raw, _mac(key, "nonce", expires, rand))
    proof_ok = hmac.compare_digest(mac_raw, _mac(key, "client", claimed_user, client_nonce_raw, server_nonce))
    if not (user_ok & nonce_ok & proof_ok):
        return "a wrong cluster proof (cluster-user / cluster-password differ)"
    if expires_ms <= (now_ms if now_ms is not None else _now_ms()):
        return "an expired cluster proof"
    return None


# --------------------------------------------------------------------------- the caller


def proof_metadata(key: bytes, user: str, client_nonce: bytes, server_nonce: str) -> tuple[tuple[str, str], ...]:
    """The caller's side of step 4: the metadata proving membership, over both nonces."""
    mac = _mac(key, "client", user, client_nonce, server_nonce)
    proof = f"{PROOF_VERSION}.{_b64(client_nonce)}.{_b64(mac)}.{server_nonce}"
    return ((CLUSTER_USER_KEY, user), (CLUSTER_PROOF_KEY, proof))



def unproven(target: str, why: str) -> grpc.aio.AioRpcError:
    """The error a call to a peer that did not prove membership fails with:
    UNAUTHENTICATED, as if the peer had refused us, so every caller handles it
    where it already handles a refusal."""
    from meshmq.errors import REASON_METADATA_KEY, Reason

    return grpc.aio.AioRpcError(
        grpc.StatusCode.UNAUTHENTICATED, grpc.aio.Metadata(),
        grpc.aio.Metadata((REASON_METADATA_KEY, Reason.UNAUTHENTICATED.value)),
        details=f"{target} did not prove it belongs to this cluster ({why}); nothing was sent to it "
                "(docs/security.md, \"Cluster identity\")")


class _Proof:
    __slots__ = ("metadata", "renew_at")

    def __init__(self, metadata: tuple[tuple[str, str], ...], renew_at: float) -> None:
        self.metadata = metadata
        self.renew_at = renew_at


class ClusterProver:
    """The caller's side: the metadata to put on a call to a peer, after the
    peer proved itself (steps 1, 3 and 4). One per process and credential;
    proofs are kept per channel and renewed at half their life."""

    def __init__(self, user: str, password: str | None) -> None:
        self.user = user
        self.enabled = password is not None
        self._key = cluster_key(user, password) if password is not None else b""
        self._proofs: weakref.WeakKeyDictionary[grpc.aio.Channel, _Proof] = weakref.WeakKeyDictionary()
        self._locks: weakref.WeakKeyDictionary[grpc.aio.Channel, asyncio.Lock] = weakref.WeakKeyDictionary()

    async def metadata(self, channel: grpc.aio.Channel, target: str, *, timeout_s: float | None = 10.0,
                       wait_for_ready: bool | None = None) -> tuple[tuple[str, str], ...]:
        """The metadata proving membership on calls over `channel` (to `target`,
        named in errors); empty without a cluster password. Raises
        grpc.aio.AioRpcError: the peer's own failure (UNAVAILABLE...), or
        UNAUTHENTICATED when it could not prove it is a member."""
        if not self.enabled:
            return ()
        proof = self._proofs.get(channel)
        if proof is not None and time.monotonic() < proof.renew_at:
            return proof.metadata
        lock = self._locks.setdefault(channel, asyncio.Lock())
        async with lock:
            proof = self._proofs.get(channel)
            if proof is None or time.monotonic() >= proof.renew_at:
                proof = self._proofs[channel] = await self._challenge(channel, target, timeout_s, wait_for_ready)
        return proof.metadata

    async def _challenge(self, channel: grpc.aio.Channel, target: str, timeout_s: float | None,
                         wait_for_ready: bool | None) -> _Proof:
        client_nonce = os.urandom(CLIENT_NONCE_BYTES)
        asked = time.monotonic()
        try:
            reply = await igrpc.ClusterIdentityStub(channel).Challenge(
                ipb.ChallengeRequest(cluster_user=self.user, client_nonce=client_nonce),
                timeout=timeout_s, wait_for_ready=wait_for_ready)
        except grpc.aio.AioRpcError as exc:
            if exc.code() in (grpc.StatusCode.UNIMPLEMENTED, grpc.StatusCode.UNAUTHENTICATED):
                raise unproven(target, f"it answers no challenge: {exc.code().name}, {exc.details()}; "
                                       "is cluster-password set there?") from None
            raise
        expected = _mac(self._key, "server", self.user, client_nonce, reply.server_nonce)
        if not hmac.compare_digest(reply.server_proof, expected):
            raise unproven(target, "its answer to the challenge is wrong: cluster-user / cluster-password differ")
        ttl_s = max(reply.expires_in_ms, 0) / 1000
        return _Proof(proof_metadata(self._key, self.user, client_nonce, reply.server_nonce), asked + ttl_s / 2)
