"""A real OpenID provider for the tests: `oidc-provider` from the npm registry, run on loopback.

`.ci/run` installs it from tests/oidc-provider/package-lock.json (pinned, with checksums) into
tests/.artifacts/oidc (ignored, never committed);
without it (or without node) the tests that need it skip, or fail under MCPGEN_REQUIRE_SERVICES=1.

    provider = Provider(keys=[rsa_jwk("k1")]).start()
    token = provider.client_token(resource="http://127.0.0.1:8000/mcp")
    token = provider.user_token("alice", resource=...)   # authorization code + PKCE, as a person
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import httpx2
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm
from services import services_required

MODULES = Path(__file__).resolve().parent / ".artifacts" / "oidc" / "node_modules"
SCRIPT = Path(__file__).resolve().parent / "oidc-provider" / "provider.mjs"
REDIRECT = "http://127.0.0.1/callback"
USERS = {"alice": {"email": "alice@example.com"}, "bob": {"email": "bob@example.com"}}
CLIENTS = [
    {"client_id": "service", "client_secret": "service-secret-" + "s" * 20, "grant_types": ["client_credentials"]},
    {
        "client_id": "brief",
        "client_secret": "brief-secret-" + "b" * 20,
        "grant_types": ["client_credentials"],
        "ttl": 2,
    },
    {
        "client_id": "web",
        "client_secret": "web-secret-" + "w" * 20,
        "grant_types": ["authorization_code"],
        "redirect_uris": [REDIRECT],
        "response_types": ["code"],
    },
]
SECRETS = {c["client_id"]: c["client_secret"] for c in CLIENTS}


def require() -> None:
    """Skip (or fail under MCPGEN_REQUIRE_SERVICES=1) when node or the package is missing."""
    reason = None
    if shutil.which("node") is None:
        reason = "node is not installed"
    elif not (MODULES / "oidc-provider" / "package.json").is_file():
        reason = f"oidc-provider is not installed in {MODULES} (see .ci/run)"
    if reason:
        if services_required():
            pytest.fail(f"MCPGEN_REQUIRE_SERVICES=1 but {reason}", pytrace=False)
        pytest.skip(reason)


def rsa_jwk(kid: str) -> dict:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return {**json.loads(RSAAlgorithm.to_jwk(key)), "kid": kid, "alg": "RS256", "use": "sig"}


def ec_jwk(kid: str) -> dict:
    key = ec.generate_private_key(ec.SECP256R1())
    return {**json.loads(ECAlgorithm.to_jwk(key)), "kid": kid, "alg": "ES256", "use": "sig"}


def ed_jwk(kid: str) -> dict:
    key = ed25519.Ed25519PrivateKey.generate()
    return {**json.loads(OKPAlgorithm.to_jwk(key)), "kid": kid, "alg": "EdDSA", "use": "sig"}


def public(jwks: list[dict]) -> dict:
    """The public JWKS document of private JWKs."""
    private = {"d", "p", "q", "dp", "dq", "qi"}
    return {"keys": [{k: v for k, v in key.items() if k not in private} for key in jwks]}


class Provider:
    """One oidc-provider process on 127.0.0.1:`port`, signing with `keys` (private JWKs)."""

    def __init__(self, keys: list[dict], port: int):
        self.keys, self.port = keys, port
        self.issuer = f"http://127.0.0.1:{port}"
        self.jwks_url = f"{self.issuer}/jwks"
        self.proc: subprocess.Popen | None = None
        self._dir = Path(tempfile.mkdtemp(prefix="oidc-"))

    def start(self) -> Provider:
        config = self._dir / "config.json"
        config.write_text(
            json.dumps(
                {"modules": str(MODULES), "port": self.port, "keys": self.keys, "users": USERS, "clients": CLIENTS}
            )
        )
        self.proc = subprocess.Popen(
            ["node", str(SCRIPT), str(config)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        line = self.proc.stdout.readline()
        if not line.startswith("ready"):
            self.proc.kill()
            raise RuntimeError(f"oidc-provider did not start: {line}{self.proc.stderr.read()[-2000:]}")
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
        self.proc = None

    def restart(self, keys: list[dict]) -> None:
        """Stop, and start again signing with `keys` (a key rotation: the old ones leave the JWKS)."""
        self.stop()
        self.keys = keys
        self.start()

    def client_token(self, resource: str, scope: str = "mcp:read", client: str = "service") -> str:
        """An access token by the client-credentials grant."""
        response = httpx2.post(
            f"{self.issuer}/token",
            data={"grant_type": "client_credentials", "scope": scope, "resource": resource},
            auth=(client, SECRETS[client]),
        )
        response.raise_for_status()
        return response.json()["access_token"]

    def user_token(self, user: str, resource: str, scope: str = "mcp:read") -> str:
        """An access token for `user`: authorization code with PKCE, signing in through the provider's pages."""
        verifier = secrets.token_urlsafe(48)
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
        with httpx2.Client(base_url=self.issuer) as browser:
            response = browser.get(
                "/auth",
                params={
                    "client_id": "web",
                    "response_type": "code",
                    "redirect_uri": REDIRECT,
                    "scope": f"openid email {scope}",
                    "resource": resource,
                    "code_challenge": challenge,
                    "code_challenge_method": "S256",
                },
            )
            for form in ({"prompt": "login", "login": user, "password": "any"}, {"prompt": "consent"}):
                response = browser.post(response.headers["location"], data=form)
                while (
                    "/interaction/" not in response.headers["location"] and REDIRECT not in response.headers["location"]
                ):
                    response = browser.get(response.headers["location"])
            code = parse_qs(urlparse(response.headers["location"]).query)["code"][0]
            response = browser.post(
                "/token",
                data={
                    "grant_type": "authorization_code",
                    "code": code,
                    "redirect_uri": REDIRECT,
                    "code_verifier": verifier,
                    "resource": resource,
                },
                auth=("web", SECRETS["web"]),
            )
            response.raise_for_status()
            return response.json()["access_token"]
