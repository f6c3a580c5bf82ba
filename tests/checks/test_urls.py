"""`sources:` entries: absolute http(s) URLs whose host is written out."""

import pytest

from mcpgen.checks.urls import source_problem


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        ("https://www.geonames.org/", None),
        ("https://example.org/search?q={{ q }}", None),
        ("http://example.org", None),
        ("example.org/x", "is not an absolute http(s) URL (write it with https:// or http://)"),
        ("ftp://example.org/x", "is not an absolute http(s) URL (write it with https:// or http://)"),
        (
            "https://data.example.org{{ p }}",
            "must spell out its host and end it with '/', '?' or '#' before the first template expression",
        ),
        (
            "https://{{ host }}/x",
            "must spell out its host and end it with '/', '?' or '#' before the first template expression",
        ),
        ("https://user@example.org/", "is not a valid URL: it needs a host name and no spaces"),
        ("https://example.org/a b", "is not a valid URL: it contains spaces"),
    ],
)
def test_source_problem(source, problem):
    assert source_problem(source) == problem
