import datetime as dt

import pytest

from mcpgen.errors import ArgumentError
from mcpgen.spec.models import Parameter as P
from mcpgen.spec.params import Arguments


@pytest.fixture
def args():
    return Arguments(
        {
            "n": P(type="integer", description="n", default=3, minimum=1, maximum=100),
            "country": P(type="string", description="c", required=False, pattern="^[A-Z]{2}$"),
            "ids": P(type="array", description="i", items={"type": "string"}, min_items=1, max_items=3, required=False),
            "day": P(type="date", description="d", required=False, minimum="2013-01-01"),
            "at": P(type="datetime", description="t", required=False),
            "x": P(type="number", description="x", required=False),
            "kind": P(type="string", description="k", enum=["a", "b"], required=False),
        }
    )


def test_schema_carries_every_constraint(args):
    props = args.schema["properties"]
    assert args.schema["additionalProperties"] is False
    assert props["n"] == {"type": "integer", "description": "n", "default": 3, "minimum": 1, "maximum": 100}
    assert props["day"] == {"type": "string", "format": "date", "description": "d (on or after 2013-01-01)"}
    assert props["at"]["format"] == "date-time"
    assert props["ids"]["items"] == {"type": "string"} and props["ids"]["minItems"] == 1
    assert "required" not in args.schema


def test_values_are_typed_for_binding(args):
    values = args.validate({"day": "2013-05-01", "at": "2013-01-01T10:00:00Z", "ids": ["a"]})
    assert values["n"] == 3 and values["country"] is None
    assert values["day"] == dt.date(2013, 5, 1)
    assert values["at"] == dt.datetime(2013, 1, 1, 10, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    "bad, sentence",
    [
        ({"n": 500}, "Invalid argument 'n': 500 is greater than the maximum of 100."),
        ({"n": "1; DROP"}, "Invalid argument 'n': expected an integer, got string \"1; DROP\"."),
        ({"n": True}, "Invalid argument 'n': expected an integer, got true."),
        ({"n": ["JP"]}, "Invalid argument 'n': expected an integer, got array [\"JP\"]."),
        ({"n": 2**70}, "Invalid argument 'n': 1180591620717411303424 is greater than the maximum of 100."),
        ({"country": {"a": 1}}, "Invalid argument 'country': expected a string, got object {\"a\": 1}."),
        ({"country": "jp"}, "Invalid argument 'country': \"jp\" does not match the pattern ^[A-Z]{2}$."),
        ({"ids": []}, "Invalid argument 'ids': 0 items are fewer than the minimum of 1."),
        ({"ids": ["a", 1]}, "Invalid argument 'ids[1]': expected a string, got integer 1."),
        ({"day": "2012-12-31"}, "Invalid argument 'day': 2012-12-31 is before the minimum of 2013-01-01."),
        ({"day": "2020-13-01"}, "Invalid argument 'day': \"2020-13-01\" is not an ISO 8601 date (YYYY-MM-DD)."),
        ({"at": "2020-01-01"}, "Invalid argument 'at': \"2020-01-01\" is not an ISO 8601 date-time"),
        ({"x": float("nan")}, "Invalid argument 'x': nan is not a finite number."),
        ({"kind": "c"}, 'Invalid argument \'kind\': "c" is not one of "a", "b".'),
        ({"kind": "A"}, 'Invalid argument \'kind\': "A" is not one of "a", "b" (did you mean "a"?).'),
        ({"zz": 1}, "Unknown argument 'zz': this tool takes n, country, ids, day, at, x, kind."),
        (
            {"contry": "JP"},
            "Unknown argument 'contry': this tool takes n, country, ids, day, at, x, kind (did you mean 'country'?).",
        ),
        ({"country": "a\x00b" * 10}, "Invalid argument 'country':"),
    ],
)
def test_bad_arguments_get_one_sentence_naming_the_parameter(args, bad, sentence):
    with pytest.raises(ArgumentError) as info:
        args.validate(bad)
    assert str(info.value).startswith(sentence)


