"""Unknown filters and tests, and keywords a filter does not take, found from the syntax tree."""

from mcpgen.checks.filters import filter_problems
from mcpgen.templates.render import PROSE, URL


def problems(source, env=PROSE):
    return filter_problems(env.parse(source), env)


def test_known_filters_and_their_keywords_pass():
    assert (
        problems(
            "{{ n | thousands(sep='.') }} {{ x | round(ndigits=1) }} {{ rows | length }} {% if n is odd %}{% endif %}"
        )
        == []
    )


def test_an_unknown_filter_or_test_names_the_nearest():
    assert problems("{{ x | percnt }}") == [
        (1, "percnt", "uses the filter 'percnt', which does not exist; did you mean 'percent'?")
    ]
    assert problems("line\n{% if x is nmber %}{% endif %}") == [
        (2, "nmber", "uses the test 'is nmber', which does not exist; did you mean 'number'?")
    ]


def test_a_keyword_a_filter_does_not_take():
    assert problems("{{ d | date(format='%Y') }}") == [
        (1, "format", "calls the filter 'date' with format=, which it does not take (it takes fmt)")
    ]
    assert problems("{{ x | upper(loud=1) }}")[0][2] == (
        "calls the filter 'upper' with loud=, which it does not take (it takes no keyword arguments)"
    )


def test_each_problem_is_reported_once_and_url_templates_share_the_filters():
    assert len(problems("{{ x | nope }}{{ x | nope }}")) == 1
    assert problems("https://x.org/{{ q | thousand }}", URL)[0][1] == "thousand"
