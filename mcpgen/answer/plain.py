"""A tool's result as mcpgen holds it: plain objects, made into the protocol's `CallToolResult` only
where they leave mcpgen (`to_mcp`), so that `mcpgen call` runs without the protocol types (a
quarter of a second of imports); serve hands the SDK their JSON form instead (`sent`), which the SDK
checks as it would the model. A hand-written tool's `CallToolResult` is held as it is read
(`from_mcp`), its content items unchanged.

>>> result = ToolResult([TextContent("hi")], {"sources": ["https://example.org/"]})
>>> result.to_mcp().content[0].text, result.to_mcp().structured_content
('hi', {'sources': ['https://example.org/']})
>>> json_size(result) == len('{"content":[{"type":"text","text":"hi"}],'
...     '"structuredContent":{"sources":["https://example.org/"]},"isError":false}')
True
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from mcp_types import CallToolResult


@dataclass
class TextContent:
    text: str
    type: Literal["text"] = "text"


@dataclass
class ResourceLink:
    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    type: Literal["resource_link"] = "resource_link"


@dataclass
class ToolResult:
    """What a tool answered: content items (the plain ones above, or a hand-written tool's own), the
    structured content, whether it is an error, and `_meta`."""

    content: list[Any]
    structured_content: dict[str, Any] | None = None
    is_error: bool = False
    meta: dict[str, Any] | None = None

    def to_mcp(self) -> CallToolResult:
        import mcp_types

        items = [
            mcp_types.TextContent(type="text", text=c.text)
            if isinstance(c, TextContent)
            else mcp_types.ResourceLink(**_fields(c))
            if isinstance(c, ResourceLink)
            else c
            for c in self.content
        ]
        return mcp_types.CallToolResult(
            content=items, structured_content=self.structured_content, is_error=self.is_error, _meta=self.meta
        )


def from_mcp(result: Any) -> ToolResult | None:
    """A hand-written tool's `CallToolResult` as a ToolResult (None: `result` is not one)."""
    types = sys.modules.get("mcp_types")  # not loaded: nothing can be one of its results
    if types is None or not isinstance(result, types.CallToolResult):
        return None
    return ToolResult(list(result.content), result.structured_content, result.is_error, result.meta)


def wire(result: ToolResult) -> dict[str, Any]:
    """`result` as the protocol writes it in JSON (camelCase, nothing that is None)."""
    out: dict[str, Any] = {"content": [_wire(c) for c in result.content]}
    if result.structured_content is not None:
        out["structuredContent"] = result.structured_content
    out["isError"] = result.is_error
    if result.meta is not None:
        out["_meta"] = result.meta
    return out


def sent(result: ToolResult) -> dict[str, Any]:
    """`result` as `to_mcp` would dump it (with the result type the protocol adds), without building the
    model: what serve hands the SDK, which validates and writes a dict as it would the model."""
    return {**wire(result), "resultType": "complete"}


def json_size(result: ToolResult) -> int:
    """Characters of `result` as compact JSON."""
    return len(json.dumps(wire(result), separators=(",", ":"), ensure_ascii=False, default=str))


def _wire(item: Any) -> dict[str, Any]:
    if isinstance(item, TextContent):
        return {"type": "text", "text": item.text}
    if isinstance(item, ResourceLink):  # every call of a tool with downloads: no loop, no tuples
        out = {"type": item.type, "uri": item.uri, "name": item.name}
        if item.title is not None:
            out["title"] = item.title
        if item.description is not None:
            out["description"] = item.description
        if item.mime_type is not None:
            out["mimeType"] = item.mime_type
        return out
    return item.model_dump(mode="json", by_alias=True, exclude_none=True)  # a hand-written tool's own item


def _fields(link: ResourceLink) -> dict[str, Any]:
    """The link's fields that are set, `type` first."""
    return {"type": link.type, **{k: v for k, v in vars(link).items() if v is not None and k != "type"}}
