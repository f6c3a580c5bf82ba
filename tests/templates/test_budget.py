"""What a template may build, checked as it builds it: sizes, the clock, and text that would print huge."""

import time

import pytest
from jinja2.sandbox import SecurityError

from mcpgen.errors import RenderError
from mcpgen.limits import MAX_OUTPUT, MAX_SEQUENCE
from mcpgen.templates import budget
from mcpgen.templates.render import Template


def test_operators_refuse_a_result_too_big_before_building_it():
    budget.start(1.0)
    assert budget.bounded_mul([1, 2], 3) == [1, 2, 1, 2, 1, 2]
    with pytest.raises(SecurityError, match=f"longer than {MAX_SEQUENCE:,}"):
        budget.bounded_mul([1], MAX_SEQUENCE + 1)
    with pytest.raises(SecurityError):
        budget.bounded_add("x" * MAX_OUTPUT, "y")
    assert budget.bounded_pow(2, 10) == 1024


def test_text_size_stops_counting_past_its_limit():
    nested = [["x" * 10] * 100] * 100
    assert budget.text_size("abc") == len(repr("abc"))  # its quotes counted
    assert budget.text_size(nested, limit=1000) > 1000  # ~130,000 printed; the walk stopped early
    assert budget.text_size(nested) > MAX_OUTPUT and len(str(nested)) > MAX_OUTPUT  # past the limit: refused


@pytest.mark.parametrize(
    "source",
    [
        "{{ ('x\\n' * 20000) | indent(20000) }}",
        "{{ 'x' | center(10 ** 7) }}",
        "{{ ('ab' * 40000) | replace('a', 'aaaa') }}",
        "{{ range(100000) | map('center', 100000) | list }}",
        "{% set l = [1] * 90000 %}{{ [l, l, l] }}",
    ],
)
def test_templates_that_would_build_huge_values_fail_in_one_sentence(source):
    with pytest.raises(RenderError) as err:
        Template(source).render({})
    assert "\n" not in str(err.value)


def test_the_clock_stops_a_slow_render():
    started = time.perf_counter()
    with pytest.raises(RenderError, match="the template took longer than 0.2 s to render"):
        Template("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}").render(
            {}, seconds=0.2
        )
    assert time.perf_counter() - started < 5


def test_every_filter_is_guarded_and_the_internal_ones_are_added():
    from mcpgen.templates.render import PROSE

    assert set(budget.INTERNAL_FILTERS) == {"_bounded", "_concat", "_spend"} <= set(PROSE.filters)
    budget.start()  # emit spends the budget of this thread's render: a new one, not what another test left
    assert budget.emit("x") == "x"
