"""Simple templates rendered as plain Python give exactly what Jinja gives: text, or the same error."""

from __future__ import annotations

import datetime as dt
import shutil
from decimal import Decimal
from pathlib import Path

import pytest
import yaml

from mcpgen.errors import RenderError
from mcpgen.serve.project import open_project
from mcpgen.templates.render import Template

REPO = Path(__file__).resolve().parents[2]

ROWS = [
    {"city": "Oslo", "pop": 709037, "share": 0.1234, "founded": dt.date(1040, 1, 1), "note": None},
    {
        "city": "![x](https://evil.example/p.png)",
        "pop": 285911,
        "share": 1.0,
        "founded": dt.date(1070, 1, 1),
        "note": "a",
    },
    {"city": "Tōkyō", "pop": Decimal("9733276"), "share": 0.5, "founded": dt.date(1457, 1, 1), "note": ""},
]
CONTEXT = {
    "rows": ROWS,
    "row_count": 3,
    "columns": list(ROWS[0]),
    "truncated": False,
    "max_rows": 10,
    "n": 3,
    "r": "outer",
}

TEMPLATES = [
    "plain text only",
    "{{ row_count }} rows; truncated={{ truncated }}; none={{ rows[0].note }}; max {{ max_rows }}",
    "{% for r in rows %}{{ loop.index }}. {{ r.city }} ({{ r.pop | thousands }}){{ ', ' if not loop.last else '.' }}{% endfor %}",
    "{% for r in rows %}{{ r.city }}{{ ', ' if not loop.last }}{% endfor %} and r is {{ r }}",
    "{% for r in rows -%}\n  {{ loop.index0 }}/{{ loop.length }} {{ r.share | percent }} {{ r.share | percent(2) }}\n{%- endfor %}",
    "{% for r in rows %}{% if loop.first %}First: {% elif loop.last %}Last: {% else %}Then: {% endif %}{{ r.city }}\n{% endfor %}",
    "{{ rows[0].city }} was founded {{ rows[0].founded | date('%Y') }}; {{ rows[-1].pop | round(-3) }}",
    "{% if n > 2 and not truncated %}many{% elif n == 2 %}two{% else %}few{% endif %} {{ rows | length }}",
    "{{ 'yes' if rows[0].note is none else 'no' }}",  # `is` tests: Jinja renders these
    "{% for r in rows %}{{ r.note or 'n/a' }}|{% endfor %}",
    "{{ rows | map(attribute='city') | join_names }}",  # outside the subset: Jinja renders
    "{% for r in rows %}{{ r.pop * 2 }} {% endfor %}",  # arithmetic: outside the subset
    "{% for r in rows %}{% for c in columns %}{{ c }}{% endfor %}{% endfor %}",  # nested loops: outside
    "   {{ row_count }}   ",
    # more shapes of the subset, each against Jinja
    "{% for r in rows %}{% if r.note %}[{{ r.note }}]{% elif r.share >= 1 %}all{% endif %}{% endfor %}",
    "{% for r in rows %}{% endfor %}{% for c in columns %}{{ c }}{{ '/' if not loop.last }}{% endfor %}",
    "{{ rows[-1].city }} {{ rows[0] }} {{ columns }} {{ (rows | length) > 2 }} {{ n == 3 and 'x' or 'y' }}",
    "{% if rows %}{% for r in rows %}{{ loop.index }}{{ r.pop | thousands('.') }} {% endfor %}{% else %}none{% endif %}",
    "{{ r }}{% for r in rows %}{{ r.city if r.pop != 0 else -1 }};{% endfor %}{{ r }}",
]
BROKEN = [
    "{{ nope }}",  # undefined name
    "{{ rows[9].city }}",  # past the end
    "{% for r in rows %}{{ r.nope }}{% endfor %}",  # no such column
    "{{ rows[0].city | thousands('') | percent }}",  # a filter failing on its input
    "{{ rows.items }}",  # not a row: the sandbox decides
    "{{ rows[-9].city }}",  # before the start
    "{{ columns[0].city }}",  # a column of something that is not a row
    "{% for r in columns %}{{ r.city }}{% endfor %}",  # the same in a loop
    "{% if nope > 1 %}x{% endif %}",  # an undefined name in a test
    "{% for r in rows %}{{ r.city | percent }}{% endfor %}",  # a filter failing in a loop
]


def both(source: str, context: dict, **kwargs) -> tuple:
    """(fast result, Jinja result): each the text, or the RenderError's message."""
    out = []
    for fast in (True, False):
        template = Template(source)
        if not fast:
            template._fast = False
        try:
            out.append(template.render(dict(context), **kwargs))
        except RenderError as exc:
            out.append(f"RenderError: {exc}")
    return tuple(out)


@pytest.mark.parametrize("source", TEMPLATES + BROKEN)
def test_the_plain_python_render_equals_jinja(source):
    fast, jinja = both(source, CONTEXT)
    assert fast == jinja


def test_broken_templates_fail_with_jinja_s_message():
    for source in BROKEN:
        assert both(source, CONTEXT)[0].startswith("RenderError: "), source


