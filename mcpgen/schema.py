"""JSON Schema (draft 2020-12) of spec files and of mcpgen.yaml, from the models the loader uses.

Editors (the YAML language server in VS Code, JetBrains, Neovim) use it for completion,
hover text and red squiggles while typing; `mcpgen validate` remains the full check
(SQL, templates, names across files, the live database).

    mcpgen schema > spec.schema.json
    mcpgen schema --config > config.schema.json
    python -m mcpgen.schema         # rewrite docs/spec.schema.json and docs/config.schema.json

>>> schema = spec_schema()
>>> schema["$schema"], sorted(schema["required"])
('https://json-schema.org/draft/2020-12/schema', ['content', 'description', 'sources'])
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

DRAFT = "https://json-schema.org/draft/2020-12/schema"
DURATION = r"^\s*\d+(\.\d+)?\s*(ms|s|m|h)?\s*$"

SPEC_FIELDS = {
    "name": "Tool name; default: the file's stem.",
    "title": "Human title of the tool (MCP tool title).",
    "description": "What the model reads to choose the tool.",
    "connection": "A connection name from mcpgen.yaml; default: default.",
    "parameters": "The tool's parameters, in order; they become its JSON Schema inputSchema.",
    "sql": "Exactly one read-only query; :name binds parameter name as a value.",
    "sql_file": "A file holding the query, relative to this YAML file (instead of sql).",
    "sources": "URLs of the original data (Jinja2 may fill in parameters; values are URL-encoded).",
    "content": "Jinja2 template of the prose for the model: parameters, rows, columns, row_count, truncated, "
    "max_rows; filters thousands, round, percent, date, join_names.",
    "empty": "Template used instead of content when the query returns no rows.",
    "force": "Template whose text is shown to the user verbatim (structuredContent.force).",
    "table": "true: every column; false: no table; or {columns, headers} to choose, order and label columns.",
    "chart": "One chart or a list; each becomes a Chart.js 4 config.",
    "max_rows": "Cap on rows returned; default from mcpgen.yaml, else 1000.",
    "timeout": "Query time limit, e.g. 5s or 500ms; default from mcpgen.yaml, else 30s.",
    "cache": "Keep answers this long, e.g. 60s (default from mcpgen.yaml, else off); false: no cache.",
    "page_size": "Answer in pages of this many rows, in the query's ORDER BY; the tool takes an optional cursor.",
    "max_bytes": "Cap on the whole answer in JSON characters (default from mcpgen.yaml, else 1,000,000).",
    "tests": "Examples that `mcpgen test` runs against the real connection.",
    "annotations": "MCP tool annotations.",
}
PARAMETER_FIELDS = {
    "type": "string, integer, number, boolean, date, datetime or array.",
    "description": "What the model reads about this parameter.",
    "default": "A default makes the parameter optional.",
    "required": "Default: true unless a default is given; false with no default binds NULL.",
    "items": "For arrays: {type: ...} of the items.",
}
CHART_FIELDS = {
    "type": "bar, line, area, pie, doughnut, scatter, horizontal_bar or stacked_bar.",
    "x": "Column whose values label the x axis (or the slices).",
    "y": "Column, or list of columns (one dataset each), of the values.",
    "series": "Column whose distinct values become datasets (long data).",
    "options": "Passed through into the Chart.js options.",
}


def spec_schema() -> dict[str, Any]:
    """The JSON Schema of one spec file."""
    from .spec import PARAM_NAME_RE, TEMPLATE_VARIABLES, Spec

    schema = _base(
        Spec.model_json_schema(),
        "mcpgen spec",
        "One MCP tool: parameters, one read-only SQL query, sources and a prose template.",
    )
    props = schema["properties"]
    props["parameters"]["propertyNames"] = {"pattern": PARAM_NAME_RE, "not": {"enum": list(TEMPLATE_VARIABLES)}}
    schema["oneOf"] = [
        {"required": ["sql"], "not": {"required": ["sql_file"]}},
        {"required": ["sql_file"], "not": {"required": ["sql"]}},
    ]
    _describe(props, SPEC_FIELDS)
    defs = schema.get("$defs", {})
    if "Parameter" in defs:
        _describe(defs["Parameter"]["properties"], PARAMETER_FIELDS)
    if "Chart" in defs:
        _describe(defs["Chart"]["properties"], CHART_FIELDS)
    return schema


def config_schema() -> dict[str, Any]:
    """The JSON Schema of mcpgen.yaml."""
    from .config import ProjectConfig

    return _base(
        ProjectConfig.model_json_schema(),
        "mcpgen project file (mcpgen.yaml)",
        "Named connections (an embedded DuckDB, or any SQLAlchemy URL) and defaults.",
    )


def _base(schema: dict, title: str, description: str) -> dict[str, Any]:
    schema = _clean(copy.deepcopy(schema))
    out = {"$schema": DRAFT, "title": title, "description": description}
    out.update({k: v for k, v in schema.items() if k not in ("title", "description")})
    return out


def _clean(node: Any, key: str = "") -> Any:
    """Drop pydantic's generated property titles; give durations their pattern."""
    if isinstance(node, dict):
        if "properties" in node and isinstance(node["properties"], dict):
            for name, prop in node["properties"].items():
                if isinstance(prop, dict):
                    prop.pop("title", None)
                    if name.endswith("timeout"):
                        for branch in prop.get("anyOf", []):
                            if branch.get("type") == "string":
                                branch["pattern"] = DURATION
        return {k: _clean(v, k) for k, v in node.items()}
    if isinstance(node, list):
        return [_clean(v) for v in node]
    return node


def _describe(props: dict, texts: dict[str, str]) -> None:
    for name, text in texts.items():
        if name in props and "description" not in props[name]:
            props[name]["description"] = text


def dumps(schema: dict) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def write_docs(folder: str | Path = Path(__file__).resolve().parent.parent / "docs") -> list[Path]:
    """Write docs/spec.schema.json and docs/config.schema.json."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for name, schema in (("spec.schema.json", spec_schema()), ("config.schema.json", config_schema())):
        (folder / name).write_text(dumps(schema), encoding="utf-8")
        out.append(folder / name)
    return out


if __name__ == "__main__":
    for path in write_docs(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent / "docs"):
        print(path)
