"""The preview's HTTP API, without a browser (the browser tests are in test_preview.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from mcpgen.commands.preview import preview_app
from mcpgen.serve.mcp_app import CHARTJS

SPEC = """\
title: Numbers
description: Count up to n.
parameters:
  n:
    type: integer
    description: How many
    default: 3
    minimum: 1
    maximum: 10
sql: SELECT range AS i, range * 2 AS twice FROM range(:n)
sources: [https://example.org/numbers]
content: "{{ row_count }} numbers"
chart: {type: bar, x: i, y: twice}
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # open_project changes the working directory; get it back afterwards
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "numbers.yaml").write_text(SPEC)
    return specs


def client(specs, **kw):
    return TestClient(preview_app(specs, watch=False, **kw), base_url="http://127.0.0.1:8765")


def test_tools_call_and_checks(project):
    with client(project) as http:
        page = http.get("/")
        assert page.status_code == 200 and '<script src="/static/preview.js"' in page.text
        assert "script-src 'self';" in page.headers["content-security-policy"]
        assert "frame-src 'self'" in page.headers["content-security-policy"]
        tools = http.get("/api/tools").json()
        assert tools["errors"] == [] and tools["version"] == 1
        assert [t["name"] for t in tools["tools"]] == ["numbers"]
        assert tools["tools"][0]["inputSchema"]["properties"]["n"]["maximum"] == 10

        out = http.post("/api/call/numbers", json={"n": 2}).json()
        assert out["result"]["structuredContent"]["table"] == [["i", "twice"], [0, 0], [1, 2]]
        assert out["result"]["isError"] is False and out["elapsed_ms"] >= 0
        bad = http.post("/api/call/numbers", json={"n": 11}).json()["result"]
        assert bad["isError"] is True
        assert bad["content"][0]["text"] == "Invalid argument 'n': 11 is greater than the maximum of 10."

        assert http.post("/api/call/nope", json={}).status_code == 404
        assert http.post("/api/call/numbers", json=[1]).status_code == 400
        assert (
            http.post(
                "/api/call/numbers", content=b"n=2", headers={"content-type": "application/x-www-form-urlencoded"}
            ).status_code
            == 415
        )
        assert http.get("/api/version", headers={"host": "evil.example"}).status_code == 400


def test_broken_specs_are_listed_with_file_and_line(project):
    (project / "numbers.yaml").write_text(SPEC.replace("title: Numbers", "title: Numbers\ntitel: x"))
    with client(project) as http:
        tools = http.get("/api/tools").json()
    assert tools["tools"] == [] and tools["stale"] is False
    assert [e["text"] for e in tools["errors"]] == ["specs/numbers.yaml:2:1: unknown key 'titel'"]


def test_the_app_is_served_under_the_csp_a_host_builds(project, tmp_path, monkeypatch):
    monkeypatch.setattr("mcpgen.serve.mcp_app.VENDOR", tmp_path / "no-vendor")
    monkeypatch.delenv("MCPGEN_CHARTJS", raising=False)
    with client(project) as http:
        page = http.get("/app/numbers")
        assert page.status_code == 200 and page.text.startswith("<!doctype html>")
        csp = page.headers["content-security-policy"]
        # No Chart.js here: the app falls back to the CDN, which it declares and the host allows.
        assert csp.startswith("default-src 'none'; script-src 'self' 'unsafe-inline' https://cdn.jsdelivr.net;")
        assert "connect-src 'self';" in csp and "frame-src 'none'" in csp
        assert CHARTJS.cdn in page.text
        assert http.get("/app/nope").status_code == 404


def test_chartjs_must_be_the_pinned_file(project, tmp_path):
    js = tmp_path / "chart.umd.js"
    js.write_text("window.Chart = function () {};")
    with pytest.raises(ValueError, match="is not dist/chart.umd.min.js of Chart.js 4.6.1"):
        preview_app(project, chartjs=str(js))
    with pytest.raises(ValueError, match="no such file"):
        preview_app(project, chartjs=str(tmp_path / "missing.js"))


def test_the_server_block_shows_instructions_and_icons(project):
    logo = "data:image/svg+xml;base64,PHN2Zy8+"
    (project.parent / "mcpgen.yaml").write_text(f"instructions: Numbers only.\nicons: [{{src: '{logo}'}}]\n")
    with client(project) as http:
        tools = http.get("/api/tools").json()
    assert tools["server"] == {"instructions": "Numbers only.", "icons": [{"src": logo}]}
    assert tools["tools"][0]["icons"] == [{"src": logo}]  # the project's icon is every tool's default
    (project.parent / "mcpgen.yaml").unlink()
    with client(project) as http:
        server = http.get("/api/tools").json()["server"]
    assert "Tools: numbers (Numbers)." in server["instructions"] and server["icons"] == []


PROMPT = """\
title: Count to a number
description: Ask for the numbers up to n.
arguments:
  n: {type: integer, description: How many, minimum: 1, maximum: 10}
tools: [numbers]
template: "Call numbers with n={{ n }} and read me the list."
"""


