"""Big results as resources: `download:` links each answer to the whole result as CSV and Parquet, read
through resources/read (in process here; over real `mcpgen serve` in tests/e2e/test_downloads.py)."""

from __future__ import annotations

import base64
import csv
import io
import json
import textwrap
import time

import anyio
import duckdb
import pyarrow.parquet as pq
import pytest
import services
from callers import as_token
from mcp import Client
from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.shared.exceptions import MCPError

from mcpgen.answer.cursors import Cursors
from mcpgen.answer.downloads import MIME_TYPES, PREFIX, csv_cell
from mcpgen.serve.project import open_project
from mcpgen.serve.server import ToolServer
from mcpgen.spec.config import ProjectConfig
from mcpgen.spec.models import Spec

INIT = (
    "CREATE TABLE nums AS SELECT range AS n, 'row ' || range AS label, DATE '2020-01-01' + range::INT AS d, "
    "range * 1.5 AS x, range % 7 = 0 AS lucky, CASE WHEN range % 5 = 0 THEN NULL ELSE 'a,\"b\"' END AS odd "
    "FROM range(1000)"
)
CONFIG = "connections:\n  default:\n    duckdb: ':memory:'\n    init: " + json.dumps([INIT]) + "\n"
SQL = "SELECT n, label, d, x, lucky, odd FROM nums WHERE n < :below ORDER BY n"
NUMS = f"""\
description: Numbers below a bound.
parameters:
  below: {{type: integer, description: Upper bound, default: 1000}}
sql: {SQL}
sources: [https://example.org/]
content: "{{{{ row_count }}}} numbers"
max_rows: 10
download: true
"""