def test_the_subset_is_compiled_and_the_rest_is_left_to_jinja():
    from mcpgen.templates.budget import as_text
    from mcpgen.templates.fast import compile_simple
    from mcpgen.templates.render import PROSE

    compiled = [compile_simple(PROSE.parse(s), as_text) is not None for s in TEMPLATES]
    assert compiled[:8] == [True] * 8
    assert compiled[10:13] == [False, False, False]


def test_size_limits_and_cutting_agree():
    source = "{% for r in rows %}{{ r.city }} is a city of {{ r.pop | thousands }} people. {% endfor %}"
    many = {**CONTEXT, "rows": ROWS * 400}
    assert both(source, many, limit=5000, cut=True)[0] == both(source, many, limit=5000, cut=True)[1]
    fast, jinja = both(source, many, limit=5000)
    assert fast == jinja and "more than 5,000 characters" in fast


def test_url_templates_keep_their_encoding():
    for fast in (True, False):
        template = Template("https://example.org/{{ q }}?x={{ rows[0].city }}", url=True)
        if not fast:
            template._fast = False
        assert template.render({"q": "a b/c", "rows": ROWS}) == "https://example.org/a%20b%2Fc?x=Oslo"


def _shipped(folder: Path):
    for path in sorted(folder.glob("*.yaml")):
        spec = yaml.safe_load(path.read_text())
        for case in spec.get("tests", []) or [{"args": {}}]:
            yield spec.get("name", path.stem), case.get("args", {})


def _bench_project(tmp_path: Path) -> Path:
    """bench/project with the cities it loads copied in (DuckDB reads only files inside a project)."""
    project = tmp_path / "project"
    shutil.copytree(REPO / "bench" / "project", project)
    (project / "data").mkdir()
    shutil.copyfile(REPO / "examples" / "data" / "cities.csv", project / "data" / "cities.csv")
    return project / "specs"


@pytest.mark.parametrize("folder", ["specs", "bench/project/specs"])
def test_every_shipped_answer_is_the_same_either_way(folder, tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)  # open_project changes the working directory
    specs = REPO / folder if folder == "specs" else _bench_project(tmp_path)
    project = open_project(specs)
    try:
        registry = project.registry
        calls = list(_shipped(specs))
        fast = [registry.call_sync(name, args) for name, args in calls]
        for tool in registry:
            run = tool.handler
            for template in (run.content, run.empty, run.force, *run.sources) if hasattr(run, "content") else ():
                if template is not None:
                    template._fast = False
        jinja = [registry.call_sync(name, args) for name, args in calls]
    finally:
        project.close()
    for (name, args), a, b in zip(calls, fast, jinja):
        assert a.to_mcp().model_dump(exclude={"meta"}) == b.to_mcp().model_dump(exclude={"meta"}), (name, args)


def test_a_long_loop_stops_soon_after_the_limit():
    from mcpgen.templates.budget import as_text
    from mcpgen.templates.fast import compile_simple
    from mcpgen.templates.render import PROSE

    fn = compile_simple(PROSE.parse("{% for r in rows %}{{ r.city }} {% endfor %}"), as_text)
    rows = [{"city": "x" * 100}] * 1_000_000  # 101 MB of text if rendered whole
    text = fn({"rows": rows}, 10_000)
    assert 10_000 < len(text) < 20_000
    text = fn({"rows": [{"city": "x" * 100_000}] * 1000}, 10_000)  # long values: the limit is looked at each time
    assert len(text) <= 100_001


def test_many_renders_on_one_thread_stay_plain_python(monkeypatch):
    """The plain-Python renderer spends no part of Jinja's per-render budget (MAX_BUILT), which only a
    Jinja render starts afresh: a worker thread's thousandth answer renders as fast as its first."""
    from mcpgen.limits import MAX_BUILT, MAX_OUTPUT

    def jinja(*args):
        raise AssertionError("rendered by Jinja")

    template = Template("{% for r in rows %}{{ r.city }}{% endfor %}")
    context = {"rows": [{"city": "x" * 1000}] * (MAX_OUTPUT // 1000)}
    monkeypatch.setattr(Template, "_render_jinja", jinja)
    for _ in range(MAX_BUILT // MAX_OUTPUT + 2):
        assert len(template.render(context)) == MAX_OUTPUT


@pytest.mark.parametrize("depth", [150, 250, 400])
@pytest.mark.parametrize("shape", ["{{ %s x }}", "{{ x %s }}"])
def test_deeply_nested_expressions_render_or_fail_in_one_sentence(shape, depth):
    """Python parses at most 200 nested parentheses: the plain-Python source of a deeper template is left
    to Jinja, whose own source nests as deep, so the answer is the text or a RenderError, not a SyntaxError."""
    source = shape % ("not " * depth if shape.startswith("{{ %s") else " and x" * depth)
    for fast in (True, False):
        template = Template(source)
        if not fast:
            template._fast = False
        try:
            assert template.render({"x": 1}) in ("True", "False", "1")
        except RenderError as exc:
            assert "too deeply" in str(exc)
