#!/usr/bin/env python3
"""What verifying an OAuth access token costs per call, with the issuer's keys cached.

Side by side in one run:

1. in-process: `JWTVerifier.verify_token` on valid RS256, ES256 and EdDSA tokens (keys from
   a JWKS file, so the keys are always cached), median microseconds for a token seen for the
   first time (the full check) and for the same token again (remembered until it expires);
2. over HTTP: one `mcpgen serve --http` process (the shipped specs, `auth:` with that JWKS
   file, and a shared token beside it), answering `tools/call top_cities` through the
   official MCP client (one per kind of token, TCP_NODELAY), calls alternating between a
   JWT and the shared token; p50 of each.

Prints the full check's share of a tools/call's p50 (target: under 5%), the repeated
token's, and the p50 difference between the two kinds of token.

    python bench/bench_auth.py              # 1,000 HTTP calls of each kind
    python bench/bench_auth.py --calls 200 --json
"""

from __future__ import annotations

import argparse
import contextlib
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
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from mcpgen.http.auth import JWTVerifier, KeySet  # noqa: E402

ISSUER = "https://id.bench.invalid/"
CALL = ("top_cities", {"top_n": 5})


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
    claims.update(iat=now, exp=now + 3600, jti=secrets.token_hex(8))  # a distinct token each time
    return jwt.encode(claims, key, algorithm=alg, headers={"kid": alg.lower()})


def verify_cost(verifier: JWTVerifier, material, audience: str, rounds: int) -> dict[str, dict[str, float]]:
    """Median microseconds per verify_token, per algorithm: a token seen for the first time (full
    check, keys cached) and the same token again (remembered); batches of 100."""

    async def run() -> dict[str, dict[str, float]]:
        out = {}
        for alg, key, _ in material:
            fresh = [token(alg, key, audience) for _ in range(rounds)]
            new, again = [], []
            for start in range(0, rounds, 100):
                batch = fresh[start : start + 100]
                began = time.perf_counter()
                for tok in batch:
                    assert await verifier.verify_token(tok) is not None, alg
                new.append((time.perf_counter() - began) / len(batch) * 1e6)
                began = time.perf_counter()
                for _ in batch:
                    await verifier.verify_token(batch[0])
                again.append((time.perf_counter() - began) / len(batch) * 1e6)
            out[alg] = {"new": statistics.median(new), "again": statistics.median(again)}
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
    """p50 ms of tools/call per kind of token through the official MCP client, alternating kinds."""

    async def run() -> dict[str, float]:
        times: dict[str, list[float]] = {kind: [] for kind in bearer}
        async with contextlib.AsyncExitStack() as stack:
            clients = {}
            for kind, token in bearer.items():
                # TCP_NODELAY: else the request's last small segment waits on a delayed ACK (~40 ms)
                # and that wait, not the server, decides the latency.
                transport = httpx2.AsyncHTTPTransport(socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)])
                headers = {"Authorization": f"Bearer {token}"}
                http = httpx2.AsyncClient(headers=headers, timeout=30, transport=transport)
                clients[kind] = await stack.enter_async_context(Client(streamable_http_client(url, http_client=http)))
            for i in range(calls * len(bearer) + 50):
                kind = list(bearer)[i % len(bearer)]
                start = time.perf_counter()
                result = await clients[kind].call_tool(*CALL)
                elapsed = (time.perf_counter() - start) * 1000
                if result.is_error:
                    raise SystemExit(f"a call failed: {result.content[0].text}")
                if i >= 50:  # warm-up
                    times[kind].append(elapsed)
        return {kind: statistics.median(values) for kind, values in times.items()}

    return anyio.run(run)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000, help="HTTP calls per kind of token")
    parser.add_argument("--rounds", type=int, default=2000, help="in-process tokens verified per algorithm")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()

    port = free_port()
    audience = f"http://127.0.0.1:{port}/mcp"
    material = keys()
    jwks = {"keys": [public for _, _, public in material]}
    jwt_token = token("RS256", material[0][1], audience)
    with tempfile.TemporaryDirectory() as tmp:
        specs = project(Path(tmp), jwks, audience)
        verifier = JWTVerifier(ISSUER, audience, KeySet(file=Path(tmp) / "jwks.json"))
        verify_us = verify_cost(verifier, material, audience, args.rounds)
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
            p50 = http_p50(audience, {"jwt": jwt_token, "shared": shared}, args.calls)
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(10)
    first = verify_us["RS256"]["new"] / 1000 / p50["jwt"] * 100
    result = {
        "verify_us": {alg: {k: round(v, 1) for k, v in d.items()} for alg, d in verify_us.items()},
        "tools_call_p50_ms": {k: round(v, 3) for k, v in p50.items()},
        "rs256_new_token_share_of_p50_pct": round(first, 2),
        "rs256_same_token_share_of_p50_pct": round(verify_us["RS256"]["again"] / 1000 / p50["jwt"] * 100, 3),
        "jwt_minus_shared_p50_ms": round(p50["jwt"] - p50["shared"], 3),
    }
    if args.json:
        print(json.dumps(result))
        return
    for alg, d in result["verify_us"].items():
        print(f"verify_token {alg:6} new token {d['new']:8.1f} µs, same token again {d['again']:6.1f} µs")
    print(f"tools/call p50, JWT (RS256)   {p50['jwt']:.3f} ms")
    print(f"tools/call p50, shared token  {p50['shared']:.3f} ms")
    print(f"RS256 new token / tools/call p50:  {result['rs256_new_token_share_of_p50_pct']:.2f}% (target < 5%)")
    print(f"RS256 same token / tools/call p50: {result['rs256_same_token_share_of_p50_pct']:.3f}%")
    print(f"p50 difference JWT - shared token: {result['jwt_minus_shared_p50_ms']:+.3f} ms")


if __name__ == "__main__":
    main()
