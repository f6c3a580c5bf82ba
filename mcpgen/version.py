"""The version of mcpgen, in one place: the package metadata (pyproject.toml) and the server's
`initialize` answer read it from here."""

__version__ = "0.1.0"