def test_prompts_are_listed_and_got_as_a_client_would(project):
    (project / "count.prompt.yaml").write_text(PROMPT)
    with client(project) as http:
        (listed,) = http.get("/api/tools").json()["prompts"]
        got = http.post("/api/prompt/count", json={"n": "4"}).json()
        bad = http.post("/api/prompt/count", json={"n": "40"}).json()
        missing = http.post("/api/prompt/nope", json={})
    assert (listed["name"], listed["title"], listed["tools"]) == ("count", "Count to a number", ["numbers"])
    assert listed["arguments"] == [
        {"name": "n", "description": "How many (integer; at least 1; at most 10)", "required": True}
    ]
    assert got["result"]["messages"] == [
        {"role": "user", "content": {"type": "text", "text": "Call numbers with n=4 and read me the list."}}
    ]
    assert bad == {"prompt": "count", "error": "Invalid argument 'n': 40 is greater than the maximum of 10."}
    assert missing.status_code == 404


def test_a_prompt_arguments_completions_are_what_a_client_gets(project):
    (project / "count.prompt.yaml").write_text(
        PROMPT.replace("  n: {type: integer,", "  n: {complete: numbers.n, type: integer,")
    )
    (project / "numbers.yaml").write_text(
        SPEC.replace(
            "    maximum: 10\n",
            "    maximum: 10\n    complete: SELECT CAST(range AS VARCHAR) FROM range(1, 11) WHERE CAST(range AS VARCHAR) LIKE :prefix || '%'\n",
        )
    )
    with client(project) as http:
        got = http.post("/api/complete/count", json={"argument": "n", "value": "1"}).json()
        wrong = http.post("/api/complete/count", json={"argument": "m", "value": ""}).json()
    assert got == {"values": ["1", "10"], "hasMore": False}
    assert wrong == {"values": [], "error": "Prompt 'count' has no argument 'm' (it takes n)."}


def test_every_endpoint_on_a_name_refuses_alike(project):
    """The app page, calls, prompts and completions share one way of reading the name and the body."""
    (project / "count.prompt.yaml").write_text(PROMPT)
    form = {"content": b"n=2", "headers": {"content-type": "application/x-www-form-urlencoded"}}
    with client(project) as http:
        missing = [
            http.get("/app/nope"),
            http.post("/api/call/nope", json={}),
            http.post("/api/prompt/nope", json={}),
            http.post("/api/complete/nope", json={}),
        ]
        not_json = [
            http.post(f"/api/{kind}/{name}", **form)
            for kind, name in [("call", "numbers"), ("prompt", "count"), ("complete", "count")]
        ]
        not_an_object = [
            http.post(f"/api/{kind}/{name}", json=[1])
            for kind, name in [("call", "numbers"), ("prompt", "count"), ("complete", "count")]
        ]
        deep = b"[" * 100_000 + b"]" * 100_000  # under the size limit; past the JSON decoder's recursion limit
        too_deep = [
            http.post(f"/api/{kind}/{name}", content=deep, headers={"content-type": "application/json"})
            for kind, name in [("call", "numbers"), ("ask", "numbers"), ("prompt", "count"), ("complete", "count")]
        ]
        after = http.post("/api/call/numbers", json={"n": 2})
    assert [(r.status_code, r.json()["error"]) for r in missing] == [
        (404, "no tool named 'nope'"),
        (404, "no tool named 'nope'"),
        (404, "no prompt named 'nope'"),
        (404, "no prompt named 'nope'"),
    ]
    assert {(r.status_code, r.json()["error"]) for r in not_json} == {(415, "send the arguments as application/json")}
    assert {(r.status_code, r.json()["error"]) for r in not_an_object} == {(400, "the arguments must be a JSON object")}
    assert {(r.status_code, r.json()["error"]) for r in too_deep} == {(400, "the body is not valid JSON")}
    assert after.status_code == 200 and not after.json()["result"].get("isError")


def test_the_answer_s_downloads_are_offered_and_read_as_resources_read_reads_them(project):
    import io

    import pyarrow.parquet as pq

    (project / "numbers.yaml").write_text(SPEC.replace("maximum: 10", "maximum: 500") + "max_rows: 3\ndownload: true\n")
    with client(project) as http:
        result = http.post("/api/call/numbers", json={"n": 400}).json()["result"]
        links = {c["mimeType"]: c for c in result["content"] if c["type"] == "resource_link"}
        assert len(result["structuredContent"]["table"]) == 4  # the model reads three rows; the files hold 400
        text = http.post("/api/download/numbers", json={"uri": links["text/csv"]["uri"]})
        assert text.status_code == 200 and text.headers["content-type"].startswith("text/csv")
        assert text.headers["content-disposition"] == 'attachment; filename="numbers.csv"'
        assert text.text.splitlines() == ["i,twice", *(f"{i},{2 * i}" for i in range(400))]
        blob = http.post("/api/download/numbers", json={"uri": links["application/vnd.apache.parquet"]["uri"]})
        assert pq.read_table(io.BytesIO(blob.content)).to_pydict() == {
            "i": list(range(400)),
            "twice": [2 * i for i in range(400)],
        }
        bad = http.post("/api/download/numbers", json={"uri": "mcpgen://download/numbers.csv?args=e30&link=a.b.c"})
        assert bad.status_code == 400 and bad.json()["error"].startswith("This ")
    page = (Path(__file__).parents[2] / "mcpgen/static/preview.js").read_text()
    assert 'filter((c) => c.type === "resource_link")' in page and "/api/download/" in page


