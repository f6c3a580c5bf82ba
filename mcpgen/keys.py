"""Secret keys kept for the user: 32 random bytes in a file only the user may read (mode 0600, in a
0700 folder) under `$XDG_STATE_HOME/mcpgen/` (default `~/.local/state/mcpgen/`), outside every project
and cache folder, so that no repository holds one and no one who may only write a cache can sign.

>>> import tempfile
>>> with tempfile.TemporaryDirectory() as state:
...     os.environ["XDG_STATE_HOME"] = state
...     first, again, other = kept_key("keys", "a.key"), kept_key("keys", "a.key"), kept_key("keys", "b.key")
...     files = sorted(oct(p.stat().st_mode & 0o777) for p in Path(state, "mcpgen", "keys").iterdir())
>>> del os.environ["XDG_STATE_HOME"]
>>> first == again != other, len(first), files
(True, 32, ['0o600', '0o600'])
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path


def kept_key(*where: str) -> bytes | None:
    """The key in the file `where` names under the user's state folder, made on first use. None when it
    cannot be kept (no home folder, a read-only one, another process halfway through writing it)."""
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    path = Path(state, "mcpgen", *where)
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            if path.stat().st_mode & 0o077:
                os.chmod(path, 0o600)
            key = path.read_bytes()
            return key if len(key) == 32 else None
        key = secrets.token_bytes(32)
        with os.fdopen(fd, "wb") as out:
            out.write(key)
        return key
    except OSError:
        return None
