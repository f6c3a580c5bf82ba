"""mcpgen's build backend: setuptools, after the pinned Chart.js is fetched into mcpgen/vendor/.

`pip install .`, `pip install -e .`, `pip wheel .` and `python -m build` all run it (pyproject.toml
names it, with `backend-path`), so an install or a wheel carries the self-contained MCP App with no
extra step. The fetching is mcpgen/vendored.py's `ensure_vendored`: `npm pack` of the pinned
release, checked against its SHA-512 and SHA-256, never committed. It never fails a build: without
npm or a network the install goes on and the app falls back to the CDN, as the sentence printed
here (shown by `pip -v`) and `mcpgen serve` say.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from setuptools import build_meta
from setuptools.build_meta import (  # the hooks that build nothing we ship are setuptools' own
    build_sdist,
    get_requires_for_build_editable,
    get_requires_for_build_sdist,
    get_requires_for_build_wheel,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
)

__all__ = [
    "build_editable",
    "build_sdist",
    "build_wheel",
    "get_requires_for_build_editable",
    "get_requires_for_build_sdist",
    "get_requires_for_build_wheel",
    "prepare_metadata_for_build_editable",
    "prepare_metadata_for_build_wheel",
]

VENDORED = Path(__file__).resolve().parent.parent / "mcpgen" / "vendored.py"


def _vendor() -> None:
    """Fetch Chart.js unless it is there; say what happened on stderr. mcpgen's package is not
    imported: its dependencies are not installed yet, so the module is loaded by its path."""
    spec = importlib.util.spec_from_file_location("_mcpgen_vendored", VENDORED)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    print(module.ensure_vendored(), file=sys.stderr)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    _vendor()
    return build_meta.build_wheel(wheel_directory, config_settings, metadata_directory)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    _vendor()
    return build_meta.build_editable(wheel_directory, config_settings, metadata_directory)