def test_huge_strings_nul_and_lone_surrogates_are_refused():
    args = Arguments({"q": P(type="string", description="q")})
    for value, words in [("x" * 10_000_000, "longer than the limit"), ("a\x00", "NUL"), ("\ud800", "Unicode")]:
        with pytest.raises(ArgumentError, match=words):
            args.validate({"q": value})
    with pytest.raises(ArgumentError, match="Missing required argument 'q'"):
        args.validate({})


def test_accepts_and_rejects_exactly_what_jsonschema_does_for_the_published_schema(args):
    """Our checker and the reference implementation agree on the schema the model sees."""
    from jsonschema import Draft202012Validator

    reference = Draft202012Validator(args.schema)
    values = [
        None,
        True,
        False,
        0,
        1,
        3,
        3.0,
        3.5,
        -1,
        100,
        101,
        2**70,
        "",
        "JP",
        "jp",
        "JPN",
        "a",
        "b",
        "c",
        [],
        ["a"],
        ["a", "b", "c", "d"],
        [1],
        {"a": 1},
        "2013-05-01",
        1e300,
    ]
    accepted = {}
    for name in ("n", "country", "ids", "x", "kind"):
        accepted[name] = []
        for value in values:
            try:
                args.validate({name: value})
                ok = True
            except ArgumentError:
                ok = False
            # null for a parameter that is not required stands for leaving it out (documented)
            sent = {} if value is None and name not in args.schema.get("required", []) else {name: value}
            assert ok == reference.is_valid(sent), (name, value)
            if ok:
                accepted[name].append(value)
    # both sides accept some values and refuse others for every parameter, so the agreement is not vacuous
    assert accepted == {
        "n": [None, 1, 3, 3.0, 100],
        "country": [None, "JP"],
        "ids": [None, ["a"]],
        "x": [None, 0, 1, 3, 3.0, 3.5, -1, 100, 101, 2**70, 1e300],
        "kind": [None, "a", "b"],
    }


def test_optional_parameters_publish_a_plain_type_and_null_still_means_left_out(args):
    # Generic clients convert form input by `type` ("7" -> 7 only when type is exactly "integer").
    props = args.schema["properties"]
    assert props["country"]["type"] == "string" and props["x"]["type"] == "number"
    assert props["kind"]["enum"] == ["a", "b"]
    assert all(not isinstance(p["type"], list) for p in props.values())
    assert args.validate({"country": None, "kind": None})["country"] is None
    assert args.validate({"n": None})["n"] == 3  # null for a parameter with a default: the default
    required = Arguments({"n": P(type="integer", description="n")})
    with pytest.raises(ArgumentError, match="^Invalid argument 'n': expected an integer, got null.$"):
        required.validate({"n": None})


def test_date_bounds_are_in_the_description_and_checked_here():
    args = Arguments(
        {
            "day": P(type="date", description="Day.", minimum="2013-01-01", maximum="2013-12-31"),
            "days": P(type="array", description="Days", items={"type": "date", "maximum": "2014-01-01"}),
        }
    )
    props = args.schema["properties"]
    assert props["day"]["description"] == "Day. (from 2013-01-01 to 2013-12-31)"
    assert props["days"]["description"] == "Days (each on or before 2014-01-01)"
    assert "formatMinimum" not in str(args.schema) and "formatMaximum" not in str(args.schema)
    with pytest.raises(ArgumentError, match="after the maximum of 2013-12-31"):
        args.validate({"day": "2014-01-01", "days": []})
    with pytest.raises(ArgumentError, match="after the maximum of 2014-01-01"):
        args.validate({"day": "2013-05-01", "days": ["2014-02-01"]})


