"""One caller must not stall everyone: patterns that backtrack, templates that grow inside
filters, and HTTP requests left half-open. Each class has several shapes; each test failed
before the fix that it names.
"""

from __future__ import annotations

import time
import tracemalloc

import pytest

from mcpgen.errors import ArgumentError, RenderError
from mcpgen.spec.models import Parameter
from mcpgen.spec.params import Arguments
from mcpgen.templates.render import Template

# Patterns: linear time, and JSON Schema's (ECMA-262) meaning ------------------------------------

EVIL = [
    ("^([A-Za-z]+ ?)*$", "a" * 40 + "!"),
    ("^(a+)+$", "a" * 40 + "b"),
    ("^(a|a)*$", "a" * 40 + "b"),
    ("^(\\w+\\s?)*$", "word" * 12 + "!"),
    ("(x+x+)+y", "x" * 40),
]


@pytest.mark.timeout(20)
@pytest.mark.parametrize("pattern, value", EVIL)
def test_backtracking_patterns_answer_at_once(pattern, value):
    args = Arguments({"s": Parameter(type="string", description="s", pattern=pattern)})
    start = time.monotonic()
    with pytest.raises(ArgumentError, match="'s'.*does not match the pattern"):
        args.validate({"s": value})
    assert time.monotonic() - start < 0.5


@pytest.mark.parametrize(
    "pattern, value, ok",
    [
        ("^[A-Z]{2}$", "JP", True),
        ("^[A-Z]{2}$", "JP\n", False),  # Python's $ matches before a final newline; ECMA's does not
        ("^[a-z]+$", "abc\n", False),
        ("^\\d+$", "١٢٣", False),  # ECMA's \d is ASCII; Python's str \d takes Arabic-Indic digits
        ("^\\w+$", "ßø", False),  # ECMA's \w is ASCII too
        ("[0-9]", "Zone 9", True),  # unanchored: found anywhere, as in JSON Schema
        ("^a.c$", "a\nc", False),  # . stops at a line break
        ("^a.c$", "a\rc", False),  # ... at every ECMA-262 line terminator (RE2's . takes \r)
        ("^a.c$", "a\u2028c", False),
        ("^a\\sc$", "a\u00a0c", True),  # ECMA's \s takes Unicode spaces (RE2's does not)
        ("^a[\\s-]c$", "a\u3000c", True),
        ("^a\\Sc$", "a\u3000c", False),
        ("^[^.]+$", "a.b", False),  # a dot in brackets is a dot
    ],
)
def test_patterns_have_the_json_schema_meaning(pattern, value, ok):
    args = Arguments({"s": Parameter(type="string", description="s", pattern=pattern)})
    if ok:
        assert args.validate({"s": value}) == {"s": value}
    else:
        with pytest.raises(ArgumentError, match="pattern"):
            args.validate({"s": value})
    assert args.schema["properties"]["s"]["pattern"] == pattern  # published as written: JSON Schema's meaning


@pytest.mark.parametrize(
    "pattern",
    [
        *["(a)\\1", "(?=a)b", "(?!a)b", "(?<=a)b", "(?<!a)b", "a++", "[z-a]"],  # backtracking, or broken
        *["(?i)abc", "(?P<x>a)", "\\Aabc", "abc\\z", "[[:alpha:]]+", "[\\S]"],  # not ECMA-262, which we publish
    ],
)
def test_patterns_that_need_backtracking_or_are_broken_fail_validate(tmp_path, pattern):
    import json
    import textwrap

    from hostile_specs import SPECS, write_project

    from mcpgen.load.project import load_project

    spec = textwrap.dedent(SPECS["find_city"]).replace('pattern: "^[A-Z]{2}$"', f"pattern: {json.dumps(pattern)}")
    assert f"pattern: {json.dumps(pattern)}" in spec
    problems = [str(p) for p in load_project(write_project(tmp_path, {"find_city": spec})).errors]
    assert problems and "find_city.yaml:" in problems[0] and "pattern" in problems[0], problems
    assert "Traceback" not in problems[0]


# Templates: every string a filter, method or operator builds is bounded, not only the output ------

