"""Chart.js arrives at build time: a wheel built from the source (and so `pip install .` and
`pip install -e .`, which run the same build backend) carries the pinned file, checked, and the
self-contained app; a build that cannot reach npm still succeeds and says that the app falls back
to the CDN."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from mcpgen.vendored import CDN_ORIGIN, CHARTJS, LICENSE_NAME, ensure_vendored

REPO = Path(__file__).resolve().parent.parent
CHARTJS_FILE = REPO / "tests" / ".artifacts" / "node" / "node_modules" / "chart.js" / CHARTJS.file
FALLBACK = f"the MCP App of this install loads it from {CDN_ORIGIN} instead."


def test_a_checked_copy_already_there_is_kept_without_npm(tmp_path, monkeypatch):
    if not CHARTJS_FILE.is_file():
        pytest.skip(f"{CHARTJS_FILE.relative_to(REPO)} is missing: .ci/run installs chart.js@{CHARTJS.version}")
    shutil.copy(CHARTJS_FILE, tmp_path / CHARTJS.name)
    (tmp_path / LICENSE_NAME).write_text("The MIT License (MIT)")
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))  # no npm: it is not needed
    assert ensure_vendored(tmp_path) == f"mcpgen: Chart.js 4.6.1 is already in {tmp_path} (SHA-256 checked)."


def test_without_npm_the_build_goes_on_and_says_the_app_uses_the_cdn(tmp_path, monkeypatch):
    (tmp_path / CHARTJS.name).write_text("window.Chart = 1;")  # not the pinned file: fetched again
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    said = ensure_vendored(tmp_path)
    assert (
        said
        == f"mcpgen: Chart.js 4.6.1 could not be fetched (npm is not installed; it fetches chart.js@4.6.1); {FALLBACK}"
    )
    assert (tmp_path / CHARTJS.name).read_text() == "window.Chart = 1;"
    monkeypatch.setenv("MCPGEN_FETCH_CHARTJS", "0")
    assert ensure_vendored(tmp_path).endswith(f"was not fetched (MCPGEN_FETCH_CHARTJS=0); {FALLBACK}")


def _source_copy(tmp_path: Path) -> Path:
    """What a checkout holds, without a Chart.js fetched before (mcpgen/vendor/ is ignored by git)."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "MANIFEST.in", "README.md", "LICENSE"):
        shutil.copy(REPO / name, src / name)
    skip = shutil.ignore_patterns("__pycache__", "vendor", "*.egg-info")
    for folder in ("backend", "mcpgen"):
        shutil.copytree(REPO / folder, src / folder, ignore=skip)
    return src


def _wheel(tmp_path: Path, env: dict | None = None) -> tuple[Path, str]:
    """`pip wheel` of a source copy (build isolation, as `pip install` does); the wheel and pip's -v log."""
    out = tmp_path / "dist"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-v", "-w", str(out), str(_source_copy(tmp_path))],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **(env or {})},
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    [wheel] = out.glob("mcpgen-*.whl")
    return wheel, done.stdout + done.stderr


def _app_html(wheel: Path, tmp_path: Path) -> str:
    """The app document that the installed wheel serves (unpacked: a pure-Python wheel is its install)."""
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as z:
        z.extractall(site)
    code = (
        "from mcpgen.serve.mcp_app import build_html, find_chartjs; from mcpgen.spec.models import AppSettings; "
        "import sys, mcpgen; sys.stderr.write(mcpgen.__file__); sys.stdout.write(build_html(AppSettings(), find_chartjs()[0])[0])"
    )
    env = {k: v for k, v in os.environ.items() if k != "MCPGEN_CHARTJS"}
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**env, "PYTHONPATH": str(site)},
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith(str(site)), done.stderr  # the wheel's mcpgen, not the checkout's
    return done.stdout


@pytest.mark.slow
def test_a_built_wheel_carries_the_checked_chartjs_and_a_self_contained_app(tmp_path):
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed")
    wheel, log = _wheel(tmp_path)
    assert "mcpgen: Chart.js 4.6.1 fetched with npm and checked (SHA-512, SHA-256) into " in log
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        code = z.read(f"mcpgen/vendor/{CHARTJS.name}")
        assert "MIT" in z.read(f"mcpgen/vendor/{LICENSE_NAME}").decode()
    assert hashlib.sha256(code).hexdigest() == CHARTJS.sha256
    assert not [n for n in names if n.startswith("backend/")]  # the build backend is not installed
    html = _app_html(wheel, tmp_path)
    assert "<script src=" not in html and CDN_ORIGIN not in html and '"chartjs": "inline"' in html
    assert code.decode() in html  # inlined whole, byte for byte


@pytest.mark.slow
def test_a_wheel_built_offline_still_installs_and_its_app_says_it_uses_the_cdn(tmp_path):
    (tmp_path / "npm-cache").mkdir()
    # npm with an empty cache and a registry that refuses every connection: as on a machine without network
    offline = {"npm_config_registry": "http://127.0.0.1:9/", "npm_config_cache": str(tmp_path / "npm-cache")}
    wheel, log = _wheel(tmp_path, offline)
    assert "mcpgen: Chart.js 4.6.1 could not be fetched (" in log and FALLBACK in log, log[-3000:]
    with zipfile.ZipFile(wheel) as z:
        assert not [n for n in z.namelist() if "/vendor/" in n]
    html = _app_html(wheel, tmp_path)
    assert f'<script src="{CHARTJS.cdn}" integrity="{CHARTJS.sri}"' in html and '"chartjs": "cdn"' in html
