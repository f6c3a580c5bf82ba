"""The MCP App drawn by Chromium inside a host built from the official packages (tests/apphost.py):
the ext-apps AppBridge and the TypeScript MCP client, connected to a real `mcpgen serve --http`.

Needs Debian's chromium and the npm packages of tests/node/ (installed by .ci/run into
tests/.artifacts/node); without them these tests skip, unless MCPGEN_REQUIRE_SERVICES=1.
"""

from __future__ import annotations

import json
import os
import random
import textwrap
from pathlib import Path

import apphost
import pytest

from mcpgen.answer.numbers import MAX_DECIMALS, column_formats, format_number

pytestmark = [pytest.mark.slow, pytest.mark.browser]

ROOT = apphost.ROOT
ARTIFACTS = apphost.ARTIFACTS


@pytest.fixture(scope="module")
def browser():
    reason = apphost.missing()
    if reason:
        if os.environ.get("MCPGEN_REQUIRE_SERVICES") == "1":
            pytest.fail(reason + " (MCPGEN_REQUIRE_SERVICES=1)")
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = apphost.launch(pw)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def shipped(browser):
    with apphost.mcpgen_http(ROOT / "specs", ARTIFACTS / "app-shipped.log") as url:
        yield url


HOSTILE = """\
title: Hostile
description: Values that look like markup or code.
sql: |
  SELECT * FROM (VALUES
    ('<img src=x onerror="parent.pwned=1">', '</script><script>parent.pwned=2</script>', 'javascript:parent.pwned=3', 1),
    ('<b>bold</b>', '{{ 7*7 }}', 'https://example.org/"><script>parent.pwned=4</script>', 2)
  ) t(html, script, link, n)
sources: ["https://example.org/hostile?q={{ 'x' }}"]
content: "{{ row_count }} rows"
force: "Forced <img src=x onerror=\\"parent.pwned=5\\"> text"
chart: {type: bar, x: html, y: n}
"""

EMPTY = """\
title: Nothing
description: A query that matches nothing.
sql: SELECT 'a' AS k, 1 AS v WHERE false
sources: ["https://example.org/empty"]
content: "{{ row_count }}"
empty: "No cities matched."
force: "{% if truncated %}Only the first {{ max_rows }} rows are shown.{% endif %}"
chart: {type: bar, x: k, y: v}
"""

# Several hundred numbers of every kind: integers, years, quarters, signed thousandths with NULLs,
# 20 orders of magnitude either side of 1, ties at the third decimal, integers stored as floats.
NUMBERS = """\
title: Numbers
description: Numbers of every kind, one format per column.
sql: |
  SELECT i AS n, 1900 + i AS year, i / 4 AS quarter,
         CASE WHEN i % 7 = 0 THEN NULL ELSE ((hash(i) % 2000001)::BIGINT - 1000000) / 1000.0 END AS signed,
         (hash(i * 3) % 1000000)::DOUBLE * pow(10, (i % 40) - 20) AS wide,
         (i - 200) + (i % 3) * 0.0005 AS ties,
         ((hash(i * 7) % 100000000000000)::BIGINT - 50000000000000)::DOUBLE AS big
  FROM range(400) t(i) ORDER BY i
sources: ["https://example.org/numbers"]
content: "{{ row_count }} rows"
"""

MANY = """\
title: Many
description: More rows than max_rows.
sql: SELECT range AS n FROM range(10)
sources: ["https://example.org/many"]
content: "{{ row_count }}"
force: "{% if truncated %}Only the first {{ max_rows }} rows are shown.{% endif %}"
max_rows: 3
"""


@pytest.fixture(scope="module")
def crafted(browser, tmp_path_factory):
    specs = tmp_path_factory.mktemp("crafted") / "specs"
    specs.mkdir()
    for name, body in {"hostile": HOSTILE, "nothing": EMPTY, "many": MANY, "numbers": NUMBERS}.items():
        (specs / f"{name}.yaml").write_text(textwrap.dedent(body))
    with apphost.mcpgen_http(specs, ARTIFACTS / "app-crafted.log") as url:
        yield url


def _host(browser, url, height=900):
    context = browser.new_context(viewport={"width": 1100, "height": height})
    page = context.new_page()
    page.set_default_timeout(30_000)
    problems: list[str] = []
    requests: list[str] = []
    page.on("pageerror", lambda exc: problems.append(str(exc)))
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" and "405" not in m.text else None)
    page.on("request", lambda r: requests.append(r.url))
    host = apphost.Host(url)
    tools = apphost.open_host(page, host)
    return context, page, host, tools, problems, requests