@pytest.fixture
def make(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    opened = []

    def build(spec: str = NUMS, config: str = CONFIG, name: str = "nums"):
        (tmp_path / "mcpgen.yaml").write_text(config)
        specs = tmp_path / "specs"
        specs.mkdir(exist_ok=True)
        (specs / f"{name}.yaml").write_text(textwrap.dedent(spec))
        project = open_project(specs)
        opened.append(project)
        return project.registry

    yield build
    for project in opened:
        project.close()


def links(result) -> dict[str, str]:
    """The answer's download links by MIME type."""
    assert not result.is_error, result.content[0].text
    return {c.mime_type: c.uri for c in result.content if c.type == "resource_link"}


def session(registry, work):
    """Run `work(client)` against a ToolServer of `registry` with the official in-process client."""

    async def main():
        async with Client(ToolServer(registry).server) as client:
            return await work(client)

    return anyio.run(main)


async def read(client, uri: str):
    return (await client.read_resource(uri)).contents[0]


async def refusal(client, uri: str) -> MCPError:
    with pytest.raises(MCPError) as caught:
        await client.read_resource(uri)
    return caught.value


def csv_rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def parquet_rows(blob: str) -> tuple[list[str], list[tuple]]:
    table = pq.read_table(io.BytesIO(base64.b64decode(blob)))
    return table.column_names, [tuple(r.values()) for r in table.to_pylist()]


def direct(sql: str, *params) -> tuple[list[str], list[tuple]]:
    con = duckdb.connect()
    con.execute(INIT)
    cur = con.execute(sql, list(params))
    return [d[0] for d in cur.description], cur.fetchall()


def as_csv(columns, rows) -> list[list[str]]:
    return [list(columns), *([csv_cell(v) for v in row] for row in rows)]


def test_the_answer_links_to_every_row_as_csv_and_parquet(make):
    registry = make()

    async def work(client):
        result = await client.call_tool("nums", {"below": 500})
        assert len(result.structured_content["table"]) == 11  # the model reads ten rows
        found = links(result)
        assert set(found) == {"text/csv", "application/vnd.apache.parquet"}
        assert all(uri.startswith(PREFIX) for uri in found.values())
        return await read(client, found["text/csv"]), await read(client, found[MIME_TYPES["parquet"]])

    text, blob = session(registry, work)
    columns, rows = direct(SQL.replace(":below", "?"), 500)
    assert text.mime_type == "text/csv" and csv_rows(text.text) == as_csv(columns, rows)
    assert len(rows) == 500 and text.text.startswith("n,label,d,x,lucky,odd\r\n0,row 0,2020-01-01,0.0,true,\r\n")
    assert blob.mime_type == MIME_TYPES["parquet"] and parquet_rows(blob.blob) == (columns, rows)


ECHO = """\
description: The numbers whose label is one of the given words, with the arguments echoed.
parameters:
  labels: {type: array, items: {type: string}, description: Labels}
  word: {type: string, description: A word}
  x: {type: number, description: A number}
  flag: {type: boolean, description: A flag}
  since: {type: date, description: A date}
sql: SELECT n, :word AS word, :x AS x, :flag AS flag, :since AS since FROM nums WHERE label IN :labels ORDER BY n
sources: [https://example.org/]
content: "{{ row_count }} numbers"
download: true
"""


@pytest.mark.parametrize(
    "arguments",
    [
        {
            "labels": ["row 3", "row 7"],
            "word": 'Tōkyō "quoted" \\ \u2028 end',
            "x": 0.1,
            "flag": True,
            "since": "2024-02-29",
        },
        {"labels": ["row 1"], "word": "", "x": -1e16, "flag": False, "since": "1999-12-31"},
        {
            "labels": ["row 0", "row 999"],
            "word": "日本 😀 & = ? # %",
            "x": 12345678901234567890,
            "flag": True,
            "since": "2000-01-01",
        },
    ],
)
def test_a_link_carries_its_arguments_of_every_type(make, arguments):
    """The link's `args` read back as the call's own arguments: text of any script and JSON's escapes,
    floats, big numbers, booleans, dates and arrays; the file is the call's whole result."""
    registry = make(ECHO, name="echo")

    async def work(client):
        result = await client.call_tool("echo", arguments)
        uri = links(result)["text/csv"]
        carried = json.loads(base64.urlsafe_b64decode(uri.split("args=")[1].split("&")[0] + "=="))
        return result.structured_content["table"], carried, await read(client, uri)

    table, carried, text = session(registry, work)
    assert carried == arguments
    assert csv_rows(text.text)[1:] == [[csv_cell(v) for v in row] for row in table[1:]]


def test_links_are_not_listed_and_an_empty_answer_has_none(make):
    registry = make()

    async def work(client):
        empty = await client.call_tool("nums", {"below": 0})
        listed = [str(r.uri) for r in (await client.list_resources()).resources]
        return empty, listed

    empty, listed = session(registry, work)
    assert [c.type for c in empty.content] == ["text"]
    assert not any(u.startswith(PREFIX) for u in listed)


def test_without_download_an_answer_carries_no_link(make):
    registry = make(NUMS.replace("download: true", "download: false"))
    result = registry.call_sync("nums", {})
    assert [c.type for c in result.content] == ["text"] and registry.get("nums").download is None


def test_a_paged_tool_links_to_the_whole_result(make):
    registry = make(
        NUMS.replace("max_rows: 10", "page_size: 100").replace("download: true", "download: {formats: [csv]}")
    )

    async def work(client):
        page = await client.call_tool("nums", {})
        (uri,) = links(page).values()
        return await read(client, uri)

    text = session(registry, work)
    assert csv_rows(text.text) == as_csv(*direct(SQL.replace(":below", "1000")))


def _tamper(uri: str, how: str, registry) -> str:
    head, _, token = uri.partition("&link=")
    expires, mac, kid = token.split(".")
    if how == "garbage":
        return PREFIX + "nums.csv?args=e30&link=nonsense"
    if how == "other arguments":
        return (
            head.split("?args=")[0] + "?args=" + base64.urlsafe_b64encode(b'{"below":999}').decode() + "&link=" + token
        )
    if how == "other format":
        return uri.replace("nums.csv", "nums.xlsx")
    if how == "later expiry":
        return f"{head}&link={int(expires) + 3600}.{mac}.{kid}"
    if how == "expiry spelt otherwise":
        return f"{head}&link=+{expires}.{mac}.{kid}"
    if how == "other signature":
        return f"{head}&link={expires}.{'A' * len(mac)}.{kid}"
    if how == "other key":
        return f"{head}&link={Cursors(b'x' * 32).stamp('nums', 'anything', int(expires))}"
    if how == "a cursor's token":
        return f"{head}&link={Cursors(b'x' * 32).seal('nums', 'anything', f'0.{expires}')}"
    if how == "unknown tool":
        return uri.replace("nums.csv", "nope.csv")
    if how == "no link":
        return head
    if how == "arguments nested too deep":  # a JSON decoder's recursion limit, before any signature is checked
        deep = base64.urlsafe_b64encode(b"[" * 100_000 + b"]" * 100_000).decode()
        return f"{head.split('?args=')[0]}?args={deep}&link={token}"
    raise AssertionError(how)


@pytest.mark.parametrize(
    ("how", "says"),
    [
        ("garbage", "not a download link this server gave"),
        ("other arguments", "not for this caller and these arguments (it came from other arguments"),
        ("other format", "not a download link this server gave"),
        ("later expiry", "not for this caller and these arguments"),
        ("expiry spelt otherwise", "not for this caller and these arguments"),
        ("other signature", "not for this caller and these arguments"),
        ("a cursor's token", "not a download link this server gave"),
        ("other key", "signed by another mcpgen process"),
        ("unknown tool", "not a download link this server gave"),
        ("no link", "not a download link this server gave"),
        ("arguments nested too deep", "not a download link this server gave"),
    ],
)
def test_a_bad_or_altered_link_is_one_invalid_params_sentence(make, how, says):
    registry = make()

    async def work(client):
        uri = _tamper(links(await client.call_tool("nums", {"below": 20}))["text/csv"], how, registry)
        return uri, await refusal(client, uri)

    uri, error = session(registry, work)
    assert error.error.code == -32602 and says in error.error.message, error.error.message
    assert error.error.data == {"uri": uri}
    assert error.error.message.count(". ") == 0 and "\n" not in error.error.message  # one sentence


def test_a_link_reads_only_a_format_its_tool_offers(make):
    """An answer's links differ in their format only (one token serves both, the format is the URI's); a
    format the tool does not offer is refused however the link is signed."""
    both = make()

    async def tokens(client):
        return [
            uri.replace(".parquet?", ".csv?") for uri in links(await client.call_tool("nums", {"below": 5})).values()
        ]

    first, second = session(both, tokens)
    assert first == second
    registry = make(NUMS.replace("download: true", "download: {formats: [csv]}"))

    async def work(client):
        (uri,) = links(await client.call_tool("nums", {"below": 5})).values()
        assert csv_rows((await read(client, uri)).text)[1:] == as_csv(*direct(SQL.replace(":below", "5")))[1:]
        return await refusal(client, uri.replace("nums.csv", "nums.parquet"))

    error = session(registry, work)
    assert error.error.code == -32602 and error.error.message.startswith("This is not a download link this server gave")


def test_an_expired_link_is_refused(make, monkeypatch):
    registry = make(NUMS.replace("download: true", "download: {ttl: 60s}"))

    async def work(client):
        uri = links(await client.call_tool("nums", {}))["text/csv"]
        real = time.time
        monkeypatch.setattr(time, "time", lambda: real() + 61)
        return await refusal(client, uri)

    error = session(registry, work)
    assert error.error.code == -32602 and error.error.message.startswith("This download link has expired")


@pytest.mark.parametrize(
    ("settings", "says"),
    [
        ("{max_rows: 999}", "would hold more than 999 rows"),
        ("{max_bytes: 20000, formats: [csv]}", "as CSV would pass 20,000 bytes"),
        ("{max_bytes: 2000, formats: [parquet]}", "as Parquet would pass 2,000 bytes"),
    ],
)
def test_a_download_past_its_caps_is_refused(make, settings, says):
    registry = make(NUMS.replace("download: true", f"download: {settings}"))

    async def work(client):
        uri = next(iter(links(await client.call_tool("nums", {})).values()))
        return await refusal(client, uri)

    error = session(registry, work)
    assert error.error.code == -32602 and says in error.error.message, error.error.message


def test_a_link_is_bound_to_its_caller(make):
    """A caller reads only the links given to them; another caller's link is refused, even for the same
    arguments, and so is a scoped tool's link for a caller who may not see it."""
    registry = make(NUMS + "scopes: [numbers]\n")

    def as_caller(name, work):
        token = as_token(["numbers"], {"email": f"{name}@example.com"})
        try:
            return session(registry, work)
        finally:
            auth_context_var.reset(token)

    async def get_link(client):
        return links(await client.call_tool("nums", {"below": 3}))["text/csv"]

    alice = as_caller("alice", get_link)

    async def read_alice(client):
        return await refusal(client, alice)

    error = as_caller("bob", read_alice)
    assert "not for this caller and these arguments" in error.error.message

    async def own(client):
        return (await read(client, alice)).text

    assert csv_rows(as_caller("alice", own))[1:] == as_csv(*direct(SQL.replace(":below", "3")))[1:]
    token = as_token(["other"], {"email": "alice@example.com"})  # alice without the tool's scope
    try:
        error = session(registry, read_alice)
    finally:
        auth_context_var.reset(token)
    assert error.error.message.startswith("This is not a download link this server gave")


def test_a_changed_spec_refuses_older_links(make):
    registry = make()
    uri = links(registry.call_sync("nums", {}))["text/csv"]
    changed = make(NUMS.replace("numbers", "Numbers"))

    async def work(client):
        return await refusal(client, uri)

    assert "spec or mcpgen.yaml since changed" in session(changed, work).error.message


def test_the_links_count_in_max_bytes(make):
    registry = make(NUMS.replace("max_rows: 10", "max_rows: 1000\nmax_bytes: 5000"))
    result = registry.call_sync("nums", {})
    assert len(links(result)) == 2
    assert len(result.to_mcp().model_dump_json(by_alias=True, exclude_none=True).encode()) <= 5000


def test_the_project_default_and_the_spec_combine():
    config = ProjectConfig.model_validate({"defaults": {"download": {"formats": ["csv"], "max_rows": 50}}})
    spec = Spec.model_validate(
        {
            "description": "d",
            "sql": "SELECT 1",
            "sources": ["https://e.org/"],
            "content": "c",
            "download": {"ttl": "5m"},
        }
    )
    from mcpgen.spec.models import download_settings

    chosen = download_settings(spec.download, config.defaults.download)
    assert chosen is not None and (chosen.formats, chosen.max_rows, chosen.ttl) == (["csv"], 50, 300.0)
    assert download_settings(None, config.defaults.download) == config.defaults.download


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ({"formats": ["csv", "csv"]}, "name each format once"),
        ({"formats": ["xlsx"]}, "'csv' or 'parquet'"),
        ({"max_rows": 0}, "greater than or equal to 1"),
        ({"ttl": "soon"}, "is not a duration"),
        ("yes", "valid boolean"),
        (["csv"], "true, false or a mapping"),
    ],
)
def test_bad_download_settings_are_refused(value, says):
    with pytest.raises(ValueError, match=says):
        Spec.model_validate(
            {"description": "d", "sql": "SELECT 1", "sources": ["https://e.org/"], "content": "c", "download": value}
        )


