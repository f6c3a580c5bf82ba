"""What a DuckDB connection may read: the project's visible files, computed from real paths.

DuckDB checks `allowed_directories` on a path's text with `..` removed, while the OS follows
links first: with a folder link inside an allowed folder (`data/current -> .`), the text
`data/current/current/../../../../etc/passwd` stays inside the folder and reads /etc/passwd.
So the readable set is built from what is really on disk, once, at start:

* Hidden entries (a name starting with `.`: `.git`, `.env`, `.ssh`) are never readable.
* A folder goes into `allowed_directories` only when nothing under it is hidden, a link or a
  special file; otherwise its files are listed one by one (`allowed_paths`) and its clean
  subfolders are allowed as folders.
* A link to a file is readable when its real target is itself a readable file.
* A link to a folder anywhere under the root (hidden folders included) is refused unless it
  points to a sibling in its own folder (`lib64 -> lib`), where `..` means the same to both.
* A root that is `/`, the home folder or one of its parents is refused.

>>> import tempfile, pathlib
>>> root = pathlib.Path(tempfile.mkdtemp())
>>> (root / "data").mkdir()
>>> _ = (root / "data" / "a.csv").write_text("x"), (root / ".env").write_text("S=1")
>>> reach = readable_set(root)
>>> [pathlib.Path(d).name for d in reach.directories], reach.paths
(['data'], [])
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from ..errors import QueryError

MAX_ENTRIES = 200_000  # files and folders walked under a project root before giving up


class FileReachError(QueryError):
    """The project folder cannot be locked down safely for DuckDB."""


@dataclass(frozen=True)
class Readable:
    """DuckDB's `allowed_directories` (each ending in a separator) and `allowed_paths`."""

    directories: list[str]
    paths: list[str]


def check_root(root: Path) -> None:
    """Refuse a project root that would expose the whole machine or the user's home folder."""
    root = root.resolve()
    home = Path.home().resolve()
    if root == Path(root.anchor):
        raise FileReachError(
            f"the project folder is the file system root {root}: DuckDB could read every file on the "
            "machine; put mcpgen.yaml in a folder that holds only the project"
        )
    if root == home or root in home.parents:
        raise FileReachError(
            f"the project folder {root} is your home folder or holds it: DuckDB could read all your "
            "files; put mcpgen.yaml in a folder that holds only the project"
        )


def readable_set(root: Path) -> Readable:
    """The folders and files under `root` that DuckDB may read (see the module docstring)."""
    root = root.resolve()
    check_root(root)
    walker = _Walker(root)
    directories: list[str] = []
    paths: list[str] = []
    if walker.clean(str(root)):
        directories.append(str(root) + os.sep)
    else:
        walker.split(str(root), directories, paths)
    return Readable(directories, paths)


class _Walker:
    """Folders are walked as path text (os.scandir's own): a Path made for each of a large tree's entries
    was most of the walk's cost."""

    def __init__(self, root: Path):
        self.root = root
        self.entries = 0
        self._clean: dict[str, bool] = {}
        self._listing: dict[str, list[os.DirEntry]] = {}

    def listing(self, folder: str) -> list[os.DirEntry]:
        if folder not in self._listing:
            try:
                with os.scandir(folder) as it:
                    entries = sorted(it, key=lambda e: e.name)
            except OSError:
                entries = []
            self.entries += len(entries)
            if self.entries > MAX_ENTRIES:
                raise FileReachError(
                    f"the project folder {self.root} holds more than {MAX_ENTRIES:,} files and folders; "
                    "put mcpgen.yaml in a folder that holds only the project"
                )
            self._listing[folder] = entries
        return self._listing[folder]

    def clean(self, folder: str) -> bool:
        """True when nothing under `folder` is hidden, a link or a special file. Walks every
        subfolder (hidden ones too) to check its folder links, whatever the answer."""
        if folder in self._clean:
            return self._clean[folder]
        ok = True
        for entry in self.listing(folder):
            if entry.is_symlink():
                self.check_link(Path(entry.path))
                ok = False
            elif entry.is_dir(follow_symlinks=False):
                ok = self.clean(entry.path) and ok and not entry.name.startswith(".")
            elif entry.name.startswith(".") or not entry.is_file(follow_symlinks=False):
                ok = False
        self._clean[folder] = ok
        return ok

    def split(self, folder: str, directories: list[str], paths: list[str]) -> None:
        """Add the readable parts of an unclean `folder`: clean subfolders whole, files one by one."""
        for entry in self.listing(folder):
            if entry.name.startswith("."):
                continue
            if entry.is_symlink():
                if self.readable_file(Path(entry.path).resolve()):
                    paths.append(entry.path)
            elif entry.is_dir(follow_symlinks=False):
                if self.clean(entry.path):
                    directories.append(entry.path + os.sep)
                else:
                    self.split(entry.path, directories, paths)
            elif entry.is_file(follow_symlinks=False):
                paths.append(entry.path)

    def readable_file(self, real: Path) -> bool:
        """A link's real target is readable: a regular file inside the root, no hidden part."""
        try:
            relative = real.relative_to(self.root)
        except ValueError:
            return False
        return not any(part.startswith(".") for part in relative.parts) and stat.S_ISREG(_mode(real))

    def check_link(self, link: Path) -> None:
        """A folder link is refused unless its target is a sibling (then `..` agrees with the OS)."""
        try:
            real = link.resolve(strict=True)
        except (OSError, RuntimeError):  # dangling, or a loop
            return
        if not real.is_dir() or (real.parent == link.parent.resolve() and not real.name.startswith(".")):
            return
        shown = link.relative_to(self.root) if link.is_relative_to(self.root) else link
        raise FileReachError(
            f"{shown} is a link to the folder {os.readlink(link)}: DuckDB checks paths as text while "
            "the system follows links, so a folder link lets a query read outside the project; "
            "replace the link with the folder itself (or a copy)"
        )


def _mode(path: Path) -> int:
    try:
        return path.stat().st_mode
    except OSError:
        return 0
