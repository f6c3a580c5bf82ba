"""Icons of specs and of mcpgen.yaml: checked at load with the file and line, image files inlined as
data: URIs, and what a host receives in tools/list and serverInfo on both wires."""

import base64
import textwrap

import anyio
import pytest
from mcp import Client

from mcpgen.errors import SpecError
from mcpgen.load.icons import MAX_ICON_BYTES
from mcpgen.load.project import load_project
from mcpgen.serve.project import open_project
from mcpgen.serve.server import ToolServer

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
SPEC = """\
description: One city.
sql: SELECT 'Oslo' AS city
sources: ["https://example.org/"]
content: "{{ rows[0].city }}"
"""


def project(tmp_path, specs: dict[str, str], config: str = "") -> str:
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "city.png").write_bytes(PNG)
    for name, extra in specs.items():
        (tmp_path / "specs" / f"{name}.yaml").write_text(SPEC + textwrap.dedent(extra))
    (tmp_path / "mcpgen.yaml").write_text(textwrap.dedent(config))
    return tmp_path / "specs"


def served(folder, mode: str):
    """(serverInfo icons, {tool: icons}) as the official client receives them in process."""
    opened = open_project(folder)
    out = {}

    async def main():
        async with Client(ToolServer(opened.registry).server, mode=mode) as client:
            out["server"] = client.server_info.icons if client.server_info else None
            out["tools"] = {t.name: t.icons for t in (await client.list_tools()).tools}

    try:
        anyio.run(main)
    finally:
        opened.close()
    return out["server"], out["tools"]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_spec_icons_project_default_and_server_icons_on_both_wires(tmp_path, monkeypatch, mode):
    monkeypatch.chdir(tmp_path)
    folder = project(
        tmp_path,
        {
            "own": "icons:\n  - {src: city.png, sizes: [48x48], theme: light}\n",
            "plain": "",
            "none": "icons: []\n",
        },
        config="icons:\n  - {src: 'https://example.org/logo.svg', mime_type: image/svg+xml, sizes: [any]}\n",
    )
    server, tools = served(folder, mode)
    logo = {"src": "https://example.org/logo.svg", "mime_type": "image/svg+xml", "sizes": ["any"], "theme": None}
    assert [icon.model_dump() for icon in server] == [logo]
    (own,) = tools["own"]
    assert own.src == "data:image/png;base64," + base64.b64encode(PNG).decode()
    assert (own.mime_type, own.sizes, own.theme) == ("image/png", ["48x48"], "light")
    assert [icon.model_dump() for icon in tools["plain"]] == [logo]  # the project's default
    assert tools["none"] is None  # icons: [] says none


@pytest.mark.parametrize(
    ("icons", "message"),
    [
        ("[{src: 'http://example.org/a.png'}]", "icon src 'http://example.org/a.png' must be an https:// URL"),
        ("[{src: 'javascript:alert(1)'}]", "must be an https:// URL, a data: URI or a relative file"),
        ("[{src: 'data:text/html,<b>x</b>'}]", "an icon data: URI must hold an image"),
        ("[{src: /etc/icon.png}]", "icon file '/etc/icon.png' must be a relative path"),
        ("[{src: notes.txt}]", "icon file 'notes.txt' must be a relative path to a .png, .svg"),
        ("[{src: missing.png}]", "icon file 'missing.png' cannot be read"),
        ("[{src: ../../outside.png}]", "icon file '../../outside.png' is outside the project folder"),
        ("[{src: big.png}]", f"icon file 'big.png' is {MAX_ICON_BYTES + 1:,} bytes"),
        ("[{src: city.png, sizes: [large]}]", "icon size 'large' must be WIDTHxHEIGHT in pixels"),
        ("[{src: city.png, theme: blue}]", "theme"),
        ("[{src: city.png, colour: red}]", "colour"),
    ],
)
def test_a_bad_spec_icon_is_one_sentence_at_its_line(tmp_path, icons, message):
    folder = project(tmp_path, {"bad": f"icons: {icons}\n"})
    (folder / "big.png").write_bytes(b"\x89PNG" + b"\0" * (MAX_ICON_BYTES - 3))
    (tmp_path.parent / "outside.png").write_bytes(PNG)
    problems = load_project(folder).errors
    assert len(problems) == 1, problems
    text = str(problems[0])
    assert "bad.yaml:5" in text and message in text and "Traceback" not in text


def test_a_bad_project_icon_names_mcpgen_yaml_and_stops_the_start(tmp_path):
    folder = project(tmp_path, {"one": ""}, config="defaults: {max_rows: 5}\nicons:\n  - {src: nope.svg}\n")
    (problem,) = load_project(folder).errors
    assert "mcpgen.yaml:2" in str(problem) and "icon file 'nope.svg' cannot be read" in str(problem)
    with pytest.raises(SpecError):
        open_project(folder)
