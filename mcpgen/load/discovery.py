"""Which files make a project: its mcpgen.yaml, its spec files and the Python files `serve` imports.

>>> [p.name for p in spec_paths("specs")][:2], find_config(Path("specs")).name
(['busiest_routes.yaml', 'carrier_performance.yaml'], 'mcpgen.yaml')
"""

from __future__ import annotations

from pathlib import Path

from ..errors import Problem, SpecError
from ..spec.config import CONFIG_NAME
from ..spec.prompts import PROMPT_SUFFIXES

MISNAMED_CONFIG = "mcpgen.yml"


def find_config(specs_dir: Path) -> Path | None:
    """mcpgen.yaml in the specs folder, else in its parent."""
    for folder in (specs_dir, parent_folder(specs_dir)):
        if (folder / CONFIG_NAME).is_file():
            return folder / CONFIG_NAME
    return None


def misnamed_config(specs_dir: Path) -> Path | None:
    """An `mcpgen.yml` where `find_config` looks, which is never read: the project file is `mcpgen.yaml` alone."""
    for folder in (specs_dir, parent_folder(specs_dir)):
        if (folder / MISNAMED_CONFIG).is_file():
            return folder / MISNAMED_CONFIG
    return None


def project_folder(specs_dir: Path) -> tuple[Path | None, Path]:
    """(mcpgen.yaml, or None, and the project's root folder: mcpgen.yaml's, else the specs folder's parent)."""
    config_path = find_config(specs_dir)
    return config_path, (config_path.parent if config_path else parent_folder(specs_dir)).resolve()


def parent_folder(folder: Path) -> Path:
    """The folder holding `folder`, as written: also for `.` and `..`, whose `Path.parent` is `.`."""
    return folder / ".." if folder.name in ("", "..") else folder.parent


def spec_paths(specs_dir: str | Path) -> list[Path]:
    """The spec files of a folder, in name order; SpecError if there is no such folder."""
    specs_dir = Path(specs_dir)
    if not specs_dir.is_dir():
        raise SpecError([Problem(str(specs_dir), None, None, "no such folder")])
    return [
        p
        for p in _visible(specs_dir, (".yaml", ".yml"))
        if p.name not in (CONFIG_NAME, MISNAMED_CONFIG) and not is_prompt(p)
    ]


def prompt_paths(specs_dir: Path) -> list[Path]:
    """The prompt files of a folder: visible `NAME.prompt.yaml` (or `.prompt.yml`) files, in name order."""
    return [p for p in _visible(specs_dir, (".yaml", ".yml")) if is_prompt(p)]


def is_prompt(path: Path) -> bool:
    return path.name.endswith(PROMPT_SUFFIXES)


def python_paths(specs_dir: Path) -> list[Path]:
    """The Python files `serve` imports: visible `*.py` files, not `_private.py` nor `.scratch.py`."""
    return [p.resolve() for p in _visible(specs_dir, (".py",)) if not p.name.startswith("_")]


def _visible(folder: Path, suffixes: tuple[str, ...]) -> list[Path]:
    """Files of `folder` (not its subfolders) ending in one of `suffixes`, hidden ones left out, in name order."""
    found = (p for p in folder.iterdir() if p.suffix in suffixes and not p.name.startswith("."))
    return sorted(found, key=lambda p: p.name)  # one folder: the order of paths, without comparing their parts
