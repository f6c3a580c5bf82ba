"""`mcpgen preview` in a real browser: Playwright driving Debian's headless Chromium. Answers are
drawn by the tool's MCP App in an iframe, so table, charts, sources and force text are read there.

Needs (installed by .ci/run):
    apt-get install -y chromium chromium-driver
    the npm packages of tests/node/ in tests/.artifacts/node (Chart.js among them)
Without them these tests skip, unless MCPGEN_REQUIRE_SERVICES=1 (then they fail).
Screenshots go to tests/.artifacts/.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from apphost import CHROMIUM, CHROMIUM_ARGS
from servers import stop

from mcpgen.answer.numbers import column_formats, format_number

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "tests" / ".artifacts"
CHARTJS = ARTIFACTS / "node" / "node_modules" / "chart.js" / "dist" / "chart.umd.min.js"
MCPGEN = [sys.executable, "-c", "from mcpgen.cli import main; main()"]


def _require(ok: bool, reason: str) -> None:
    if ok:
        return
    if os.environ.get("MCPGEN_REQUIRE_SERVICES") == "1":
        pytest.fail(reason + " (MCPGEN_REQUIRE_SERVICES=1)")
    pytest.skip(reason)


@contextlib.contextmanager
def preview(specs_dir: Path, cwd: Path, log: Path):
    """Run the real `mcpgen preview` on a free port; yield its base URL."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as err:
        proc = subprocess.Popen(
            [*MCPGEN, "preview", str(specs_dir), "--port", "0", "--chartjs", os.path.relpath(CHARTJS, cwd)],
            cwd=cwd,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    try:
        deadline = time.monotonic() + 30
        while True:
            match = re.search(r"http://127\.0\.0\.1:\d+/", log.read_text())
            if match:
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"mcpgen preview did not start:\n{log.read_text()}")
            time.sleep(0.1)
        yield match.group(0)
    finally:
        stop(proc)


