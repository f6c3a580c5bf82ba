"""mcpgen replicas behind HAProxy on loopback: N `mcpgen serve --http` processes, one load balancer.

HAProxy health-checks each replica's `/healthz` every 500 ms and retries a request on another
replica when the first could not take it (see docs/deploy.md for which retries are safe):

    python bench/replicas.py --replicas 2           # prints the URL and the token; Ctrl-C stops all

Used by bench/bench_replicas.py and tests/replicas/test_replicas.py. Needs the `haproxy` binary
(Debian: apt-get install haproxy).
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx2

REPO = Path(__file__).resolve().parent.parent
TOKEN_ENV = "MCPGEN_REPLICA_TOKEN"

HAPROXY_CFG = """\
global
    maxconn 4096
    stats socket {stats} mode 600 level admin

defaults
    mode http
    timeout connect 1s
    timeout client 60s
    timeout server 60s
    timeout check 5s
    timeout queue 30s
    option http-buffer-request
    # A request is sent again, to another replica, only when the first could not have answered it:
    # the connection failed (nothing reached the replica), or the replica closed it without a byte
    # of answer (it died mid-call). Safe because every tool is read-only and idempotent; timeouts
    # and 5xx answers are not retried (they would double a slow query's load).
    retries 3
    retry-on conn-failure empty-response
    option redispatch 1

frontend mcp
    bind 127.0.0.1:{port}
    default_backend replicas

backend replicas
    balance leastconn
    option httpchk GET /healthz
    http-check expect status 200
    default-server inter 500ms fall 2 rise 2 maxconn 64
{servers}
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Replicas:
    """`count` replicas of `mcpgen serve --http SPECS` (each its own copy of the project when
    `own_copies`, so one can be reloaded alone) behind one HAProxy. Start with start(), stop with stop()."""

    def __init__(self, specs: Path, count: int = 2, reload: bool = False, own_copies: bool = False):
        self.specs, self.count, self.reload, self.own_copies = Path(specs).resolve(), count, reload, own_copies
        self.folder = Path(tempfile.mkdtemp(prefix="mcpgen-replicas-"))
        self.token = secrets.token_urlsafe(32)
        self.port = free_port()
        self.ports = [free_port() for _ in range(count)]
        self.servers: list[subprocess.Popen | None] = [None] * count
        self.haproxy: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def specs_of(self, i: int) -> Path:
        """The specs folder replica `i` serves."""
        return self.folder / f"project{i}" / self.specs.name if self.own_copies else self.specs

    def start(self) -> Replicas:
        for i in range(self.count):
            if self.own_copies:  # the specs, mcpgen.yaml beside them and the data it reads
                project = self.folder / f"project{i}"
                shutil.copytree(self.specs, project / self.specs.name)
                shutil.copyfile(self.specs.parent / "mcpgen.yaml", project / "mcpgen.yaml")
                shutil.copytree(self.specs.parent / "examples", project / "examples")
            self.start_replica(i)
        servers = "\n".join(f"    server r{i} 127.0.0.1:{p} check" for i, p in enumerate(self.ports))
        config = self.folder / "haproxy.cfg"
        stats = self.folder / "haproxy.sock"
        config.write_text(HAPROXY_CFG.format(port=self.port, servers=servers, stats=stats))
        haproxy = shutil.which("haproxy") or "/usr/sbin/haproxy"
        check = subprocess.run([haproxy, "-c", "-q", "-f", str(config)], capture_output=True, text=True)
        if check.returncode:
            raise RuntimeError(f"haproxy rejects the configuration: {check.stderr.strip()}")
        self.haproxy = subprocess.Popen(
            [haproxy, "-db", "-f", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        self.wait_up(list(range(self.count)))
        return self

    def start_replica(self, i: int) -> None:
        command = [sys.executable, "-m", "mcpgen.cli", "serve", str(self.specs_of(i)), "--http"]
        command += ["--host", "127.0.0.1", "--port", str(self.ports[i]), "--auth-token-env", TOKEN_ENV]
        command += ["--allow-host", f"127.0.0.1:{self.port}"]  # the Host header clients send to HAProxy
        if self.reload:
            command.append("--reload")
        log = open(self.folder / f"replica{i}.log", "ab")  # noqa: SIM115 (the child holds it)
        self.servers[i] = subprocess.Popen(
            command, env={**os.environ, TOKEN_ENV: self.token}, stdout=log, stderr=subprocess.STDOUT
        )
        log.close()
        deadline = time.monotonic() + 60
        while not self.healthy(i):
            if self.servers[i].poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"replica {i} did not start; see {self.folder / f'replica{i}.log'}")
            time.sleep(0.1)

    def healthy(self, i: int) -> bool:
        try:
            return httpx2.get(f"http://127.0.0.1:{self.ports[i]}/healthz", timeout=1).status_code == 200
        except httpx2.TransportError:
            return False

    def backend_states(self) -> dict[str, str]:
        """HAProxy's view: server name -> UP, DOWN, ... (from its stats socket)."""
        with socket.socket(socket.AF_UNIX) as s:
            s.connect(str(self.folder / "haproxy.sock"))
            s.sendall(b"show stat\n")
            data = b""
            while chunk := s.recv(65536):
                data += chunk
        rows = [line.split(",") for line in data.decode().splitlines() if line and not line.startswith("#")]
        return {r[1]: r[17] for r in rows if r[0] == "replicas" and r[1] not in ("BACKEND", "FRONTEND")}

    def wait_up(self, replicas: list[int], timeout: float = 30) -> None:
        """Until HAProxy sees exactly these replicas UP."""
        want = {f"r{i}" for i in replicas}
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                up = {name for name, state in self.backend_states().items() if state == "UP"}
                if up == want:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"HAProxy does not see replicas {sorted(want)} up: {self.backend_states()}")

    def kill(self, i: int) -> None:
        """SIGKILL replica i: no goodbye, calls in flight are cut."""
        server = self.servers[i]
        if server is not None and server.poll() is None:
            server.kill()
            server.wait(10)

    def stop(self) -> None:
        for server in self.servers:
            if server is not None and server.poll() is None:
                server.send_signal(signal.SIGINT)
        for server in self.servers:
            if server is not None:
                try:
                    server.wait(15)
                except subprocess.TimeoutExpired:
                    server.kill()
        if self.haproxy is not None and self.haproxy.poll() is None:
            self.haproxy.terminate()
            self.haproxy.wait(10)
        shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> Replicas:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--specs", type=Path, default=REPO / "specs")
    args = parser.parse_args()
    with Replicas(args.specs, args.replicas) as replicas:
        print(f"{args.replicas} replicas behind {replicas.url}; token: {replicas.token}", flush=True)
        print(f"replica ports: {replicas.ports}; Ctrl-C stops everything", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
