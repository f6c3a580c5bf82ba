"""Literal passwords in connection URLs."""

import pytest

from mcpgen.checks.passwords import literal_password


@pytest.mark.parametrize(
    ("url", "literal"),
    [
        ("postgresql://reader:secret@db/x", True),
        ("mysql+pymysql://root:p%40ss@db:3306/x", True),
        ("postgresql://reader:${PW}@db/x", False),
        ("postgresql://reader:${A}${B}@db/x", False),
        ("postgresql://reader@db/x", False),
        ("postgresql://reader:@db/x", False),
        ("postgresql://db:5432/x", False),  # a port is not a password
        ("sqlite:///data/app.db", False),
        ("not a url", False),
    ],
)
def test_literal_password(url, literal):
    assert literal_password(url) is literal