GROWTH = [
    "{{ ('x\\n' * 20000) | indent(2000) }}",
    "{{ ('x\\n' * 20000) | indent('y' * 2000) | length }}",
    "{{ range(20000) | map('center', 3000) | join }}",
    "{{ range(20000) | map('center', 3000) | list | length }}",
    "{% set ns = namespace(s='x' * 100000) %}{% for i in range(8) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s | length }}",
    "{% set ns = namespace(s='x' * 100000) %}{% for i in range(8) %}{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s | length }}",
    "{% set ns = namespace(l=[0] * 100000) %}{% for i in range(5) %}{% set ns.l = ns.l + ns.l %}{% endfor %}{{ ns.l | length }}",
    "{% set ns = namespace(s='x' * 50000) %}{% for i in range(8) %}{% set b %}{{ ns.s }}{{ ns.s }}{% endset %}{% set ns.s = b %}{% endfor %}{{ ns.s | length }}",
    "{{ ('%s' * 150) | format(*(['x' * 100000] * 150)) | length }}",
    "{{ ([[0] * 1000] * 1000) | sum(start=[]) | length }}",
    "{{ ('\\t' * 1000).expandtabs(20000) | length }}",
    "{{ ('x' * 20000).translate({120: 'y' * 1000}) | length }}",
    "{{ lipsum(2000, false, 100, 100) | length }}",
    "{{ [[0] * 3000] * 3000 }}",
    "{% set f = '{0}' * 30000 %}{{ f.format('x' * 100000) | length }}",  # one argument, many fields
    "{% set f = '%(a)s' * 20000 %}{{ (f % {'a': 'x' * 100000}) | length }}",
    "{% set f = '%s' * 2 %}{{ f | format('x' * 100000, 'y' * 100000) | length }}",
    "{% set a = [0] * 100000 %}{% set b = [a, a, a, a, a, a, a, a, a, a] %}{{ [b, b, b, b, b] | string | length }}",
    "{% set a = [[[[[[[[[[0]]]]]]]]]] %}{{ ([a] * 1000) | tojson(indent=1000) | length }}",
    "{{ ('http://a.example ' * 5000) | urlize(target='x' * 10000) | length }}",
]

BUFFERED = [
    "{% filter upper %}{% for i in range(100000) %}{{ big }}{% endfor %}{% endfilter %}",
    "{% set s %}{% for i in range(100000) %}{{ big }}{% endfor %}{% endset %}{{ s | length }}",
    "{% macro m() %}{% for i in range(100000) %}{{ big }}{% endfor %}{% endmacro %}{{ m() | length }}",
    "{% set s %}{% for i in range(100000) %}" + "x" * 2000 + "{% endfor %}{% endset %}{{ s | length }}",
    "{% macro m() %}{{ caller() }}{% endmacro %}{% call m() %}{% for i in range(100000) %}{{ big }}{% endfor %}{% endcall %}",
]


@pytest.mark.parametrize("source", GROWTH, ids=range(len(GROWTH)))
def test_filters_and_operators_cannot_build_huge_values(source):
    tracemalloc.start()
    start = time.monotonic()
    try:
        with pytest.raises(RenderError) as caught:
            Template(source).render({})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert time.monotonic() - start < 2
    assert peak < 15 * 2**20, f"{peak / 2**20:.0f} MiB allocated before it was refused"
    assert "Traceback" not in str(caught.value) and len(str(caught.value)) < 200


@pytest.mark.parametrize("source", BUFFERED, ids=range(len(BUFFERED)))
def test_output_held_in_a_block_counts_too(source):
    # a row value of 100,000 characters, written 100,000 times where the output cap does not look
    tracemalloc.start()
    start = time.monotonic()
    try:
        with pytest.raises(RenderError, match="more than"):
            Template(source).render({"big": "x" * 100_000})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert time.monotonic() - start < 2
    assert peak < 15 * 2**20, f"{peak / 2**20:.0f} MiB allocated before it was refused"


@pytest.mark.timeout(20)
@pytest.mark.parametrize(
    "source",
    [
        "{% macro m(n) %}{% if n %}{{ m(n - 1) }}{{ m(n - 1) }}{% endif %}{% endmacro %}{{ m(40) }}",
        "{% macro m(n) %}{% if n %}{{ m(n - 1) ~ m(n - 1) }}{% endif %}{% endmacro %}{{ m(40) }}",
        "{% macro m(n) %}{{ [n] | select('>', 0) | map('abs') | list }}{{ m(n - 1) if n }}{{ m(n - 1) if n }}{% endmacro %}{{ m(40) }}",
    ],
)
def test_the_clock_is_checked_outside_loops_too(source):
    start = time.monotonic()
    with pytest.raises(RenderError, match="longer than|more than"):
        Template(source).render({})
    assert time.monotonic() - start < 2


