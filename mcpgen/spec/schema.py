"""JSON Schema (draft 2020-12) of spec files and of mcpgen.yaml, from the models the loader uses.

Every description comes from the models' `Field(description=...)`.

Editors (the YAML language server in VS Code, JetBrains, Neovim) use it for completion,
hover text and red squiggles while typing; `mcpgen validate` remains the full check
(SQL, templates, names across files, the live database).

    mcpgen schema > spec.schema.json
    mcpgen schema --config > config.schema.json
    python -m mcpgen.spec.schema         # rewrite docs/spec.schema.json and docs/config.schema.json

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


def spec_schema() -> dict[str, Any]:
    """The JSON Schema of one spec file."""
    from .models import PARAM_NAME_RE, TEMPLATE_VARIABLES, Spec

    schema = _base(
        _defaults_built(Spec).model_json_schema(),
        "mcpgen spec",
        "One MCP tool: parameters, one read-only SQL query, sources and a prose template.",
    )
    props = schema["properties"]
    props["parameters"]["propertyNames"] = {"pattern": PARAM_NAME_RE, "not": {"enum": list(TEMPLATE_VARIABLES)}}
    schema["oneOf"] = [
        {"required": ["sql"], "not": {"required": ["sql_file"]}},
        {"required": ["sql_file"], "not": {"required": ["sql"]}},
    ]
    return schema


def config_schema() -> dict[str, Any]:
    """The JSON Schema of mcpgen.yaml."""
    from .config import ProjectConfig

    return _base(
        _defaults_built(ProjectConfig).model_json_schema(),
        "mcpgen project file (mcpgen.yaml)",
        "Named connections (an embedded DuckDB, or any SQLAlchemy URL) and defaults.",
    )


def _defaults_built(model: Any) -> Any:
    """`model`, once the classes of its fields' default objects are built: those defaults are made with
    `model_construct`, which builds no validator at import, and pydantic writes a default into the
    schema with its own class's serializer."""
    from pydantic import BaseModel

    for field in model.model_fields.values():
        default = field.default
        for value in default.values() if isinstance(default, dict) else (default,):
            if isinstance(value, BaseModel):
                type(value).model_rebuild()
    return model


def _base(schema: dict, title: str, description: str) -> dict[str, Any]:
    schema = _clean(copy.deepcopy(schema))
    out = {"$schema": DRAFT, "title": title, "description": description}
    out.update({k: v for k, v in schema.items() if k not in ("title", "description")})
    return out


def _clean(node: Any, key: str = "") -> Any:
    """Drop pydantic's generated property titles."""
    if isinstance(node, dict):
        if "properties" in node and isinstance(node["properties"], dict):
            for prop in node["properties"].values():
                if isinstance(prop, dict):
                    prop.pop("title", None)
        return {k: _clean(v, k) for k, v in node.items()}
    if isinstance(node, list):
        return [_clean(v) for v in node]
    return node


def dumps(schema: dict) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def write_docs(folder: str | Path = Path(__file__).resolve().parents[2] / "docs") -> list[Path]:
    """Write docs/spec.schema.json and docs/config.schema.json."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for name, schema in (("spec.schema.json", spec_schema()), ("config.schema.json", config_schema())):
        (folder / name).write_text(dumps(schema), encoding="utf-8")
        out.append(folder / name)
    return out


if __name__ == "__main__":
    for path in write_docs(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[2] / "docs"):
        print(path)
