#!/usr/bin/env python3
"""What verifying an OAuth access token costs per call, with the issuer's keys cached.

Side by side in one run:

1. in-process: `JWTVerifier.verify_token` on a valid RS256, ES256 and EdDSA token (keys from
   a JWKS file, so every call is a cache hit), median microseconds per token;
2. over HTTP: one `mcpgen serve --http` process (the shipped specs, `auth:` with that JWKS
   file, and a shared token beside it), answering `tools/call top_cities` from one client,
   alternating a JWT and the shared token; p50 of each.

Prints the verification's share of a tools/call's p50 (target: under 5%) and the p50
difference between the two kinds of token.

    python bench/bench_auth.py              # 1,000 HTTP calls of each kind
    python bench/bench_auth.py --calls 200 --json
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import httpx2
import jwt
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from mcpgen.auth import JWTVerifier, KeySet  # noqa: E402

ISSUER = "https://id.bench.invalid/"
HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2025-06-18",
}
CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "top_cities", "arguments": {"top_n": 5}}}


def keys() -> list[tuple[str, object, dict]]:
    """(alg, private key, public JWK) for each accepted algorithm."""
    out = []
    for alg, key, to_jwk in (
        ("RS256", rsa.generate_private_key(public_exponent=65537, key_size=2048), RSAAlgorithm.to_jwk),
        ("ES256", ec.generate_private_key(ec.SECP256R1()), ECAlgorithm.to_jwk),
        ("EdDSA", ed25519.Ed25519PrivateKey.generate(), OKPAlgorithm.to_jwk),
    ):
        public = {**json.loads(to_jwk(key.public_key())), "kid": alg.lower(), "alg": alg, "use": "sig"}
        out.append((alg, key, public))
    return out


def token(alg: str, key, audience: str) -> str:
    now = int(time.time())
    claims = {"iss": ISSUER, "aud": audience, "sub": "bench", "client_id": "bench", "scope": "mcp:read"}
    return jwt.encode({**claims, "iat": now, "exp": now + 3600}, key, algorithm=alg, headers={"kid": alg.lower()})


def verify_cost(verifier: JWTVerifier, tokens: dict[str, str], rounds: int) -> dict[str, float]:
    """Median microseconds per verify_token, per algorithm (batches of 100)."""

    async def run() -> dict[str, float]:
        out = {}
        for alg, tok in tokens.items():
            assert await verifier.verify_token(tok) is not None, alg
            batches = []
            for _ in range(max(1, rounds // 100)):
                start = time.perf_counter()
                for _ in range(100):
                    await verifier.verify_token(tok)
                batches.append((time.perf_counter() - start) / 100 * 1e6)
            out[alg] = statistics.median(batches)
        return out

    return anyio.run(run)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def project(folder: Path, jwks: dict, audience: str) -> Path:
    """The shipped project plus `auth:`, in a temporary folder (data and specs linked, not copied)."""
    (folder / "jwks.json").write_text(json.dumps(jwks))
    (folder / "examples").symlink_to(REPO / "examples")
    (folder / "specs").symlink_to(REPO / "specs")
    config = (REPO / "mcpgen.yaml").read_text()
    config += f"auth:\n  issuer: {ISSUER}\n  audience: {audience}\n  jwks_file: jwks.json\n  scopes: [mcp:read]\n"
    config += "http:\n  tokens_env: [MCPGEN_BENCH_TOKEN]\n"
    (folder / "mcpgen.yaml").write_text(config)
    return folder / "specs"


def http_p50(url: str, bearer: dict[str, str], calls: int) -> dict[str, float]:
    """p50 ms of tools/call per kind of token, requests alternating between kinds."""
    times: dict[str, list[float]] = {kind: [] for kind in bearer}
    with httpx2.Client(timeout=30) as client:
        for i in range(calls * len(bearer) + 50):
            kind = list(bearer)[i % len(bearer)]
            headers = {**HEADERS, "authorization": f"Bearer {bearer[kind]}"}
            start = time.perf_counter()
            response = client.post(url, json=CALL, headers=headers)
            elapsed = (time.perf_counter() - start) * 1000
            if response.status_code != 200 or "error" in response.json():
                raise SystemExit(f"a call failed: {response.status_code} {response.text[:200]}")
            if i >= 50:  # warm-up
                times[kind].append(elapsed)
    return {kind: statistics.median(values) for kind, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000, help="HTTP calls per kind of token")
    parser.add_argument("--rounds", type=int, default=5000, help="in-process verifications per algorithm")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()

    port = free_port()
    audience = f"http://127.0.0.1:{port}/mcp"
    material = keys()
    jwks = {"keys": [public for _, _, public in material]}
    tokens = {alg: token(alg, key, audience) for alg, key, _ in material}
    with tempfile.TemporaryDirectory() as tmp:
        specs = project(Path(tmp), jwks, audience)
        verifier = JWTVerifier(ISSUER, audience, KeySet(file=Path(tmp) / "jwks.json"))
        verify_us = verify_cost(verifier, tokens, args.rounds)
        shared = secrets.token_hex(24)
        proc = subprocess.Popen(
            [sys.executable, "-m", "mcpgen.cli", "serve", str(specs), "--http", "--port", str(port)],
            env={**os.environ, "MCPGEN_BENCH_TOKEN": shared, "PYTHONPATH": str(REPO)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    if httpx2.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                        break
                except httpx2.TransportError:
                    pass
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise SystemExit("the server did not start")
                time.sleep(0.1)
            p50 = http_p50(audience, {"jwt": tokens["RS256"], "shared": shared}, args.calls)
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(10)
    result = {
        "verify_us": {k: round(v, 1) for k, v in verify_us.items()},
        "tools_call_p50_ms": {k: round(v, 3) for k, v in p50.items()},
        "rs256_share_of_p50_pct": round(verify_us["RS256"] / 1000 / p50["jwt"] * 100, 2),
        "jwt_minus_shared_p50_ms": round(p50["jwt"] - p50["shared"], 3),
    }
    if args.json:
        print(json.dumps(result))
        return
    for alg, us in result["verify_us"].items():
        print(f"verify_token {alg:6} {us:8.1f} µs (keys cached)")
    print(f"tools/call p50, JWT (RS256)   {p50['jwt']:.3f} ms")
    print(f"tools/call p50, shared token  {p50['shared']:.3f} ms")
    print(f"RS256 verification / tools/call p50: {result['rs256_share_of_p50_pct']:.2f}% (target < 5%)")
    print(f"p50 difference JWT - shared token:  {result['jwt_minus_shared_p50_ms']:+.3f} ms")


if __name__ == "__main__":
    main()
