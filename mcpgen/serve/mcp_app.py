"""The MCP App: one `ui://` HTML document that draws a tool's answer inside Apps-capable hosts.

MCP Apps (extension `io.modelcontextprotocol/ui`, specification 2026-01-26): a tool's
`_meta.ui.resourceUri` names a `ui://` resource; the host reads it once with
`resources/read`, renders it in a sandboxed iframe and pushes each tool result into it
over postMessage. Every mcpgen result has the same shape (sources, table, charts, force),
so one app draws them all: tools share `ui://mcpgen/answer`, and only a spec whose `app:`
settings differ from the project's gets its own copy (`ui://mcpgen/answer/<tool>`).

Chart.js is inlined, so the app needs no network under a host's default CSP. It is never
in the repository: an install or wheel build fetches the pinned release into `mcpgen/vendor/`
(mcpgen.vendored; `mcpgen build-app` does it again); a `node_modules/chart.js` in the project or
the file named by `MCPGEN_CHARTJS` also serve. Each candidate is held to the pinned SHA-256.
Without one, the app loads Chart.js from the CDN (with Subresource Integrity), declares that
origin in `_meta.ui.csp` and says so under its charts; `serve` and `validate` say so too.

>>> app = App(APP_URI, AppSettings(chart_height=400))
>>> app.resource().uri, app.resource().mime_type
('ui://mcpgen/answer', 'text/html;profile=mcp-app')
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import MCPGenError
from ..spec.models import AppSettings
from ..vendored import CDN_ORIGIN, CHARTJS, VENDOR, is_pinned
from ..version import __version__

if TYPE_CHECKING:  # the SDK is imported where resources are built: `mcpgen validate` never pays for it
    from mcp_types import Resource, TextResourceContents

logger = logging.getLogger("mcpgen")

APP_URI = "ui://mcpgen/answer"
STATIC = Path(__file__).parent.parent / "static"


class AppBuildError(MCPGenError):
    """A Chart.js file that cannot be inlined."""


def chartjs_candidates(root: Path | None = None) -> list[Path]:
    """Where Chart.js is looked for, in order: $MCPGEN_CHARTJS, mcpgen/vendor/, the project's node_modules."""
    paths = []
    if os.environ.get("MCPGEN_CHARTJS"):
        paths.append(Path(os.environ["MCPGEN_CHARTJS"]).expanduser())
    paths.append(VENDOR / CHARTJS.name)
    if root is not None:
        paths.append(root / "node_modules" / CHARTJS.package / CHARTJS.file)
    return paths


def find_chartjs(root: Path | None = None) -> tuple[Path | None, str]:
    """The first candidate whose SHA-256 is the pinned one, and a sentence saying what was found."""
    for path in chartjs_candidates(root):
        try:
            return check_chartjs(path), f"Chart.js {CHARTJS.version} is inlined from {path}"
        except ValueError as exc:
            if path.is_file():
                logger.warning("not inlined: %s", exc)
    return None, (
        f"Chart.js {CHARTJS.version} is not installed here (this install could not fetch it when it was built), "
        f"so the app loads it from {CDN_ORIGIN} (declared in its _meta.ui.csp; hosts that refuse it draw no "
        "charts); `mcpgen build-app` fetches it"
    )


@dataclass
class App:
    """One app resource: the HTML with these settings, built on first read (not at start-up)."""

    uri: str
    settings: AppSettings
    root: Path | None = None  # the project folder, where node_modules/ may hold Chart.js
    tools: list[str] = field(default_factory=list)

    def resource(self) -> Resource:
        from mcp.server.apps import APP_MIME_TYPE
        from mcp.types import Resource

        return Resource(
            uri=self.uri,
            name="mcpgen-answer",
            title="Answer with table and charts",
            description="Draws a tool's answer: force text, a sortable table, Chart.js charts and the source links.",
            mime_type=APP_MIME_TYPE,
        )

    @cached_property
    def _built(self) -> tuple[str, dict]:
        chartjs, _ = find_chartjs(self.root)
        return build_html(self.settings, chartjs)

    @property
    def html(self) -> str:
        return self._built[0]

    def contents(self) -> TextResourceContents:
        from mcp.server.apps import APP_MIME_TYPE
        from mcp.types import TextResourceContents

        html, ui = self._built
        return TextResourceContents(uri=self.uri, mime_type=APP_MIME_TYPE, text=html, _meta={"ui": ui})


