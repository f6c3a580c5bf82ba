"""An in-memory DuckDB connection's database as its `init:` left it, kept in the cache folder, so that
a start of an unchanged project opens its tables rather than running `init` again (reading the
shipped project's CSV files into tables is about a third of the CPU of one `mcpgen call`).

A snapshot is a DuckDB file named `memory.duckdb` (so its catalogue is `memory`, as in memory), in a
folder named by the sha256 of the state of the project's data (`load.checked.data_state`, which the
caller passes: the name, size, time and inode of every file DuckDB may read there), the `init`
statements, the project folder, DuckDB's version and the cache's header (mcpgen's code, its
libraries). It is signed (HMAC-SHA256 of its bytes, with the cache's key, `cachefile.signature`) and
opened read-only, or copied whole into an in-memory database (`copied`: a server, whose queries run
faster on memory than on the file, and which then holds no CSV reader's buffers); one that is missing,
damaged, edited or not signed with this user's key is built again from `init` (run under the same
limits as the connection's), never trusted. Building a new one drops the project's others. A mark
says that a state's snapshot is not kept, and that state's `init` runs in memory as before, as it does
without a cache folder or where one cannot be written: when the file is bigger than MAX_SNAPSHOT_BYTES
(each start reads it whole to check its signature), or when `init` left something a DuckDB file does
not hold (a setting, a variable, an attached database, a temporary object: what `fill` says).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

import duckdb

from .. import cachefile
from ..limits import MAX_SNAPSHOT_BYTES

NAME = "memory.duckdb"
NOT_KEPT = "not-kept"  # the mark of a state whose snapshot is not kept


def folder(root: Path, state: str, init: list[str]) -> Path | None:
    """Where the snapshot of this project's connection, in this state of its data, is kept (None: no cache)."""
    project = cachefile.cache_file("duckdb", "", str(root))
    if project is None:
        return None
    key = hashlib.sha256("\0".join((state, duckdb.__version__, *init)).encode()).hexdigest()[:32]
    return project / key


def kept(where: Path) -> Path | None:
    """The snapshot in `where` when its signature is this user's (None: missing, damaged or forged, or in
    a folder another user could swap it in after the check: DuckDB opens the file again by its name)."""
    try:
        if not private(where / NAME):
            return None
        data = (where / NAME).read_bytes()
        mark = (where / "signature").read_bytes()
    except OSError:
        return None
    return where / NAME if hmac.compare_digest(mark, cachefile.signature(str(where), data)) else None


def private(path: Path) -> bool:
    """Whether only this user (and root) can replace `path`: it and every folder above it belong to one of
    them and no one else may write there, but for a sticky folder (/tmp), where others cannot move ours.

    >>> private(Path("/")), private(Path("/tmp/no-such-file"))
    (True, False)
    """
    getuid = getattr(os, "getuid", None)
    if getuid is None:  # no POSIX owners and modes: not kept
        return False
    try:
        for at in (path, *path.parents):
            mode = os.lstat(at)
            if mode.st_uid not in (getuid(), 0) or stat.S_ISLNK(mode.st_mode):
                return False
            if mode.st_mode & 0o022 and not mode.st_mode & stat.S_ISVTX:
                return False
    except OSError:
        return False
    return True


def keep(where: Path, fill: Callable[[duckdb.DuckDBPyConnection], bool], config: dict) -> Path | None:
    """Build the snapshot in `where`: a new DuckDB file that `fill` runs `init` on (and says whether the
    file holds all that `init` left), signed, put in place whole (another process building the same one
    at once keeps its own or ours). None when it cannot be built or is not kept."""
    if (where / NOT_KEPT).exists():
        return None
    building = where.parent / f".tmp-{secrets.token_hex(8)}"
    try:
        building.mkdir(mode=0o700, parents=True)
        con = duckdb.connect(str(building / NAME), config=config)
        try:
            held = fill(con)
        finally:
            con.close()
        if not held or (building / NAME).stat().st_size > MAX_SNAPSHOT_BYTES:
            (building / NAME).unlink()
            (building / NOT_KEPT).touch()
        else:
            (building / "signature").write_bytes(cachefile.signature(str(where), (building / NAME).read_bytes()))
        for other in where.parent.iterdir():  # the project's snapshots of other states, and a damaged one of this
            if not other.name.startswith(".tmp-"):
                shutil.rmtree(other, ignore_errors=True)
        os.replace(building, where)
    except Exception:  # not written, another process's put in place first, or an init that fails (the
        return kept(where)  # connection then runs it in memory, and says why)
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return None if (where / NOT_KEPT).exists() else where / NAME


def opened(path: Path, config: dict) -> duckdb.DuckDBPyConnection | None:
    """A read-only connection to the snapshot at `path` (None: gone since, another process having built
    the one of a newer state)."""
    try:
        return duckdb.connect(str(path), read_only=True, config=config)
    except duckdb.Error:
        return None


def copied(
    path: Path, config: dict, limit: Callable[[duckdb.DuckDBPyConnection], None]
) -> duckdb.DuckDBPyConnection | None:
    """An in-memory connection holding a copy of everything in the snapshot at `path` (its tables, views,
    macros, sequences, types and indexes), made after `limit` set what the connection may read (a view
    is bound again as it is copied). None when it cannot be copied: gone since, or refused by DuckDB."""
    con = duckdb.connect(":memory:", config=config)
    try:
        con.execute("ATTACH $path AS snapshot (READ_ONLY)", {"path": str(path)})
        limit(con)
        con.execute("COPY FROM DATABASE snapshot TO memory")
        con.execute("DETACH snapshot")
    except duckdb.Error:
        con.close()
        return None
    return con
