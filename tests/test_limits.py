"""Every size limit, in one place: the ones other modules rely on agree with what they bound."""

from jinja2 import sandbox

from mcpgen import limits


def test_every_limit_is_a_positive_integer():
    values = {name: getattr(limits, name) for name in dir(limits) if name.startswith("MAX_")}
    assert len(values) == 12
    assert all(isinstance(v, int) and v > 0 for v in values.values()), values


def test_range_is_jinjas_own_sandbox_bound():
    assert limits.MAX_RANGE == sandbox.MAX_RANGE


def test_one_render_may_build_more_than_any_one_string_or_list():
    assert max(limits.MAX_OUTPUT, limits.MAX_SEQUENCE) < limits.MAX_BUILT
    assert limits.MAX_FILE_BYTES == limits.MAX_BODY_BYTES == 1024 * 1024


def test_an_audit_argument_shown_whole_fits_in_a_log_line():
    assert limits.MAX_LOGGED_VALUE * 4 <= limits.MAX_LOG_LINE // 2  # a few shown whole leave room for the rest
    assert limits.MAX_CURSOR_KEY < limits.MAX_LOG_LINE
