#!/usr/bin/env python3
"""Replicas behind HAProxy: calls/s with one replica against two, and a replica killed mid-run.

The load is bench/bench_http_load.py's (C official MCP clients over streamable HTTP, the
shipped tools in turn), sent to HAProxy (bench/replicas.py). Rounds alternate one and two
replicas so that both see the same machine; then a round with two replicas in which one is
SIGKILLed a third of the way through must lose no call.

    python bench/bench_replicas.py                    # 2,000 calls a round, 50 clients, 2 rounds each
    python bench/bench_replicas.py --calls 300 --rounds 1 --json     # the short version the tests run
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_http_load import run_load
from replicas import REPO, Replicas


def one_round(count: int, calls: int, clients: int, kill_after: int | None = None) -> dict:
    with Replicas(REPO / "specs", count) as replicas:
        killed = threading.Event()
        if kill_after is not None:

            def killer() -> None:
                # Kill replica 1 once `kill_after` calls are done (polled through HAProxy's counters).
                while not killed.is_set():
                    if _done(replicas) >= kill_after:
                        replicas.kill(1)
                        killed.set()
                    time.sleep(0.05)

            threading.Thread(target=killer, daemon=True).start()
        latencies, errors, wall, _, _, made_again = anyio.run(
            run_load, replicas.url, replicas.token, calls, clients, 600.0, calls + 1, replicas.servers[0].pid
        )
        killed.set()
    return {
        "replicas": count,
        "calls": len(latencies),
        "errors": len(errors),
        "first_errors": errors[:3],
        "made_again": made_again,
        "calls_per_s": round(len(latencies) / wall, 1),
        "wall_s": round(wall, 2),
    }


def _done(replicas: Replicas) -> int:
    """Requests HAProxy has answered so far (each call is two: initialize, tools/call)."""
    with __import__("socket").socket(__import__("socket").AF_UNIX) as s:
        s.connect(str(replicas.folder / "haproxy.sock"))
        s.sendall(b"show stat\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    for line in data.decode().splitlines():
        fields = line.split(",")
        if fields[0] == "replicas" and fields[1] == "BACKEND":
            return int(fields[7] or 0) // 3  # stot: sessions; a call opens ~3 requests (initialize, notification, call)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rounds = []
    for _ in range(args.rounds):
        for count in (1, 2):
            rounds.append(one_round(count, args.calls, args.clients))
    killed = one_round(2, args.calls, args.clients, kill_after=args.calls // 3)
    one = [r["calls_per_s"] for r in rounds if r["replicas"] == 1]
    two = [r["calls_per_s"] for r in rounds if r["replicas"] == 2]
    report = {
        "clients": args.clients,
        "calls_per_round": args.calls,
        "one_replica_calls_per_s": one,
        "two_replicas_calls_per_s": two,
        "ratio": round(sum(two) / sum(one), 2),
        "errors": sum(r["errors"] for r in rounds),
        "killed_round": killed,
    }
    ok = report["errors"] == 0 and killed["errors"] == 0 and killed["calls"] == args.calls
    if args.json:
        print(json.dumps(report))
    else:
        print(f"{args.clients} clients, {args.calls} calls a round")
        print(f"one replica:  {one} calls/s")
        print(f"two replicas: {two} calls/s  (ratio {report['ratio']})")
        print(
            f"replica killed a third of the way: {killed['calls']} calls, {killed['errors']} errors, "
            f"{killed['calls_per_s']} calls/s"
        )
        for message in killed["first_errors"]:
            print(f"error: {message}", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
