import pytest

from mcpgen.errors import SpecError
from mcpgen.spec.yamlload import load_yaml


def test_yaml_12_scalars_stay_strings_and_locations_are_kept():
    warnings = []
    data = load_yaml("n: 3\non: yes\nt: 1:20\nd: 2020-01-01\nb: true\n", "x.yaml", warnings)
    assert data == {"n": 3, "on": "yes", "t": "1:20", "d": "2020-01-01", "b": True}
    assert data.where("d") == (4, 1)
    assert [(w.line, w.col) for w in warnings] == [(2, 1), (2, 5)]
    assert all(w.severity == "warning" for w in warnings)


@pytest.mark.parametrize(
    "text, line, words",
    [
        ("a: 1\na: 2\n", 2, "duplicate key 'a'"),
        ("a: &x [1]\nb: [*x, *x]\n", 2, "aliases"),
        ("a: !!python/object:os.system x\n", 1, "not allowed"),
        ("a:\n\tb: 1\n", 2, "tab characters"),
        ("a: [1\n", 2, "the [ opened on line 1 is not closed"),
    ],
)
def test_bad_yaml_is_one_problem_with_a_line(text, line, words):
    with pytest.raises(SpecError) as info:
        load_yaml(text, "x.yaml")
    [problem] = info.value.problems
    assert problem.path == "x.yaml" and problem.line == line
    assert words in problem.message


@pytest.mark.parametrize(
    "text, where, message",
    [
        (
            "p:\n  n:\n    type: integer\n   description: x\n",
            (4, 4),
            "check the indentation of line 4 (it has 3 spaces; the keys around it have 4)",
        ),
        (
            "p:\n  n:\n    type: integer\n      description: x\n",
            (4, 7),
            "check the indentation of line 4 (it has 6 spaces; the keys around it have 4)",
        ),
        ("description: Note: x\n", (1, 18), "a value that contains ': ' must be quoted"),
        ("a: x\nsql\nb: y\n", (2, 1), "line 2 is not a 'key: value' pair: add ': ' after the key"),
        ("a: 'x\nb: y\n", (1, 4), "the quote opened on line 1 is never closed"),
        ("a: @x\n", (1, 4), "a plain value cannot start with '@': put the value in quotes"),
    ],
)
def test_parser_errors_say_what_to_do(text, where, message):
    """Not the parser's own words ("while parsing a block mapping, did not find expected key")."""
    with pytest.raises(SpecError) as info:
        load_yaml(text, "x.yaml")
    [problem] = info.value.problems
    assert (problem.line, problem.col) == where
    assert problem.message.startswith(message), problem.message
    assert "while parsing" not in problem.message and "while scanning" not in problem.message


def test_a_block_scalar_knows_its_indentation_for_positions_inside_it():
    data = load_yaml("sql: |\n    SELECT 1\n    FROM t\ncontent: 'a {{ b }}'\n", "x.yaml")
    assert data.at("sql", 2, 6) == (3, 10)
    assert data.at("content", 1, 6) == (4, 16)  # the b, inside the quotes


def test_large_file_is_refused_before_parsing():
    with pytest.raises(SpecError, match="larger than"):
        load_yaml("a: " + "x" * (2 * 1024 * 1024), "big.yaml")
