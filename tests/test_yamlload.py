import pytest

from mcpgen.errors import SpecError
from mcpgen.yamlload import load_yaml


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
        ("a: [1\n", 2, "did not find expected"),
    ],
)
def test_bad_yaml_is_one_problem_with_a_line(text, line, words):
    with pytest.raises(SpecError) as info:
        load_yaml(text, "x.yaml")
    [problem] = info.value.problems
    assert problem.path == "x.yaml" and problem.line == line
    assert words in problem.message


def test_large_file_is_refused_before_parsing():
    with pytest.raises(SpecError, match="larger than"):
        load_yaml("a: " + "x" * (2 * 1024 * 1024), "big.yaml")