def test_the_schema_offers_download():
    from mcpgen.spec.schema import config_schema, spec_schema

    assert "download" in spec_schema()["properties"]
    assert "download" in json.dumps(config_schema()["$defs"]["Defaults"])


# --- the same downloads on every SQLAlchemy backend, equal to the query run directly ---


@pytest.mark.parametrize("kind", ["postgresql", "mariadb", "sqlite"])
def test_downloads_on_every_sqlalchemy_backend_equal_the_query(kind, request, tmp_path, monkeypatch, city_rows):
    monkeypatch.chdir(tmp_path)
    if kind == "sqlite":
        services.load_cities("sqlite", "cities", city_rows, sqlite_path=tmp_path / "cities.db")
        url, table = "sqlite:///cities.db", "cities"
    else:
        prefix = "postgres" if kind == "postgresql" else kind
        url, table = request.getfixturevalue(f"{prefix}_url"), request.getfixturevalue(f"{prefix}_cities")
    columns = "geonameid, name, population, latitude"
    sql = f"SELECT {columns} FROM {table} WHERE country_code = :cc ORDER BY geonameid"
    (tmp_path / "mcpgen.yaml").write_text(f"connections:\n  db:\n    url: {url}\n")
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "cities.yaml").write_text(
        textwrap.dedent(f"""\
            description: Cities of a country.
            connection: db
            parameters:
              cc: {{type: string, description: Country code}}
            sql: {sql}
            sources: [https://www.geonames.org/]
            content: "{{{{ row_count }}}} cities"
            max_rows: 5
            download: true
            """)
    )
    project = open_project(tmp_path / "specs")

    async def work(client):
        found = links(await client.call_tool("cities", {"cc": "JP"}))
        return await read(client, found["text/csv"]), await read(client, found[MIME_TYPES["parquet"]])

    try:
        text, blob = session(project.registry, work)
    finally:
        project.close()
    names, expected = _direct(kind, tmp_path, sql.replace(":cc", "?" if kind == "sqlite" else "%s"), "JP")
    assert len(expected) > 100 and names == ["geonameid", "name", "population", "latitude"]
    assert csv_rows(text.text) == as_csv(names, expected)
    assert parquet_rows(blob.blob) == (names, expected)