CONFIRMED = """\
description: Every number up to n, after the person confirms.
parameters:
  n: {type: integer, description: How many, default: 3, minimum: 1, maximum: 10}
sql: SELECT range AS i FROM range(:n)
sources: [https://example.org/numbers]
content: "{{ row_count }} numbers"
confirm: {message: Count them all?, when_rows_over: 4}
long_running: true
"""


def lines(response) -> list[dict]:
    assert response.headers["content-type"].startswith("application/x-ndjson")
    return [json.loads(line) for line in response.text.splitlines()]


def test_the_preview_asks_before_a_confirm_call_and_shows_that_a_tool_offers_tasks(project):
    (project / "confirmed.yaml").write_text(CONFIRMED)
    with client(project) as http:
        listed = {t["name"]: t for t in http.get("/api/tools").json()["tools"]}
        assert listed["confirmed"]["long_running"] is True and listed["numbers"]["long_running"] is False
        assert listed["confirmed"]["confirm"] == {"message": "Count them all?", "when_rows_over": 4}
        assert "confirm" not in listed["numbers"]
        few = lines(http.post("/api/ask/confirmed", json={"arguments": {"n": 3}, "answers": {}}))
        assert few[-1]["result"]["content"][0]["text"] == "3 numbers"  # three rows: not asked
        asked = lines(http.post("/api/ask/confirmed", json={"arguments": {"n": 8}, "answers": {}}))
        assert asked == [
            {
                "questions": [
                    {"key": "confirm", "message": "Count them all?", "schema": asked[0]["questions"][0]["schema"]}
                ]
            }
        ]
        assert asked[0]["questions"][0]["schema"]["required"] == ["confirm"]
        yes = {"confirm": {"confirm": True}}
        done = lines(http.post("/api/ask/confirmed", json={"arguments": {"n": 8}, "answers": yes}))
        assert done[-1]["result"]["content"][0]["text"] == "8 numbers"
        assert done[-1]["result"] == http.post("/api/call/confirmed", json={"n": 8}).json()["result"]
        no = lines(
            http.post("/api/ask/confirmed", json={"arguments": {"n": 8}, "answers": {"confirm": {"confirm": False}}})
        )
        assert no[-1]["result"]["isError"] is True
        assert no[-1]["result"]["content"][0]["text"] == "Not run: the person did not confirm it."
        assert http.post("/api/ask/nope", json={}).status_code == 404
        assert http.post("/api/ask/confirmed", json={"arguments": [1]}).status_code == 400


WORKS = '''
import threading
import time

from mcp.types import CallToolResult, TextContent

from mcpgen import DataToolOutput, registry
from mcpgen.engines.control import attached


@registry.tool(app=False, long_running=True)
def works() -> DataToolOutput:
    """Works for a second, reporting how far it is."""
    stop, start = threading.Event(), time.monotonic()
    with attached(stop.set, lambda: min(100.0, 100.0 * (time.monotonic() - start))):
        stop.wait(1.2)
    return CallToolResult(content=[TextContent(type="text", text="done")], structured_content={"sources": ["https://example.org/"]})
'''


def test_the_preview_streams_a_running_calls_progress_before_its_answer(project):
    (project / "works.py").write_text(WORKS)
    with client(project) as http:
        got = lines(http.post("/api/ask/works", json={"arguments": {}, "answers": {}}))
    progress = [line["progress"] for line in got[:-1]]
    assert progress and progress == sorted(progress) and all(0 < p <= 100 for p in progress), got
    assert got[-1]["result"]["content"][0]["text"] == "done" and got[-1]["elapsed_ms"] >= 1000


def test_a_ctrl_c_as_the_preview_starts_ends_it_without_a_traceback(monkeypatch):
    """Ctrl-C just as uvicorn has started closes the listening socket: the preview ends quietly, without
    reading that closed socket for the line it prints."""
    import uvicorn

    from mcpgen.commands.preview import run

    started = uvicorn.Server.startup

    async def startup_then_ctrl_c(self, sockets=None):
        await started(self, sockets=sockets)
        self.should_exit = True  # what uvicorn's SIGINT handler sets
        for server in self.servers:
            server.close()  # the first step of its shutdown: the socket is closed

    monkeypatch.setattr(uvicorn.Server, "startup", startup_then_ctrl_c)
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    said: list[str] = []
    run("specs", port=0, announce=said.append)
    assert said == []
