"""A hand-written tool with a syntax error."""
from mcpgen import registry, DataToolOutput


@registry.tool()
def broken(n: int = 3) -> DataToolOutput
    return None