def _direct(kind: str, root, sql: str, *params) -> tuple[list[str], list[tuple]]:
    """The query run directly on the database, with its own driver."""
    if kind == "sqlite":
        import sqlite3

        con = sqlite3.connect(root / "cities.db")
        try:
            cur = con.execute(sql, params)
            return [d[0] for d in cur.description], [tuple(r) for r in cur.fetchall()]
        finally:
            con.close()
    with services.connect(kind) as con:
        cur = con.cursor()
        cur.execute(sql, params)
        return [d[0] for d in cur.description], [tuple(r) for r in cur.fetchall()]


# --- mcpgen call TOOL --download FILE ---


def test_call_download_writes_the_whole_result(make, tmp_path):
    from click.testing import CliRunner

    from mcpgen.cli import main

    make()
    runner = CliRunner()
    out = runner.invoke(main, ["call", "nums", "-s", "specs", "-a", "below=300", "--download", "all.csv"])
    assert out.exit_code == 0, out.output
    assert csv_rows((tmp_path / "all.csv").read_bytes().decode()) == as_csv(*direct(SQL.replace(":below", "300")))
    out = runner.invoke(main, ["call", "nums", "-s", "specs", "--download", "all.parquet"])
    assert out.exit_code == 0, out.output
    table = pq.read_table(tmp_path / "all.parquet")
    assert (table.column_names, [tuple(r.values()) for r in table.to_pylist()]) == direct(SQL.replace(":below", "1000"))
    out = runner.invoke(main, ["call", "nums", "-s", "specs", "-a", "below=0", "--download", "none.csv"])
    assert out.exit_code == 1 and "none.csv not written: the answer has no rows" in out.output
    assert not (tmp_path / "none.csv").exists()