def test_ordinary_templates_over_many_rows_still_render():
    rows = [{"name": f"City {i}", "population": i * 1000, "note": "x" * 50} for i in range(1000)]
    source = (
        "{{ row_count }} cities, {{ rows | sum(attribute='population') | thousands }} people. "
        "{% for r in rows | sort(attribute='population', reverse=true) %}{{ loop.index }}. "
        "{{ r.name | upper }} ({{ r.population | thousands }}){{ ', ' if not loop.last }}{% endfor %} "
        "{{ rows | map(attribute='name') | list | join_names }} {{ 'Busiest: ' ~ rows[-1].name }}"
        "{{ ('-' * 20) | center(40) }}"
    )
    text = Template(source).render({"rows": rows, "row_count": len(rows)})
    assert text.startswith("1000 cities, 499,500,000 people. 1. CITY 999 (999,000), ")
    assert "Busiest: City 999" in text


# HTTP: half-open requests, too many connections, floods of log lines ------------------------------


def _serve(tmp_path, *flags, nofile: int | None = None):
    """A real `serve --http` on a free loopback port, stderr to a file; returns (proc, port, log)."""
    import resource

    from servers import TOKEN, free_port, start, wait_healthy
    from shipped import SPECS

    port = free_port()
    log = tmp_path / "stderr.log"

    def limit_files():
        resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    err = open(log, "w")  # noqa: SIM115 (closed by the caller's stop)
    proc = start(
        [str(SPECS), "--http", "--port", str(port), "--auth-token-env", "MCPGEN_TEST_TOKEN", *flags],
        env={"MCPGEN_TEST_TOKEN": TOKEN},
        stderr=err,
    )
    if nofile:  # Popen's preexec_fn is not available through test_http.start: apply it to the child
        resource.prlimit(proc.pid, resource.RLIMIT_NOFILE, (nofile, nofile))
    wait_healthy(proc, port)
    return proc, port, log, err


def _attack(port: int, count: int, shape: str) -> list:
    import socket

    socks = []
    for i in range(count):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        if shape == "header":
            s.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Slow-{i}: ".encode())
        elif shape == "kept-alive":  # one whole request, then half of the next on the same connection
            s.sendall(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\nGET /healthz HTTP/1.1\r\nHo".encode())
        elif shape == "garbage":  # uvicorn warns about each one: the warnings must not flood stderr
            s.sendall(b"\x16\x03\x01 not HTTP at all\r\n\r\n")
        elif shape == "body":
            s.sendall(
                f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
                f'Content-Length: 1000\r\n\r\n{{"jsonrpc"'.encode()
            )
        socks.append(s)  # "idle": connected, nothing sent
    return socks


def _answers(port: int) -> None:
    """/healthz and an authorised tools/call both answer promptly."""
    import httpx2
    from servers import JSON_HEADERS, TOKEN

    assert httpx2.get(f"http://127.0.0.1:{port}/healthz", timeout=3).status_code == 200
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "top_cities", "arguments": {"top_n": 2}},
    }
    headers = {**JSON_HEADERS, "authorization": f"Bearer {TOKEN}"}
    response = httpx2.post(f"http://127.0.0.1:{port}/mcp", json=call, headers=headers, timeout=5)
    assert response.status_code == 200 and not response.json()["result"]["isError"], response.text


def _closed_by_server(socks, seconds: float) -> int:
    """How many of `socks` the server closed within `seconds` (EOF, after any answer)."""
    import selectors

    closed, deadline = 0, time.monotonic() + seconds
    with selectors.DefaultSelector() as selector:  # epoll: more than 1,024 descriptors
        for s in socks:
            selector.register(s, selectors.EVENT_READ)
        while selector.get_map() and time.monotonic() < deadline:
            for key, _ in selector.select(0.2):
                try:
                    data = key.fileobj.recv(4096)
                except OSError:
                    data = b""
                if not data:  # an answer (200, 408, 503) may come first: only the end counts
                    closed += 1
                    selector.unregister(key.fileobj)
    return closed