def mcpgen_call(tool: str, *args: str) -> dict:
    """The tool's answer from `mcpgen call --json`, independently of the preview."""
    out = subprocess.run(
        [*MCPGEN, "call", tool, *[f"-a{a}" for a in args], "--json", "-s", "specs"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return json.loads(out.stdout)


def post(url: str, body: dict) -> dict:
    req = urllib.request.Request(
        url, data=json.dumps(body).encode(), method="POST", headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.load(resp)


@pytest.fixture(scope="module")
def browser():
    _require(CHROMIUM.exists(), f"{CHROMIUM} is missing: apt-get install -y chromium chromium-driver")
    _require(
        CHARTJS.is_file(),
        f"{CHARTJS.relative_to(ROOT)} is missing: .ci/run installs tests/node/ into tests/.artifacts/node",
    )
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _require(False, "the playwright Python package is not installed")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def shipped(browser):
    """The preview of the shipped specs/."""
    with preview(ROOT / "specs", ROOT, ARTIFACTS / "preview-shipped.log") as url:
        yield url


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    yield page
    context.close()
    assert not errors, f"errors in the browser console: {errors}"


def open_tool(page, url: str, name: str):
    page.goto(f"{url}#{name}")
    page.wait_for_selector(f"form[data-tool='{name}']")


def submit(page):
    page.click("#form button[type=submit]")
    page.wait_for_selector("#result .answer")


def app(page):
    """The frame of the tool's MCP App, once the preview (as its host) has sent it the result."""
    page.wait_for_selector("#result iframe.app-frame[data-state=sent]")
    frame = page.query_selector("#result iframe.app-frame").content_frame()
    frame.wait_for_function("() => !document.querySelector('#answer .waiting')")
    assert frame.evaluate("typeof Chart") == "function", "the app has no Chart.js"
    return frame


def table_rows(page) -> list[list[str]]:
    return app(page).eval_on_selector_all("table tr", "trs => trs.map(tr => [...tr.cells].map(c => c.textContent))")


def table_values(page) -> list[list]:
    """The table's cells, numbers read from the exact value each formatted number carries."""
    return app(page).eval_on_selector_all(
        "table tr",
        """trs => trs.map(tr => [...tr.cells].map(c => c.tagName === 'TD' && c.classList.contains('num')
            ? Number(c.title) : c.tagName === 'TD' && c.classList.contains('null') ? null : c.textContent))""",
    )


def chart_labels(page) -> list[list]:
    return app(page).evaluate("""() => [...document.querySelectorAll('canvas')].map(c => {
        const chart = Chart.getChart(c);
        return chart ? {labels: chart.data.labels, drawn: chart.chartArea.right > chart.chartArea.left} : null;
    })""")


def test_top_cities_form_table_and_chart(shipped, page):
    expected = mcpgen_call("top_cities", "top_n=5", "country=JP")["structuredContent"]
    open_tool(page, shipped, "top_cities")
    assert page.title() == "mcpgen preview"
    assert "Most populated cities" in page.inner_text("#tools")
    assert page.input_value("#arg-top_n") == "10"  # the default is filled in
    page.fill("#arg-top_n", "5")
    page.fill("#arg-country", "JP")
    submit(page)

    assert table_values(page) == expected["table"]
    assert table_rows(page)[1][:3] == ["Tokyo", "Japan", "9,733,276"]  # numbers grouped for people
    charts = chart_labels(page)
    assert charts == [{"labels": [row[0] for row in expected["table"][1:]], "drawn": True}]
    assert "1. Tokyo: 9,733,276 people" in page.inner_text("#result .prose")
    assert page.text_content("#result .prose h3") == "What the model reads (content)"
    assert page.text_content("#result .app h3") == "What the person sees (MCP App ui://mcpgen/answer)"
    assert app(page).get_attribute(".sources a", "href") == expected["sources"][0]
    assert page.inner_text("#result .rows") == "5 rows"
    assert re.fullmatch(r"[\d.]+ ms", page.inner_text("#result .elapsed"))
    raw = json.loads(page.text_content("#result .raw pre"))
    assert raw["structuredContent"] == expected
    page.wait_for_timeout(1100)  # let Chart.js finish its animation before the screenshot
    page.screenshot(path=str(ARTIFACTS / "preview-top_cities.png"), full_page=True)


def test_out_of_range_argument(shipped, page):
    open_tool(page, shipped, "top_cities")
    assert page.get_attribute("#arg-top_n", "max") == "50"
    page.fill("#arg-top_n", "500")
    page.click("#form button[type=submit]")
    # The browser refuses to submit: no answer appears.
    assert page.evaluate("document.querySelector('#arg-top_n').validity.rangeOverflow")
    page.wait_for_timeout(300)
    assert page.query_selector("#result .answer") is None

    # Past the browser's check, the server checks again and the page shows its sentence.
    page.evaluate("document.querySelector('#arg-top_n').removeAttribute('max')")
    submit(page)
    assert page.query_selector("#result .answer.error") is not None
    assert page.inner_text("#result .error-text") == "Invalid argument 'top_n': 500 is greater than the maximum of 50."
    assert app(page).inner_text(".error p") == "Invalid argument 'top_n': 500 is greater than the maximum of 50."
    assert app(page).query_selector("table") is None
    page.screenshot(path=str(ARTIFACTS / "preview-error.png"), full_page=True)

    # The page's own switch skips the browser's checks too.
    page.reload()
    page.wait_for_selector("form[data-tool='top_cities']")
    assert page.get_attribute("#arg-top_n", "min") == "1"
    page.uncheck("#form input[name=__check]")
    page.fill("#arg-top_n", "0")
    submit(page)
    assert page.inner_text("#result .error-text") == "Invalid argument 'top_n': 0 is less than the minimum of 1."

    # The API gives the same isError result to any client.
    out = post(shipped + "api/call/top_cities", {"top_n": 500})
    assert out["result"]["isError"] is True
    assert "top_n" in out["result"]["content"][0]["text"]


def cell_text(value, fmt: dict | None) -> str:
    if isinstance(value, bool) or value is None:
        return "" if value is None else str(value).lower()
    return format_number(value, fmt) if isinstance(value, (int, float)) else str(value)


def _argument_for(prop: dict):
    for key in ("examples", "enum"):
        if prop.get(key):
            return prop[key][0]
    return prop.get("minimum")


def test_every_shipped_tool_renders(shipped, page):
    with urllib.request.urlopen(shipped + "api/tools", timeout=30) as resp:
        listing = json.load(resp)
    assert listing["errors"] == []
    assert len(listing["tools"]) >= 10
    for tool in listing["tools"]:
        name, schema = tool["name"], tool["inputSchema"]
        open_tool(page, shipped, name)
        for arg in schema.get("required", []):
            prop = schema["properties"][arg]
            value = _argument_for(prop)
            assert value is not None, f"{name}: no example value for the required argument {arg}"
            selector = f"#arg-{arg}"
            if page.evaluate(f"document.querySelector('{selector}').tagName") == "SELECT":
                page.select_option(selector, json.dumps(value))
            else:
                page.fill(selector, str(value)[:19])
        submit(page)
        assert page.query_selector("#result .answer.error") is None, f"{name}: {page.inner_text('#result .answer')}"
        raw = json.loads(page.text_content("#result .raw pre"))
        data = raw["structuredContent"]
        if "table" in data:
            # each number in its column's format, the one mcpgen call prints too (the host's locale is en-US here)
            formats = raw.get("_meta", {}).get("mcpgen/formats") or [None] * len(data["table"][0])
            assert formats == (column_formats(data["table"]) or formats), name
            expected = [[cell_text(v, f) for v, f in zip(row, formats)] for row in data["table"][1:]]
            assert table_rows(page)[1:] == expected, name
        charts = chart_labels(page)
        assert len(charts) == len(data.get("charts", [])), name
        for drawn, config in zip(charts, data.get("charts", [])):
            assert drawn is not None and drawn["drawn"], f"{name}: a chart was not drawn"
            if "labels" in config["data"]:
                assert drawn["labels"] == config["data"]["labels"], name
        page.screenshot(path=str(ARTIFACTS / f"preview-tool-{name}.png"), full_page=True)


HELLO = """\
title: Hello
description: Say hello with some untrusted text.
sql: |
  SELECT 'a<b>&"c"' AS name, '<img src=x onerror="window.pwned=1">' AS html, 1 AS n
sources:
  - https://example.org/hello
content: "Hello {{ rows[0].name }}"
force: "Forced <b>text</b>"
"""


KINDS = """\
title: Kinds
description: Every kind of parameter.
parameters:
  ids: {type: array, items: {type: integer, minimum: 1}, description: Ids, min_items: 1, max_items: 3}
  day: {type: date, description: A day, minimum: "2020-01-01", maximum: "2020-12-31"}
  at: {type: datetime, description: A moment, required: false}
  flag: {type: boolean, description: Optional flag, required: false}
  enabled: {type: boolean, description: Flag with a default, default: true}
  ratio: {type: number, description: A ratio, enum: [0.5, 1.5], default: 1.5}
  code: {type: string, description: Code, pattern: "^[a-z]+$", min_length: 2, max_length: 4, required: false}
  names: {type: array, items: {type: string}, description: Names that may hold commas, required: false}
sql: |
  SELECT v AS id, :day AS day, :at AS at, :flag AS flag, :enabled AS enabled, :ratio AS ratio, :code AS code
  FROM (VALUES (1), (2), (3), (4)) t(v) WHERE v IN :ids AND (:names IS NULL OR len(:names) > 0)
sources: [https://example.org/kinds]
content: "{{ row_count }} rows"
"""


def test_form_controls_from_the_schema(browser, page, tmp_path):
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "kinds.yaml").write_text(KINDS)
    with preview(specs, tmp_path, ARTIFACTS / "preview-kinds.log") as url:
        open_tool(page, url, "kinds")
        kinds = page.evaluate("""() => Object.fromEntries([...document.querySelectorAll('#form [name]')]
            .filter(e => e.name !== '__check').map(e => [e.name, e.tagName + ':' + (e.type || '')]))""")
        assert kinds == {
            "ids": "TEXTAREA:textarea",
            "day": "INPUT:date",
            "at": "INPUT:datetime-local",
            "flag": "SELECT:select-one",
            "enabled": "INPUT:checkbox",
            "ratio": "SELECT:select-one",
            "code": "INPUT:text",
            "names": "TEXTAREA:textarea",
        }
        assert "A day (from 2020-01-01 to 2020-12-31)" in page.text_content("#form")
        assert page.get_attribute("#arg-code", "maxlength") == "4"
        assert page.is_checked("#arg-enabled")
        assert page.input_value("#arg-ratio") == "1.5"
        # The browser refuses what the schema refuses.
        for selector, value in [
            ("#arg-ids", "1, x"),
            ("#arg-ids", "1,2,3,4"),
            ("#arg-ids", "0"),
            ("#arg-code", "AB"),
            ("#arg-code", "a"),
        ]:
            page.fill(selector, value)
            assert not page.evaluate(f"document.querySelector('{selector}').checkValidity()"), (selector, value)
            page.fill(selector, "")
        page.fill("#arg-ids", "1, 3")
        page.fill("#arg-day", "2020-05-06")
        page.fill("#arg-at", "2020-05-06T07:08:09")
        page.select_option("#arg-flag", "true")
        page.uncheck("#arg-enabled")
        page.select_option("#arg-ratio", "0.5")
        page.fill("#arg-code", "ab")
        page.fill("#arg-names", "Washington, D.C.\nBonn")  # one per line: a comma stays in its value
        submit(page)
        sent = json.loads(page.text_content("#result .stats code"))
        assert sent.pop("names") == ["Washington, D.C.", "Bonn"]
        page.fill("#arg-names", '["Paris, TX", "Oslo"]')  # or a JSON array
        page.fill("#arg-ids", "1\n3")
        page.click("#form button[type=submit]")
        page.wait_for_selector("#result .stats code:has-text('Paris')")  # the new answer, not the last one
        assert json.loads(page.text_content("#result .stats code"))["names"] == ["Paris, TX", "Oslo"]
        assert sent == {
            "ids": [1, 3],
            "day": "2020-05-06",
            "at": "2020-05-06T07:08:09",
            "flag": True,
            "enabled": False,
            "ratio": 0.5,
            "code": "ab",
        }
        assert table_rows(page)[1:] == [
            ["1", "2020-05-06", "2020-05-06T07:08:09", "true", "false", "0.5", "ab"],
            ["3", "2020-05-06", "2020-05-06T07:08:09", "true", "false", "0.5", "ab"],
        ]
        page.screenshot(path=str(ARTIFACTS / "preview-kinds.png"), full_page=True)
        page.goto("about:blank")  # stop the page polling before its preview server stops


def test_reload_and_validation_errors(browser, page, tmp_path):
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "hello.yaml").write_text(HELLO)
    with preview(specs, tmp_path, ARTIFACTS / "preview-reload.log") as url:
        open_tool(page, url, "hello")
        submit(page)
        # Values are shown as text, never as HTML.
        assert table_rows(page) == [["name", "html", "n"], ['a<b>&"c"', '<img src=x onerror="window.pwned=1">', "1"]]
        assert app(page).query_selector("main img, main b") is None
        assert page.evaluate("window.pwned") is None and app(page).evaluate("window.pwned") is None
        assert app(page).inner_text(".force") == "Forced < b>text< /b>"  # neutralised like all rendered text

        # Break the spec: the page lists the problem with file:line instead of going blank.
        (specs / "hello.yaml").write_text(HELLO.replace("title: Hello", "title: Hello\ntitel: oops"))
        page.wait_for_selector("#problems.bad", timeout=15000)
        problems = page.inner_text("#problems")
        assert re.search(r"hello\.yaml:2(:\d+)?: .*titel", problems), problems
        assert page.inner_text("#tools").strip(), "the last tools that loaded stay listed"
        page.screenshot(path=str(ARTIFACTS / "preview-spec-error.png"), full_page=True)

        # Fix it and add a tool: the page reloads the tool set by itself.
        (specs / "hello.yaml").write_text(HELLO.replace("title: Hello", "title: Hello again"))
        (specs / "second.yaml").write_text(HELLO.replace("title: Hello", "title: Second tool"))
        page.wait_for_function("() => !document.querySelector('#problems').className", timeout=15000)
        page.wait_for_function(
            "() => document.querySelector('#tools').innerText.includes('Second tool')", timeout=15000
        )
        assert "Hello again" in page.inner_text("#tools")
        assert page.is_hidden("#problems")
        page.goto("about:blank")  # stop the page polling before its preview server stops


def test_icons_and_instructions_are_shown(browser, page, tmp_path):
    import base64

    png = base64.b64decode(
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
    )
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "dot.png").write_bytes(png)
    (tmp_path / "specs" / "one.yaml").write_text(
        "title: One number\ndescription: One.\nsql: SELECT 1 AS n\nsources: ['https://example.org/']\n"
        "content: '{{ rows[0].n }}'\nicons: [{src: dot.png}]\n"
    )
    (tmp_path / "mcpgen.yaml").write_text(
        "instructions: Ask for one number.\nicons: [{src: 'https://example.org/a.svg'}]\n"
    )
    with preview(tmp_path / "specs", tmp_path, ARTIFACTS / "preview-icons.log") as url:
        open_tool(page, url, "one")
        src = page.get_attribute("#tools img.tool-icon", "src")
        assert src == "data:image/png;base64," + base64.b64encode(png).decode()
        assert page.eval_on_selector("#tools img.tool-icon", "img => img.naturalWidth") == 1  # it was drawn
        page.click("#server summary")
        assert page.inner_text("#server .instructions") == "Ask for one number."
        assert "https://example.org/a.svg" in page.inner_text("#server")
        page.goto("about:blank")  # stop polling before the preview stops


