"""The cache of parsed templates and spec files: a warm load reads the very trees and YAML a cold one
parses, an edit is parsed again, and a missing, corrupt, foreign or hostile cache file is ignored without a word."""

from __future__ import annotations

import os
import pickle
import sys
import textwrap
from pathlib import Path

import anyio
import pytest

from mcpgen import cachefile
from mcpgen.load.project import load_project
from mcpgen.templates.render import PROSE, URL

REPO = Path(__file__).resolve().parents[1]

SPEC = """\
description: Cities of a country.
parameters:
  country: {type: string, description: ISO code, default: FR}
sql: SELECT name, population FROM cities WHERE country_code = :country ORDER BY population DESC LIMIT 3
content: "{% for r in rows %}{{ r.name }} has {{ r.population | thousands }} people. {% endfor %}"
sources:
  - https://www.geonames.org/
  - https://www.geonames.org/countries/{{ country }}/
"""


@pytest.fixture
def parses(monkeypatch):
    """Counts the templates Jinja parses (rendering is not part of loading, so only loading counts; nor is
    reading the tree of a template whose spec was kept as checked, which parses it then)."""
    seen: list[str] = []
    for env in (PROSE, URL):
        real = env.parse

        def counted(source, *args, _real=real, **kwargs):
            seen.append(source)
            return _real(source, *args, **kwargs)

        monkeypatch.setattr(env, "parse", counted)
    return seen


def project(tmp_path: Path, **specs: str) -> Path:
    folder = tmp_path / "project" / "specs"
    folder.mkdir(parents=True)
    (folder.parent / "mcpgen.yaml").write_text("connections:\n  default:\n    duckdb: ':memory:'\n")
    for name, text in specs.items():
        (folder / f"{name}.yaml").write_text(textwrap.dedent(text))
    return folder


def trees(loaded) -> dict:
    """Every template's tree, and every spec's YAML with the positions of its keys, at every depth."""
    out: dict = {(s.name, key): (t.ast, t.constant, t.host) for s in loaded.specs for key, t in s.templates.items()}
    for s in loaded.specs:
        out[s.name] = positions(s.data)
    return out


def positions(value):
    if isinstance(value, dict):
        return (type(value), value.line, value.col, value.lines, {k: positions(v) for k, v in value.items()})
    if isinstance(value, list):
        return (type(value), value.line, value.col, value.lines, [positions(v) for v in value])
    return value


@pytest.fixture
def yaml_reads(monkeypatch):
    """Counts the spec and prompt files the YAML loader reads."""
    from mcpgen.spec import yamlload

    seen: list[str] = []
    real = yamlload.load_yaml

    def counted(text, path, *args, **kwargs):
        seen.append(path)
        return real(text, path, *args, **kwargs)

    monkeypatch.setattr(yamlload, "load_yaml", counted)
    return seen


def test_a_warm_load_reads_the_trees_a_cold_one_parses(cache, parses, yaml_reads, monkeypatch):
    monkeypatch.setenv("MCPGEN_CACHE", "off")
    cold = load_project(REPO / "specs")
    assert not cache.exists()  # off writes nothing
    monkeypatch.delenv("MCPGEN_CACHE")
    parses.clear()
    first = load_project(REPO / "specs")
    assert parses and len(list(cache.glob("load-*.pickle"))) == 1
    parses.clear()
    yaml_reads.clear()
    warm = load_project(REPO / "specs")
    assert parses == [] and yaml_reads == []  # nothing parsed
    assert trees(warm) == trees(first) == trees(cold) and len(trees(cold)) > 20
    assert [str(p) for p in warm.problems] == [str(p) for p in cold.problems]
    assert [p.name for p in warm.prompts] == [p.name for p in cold.prompts]


def test_an_edited_template_is_parsed_again(tmp_path, cache, parses):
    specs = project(tmp_path, towns=SPEC, villages=SPEC.replace("people", "inhabitants"))
    load_project(specs)
    parses.clear()
    (specs / "towns.yaml").write_text(SPEC.replace("people.", "residents."))
    loaded = load_project(specs)
    assert parses == [SPEC.split('content: "')[1].split('"\n')[0].replace("people.", "residents.")]
    towns = {s.name: s for s in loaded.specs}["towns"].templates["content"]
    rows = [{"name": "Paris", "population": 2138551}]
    assert towns.render({"rows": rows}) == "Paris has 2,138,551 residents."
    parses.clear()
    warm = load_project(specs)
    assert parses == [] and trees(warm) == trees(loaded)  # (a kept spec's trees are parsed when read)


def test_a_syntax_error_is_reported_on_every_load(tmp_path, cache):
    specs = project(tmp_path, broken=SPEC.replace("{% endfor %}", ""), bad_yaml=SPEC.replace("sql:", "sql: [", 1))
    for _ in range(2):
        yaml, template = sorted(load_project(specs).errors, key=str)
        assert "bad_yaml.yaml:" in str(yaml) and "broken.yaml:" in str(template)
        assert "content: template syntax error" in str(template)


def test_yaml_warnings_come_back_with_their_positions(tmp_path, cache, yaml_reads):
    specs = project(
        tmp_path, towns=SPEC.replace("description: Cities", "annotations: {readOnlyHint: yes}\ndescription: Cities")
    )
    cold = [str(p) for p in load_project(specs).problems]
    assert any("yes" in p and "towns.yaml:1:" in p for p in cold)
    yaml_reads.clear()
    assert [str(p) for p in load_project(specs).problems] == cold and yaml_reads == []


