"""Text helpers: positions, first lines, plurals, near names, JSON as a client sent it."""

import pytest

from mcpgen.text import as_json, closest, column_of, did_you_mean, first_line, inert, line_col, neutralise, plural


@pytest.mark.parametrize(
    ("text", "index", "where"),
    [("abc", 0, (1, 1)), ("abc", 2, (1, 3)), ("a\nbc", 2, (2, 1)), ("a\nbc", 3, (2, 2)), (b"x\n\ny", 3, (3, 1))],
)
def test_line_col_is_one_based(text, index, where):
    assert line_col(text, index) == where


def test_first_line_of_a_message_or_the_class_of_a_silent_exception():
    assert first_line("  Catalog Error: no table\nLINE 1: SELECT ...  ") == "Catalog Error: no table"
    assert first_line(ValueError("")) == "ValueError"
    assert first_line("") == ""


def test_plural():
    assert [plural(0, "tool"), plural(1, "tool"), plural(2, "query", "queries")] == ["0 tools", "1 tool", "2 queries"]


def test_closest_ignores_case_and_never_suggests_the_name_itself():
    assert closest("Populaton", ["population", "city"]) == "population"
    assert closest("city", ["city", "cities"]) is None  # the nearest is the name itself
    assert closest("zzz", ["population"]) is None
    assert did_you_mean("n", ["top_n", "n2"], prefix=":") == "; did you mean ':n2'?"
    assert did_you_mean("qqq", ["top_n"]) == ""


def test_as_json_shows_values_as_a_client_sent_them_and_cuts_long_ones():
    assert [as_json(True), as_json(None), as_json(["JP"]), as_json("7")] == ["true", "null", '["JP"]', '"7"']
    assert as_json(float("nan")) == "nan"  # not JSON: shown as Python writes it
    assert as_json("x" * 100, limit=10) == '"xxxxxx...'
    assert as_json("\ud800") == '"\\ud800"'  # a lone surrogate is shown escaped, never raised on


def test_column_of_a_word_on_a_line():
    source = "Hello\n{{ r.city | thousand }}"
    assert column_of(source, 2, "thousand") == 13
    assert column_of(source, 2, "missing") == 1
    assert column_of(source, 9, "x") == 1


@pytest.mark.parametrize(
    ("text", "prose", "error"),
    [
        ("![a](https://e.example/x.png)", "! [a](https://e.example/x.png)", "! [a] (https://e.example/x.png)"),
        ("<img src=x>", "< img src=x>", "< img src=x>"),
        ("</script><!-- x -->", "< /script>< !-- x -->", "< /script>< !-- x -->"),
        ("[a](https://e.example/)", "[a](https://e.example/)", "[a] (https://e.example/)"),
        ("1 < 2 and f(x) [3]", "1 < 2 and f(x) [3]", "1 < 2 and f(x) [3]"),
    ],
)
def test_prose_loses_images_and_tags_and_errors_lose_links_too(text, prose, error):
    assert neutralise(text) == prose
    assert inert(text) == error