def test_call_download_of_a_tool_without_downloads_is_refused(make):
    from click.testing import CliRunner

    from mcpgen.cli import main

    make(NUMS.replace("download: true", "download: false"))
    out = CliRunner().invoke(main, ["call", "nums", "-s", "specs", "--download", "all.csv"])
    assert out.exit_code == 2 and "tool 'nums' offers no download" in out.output


def test_a_download_reads_under_the_reader_s_row_level_security(rls_table, tmp_path, monkeypatch):
    """PostgreSQL row-level security sees the caller of resources/read: each caller's file holds their rows."""
    from sqlalchemy.engine import make_url

    table, role = rls_table
    url = make_url(services.POSTGRES_URL).set(username=role).render_as_string(hide_password=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mcpgen.yaml").write_text(
        f"connections:\n  pg:\n    url: {url}\n    claim_settings: {{app.email: email}}\n"
    )
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "orders.yaml").write_text(
        textwrap.dedent(f"""\
            description: My orders.
            connection: pg
            sql: SELECT id, amount FROM {table} ORDER BY id
            sources: [https://example.org/]
            content: "{{{{ row_count }}}} orders"
            download: {{formats: [csv]}}
            """)
    )
    project = open_project(tmp_path / "specs")

    async def own_file(client):
        (uri,) = links(await client.call_tool("orders", {})).values()
        return (await read(client, uri)).text

    try:
        files = {}
        for email in ("alice@example.com", "bob@example.com"):
            token = as_token([], {"email": email})
            try:
                files[email] = csv_rows(session(project.registry, own_file))
            finally:
                auth_context_var.reset(token)
    finally:
        project.close()
    assert files == {
        "alice@example.com": [["id", "amount"], ["1", "10.0"], ["2", "20.0"]],
        "bob@example.com": [["id", "amount"], ["3", "5.0"]],
    }