def test_a_prompt_is_got_from_its_form(browser, page, tmp_path):
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "one.yaml").write_text(
        "description: One.\nsql: SELECT 1 AS n\nsources: ['https://example.org/']\ncontent: '{{ rows[0].n }}'\n"
    )
    (tmp_path / "specs" / "ask.prompt.yaml").write_text(
        "title: Ask for a year\ndescription: Ask about one year.\n"
        "arguments:\n  year: {type: integer, description: The year, enum: [1952, 1990, 1999, 2007]}\n"
        "tools: [one]\ntemplate: 'With one, tell me about {{ year }}.'\n"
    )
    with preview(tmp_path / "specs", tmp_path, ARTIFACTS / "preview-prompts.log") as url:
        page.goto(url)
        page.wait_for_selector("#tools a[data-prompt=ask]")
        assert "Ask for a year" in page.inner_text("#tools .prompts")
        page.click("#tools a[data-prompt=ask]")
        page.wait_for_selector("form[data-prompt=ask]")
        page.fill("#parg-year", "19")  # an enum: completion/complete suggests its values
        page.wait_for_function("() => document.querySelectorAll('#pcomp-year option').length === 3")
        options = page.eval_on_selector_all("#pcomp-year option", "os => os.map(o => o.value)")
        assert options == ["1952", "1990", "1999"]
        page.fill("#parg-year", "1990")
        page.click("#prompt-form button[type=submit]")
        page.wait_for_selector("#prompt-result .message")
        assert page.inner_text("#prompt-result .message") == "user: With one, tell me about 1990."
        page.fill("#parg-year", "1900")
        page.click("#prompt-form button[type=submit]")
        page.wait_for_selector("#prompt-result .error")
        assert (
            page.inner_text("#prompt-result .error")
            == "Invalid argument 'year': 1900 is not one of 1952, 1990, 1999, 2007."
        )
        page.goto("about:blank")