@pytest.mark.slow
def test_half_open_requests_are_cut_off_and_the_server_keeps_answering(tmp_path):
    from servers import stop

    proc, port, log, err = _serve(tmp_path, "--header-timeout", "1.5", "--body-timeout", "1.5")
    socks = []
    try:
        socks = [*_attack(port, 180, "header"), *_attack(port, 60, "body"), *_attack(port, 40, "idle")]
        socks += [*_attack(port, 20, "kept-alive"), *_attack(port, 100, "garbage")]
        start = time.monotonic()
        _answers(port)  # while 300 half-open requests are held open
        assert time.monotonic() - start < 3
        assert _closed_by_server(socks, 5) == len(socks)  # each cut off at its deadline, none left hanging
        _answers(port)
    finally:
        for s in socks:
            s.close()
        stop(proc)
        err.close()
    assert proc.returncode == 0
    text = log.read_text()
    assert len(text.splitlines()) < 15 and "Traceback" not in text, text[-2000:]  # one line per kind of warning


@pytest.mark.slow
def test_more_connections_than_files_never_exhaust_descriptors(tmp_path):
    from servers import stop

    # 1,024 descriptors for the whole process (room for 384 connections): the incident took the
    # server down with ~1,100 half-open sockets
    proc, port, log, err = _serve(tmp_path, "--header-timeout", "3", nofile=1024)
    socks = []
    try:
        socks = _attack(port, 1100, "header")
        _answers(port)  # at once, with hundreds of half-sent requests still held open
        assert _closed_by_server(socks, 1) >= 1100 - 384  # the oldest made room for the newer ones
        assert _closed_by_server(socks, 5) == len(socks)  # and the rest went at their deadline
    finally:
        for s in socks:
            s.close()
        stop(proc)
        err.close()
    text = log.read_text()
    assert "Too many open files" not in text and "out of system resource" not in text, text[-2000:]
    assert len(text.splitlines()) < 20, text[-2000:]  # one rate-limited line per kind, not one per socket


@pytest.mark.slow
def test_get_on_the_mcp_endpoint_opens_no_stream(tmp_path):
    import httpx2
    from servers import TOKEN, stop

    proc, port, log, err = _serve(tmp_path)
    try:
        headers = {"authorization": f"Bearer {TOKEN}", "accept": "text/event-stream"}
        start = time.monotonic()
        response = httpx2.get(f"http://127.0.0.1:{port}/mcp", headers=headers, timeout=5)
        assert response.status_code == 405 and response.headers["allow"] == "POST"
        assert time.monotonic() - start < 2
        with httpx2.stream("GET", f"http://127.0.0.1:{port}/mcp/", headers=headers, timeout=5) as streamed:
            assert streamed.status_code in (405, 307)
            stop(proc)  # stopping with a GET in flight
    finally:
        stop(proc)
        err.close()
    assert proc.returncode == 0
    assert "ASGI" not in log.read_text() and "Traceback" not in log.read_text()


@pytest.mark.parametrize("method, path", [("GET", "/mcp"), ("GET", "/mcp/"), ("HEAD", "/mcp")])
def test_get_on_the_mcp_endpoint_is_405_in_process(method, path):
    import anyio
    import httpx2

    from mcpgen.http.app import build_app
    from mcpgen.http.options import HTTPOptions
    from mcpgen.serve.registry import Registry
    from mcpgen.serve.server import ToolServer

    app = build_app(ToolServer(Registry()), HTTPOptions(port=8000))

    async def main():
        async with app.router.lifespan_context(app):
            transport = httpx2.ASGITransport(app=app)
            async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000") as client:
                with anyio.fail_after(5):  # an event stream would never end
                    return await client.request(method, path, headers={"accept": "text/event-stream"})

    response = anyio.run(main)
    assert response.status_code == 405 and response.headers["allow"] == "POST"


def test_a_flood_of_accept_errors_is_logged_once_per_interval(monkeypatch):
    import logging

    from mcpgen.http.connections import RateLimitedLog

    log = logging.getLogger("asyncio.test-flood")
    seen: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append(record.getMessage())  # type: ignore[method-assign]
    log.addHandler(handler)
    log.addFilter(RateLimitedLog(every=0.5))
    log.propagate = False
    try:
        clock = [100.0]  # the filter's own clock, moved by hand: a loaded machine cannot stretch the flood
        monkeypatch.setattr("mcpgen.http.connections.time.monotonic", lambda: clock[0])
        for fd in range(10_000):  # what EMFILE made asyncio write, one message per socket
            log.error("socket.accept() out of system resource\nsocket: <socket fd=%d>\nOSError: [Errno 24]", fd)
        clock[0] += 0.6
        log.error("socket.accept() out of system resource\nsocket: <socket fd=1>")
    finally:
        log.removeHandler(handler)
    assert len(seen) == 2
    assert "9999 more like this" in seen[1]