@pytest.mark.parametrize(
    ("description", "published"),
    [
        ("First day (2013-01-01 to 2013-12-31)", "First day (2013-01-01 to 2013-12-31)"),  # said once
        ("Any day of 2013-01-01 .. 2013-12-31.", "Any day of 2013-01-01 .. 2013-12-31."),
        ("First day, from 2013-01-01", "First day, from 2013-01-01 (from 2013-01-01 to 2013-12-31)"),  # half said
        ("First day", "First day (from 2013-01-01 to 2013-12-31)"),
    ],
)
def test_date_bounds_are_said_once(description, published):
    args = Arguments({"d": P(type="date", description=description, minimum="2013-01-01", maximum="2013-12-31")})
    assert args.schema["properties"]["d"]["description"] == published


def test_no_shipped_tool_says_a_date_twice(monkeypatch):
    import re

    from shipped import SPECS

    from mcpgen.serve.project import open_project

    monkeypatch.chdir(SPECS.parent)  # opening a project changes directory: put it back after
    project = open_project(SPECS, columns=False)
    try:
        for tool in project.registry:
            for name, prop in tool.input_schema["properties"].items():
                dates = re.findall(r"\d{4}-\d{2}-\d{2}(?:T[\d:]+)?", prop.get("description", ""))
                assert len(dates) == len(set(dates)), (tool.name, name, prop["description"])
    finally:
        project.close()


def test_a_datetime_takes_what_date_time_means_and_not_a_plain_date():
    args = Arguments({"at": P(type="datetime", description="t")})
    assert args.validate({"at": "2013-01-01T10:00:00+02:00"})["at"].hour == 10
    assert args.validate({"at": "2013-01-01 10:00:00"})["at"].hour == 10
    for plain in ("2013-01-01", "2013-01-01T", "10:00:00"):
        with pytest.raises(ArgumentError, match="is not an ISO 8601 date-time"):
            args.validate({"at": plain})


# --- property-based: the checker against the reference validator ------------------------------------
# Hypothesis draws parameters (types and constraints as a spec may declare them) and arguments (any JSON,
# and values near the constraints), and the published schema decides through `jsonschema`. mcpgen refuses
# a few values the schema allows, on purpose, and `beyond_the_schema` names them: integers outside 64 bits,
# strings with NUL, longer than 65,536 characters without a max_length, or not valid Unicode.

import services  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from jsonschema import Draft202012Validator  # noqa: E402

from mcpgen.spec.params import INT64, MAX_STRING  # noqa: E402

# Examples each property draws: Hypothesis's default in a local run, five times that in CI (MCPGEN_REQUIRE_SERVICES=1).
EXAMPLES = 500 if services.services_required() else 100

PATTERNS = ["^[A-Z]{2}$", "^a", "b$", "^[a-z0-9_]+$", "x|y", "^\\d{3}-\\d{2}$", "[^ ]"]
# Python's `$` differs from ECMA's at "\n"; lone surrogates arrive as JSON "\ud800" escapes.
TEXT = st.text(st.characters(exclude_characters="\n") | st.sampled_from(["\ud800", "\udfff"]), max_size=12)
INTS = st.integers(-(2**65), 2**65)
FLOATS = st.floats(allow_nan=False, allow_infinity=False)


def _containers(inner):
    return st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=3)


# Built once: hypothesis checks a strategy the first time it draws from it, and a recursive one costs.
JSON_VALUES = st.recursive(st.none() | st.booleans() | INTS | FLOATS | TEXT, _containers)


@st.composite
def constraints(draw, kind: str) -> dict:
    """Keyword arguments of a Parameter or its items for `kind`, as a spec may write them."""
    out: dict = {}
    if kind in ("integer", "number"):
        bound = st.integers(-1000, 1000) if kind == "integer" else st.integers(-1000, 1000) | FLOATS
        low, high = draw(st.none() | bound), draw(st.none() | bound)
        if low is not None and high is not None and low > high:
            low, high = high, low
        out.update(minimum=low, maximum=high)
    if kind == "string":
        low, high = draw(st.none() | st.integers(0, 8)), draw(st.none() | st.integers(0, 8))
        if low is not None and high is not None and low > high:
            low, high = high, low
        out.update(min_length=low, max_length=high, pattern=draw(st.none() | st.sampled_from(PATTERNS)))
    if draw(st.booleans()) and kind != "boolean":
        values = {"integer": st.integers(-5, 5), "number": st.integers(-5, 5) | FLOATS, "string": TEXT}[kind]
        out["enum"] = draw(st.lists(values, min_size=1, max_size=4, unique=True))
    return {k: v for k, v in out.items() if v is not None}