def test_an_edited_spec_file_is_read_again(tmp_path, cache, yaml_reads):
    specs = project(tmp_path, towns=SPEC, villages=SPEC)
    load_project(specs)
    yaml_reads.clear()
    (specs / "towns.yaml").write_text("# a comment moves every line\n" + SPEC.replace("default: FR", "default: KE"))
    loaded = {s.name: s for s in load_project(specs).specs}
    assert yaml_reads == [str(specs / "towns.yaml")]
    assert loaded["towns"].spec.parameters["country"].default == "KE" and loaded["towns"].where("sql") == (5, 1)
    assert loaded["villages"].where("sql") == (4, 1)


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"not a pickle at all",
        b"\x80\x05\x95",  # truncated
        pickle.dumps(("another header", {})),
        pickle.dumps(["a list", "not a pair"]),
    ],
    ids=["empty", "garbage", "truncated", "foreign-version", "wrong-shape"],
)
def test_a_broken_cache_file_is_ignored(tmp_path, cache, parses, capsys, content):
    specs = project(tmp_path, towns=SPEC)
    cold = trees(load_project(specs))
    (path,) = cache.glob("load-*.pickle")
    path.write_bytes(content)
    parses.clear()
    assert trees(load_project(specs)) == cold and parses  # parsed again, quietly
    assert capsys.readouterr() == ("", "")
    parses.clear()
    warm = load_project(specs)
    assert parses == [] and trees(warm) == cold  # and the file is whole again


@pytest.mark.parametrize("where", ["file", "entry"])
def test_a_cache_file_cannot_run_code(tmp_path, cache, parses, monkeypatch, where, hostile):
    specs = project(tmp_path, towns=SPEC)
    cold = trees(load_project(specs))
    (path,) = cache.glob("load-*.pickle")
    header, entries = pickle.loads(path.read_bytes())
    if where == "file":
        path.write_bytes(pickle.dumps(hostile))
    else:  # a well-formed file whose trees are not trees
        path.write_bytes(pickle.dumps((header, {k: pickle.dumps(hostile) for k in entries})))
    monkeypatch.chdir(tmp_path)
    assert trees(load_project(specs)) == cold and parses
    assert not (tmp_path / "hostile-was-run").exists()


def test_deleting_the_cache_is_safe(tmp_path, cache, parses):
    specs = project(tmp_path, towns=SPEC)
    cold = trees(load_project(specs))
    for path in cache.iterdir():
        path.unlink()
    cache.rmdir()
    assert trees(load_project(specs)) == cold and cache.is_dir()


def test_another_version_parses_again(tmp_path, cache, parses, monkeypatch):
    specs = project(tmp_path, towns=SPEC)
    load_project(specs)
    monkeypatch.setattr(cachefile, "_HEADER", cachefile._HEADER + " (next)")
    parses.clear()
    load_project(specs)
    assert len(parses) == 2  # the content and the templated source URL


def test_the_code_a_cache_file_belongs_to_is_mcpgen_s_own(tmp_path, monkeypatch):
    """The state of mcpgen's own files names the cache file (an edited checkout keeps its own); that walk
    covers the package alone, not the folder that holds it (a checkout's tests and node packages, or an
    install's whole site-packages, read at every start)."""
    import mcpgen

    assert Path(mcpgen.__file__).resolve().parent == cachefile._PACKAGE
    cachefile._code.cache_clear()
    seen: list[str] = []
    real = os.walk
    monkeypatch.setattr(os, "walk", lambda top, *a, **k: seen.append(str(top)) or real(top, *a, **k))
    try:
        cachefile._code()
    finally:
        cachefile._code.cache_clear()
    assert seen == [str(Path(mcpgen.__file__).resolve().parent)]


def test_an_unwritable_cache_folder_only_costs_the_parse(tmp_path, monkeypatch, parses):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("MCPGEN_CACHE_DIR", str(blocker / "cache"))
    specs = project(tmp_path, towns=SPEC)
    assert not load_project(specs).errors and parses


def test_the_cache_folder_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("MCPGEN_CACHE_DIR", raising=False)
    monkeypatch.delenv("MCPGEN_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cachefile.cache_dir() == tmp_path / "mcpgen"
    monkeypatch.setenv("MCPGEN_CACHE_DIR", str(tmp_path / "elsewhere"))
    assert cachefile.cache_dir() == tmp_path / "elsewhere"
    for off in ("off", "0", "false", "No"):
        monkeypatch.setenv("MCPGEN_CACHE", off)
        assert cachefile.cache_dir() is None


@pytest.mark.slow
def test_a_warm_server_serves_the_same_tools(tmp_path):
    """The real `mcpgen serve`, cold (no cache), then writing the cache, then reading it: the same tools
    (names, schemas) and the same answers."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def serve(env: dict) -> tuple:
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "mcpgen.cli", "serve", str(REPO / "specs")], env=env, cwd=str(REPO)
        )
        with anyio.fail_after(120):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
                await client.initialize()
                tools = (await client.list_tools()).tools
                calls = [("top_cities", {"country": "FR", "top_n": 3}), ("country_profile", {"country": "KE"})]
                answers = [(await client.call_tool(name, args)).model_dump(mode="json") for name, args in calls]
        listed = sorted((t.name, t.model_dump_json()) for t in tools)
        return listed, answers

    env = {**os.environ, "MCPGEN_CACHE_DIR": str(tmp_path / "cache")}
    cold = anyio.run(serve, {**env, "MCPGEN_CACHE": "off"})
    assert not (tmp_path / "cache").exists()
    first = anyio.run(serve, env)
    assert list((tmp_path / "cache").glob("load-*.pickle"))
    warm = anyio.run(serve, env)
    assert warm == first == cold and len(cold[0]) >= 8
