"""mcpgen: declarative YAML specs become source-carrying MCP tools.

    from mcpgen import registry, DataToolOutput

Attributes load on first use so that `mcpgen --help` stays fast.
"""

from __future__ import annotations

from .version import __version__

__all__ = ["DataToolOutput", "DataToolPayload", "NeedsInput", "Registry", "__version__", "ask", "identity", "registry"]


def __getattr__(name: str):
    if name in ("DataToolOutput", "DataToolPayload"):
        from .answer import results

        return getattr(results, name)
    if name in ("ask", "NeedsInput"):  # a hand-written tool asks the person (docs/asking.md)
        from .answer import asking

        return getattr(asking, name)
    if name in ("Registry", "registry"):
        from .serve import registry as module

        return module.Registry if name == "Registry" else module.default_registry
    if name == "identity":  # `mcpgen.identity.current()`: who is calling, inside a hand-written tool
        import importlib

        return importlib.import_module(".identity", __name__)
    raise AttributeError(f"module 'mcpgen' has no attribute {name!r}")