def test_a_confirm_tool_asks_the_person_before_its_query_runs(browser, page, tmp_path):
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "sure.yaml").write_text(
        "description: One number, after a question.\nsql: SELECT 42 AS n\nsources: ['https://example.org/']\n"
        "content: 'The number is {{ rows[0].n }}.'\nconfirm: {message: Read the whole table?}\n"
    )
    with preview(tmp_path / "specs", tmp_path, ARTIFACTS / "preview-confirm.log") as url:
        open_tool(page, url, "sure")
        assert page.inner_text("#tool .badge.confirm") == "Asks the person to confirm each call: Read the whole table?"
        page.click("#form button[type=submit]")
        page.wait_for_selector("#result form.question[data-key=confirm]")
        assert page.inner_text("#result form.question h3") == "The tool asks: Read the whole table?"
        page.click("#result form.question .decline")  # declined: nothing runs
        page.wait_for_selector("#result .answer.error")
        assert "declined" in page.inner_text("#result .answer.error")
        page.click("#form button[type=submit]")
        page.wait_for_selector("#result form.question[data-key=confirm]")
        page.check("#result form.question input[type=checkbox]")
        page.click("#result form.question button[type=submit]")
        page.wait_for_selector("#result .answer:not(.error)")
        assert "The number is 42." in page.inner_text("#result .answer")
        page.goto("about:blank")