@pytest.fixture
def shipped_host(browser, shipped):
    context, page, host, tools, problems, requests = _host(browser, shipped)
    yield page, tools
    context.close()
    _nothing_left_the_page(host, requests)
    assert not problems, f"errors in the browser: {problems}"


@pytest.fixture
def crafted_host(browser, crafted):
    context, page, host, tools, problems, requests = _host(browser, crafted)
    yield page, tools
    context.close()
    _nothing_left_the_page(host, requests)
    assert not problems, f"errors in the browser: {problems}"


def _nothing_left_the_page(host, requests):
    assert host.refused == [], f"requests that would have left the page: {host.refused}"
    outside = [u for u in requests if not u.startswith(apphost.ORIGIN + "/")]
    assert outside == [], outside


# ---- what the app shows, in Python terms -------------------------------------------------------


def cell_text(value, fmt: dict | None) -> str:
    """A cell as the app shows it with locale en-US: a number in its column's format, as `mcpgen call` writes it."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return format_number(value, fmt)
    return str(value)


def shown_table(frame) -> list[list[str]]:
    return frame.eval_on_selector_all("table tr", "trs => trs.map(tr => [...tr.cells].map(c => c.innerText))")


def shown_charts(frame) -> list[dict]:
    return frame.evaluate("""() => [...document.querySelectorAll('canvas')].map(c => {
        const chart = Chart.getChart(c);
        chart.stop();  // end the animation and draw the final state now
        chart.update('none');
        const pixels = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let painted = 0;
        for (let i = 3; i < pixels.length; i += 4) if (pixels[i]) painted++;
        return {labels: chart.data.labels ?? null, type: chart.config.type,
                datasets: chart.data.datasets.map(d => ({label: d.label, data: d.data})),
                area: chart.chartArea.right - chart.chartArea.left, painted};
    })""")


def _argument_for(prop: dict):
    for key in ("examples", "enum"):
        if prop.get(key):
            return prop[key][0]
    for key in ("minimum", "formatMinimum"):
        if key in prop:
            return prop[key]
    return None


def check_answer(frame, result: dict) -> None:
    """What the app shows equals the structuredContent the host received."""
    data = result["structuredContent"]
    table = data.get("table")
    if table and len(table) > 1:
        header = [str(h) for h in table[0]]
        formats = result.get("_meta", {}).get("mcpgen/formats")
        assert formats == column_formats(table)  # one format per column, chosen from its numbers (none without)
        formats = formats or [None] * len(header)
        expected = [header] + [[cell_text(v, formats[i]) for i, v in enumerate(row)] for row in table[1:]]
        assert shown_table(frame) == expected
        titles = frame.eval_on_selector_all("tbody td.num", "tds => tds.map(td => Number(td.title))")
        numbers = [v for row in table[1:] for v in row if isinstance(v, (int, float)) and not isinstance(v, bool)]
        assert titles == numbers  # the exact value behind each formatted number
        rows = len(table) - 1
        assert frame.inner_text(".stats .rows") == f"{rows:,} row{'' if rows == 1 else 's'}"
    else:
        assert frame.query_selector("table") is None
    charts = [c for c in data.get("charts", []) if any(d["data"] for d in c["data"]["datasets"])]
    drawn = shown_charts(frame)
    assert len(drawn) == len(charts)
    for shown, config in zip(drawn, charts):
        assert shown["type"] == config["type"]
        assert shown["labels"] == config["data"].get("labels", [])  # scatter: Chart.js keeps an empty list
        assert shown["datasets"] == [{"label": d["label"], "data": d["data"]} for d in config["data"]["datasets"]]
        assert shown["area"] > 100 and shown["painted"] > 1000, shown
    assert frame.eval_on_selector_all(".sources a", "as => as.map(a => a.href)") == data["sources"]
    if "force" in data:
        assert frame.inner_text(".force") == data["force"]
        assert frame.evaluate("document.querySelector('main').firstElementChild.className") == "force"
    else:
        assert frame.query_selector(".force") is None


# ---- tests ------------------------------------------------------------------------------------


def test_every_shipped_tool_draws_its_answer_in_the_host(shipped_host):
    page, tools = shipped_host
    assert len(tools) >= 10
    assert {t["resourceUri"] for t in tools} == {"ui://mcpgen/answer"}
    listing = {t["name"]: t for t in page.evaluate("() => host.connect()")}
    schemas = page.evaluate(
        "() => fetch('/mcp', {method: 'POST', headers: {'content-type': 'application/json', "
        "accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25'}, body: JSON.stringify("
        "{jsonrpc: '2.0', id: 1, method: 'tools/list'})}).then(r => r.json()).then(j => j.result.tools)"
    )
    for tool in schemas:
        name, schema = tool["name"], tool["inputSchema"]
        assert name in listing
        args = {arg: _argument_for(schema["properties"][arg]) for arg in schema.get("required", [])}
        assert None not in args.values(), f"{name}: no example for a required argument"
        result, frame = apphost.show(page, name, args)
        assert not result.get("isError"), f"{name}: {result['content']}"
        check_answer(frame, result)
    sizes = [e for e in page.evaluate("() => host.events") if e["kind"] == "size"]
    assert {e["tool"] for e in sizes} == set(listing)  # every app reported its size ...
    heights = page.eval_on_selector_all("iframe", "fs => fs.map(f => f.getBoundingClientRect().height)")
    assert min(heights) > 100  # ... and the host sized each frame to it, not taller than the content
    for iframe in page.query_selector_all("iframe"):
        content = iframe.content_frame().evaluate("document.body.getBoundingClientRect().height")
        assert abs(iframe.bounding_box()["height"] - content) <= 2, (iframe.get_attribute("title"), content)
    page.screenshot(path=str(ARTIFACTS / "app-every-tool.png"), full_page=True)


def test_sorting_links_and_theme(shipped_host):
    page, _ = shipped_host
    result, frame = apphost.show(page, "top_cities", {"top_n": 6}, theme="dark")
    table = result["structuredContent"]["table"]
    population = table[0].index("Population")
    frame.click(f"th:nth-child({population + 1}) button")  # a number column sorts biggest first
    values = [row[population] for row in table[1:]]
    shown = [r[population] for r in shown_table(frame)[1:]]
    assert shown == [f"{v:,}" for v in sorted(values, reverse=True)]
    assert frame.get_attribute(f"th:nth-child({population + 1})", "aria-sort") == "descending"
    frame.click("th:nth-child(1) button")  # text sorts A to Z
    cities = [r[0] for r in shown_table(frame)[1:]]
    assert cities == sorted(cities, key=str.lower)
    assert frame.evaluate("document.documentElement.dataset.theme") == "dark"
    assert frame.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(13, 17, 23)"
    frame.click(".sources a")
    page.wait_for_function("() => host.events.some(e => e.kind === 'open-link')")
    opened = [e["data"]["url"] for e in page.evaluate("() => host.events") if e["kind"] == "open-link"]
    assert opened == result["structuredContent"]["sources"]


def test_full_screen_when_the_host_offers_it(shipped_host):
    page, _ = shipped_host
    _, plain = apphost.show(page, "top_cities", {"top_n": 3})
    assert plain.query_selector(".toolbar") is None  # this host offers inline only
    _, frame = apphost.show(page, "top_cities", {"top_n": 3}, fullscreen=True)
    frame.click(".toolbar button")
    page.wait_for_function("() => host.events.some(e => e.kind === 'display-mode')")
    assert [e["data"] for e in page.evaluate("() => host.events") if e["kind"] == "display-mode"] == [
        {"mode": "fullscreen"}
    ]
    frame.wait_for_function("() => document.documentElement.dataset.display === 'fullscreen'")
    assert frame.inner_text(".toolbar button") == "Exit full screen"


def test_an_error_result_shows_its_message(shipped_host):
    page, _ = shipped_host
    result, frame = apphost.show(page, "top_cities", {"top_n": 500})
    assert result["isError"] is True
    assert frame.inner_text(".error h2") == "The tool could not answer"
    assert frame.inner_text(".error p") == "Invalid argument 'top_n': 500 is greater than the maximum of 50."
    assert frame.query_selector("table, canvas") is None


def test_hostile_values_stay_text(crafted_host):
    page, _ = crafted_host
    result, frame = apphost.show(page, "hostile", {})
    check_answer(frame, result)
    table = shown_table(frame)
    assert table[1][:3] == [
        '<img src=x onerror="parent.pwned=1">',
        "</script><script>parent.pwned=2</script>",
        "javascript:parent.pwned=3",
    ]
    assert frame.query_selector("main img, main script, main b, table a") is None
    # force text is shown as-is, after the neutralising every rendered text gets (a tag cannot form)
    assert frame.inner_text(".force") == 'Forced < img src=x onerror="parent.pwned=5"> text'
    assert shown_charts(frame)[0]["labels"][0] == '<img src=x onerror="parent.pwned=1">'
    assert frame.evaluate("[window.pwned, parent === window]") == [None, False]
    assert page.evaluate("window.pwned") is None
    assert frame.evaluate("document.scripts.length") == 3  # settings, Chart.js, the app: nothing added


def test_empty_and_truncated_answers(crafted_host):
    page, _ = crafted_host
    result, frame = apphost.show(page, "nothing", {})
    assert "table" not in result["structuredContent"] and "charts" not in result["structuredContent"]
    assert frame.inner_text(".empty") == "No cities matched."
    assert frame.query_selector("table, canvas, .force") is None  # a force that renders to nothing: no box
    assert "force" not in result["structuredContent"]
    result, frame = apphost.show(page, "many", {})
    assert result["_meta"]["mcpgen/truncated"] == {"max_rows": 3}
    assert frame.inner_text(".force") == "Only the first 3 rows are shown."
    assert frame.inner_text(".stats") == "3 rows · only the first 3 are shown; the query matched more"


def test_one_number_format_per_column(crafted_host):
    page, _ = crafted_host
    result, frame = apphost.show(page, "numbers", {})
    check_answer(frame, result)  # every cell as Python's format_number writes it, in the column's format
    table = result["structuredContent"]["table"]
    assert len(table) == 401
    formats = dict(zip(table[0], result["_meta"]["mcpgen/formats"]))
    assert formats["n"] == {"decimals": 0, "grouping": True} and formats["year"] == {"decimals": 0, "grouping": False}
    assert formats["quarter"] == {"decimals": 2, "grouping": True} and formats["big"]["decimals"] == 0
    assert formats["signed"] == formats["wide"] == formats["ties"] == {"decimals": MAX_DECIMALS, "grouping": True}
    shown = shown_table(frame)
    assert [row[2] for row in shown[1:5]] == ["0.00", "0.25", "0.50", "0.75"]  # not 0, 0.25, 0.5, 0.75
    assert shown[2][5] == "-199.000"  # -199 + 0.0005 = -198.9995: half away from zero


def test_python_writes_numbers_as_intl_does(browser):
    """format_number against Chromium's Intl.NumberFormat("en-US") on several hundred numbers."""
    rng = random.Random(22)
    values = [0.0, -0.0, 1.005, 2.5, 0.125, -1234.5, 2.0005, 0.30000000000000004, 1e21, 1e300, 5e-324]
    values += [1.7976931348623157e308, 123456789012345678.0, 999.9995, -0.0004, 2**53, -(2**53)]  # cells: |n| <= 2**53
    values += [rng.choice([-1, 1]) * rng.random() * 10 ** rng.randint(-8, 22) for _ in range(200)]
    values += [round(rng.uniform(-1e6, 1e6), rng.randint(0, 5)) for _ in range(150)]
    values += [rng.randint(-(10**12), 10**12) for _ in range(50)]
    values += [n + 0.5 for n in range(-5, 5)] + [n / 1000 + 0.0005 for n in range(-20, 20)]
    formats = [{"decimals": d, "grouping": g} for d in range(MAX_DECIMALS + 1) for g in (True, False)]
    page = browser.new_page()
    try:
        shown = page.evaluate(
            """([values, formats]) => formats.map((f) => {
                const nf = new Intl.NumberFormat("en-US", {minimumFractionDigits: f.decimals,
                  maximumFractionDigits: f.decimals, useGrouping: f.grouping ? undefined : false});
                return values.map((v) => nf.format(v));
            })""",
            [values, formats],
        )
    finally:
        page.close()
    assert len(values) >= 450
    for fmt, texts in zip(formats, shown):
        mismatched = [(v, t, format_number(v, fmt)) for v, t in zip(values, texts) if format_number(v, fmt) != t]
        assert mismatched == [], fmt


def test_the_host_reads_the_app_once_per_session(shipped_host):
    page, _ = shipped_host
    reads = []
    page.on("request", lambda r: reads.append(r) if r.post_data and "resources/read" in r.post_data else None)
    for n in (3, 4, 5):
        apphost.show(page, "top_cities", {"top_n": n})
    assert len(reads) == 1
    body = json.loads(reads[0].post_data)
    assert body["params"] == {"uri": "ui://mcpgen/answer"}


def test_docs_screenshot_script_runs(browser, tmp_path):
    import subprocess
    import sys

    out = tmp_path / "shot.png"
    done = subprocess.run(
        [sys.executable, str(ROOT / "docs" / "app_screenshot.py"), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert out.stat().st_size > 20_000
    assert Path(out).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
