"""mcpgen: declarative YAML specs become source-carrying MCP tools.

    from mcpgen import registry, DataToolOutput

Attributes load on first use so that `mcpgen --help` stays fast.
"""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["DataToolOutput", "DataToolPayload", "Registry", "__version__", "registry"]


def __getattr__(name: str):
    if name in ("DataToolOutput", "DataToolPayload"):
        from . import results

        return getattr(results, name)
    if name in ("Registry", "registry"):
        from . import tools as module

        return module.Registry if name == "Registry" else module.default_registry
    raise AttributeError(f"module 'mcpgen' has no attribute {name!r}")