@st.composite
def parameters(draw) -> P:
    kind = draw(st.sampled_from(["integer", "number", "string", "boolean", "array"]))
    fields = {"type": kind, "description": "p", "required": draw(st.booleans())}
    if kind == "array":
        item = draw(st.sampled_from(["integer", "number", "string", "boolean"]))
        fields["items"] = {"type": item, **draw(constraints(item))}
        low, high = draw(st.none() | st.integers(0, 4)), draw(st.none() | st.integers(1, 4))
        if low is not None and high is not None and low > high:
            low = high
        fields.update({k: v for k, v in (("min_items", low), ("max_items", high)) if v is not None})
    else:
        fields.update(draw(constraints(kind)))
    return P(**fields)


def near(param: P):
    """Values of the parameter's own type, around its constraints."""
    kind = param.type
    if kind == "array":
        return st.lists(
            near(P(type=param.items.type, description="i", **param.items.model_dump(exclude={"type"}))), max_size=6
        )
    picks = {
        "integer": INTS,
        "number": INTS | FLOATS,
        "string": TEXT | st.sampled_from(["JP", "ab", "123-45", "x"]),
        "boolean": st.booleans(),
    }[kind]
    edges = [v for v in (param.minimum, param.maximum) if v is not None]
    edges += [e + d for e in edges for d in (-1, 1)] + list(param.enum or [])
    return picks | st.sampled_from(edges) if edges else picks


def beyond_the_schema(kind: str, value, param: P) -> bool:
    """Values the published schema allows and mcpgen refuses, each in one sentence (see the module docs)."""
    if kind == "array" and isinstance(value, list):
        return any(beyond_the_schema(param.items.type, v, param.items) for v in value)
    if kind == "integer" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value).is_integer() and not INT64[0] <= int(value) <= INT64[1]
    if kind == "string" and isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return "\x00" in value or (len(value) > MAX_STRING and param.max_length is None)
    return False


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_checker_agrees_with_jsonschema_on_the_published_schema(data):
    param = data.draw(parameters(), label="parameter")
    value = data.draw(near(param) | JSON_VALUES, label="argument")
    args = Arguments({"p": param})
    try:
        args.validate({"p": value})
        accepted = True
    except ArgumentError as exc:
        accepted = False
        assert str(exc).startswith(("Invalid argument 'p", "Missing required argument 'p'")), str(exc)
    # null for a parameter that is not required stands for leaving it out (documented)
    sent = {} if value is None and not param.is_required else {"p": value}
    allowed = Draft202012Validator(args.schema).is_valid(sent)
    assert accepted == (allowed and not beyond_the_schema(param.type, value, param)), (args.schema, value)


@settings(max_examples=EXAMPLES, deadline=None)
@given(value=JSON_VALUES)
def test_every_refusal_is_one_sentence_naming_the_parameter(value):
    """Whatever JSON arrives, the checker answers with the values or one ArgumentError naming the parameter."""
    args = Arguments(
        {
            "n": P(type="integer", description="n", minimum=0),
            "s": P(type="string", description="s", pattern="^a", required=False),
        }
    )
    for arguments in ({"n": value}, {"n": 1, "s": value}, value):
        try:
            args.validate(arguments)
        except ArgumentError as exc:
            text = str(exc)
            assert (
                text.endswith(".")
                and "\n" not in text
                and ("'n'" in text or "'s'" in text or "JSON object" in text or "Unknown argument" in text)
            ), text
