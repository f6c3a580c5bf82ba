"""Icons as hosts receive them: an `icons:` entry of a spec or of mcpgen.yaml becomes an MCP `Icon`, an
image file beside it read once and sent inline as a data: URI (hosts fetch nothing from the server).

>>> from mcpgen.spec.models import Icon
>>> as_mcp_icons([Icon(src="https://example.org/a.png", sizes=["48x48"])], Path("."), Path("."))
[{'src': 'https://example.org/a.png', 'sizes': ['48x48']}]
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from ..spec.models import ICON_TYPES, Icon

MAX_ICON_BYTES = 256 * 1024  # an icon is sent in every tools/list: keep it small


def as_mcp_icons(icons: list[Icon], base: Path, root: Path) -> list[dict[str, Any]]:
    """Wire-form icons (camelCase keys); a relative `src` is a file under `base`, which must stay inside
    `root`. Raises ValueError with one sentence naming the file."""
    return [_one(icon, base, root) for icon in icons]


def _one(icon: Icon, base: Path, root: Path) -> dict[str, Any]:
    src, mime = icon.src, icon.mime_type
    if ":" not in src.split("/")[0]:  # a relative file (models.Icon allows no other scheme-less src)
        src, mime = _inline(src, base, root, mime)
    out: dict[str, Any] = {"src": src}
    if mime:
        out["mimeType"] = mime
    if icon.sizes:
        out["sizes"] = list(icon.sizes)
    if icon.theme:
        out["theme"] = icon.theme
    return out


def _inline(name: str, base: Path, root: Path, mime: str | None) -> tuple[str, str]:
    path = (base / name).resolve()
    if not path.is_relative_to(root.resolve()):
        raise ValueError(f"icon file {name!r} is outside the project folder")
    try:
        size = path.stat().st_size
        if size > MAX_ICON_BYTES:
            raise ValueError(f"icon file {name!r} is {size:,} bytes; at most {MAX_ICON_BYTES:,} are sent")
        data = path.read_bytes()
    except OSError:
        raise ValueError(f"icon file {name!r} cannot be read (looked for {path.name} in {base.name or '.'})") from None
    mime = mime or ICON_TYPES[path.suffix.lower()]
    return f"data:{mime};base64,{base64.b64encode(data).decode()}", mime
