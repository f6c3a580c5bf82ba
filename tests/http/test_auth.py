"""OAuth access tokens without a provider: JWTs checked against a JWKS file (the real provider's tests
are in tests/e2e/test_oauth_provider.py)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time

import anyio
import jwt
import pytest
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from mcp.server.auth.provider import AccessToken
from oidc import ec_jwk, ed_jwk, public, rsa_jwk

from mcpgen.http.auth import AuthSetupError, JWTVerifier, KeySet
from mcpgen.http.options import HTTPOptions, HTTPSetupError, check_options
from mcpgen.spec.config import AuthConfig

ISSUER = "https://id.example.com"
AUDIENCE = "https://mcp.example.com/mcp"
KEYS = [rsa_jwk("rsa-1"), ec_jwk("ec-1"), ed_jwk("ed-1")]


def sign(claims: dict, key: dict, **header) -> str:
    algorithm = key["alg"]
    private = jwt.PyJWK(key).key
    return jwt.encode(claims, private, algorithm=algorithm, headers={"kid": key["kid"], **header})


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def good_claims(**changes) -> dict:
    now = int(time.time())
    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "exp": now + 300, "iat": now, "scope": "mcp:read"}
    claims.update(changes)
    return {k: v for k, v in claims.items() if v is not None}


@pytest.fixture(scope="module")
def verifier(tmp_path_factory) -> JWTVerifier:
    path = tmp_path_factory.mktemp("jwks") / "jwks.json"
    path.write_text(json.dumps(public(KEYS)))
    return JWTVerifier(ISSUER, AUDIENCE, KeySet(file=path), leeway=30)


def verify(verifier: JWTVerifier, token: str) -> AccessToken | None:
    return anyio.run(verifier.verify_token, token)


@pytest.mark.parametrize("key", KEYS, ids=lambda k: k["alg"])
def test_each_allowed_algorithm_verifies(verifier, key):
    found = verify(verifier, sign(good_claims(client_id="web", email="alice@example.com"), key))
    assert found is not None
    assert (found.subject, found.client_id, found.scopes) == ("alice", "web", ["mcp:read"])
    assert found.claims["email"] == "alice@example.com"
    assert found.token == ""  # the token itself is not kept


@pytest.mark.parametrize(
    "changes",
    [
        {"exp": -60},  # expired beyond the 30 s leeway (seconds from now)
        {"nbf": 120},  # not valid yet
        {"aud": "https://other.example.com/mcp"},
        {"iss": "https://evil.example.com"},
        {"exp": None},  # no expiry at all
    ],
    ids=["expired", "not-yet-valid", "wrong-audience", "wrong-issuer", "no-exp"],
)
def test_bad_claims_are_refused(verifier, changes):
    now = int(time.time())  # when the test runs, not when it was collected
    claims = good_claims(**{k: now + v if isinstance(v, int) else v for k, v in changes.items()})
    assert verify(verifier, sign(claims, KEYS[0])) is None
    assert verify(verifier, sign(good_claims(), KEYS[0])) is not None  # the same token, unchanged, passes


def test_leeway_accepts_small_clock_skew(verifier):
    found = verify(verifier, sign(good_claims(exp=int(time.time()) - 5), KEYS[0]))
    assert found is not None
    assert found.expires_at >= time.time()  # else the SDK's bearer middleware would refuse it after all


def test_a_verified_token_is_remembered_until_it_expires(tmp_path):
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps(public(KEYS)))
    verifier = JWTVerifier(ISSUER, AUDIENCE, KeySet(file=path), leeway=0)
    token = sign(good_claims(exp=int(time.time()) + 3), KEYS[0])  # 2-3 s: time for the first check
    first = verify(verifier, token)
    assert first is not None and verify(verifier, token) is first  # the second call is a lookup
    time.sleep(max(0.0, first.expires_at - time.time()) + 0.1)
    assert verify(verifier, token) is None  # remembered, yet refused once expired


def test_a_non_loopback_bind_with_oauth_needs_no_shared_token():
    config = AuthConfig(issuer=ISSUER, audience=AUDIENCE, jwks_url="https://id.example.com/jwks")
    check_options(HTTPOptions(host="0.0.0.0", auth=config))
    with pytest.raises(HTTPSetupError, match="without a bearer token"):
        check_options(HTTPOptions(host="0.0.0.0"))


def test_an_unusable_jwks_file_is_one_sentence(tmp_path):
    with pytest.raises(AuthSetupError, match=r"jwks_file .*missing.json cannot be read: No such file or directory$"):
        KeySet(file=tmp_path / "missing.json")
    (tmp_path / "symmetric.json").write_text(json.dumps({"keys": [{"kty": "oct", "k": "c2VjcmV0", "kid": "h"}]}))
    with pytest.raises(AuthSetupError, match="holds no RSA, EC or OKP signing key"):  # HMAC keys are never used
        KeySet(file=tmp_path / "symmetric.json")


def test_auth_config_takes_exactly_one_key_source():
    with pytest.raises(ValueError, match="exactly one of jwks_url and jwks_file"):
        AuthConfig(issuer=ISSUER, audience=AUDIENCE)
    with pytest.raises(ValueError, match="algorithms"):
        AuthConfig(issuer=ISSUER, audience=AUDIENCE, jwks_file="k.json", algorithms=["HS256"])


def test_alg_none_and_hmac_with_the_public_key_are_refused(verifier):
    unsigned = jwt.encode(good_claims(), None, algorithm="none", headers={"kid": "rsa-1"})
    assert verify(verifier, unsigned) is None
    # The classic confusion attack: HS256 "signed" with the public key as the shared secret
    # (built by hand: PyJWT itself refuses to sign so).
    public_pem = jwt.PyJWK(public([KEYS[0]])["keys"][0]).key.public_bytes(
        Encoding.PEM, PublicFormat.SubjectPublicKeyInfo
    )
    head = b64url(json.dumps({"alg": "HS256", "typ": "JWT", "kid": "rsa-1"}).encode())
    body = b64url(json.dumps(good_claims()).encode())
    signature = b64url(hmac.new(public_pem, f"{head}.{body}".encode(), hashlib.sha256).digest())
    forged = f"{head}.{body}.{signature}"
    assert verify(verifier, forged) is None


def test_unknown_key_and_tampered_signature_are_refused(verifier):
    assert verify(verifier, sign(good_claims(), rsa_jwk("stranger"))) is None
    stranger = rsa_jwk("rsa-1")  # claims the kid of a known key, signed by another
    assert verify(verifier, sign(good_claims(), stranger)) is None
    assert verify(verifier, "not a token") is None
