"""Writing a file the user keeps (a client's configuration, a bundle) whole or not at all."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["written_whole"]


@contextlib.contextmanager
def written_whole(path: Path) -> Iterator[Path]:
    """A file beside `path` to write, renamed over `path` when the block ends (removed if it raises), so
    that a reader sees the old file or the new one, never half of one. It gets the mode of the file it
    replaces, or for a new file the mode any file the user writes gets (0666 less the umask), not the
    0600 of a temporary file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    temporary = Path(name)
    try:
        yield temporary
        try:
            mode = stat.S_IMODE(path.stat().st_mode)
        except FileNotFoundError:
            mask = os.umask(0)  # read, then set back
            os.umask(mask)
            mode = 0o666 & ~mask
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