def build_html(settings: AppSettings, chartjs: Path | None) -> tuple[str, dict]:
    """The app document and its resource `_meta.ui`. Chart.js is inlined when `chartjs` is given."""
    script = (STATIC / "mcp-app.js").read_text(encoding="utf-8")
    values = json.dumps(
        {
            "chartHeight": settings.chart_height,
            "theme": settings.theme,
            "version": __version__,
            "chartjs": "inline" if chartjs is not None else "cdn",  # the app says where its charts come from
        }
    )
    hashes = [_csp_hash(script)]
    ui: dict = {"prefersBorder": True}
    if chartjs is not None:
        code = chartjs.read_text(encoding="utf-8")
        if re.search(r"</script|<!--", code, re.IGNORECASE):  # cannot end the <script> element early
            raise AppBuildError(f"{chartjs} cannot be inlined: it contains </script or <!--")
        hashes.append(_csp_hash(code))
        chart_tag, extra = f"<script>{code}</script>", ""
    else:
        chart_tag = f'<script src="{CHARTJS.cdn}" integrity="{CHARTJS.sri}" crossorigin="anonymous"></script>'
        # The document's own policy names the pinned file, not the host: markup a value smuggled in
        # could not load another script from the CDN (a host's policy is built from origins alone).
        extra = " " + CHARTJS.cdn
        ui["csp"] = {"resourceDomains": [CDN_ORIGIN]}
    csp = (
        "default-src 'none'; "
        f"script-src {' '.join(hashes)}{extra}; style-src 'unsafe-inline'; img-src data:; font-src data:; "
        "connect-src 'none'; frame-src 'none'; object-src 'none'; base-uri 'none'; form-action 'none'"
    )
    parts = {
        "CSP": csp,
        "CSS": (STATIC / "mcp-app.css").read_text(encoding="utf-8"),
        "SETTINGS": values.replace("<", "\\u003c"),
        "CHARTJS": chart_tag,
        "SCRIPT": script,
    }
    template = (STATIC / "mcp-app.html").read_text(encoding="utf-8")
    return re.sub(r"\{\{([A-Z]+)\}\}", lambda m: parts[m[1]], template), ui


def host_csp(csp: dict | None) -> str:
    """The Content-Security-Policy a host builds for an app from its `_meta.ui.csp` (MCP Apps spec).

    >>> host_csp(None).split("; ")[:2]
    ["default-src 'none'", "script-src 'self' 'unsafe-inline'"]
    """
    csp = csp or {}
    res = " ".join(csp.get("resourceDomains", []))
    directives = [
        "default-src 'none'",
        f"script-src 'self' 'unsafe-inline' {res}",
        f"style-src 'self' 'unsafe-inline' {res}",
        f"connect-src 'self' {' '.join(csp.get('connectDomains', []))}",
        f"img-src 'self' data: {res}",
        f"font-src 'self' {res}",
        f"media-src 'self' data: {res}",
        "frame-src " + (" ".join(csp.get("frameDomains", [])) or "'none'"),
        "object-src 'none'",
        "base-uri " + (" ".join(csp.get("baseUriDomains", [])) or "'self'"),
    ]
    return "; ".join(" ".join(d.split()) for d in directives)


def check_chartjs(path: Path) -> Path:
    """`path` if it is the pinned Chart.js file, else a ValueError saying why not."""
    if not path.is_file():
        raise ValueError(f"no such file: {path}")
    if not is_pinned(path):
        raise ValueError(
            f"{path} is not {CHARTJS.file} of Chart.js {CHARTJS.version} (its SHA-256 differs); "
            "`mcpgen build-app` fetches that file"
        )
    return path


def _csp_hash(code: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(code.encode("utf-8")).digest()).decode() + "'"


def project_apps(
    project_setting: bool | AppSettings, specs: dict[str, bool | AppSettings], root: Path | None = None
) -> tuple[dict[str, App], dict[str, str]]:
    """The apps of a project: {uri: App}, and {tool name: uri} for the tools that get one.

    `specs` maps each tool to its spec's `app:` (hand-written tools: True). Settings a spec sets
    override the project's; a tool whose settings differ from the project's gets its own app."""
    if project_setting is False:
        return {}, {}
    base = project_setting if isinstance(project_setting, AppSettings) else AppSettings.model_construct()
    apps: dict[str, App] = {}
    chosen: dict[str, str] = {}
    for tool, setting in specs.items():
        if setting is False:
            continue
        settings = base
        if isinstance(setting, AppSettings):
            settings = base.model_copy(update={k: getattr(setting, k) for k in setting.model_fields_set})
        uri = APP_URI if settings == base else f"{APP_URI}/{tool}"
        apps.setdefault(uri, App(uri, settings, root)).tools.append(tool)
        chosen[tool] = uri
    return apps, chosen
