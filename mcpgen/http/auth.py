"""`serve --http` as an OAuth 2.1 resource server: JWT access tokens checked against the issuer's keys.

The SDK does the HTTP side (401 with `WWW-Authenticate: Bearer resource_metadata=...`,
403 `insufficient_scope`, the RFC 9728 metadata document); this module is its
`TokenVerifier`. PyJWT checks each signature with a key from the issuer's JWKS, and
`iss`, `aud` (this server's resource URL), `exp` and `nbf` with a small leeway. Only
RS256, ES256 and EdDSA are accepted: never `none`, never an HMAC algorithm.

Keys are cached. A token signed with a key the cache does not hold makes the cache
fetch the JWKS again (at most once every `min_refresh` seconds), so a key rotation
needs no restart and a key removed from the JWKS stops working at the next fetch.
When the JWKS endpoint is down, the cached keys keep working and an unknown key fails.
A token once verified is remembered (by its exact text) until it expires, the keys change,
or they are older than `max_age`, so a client's repeated calls cost a dictionary lookup.

>>> scopes_of({"scope": "mcp:read reports"}), scopes_of({"scp": ["a", "b"]})
(['mcp:read', 'reports'], ['a', 'b'])
"""

from __future__ import annotations

import json
import logging
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx2
import jwt
from mcp.server.auth.provider import AccessToken, TokenVerifier

from .options import HTTPSetupError, is_loopback

logger = logging.getLogger("mcpgen")

ALGORITHMS = ("RS256", "ES256", "EdDSA")  # asymmetric only: a public key can never act as an HMAC secret
FETCH_TIMEOUT = 5.0
VERIFIED_CACHE = 1024  # tokens remembered as verified (least recently used go first)


class AuthSetupError(HTTPSetupError):
    """The `auth:` settings cannot be used (the message says which and why)."""


def scopes_of(claims: dict[str, Any]) -> list[str]:
    """Granted scopes: RFC 9068's space-separated `scope`, or the `scp` list some providers send."""
    scope = claims.get("scope", claims.get("scp", []))
    if isinstance(scope, str):
        return scope.split()
    return [s for s in scope if isinstance(s, str)] if isinstance(scope, list) else []


def _parse_keys(document: Any, where: str) -> dict[str | None, jwt.PyJWK]:
    """Signing keys of a JWKS document by `kid`; keys of other types or uses are left out."""
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise ValueError(f"{where} is not a JWKS document (an object with a keys list)")
    keys: dict[str | None, jwt.PyJWK] = {}
    for entry in document["keys"]:
        if not isinstance(entry, dict) or entry.get("use", "sig") != "sig" or entry.get("kty") == "oct":
            continue
        try:
            key = jwt.PyJWK(entry)
        except jwt.PyJWTError:
            continue  # an algorithm or curve PyJWT cannot use: not one of ours
        keys[entry.get("kid")] = key
    return keys


class KeySet:
    """The issuer's public keys, from a JWKS URL (cached, refetched on rotation) or a JWKS file."""

    def __init__(
        self, url: str | None = None, file: str | Path | None = None, max_age: float = 300.0, min_refresh: float = 10.0
    ):
        self.url, self.max_age, self.min_refresh = url, max_age, min_refresh
        self.version = 0  # goes up whenever the keys change
        self._keys: dict[str | None, jwt.PyJWK] = {}
        self._document = ""
        self._fetched = self._tried = float("-inf")
        self._lock = anyio.Lock()
        if file is not None:
            try:
                document = json.loads(Path(file).read_text(encoding="utf-8"))
            except OSError as exc:
                raise AuthSetupError(f"auth.jwks_file {file} cannot be read: {exc.strerror or exc}") from None
            except ValueError:
                raise AuthSetupError(f"auth.jwks_file {file} is not JSON") from None
            try:
                self._keys = _parse_keys(document, f"auth.jwks_file {file}")
            except ValueError as exc:
                raise AuthSetupError(str(exc)) from None
            if not self._keys:
                raise AuthSetupError(f"auth.jwks_file {file} holds no RSA, EC or OKP signing key")

    def fresh(self) -> bool:
        """Whether the keys are younger than `max_age` (keys from a file always are)."""
        return self.url is None or time.monotonic() - self._fetched <= self.max_age

    async def get(self, kid: str | None) -> jwt.PyJWK | None:
        """The key named `kid`, fetching the JWKS when it is unknown or the cache is old."""
        now = time.monotonic()
        stale = now - self._fetched > self.max_age
        if self.url and (stale or kid not in self._keys) and now - self._tried >= self.min_refresh:
            async with self._lock:
                if self._tried < now:  # nobody fetched while we waited for the lock
                    await self._fetch()
        if kid is None and len(self._keys) == 1:
            return next(iter(self._keys.values()))
        return self._keys.get(kid)

    async def _fetch(self) -> None:
        assert self.url is not None
        self._tried = time.monotonic()
        try:
            async with httpx2.AsyncClient(timeout=FETCH_TIMEOUT, follow_redirects=False) as client:
                response = await client.get(self.url, headers={"Accept": "application/json"})
                response.raise_for_status()
                document = response.json()
                keys = _parse_keys(document, "the JWKS")
        except (httpx2.HTTPError, ValueError) as exc:
            logger.warning("auth: fetching the JWKS failed (%s); the %d cached keys stay in use", exc, len(self._keys))
            return
        fingerprint = json.dumps(document["keys"], sort_keys=True)
        if fingerprint != self._document:
            self._document, self.version = fingerprint, self.version + 1
        self._keys, self._fetched = keys, time.monotonic()
        logger.debug("auth: %d signing keys fetched from the JWKS", len(keys))


class JWTVerifier(TokenVerifier):
    """Turns a valid JWT access token into the SDK's `AccessToken`; anything else into None (401)."""

    def __init__(
        self,
        issuer: str,
        audience: str,
        keys: KeySet,
        algorithms: tuple[str, ...] | list[str] = ALGORITHMS,
        leeway: float = 30.0,
    ):
        unknown = set(algorithms) - set(ALGORITHMS)
        if unknown:
            raise AuthSetupError(
                f"auth.algorithms: {', '.join(sorted(unknown))} is not allowed ({', '.join(ALGORITHMS)})"
            )
        self.issuer, self.audience, self.keys = issuer, audience, keys
        self.algorithms, self.leeway = list(algorithms), leeway
        # Tokens already verified, until they expire: a client sends the same token call after call.
        self._verified: OrderedDict[str, AccessToken] = OrderedDict()
        self._version = keys.version

    async def verify_token(self, token: str) -> AccessToken | None:
        if self._version != self.keys.version:  # keys rotated: every token is checked again
            self._verified.clear()
            self._version = self.keys.version
        known = self._verified.get(token) if self.keys.fresh() else None
        if known is not None and known.expires_at is not None and known.expires_at >= time.time():
            self._verified.move_to_end(token)
            return known
        found = await self._verify(token)
        if found is not None:
            self._verified[token] = found
            if len(self._verified) > VERIFIED_CACHE:
                self._verified.popitem(last=False)
        return found

    async def _verify(self, token: str) -> AccessToken | None:
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            return None
        alg = header.get("alg")
        if alg not in self.algorithms:  # `none` and HS* end here, before any key is looked at
            logger.info("auth: token refused: algorithm %r is not accepted", alg)
            return None
        key = await self.keys.get(header.get("kid"))
        if key is None:
            logger.info("auth: token refused: no signing key with kid %r", header.get("kid"))
            return None
        try:
            claims = jwt.decode(
                token,
                key.key,
                algorithms=[alg],
                audience=self.audience,
                issuer=self.issuer,
                leeway=self.leeway,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.PyJWTError as exc:
            logger.info("auth: token refused: %s", exc)
            return None
        client_id = claims.get("client_id") or claims.get("azp") or claims.get("sub") or "unknown"
        return AccessToken(
            token="",  # the token itself is never kept
            client_id=str(client_id),
            scopes=scopes_of(claims),
            expires_at=int(claims["exp"] + self.leeway),  # the SDK refuses tokens past this moment
            resource=self.audience,
            subject=str(claims["sub"]) if "sub" in claims else None,
            claims=claims,
        )


class FirstOf(TokenVerifier):
    """Asks each verifier in turn (static tokens, then JWTs) and keeps the first answer."""

    def __init__(self, *verifiers: TokenVerifier):
        self.verifiers = verifiers

    async def verify_token(self, token: str) -> AccessToken | None:
        for verifier in self.verifiers:
            found = await verifier.verify_token(token)
            if found is not None:
                return found
        return None


def jwt_verifier(settings, root: str | Path = ".") -> JWTVerifier:
    """The verifier for mcpgen.yaml's `auth:` section (a `config.AuthConfig`)."""
    file = None if settings.jwks_file is None else Path(root) / settings.jwks_file
    host = urlsplit(settings.jwks_url or "").hostname or ""
    if (settings.jwks_url or "").startswith("http://") and not is_loopback(host):
        logger.warning("auth.jwks_url is plain http: anyone on the path could swap the signing keys; use https")
    keys = KeySet(settings.jwks_url, file, settings.jwks_max_age, settings.jwks_min_refresh)
    return JWTVerifier(settings.issuer, settings.audience, keys, settings.algorithms, settings.leeway)
