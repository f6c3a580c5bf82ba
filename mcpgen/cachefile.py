"""The project's cache file: parsed templates and spec files, specs as checked and the verdicts of their checks,
kept between runs so that restarting an unchanged project parses and checks nothing.

Parsing is most of the cost of loading a big project. Each template's tree, and each spec file's
YAML (with the positions of its keys and its warnings), is kept, pickled, in one file per project
under the user's cache folder, keyed by the sha256 of its text (and, for a template, its kind:
prose or URL). The file records the versions of mcpgen, Jinja2, Python and sqlglot that wrote it,
and the name, size and time of each of mcpgen's own files; any other version reads it as empty. A
key that is not there is parsed, so an edit can never meet a stale result, and what fails to parse
is never kept. `get` and `put` keep other bytes in the same file under a key of the caller's
(`load.checked`: specs and mcpgen.yaml as checked, and the verdicts of their SQL checks). Each entry is signed
(HMAC-SHA256 of its key and bytes) with a key kept for the user outside the cache (`keys.kept_key`):
an entry damaged, edited or written by anyone without that key reads as missing, and is parsed and
checked again. A file that cannot be read (deleted, truncated, corrupt, written by someone else) is
ignored: everything is parsed as if there were no cache. Processes that each load a part of one
project (validate's workers) read its file and hand what they used back (`collecting`), for their
parent to `save` as one file. Unpickling accepts Jinja's node classes, the positioned mappings and
lists of YAML, and plain values only.

Where: `MCPGEN_CACHE_DIR`, else `$XDG_CACHE_HOME/mcpgen`, else `~/.cache/mcpgen`.
`MCPGEN_CACHE=off` turns it off. The folder is safe to delete at any time.

    with cachefile.session(root, "specs"):   # reads the project's file, writes it back if it grew
        ast = cachefile.parse(PROSE, "prose", "{{ n }} rows")
        data = cachefile.load_yaml(text, "specs/x.yaml", warnings)
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import hashlib
import hmac
import importlib.util
import io
import os
import pickle
import secrets
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jinja2
from jinja2 import nodes

from .errors import Problem
from .keys import kept_key
from .spec import yamlload
from .version import __version__


def _sqlglot_version() -> str:
    """The installed sqlglot's version, as the sha256 of its version file: read without importing sqlglot
    (a tenth of a second that loading a kept project does without). What it decides (SQL checks,
    placeholders) is kept here too."""
    found = importlib.util.find_spec("sqlglot")
    folders = found.submodule_search_locations if found is not None else None
    try:
        return hashlib.sha256(Path(next(iter(folders or ())), "_version.py").read_bytes()).hexdigest()[:16]
    except (OSError, StopIteration):  # an install without it: ask the module
        import sqlglot

        return sqlglot.__version__


_HEADER = f"mcpgen {__version__} jinja2 {jinja2.__version__} python {sys.version_info[:3]} sqlglot {_sqlglot_version()}"
_PACKAGE = Path(__file__).resolve().parent


@functools.cache
def _code() -> str:
    """mcpgen's own code as it is here: the name, size and time of each of its files, so that an
    edited checkout (the same version number, other checks) never reads what another one wrote."""
    digest = hashlib.sha256()
    for folder, subfolders, files in sorted(os.walk(_PACKAGE)):
        subfolders[:] = [d for d in subfolders if not d.startswith((".", "__"))]
        for name in sorted(f for f in files if f.endswith(".py")):
            info = os.stat(os.path.join(folder, name))
            digest.update(f"{folder}/{name} {info.st_size} {info.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def _header() -> str:
    return f"{_HEADER} code {_code()}"


_OFF = {"0", "off", "false", "no"}


def cache_dir() -> Path | None:
    """The folder the cache lives in, or None when `MCPGEN_CACHE` turns it off."""
    if os.environ.get("MCPGEN_CACHE", "").strip().lower() in _OFF:
        return None
    if os.environ.get("MCPGEN_CACHE_DIR"):
        return Path(os.environ["MCPGEN_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "mcpgen"


def cache_file(prefix: str, suffix: str, *scope: object) -> Path | None:
    """The cache file named `prefix-HASH.suffix` of `scope` (None: the cache is off). One file per
    version of mcpgen's code too: two checkouts on one project keep their own."""
    folder = cache_dir()
    if folder is None:
        return None
    name = hashlib.sha256("\0".join(map(str, (_header(), *scope))).encode()).hexdigest()[:32]
    return folder / f"{prefix}-{name}{suffix}"


@functools.cache
def _signing_key() -> bytes:
    """The key that signs entries: the user's (`keys.kept_key`), else this process's own, so that
    nothing another process wrote is trusted."""
    return kept_key("cache.key") or secrets.token_bytes(32)


def signature(key: str, data: bytes) -> bytes:
    """The signature of `data` kept under `key`, with the key that signs this user's cache."""
    return hmac.new(_signing_key(), key.encode() + b"\0" + data, hashlib.sha256).digest()


class _Store:
    """The trees of one project: those read from its file, and those parsed in this run, each signed
    (`entries` and `used` hold the signature, then the bytes)."""

    def __init__(self, path: Path, whole: Path | None = None):
        self.path = path
        self.entries: dict[str, bytes] = _read(path)
        if not self.entries and whole is not None:  # a part read for the first time: from the whole project's
            self.entries = _read(whole)
            self.missed = int(bool(self.entries))  # then written as a file of its own
        else:
            self.missed = 0
        self.used: dict[str, bytes] = {}

    def get(self, key: str) -> bytes | None:
        """The bytes kept under `key`, when their signature is this user's (None: missing, damaged or forged)."""
        signed = self.entries.get(key)
        if signed is None or not hmac.compare_digest(signed[:32], signature(key, signed[32:])):
            return None
        self.used[key] = signed
        return signed[32:]

    def put(self, key: str, data: bytes) -> None:
        self.used[key] = signature(key, data) + data
        self.missed += 1

    def save(self) -> None:
        """Write the trees this run used, if any had to be parsed (atomic: readers see old or new); in
        `collecting`, hand them to it instead."""
        found = _collected.get()
        if found is not None:
            _add(found, self.path, self.missed, self.used)
        elif self.missed:
            _write(self.path, self.used)


def _write(path: Path, entries: dict[str, bytes]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".pickle")
        with os.fdopen(fd, "wb") as out:
            pickle.dump((_header(), entries), out, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    except OSError:  # a read-only or full disk: the next start parses again
        with contextlib.suppress(OSError, UnboundLocalError):
            os.unlink(tmp)


_active: contextvars.ContextVar[_Store | None] = contextvars.ContextVar("mcpgen_parse_cache", default=None)
_collected: contextvars.ContextVar[dict[Path, tuple[int, dict[str, bytes]]] | None] = contextvars.ContextVar(
    "mcpgen_parse_cache_collected", default=None
)


@contextlib.contextmanager
def collecting() -> Iterator[dict[Path, tuple[int, dict[str, bytes]]]]:
    """Sessions opened within write no file: what each used (and how much it had to parse) is collected
    per cache file, for another process to `save` (validate's workers each load a part of one project)."""
    found: dict[Path, tuple[int, dict[str, bytes]]] = {}
    token = _collected.set(found)
    try:
        yield found
    finally:
        _collected.reset(token)


def save(parts: list[dict[Path, tuple[int, dict[str, bytes]]]]) -> None:
    """Write each cache file that `collecting` parts used, with all that they used, if any had to parse."""
    merged: dict[Path, tuple[int, dict[str, bytes]]] = {}
    for part in parts:
        for path, (missed, used) in part.items():
            _add(merged, path, missed, used)
    for path, (missed, entries) in merged.items():
        if missed:
            _write(path, entries)


def _add(found: dict[Path, tuple[int, dict[str, bytes]]], path: Path, missed: int, used: dict[str, bytes]) -> None:
    before, entries = found.get(path, (0, {}))
    found[path] = (before + missed, {**entries, **used})


def kept(root: Path, *scope: object) -> set[str]:
    """The keys that the cache file of a `session(root, *scope)` holds (none when the cache is off)."""
    path = cache_file("load", ".pickle", root, *scope)
    return set(_read(path)) if path is not None else set()


@contextlib.contextmanager
def session(root: Path, *scope: object, within: tuple = ()) -> Iterator[None]:
    """Use the cache of the project at `root` while loading it; `scope` tells apart partial loads. A part
    of a project whose whole has the file of `session(root, *within)` starts, while it has no file of its
    own, from what the whole's holds (`mcpgen call` after a read of the whole project)."""
    path = cache_file("load", ".pickle", root, *scope)
    if path is None:
        yield
        return
    store = _Store(path, cache_file("load", ".pickle", root, *within) if within else None)
    token = _active.set(store)
    try:
        yield
    finally:
        _active.reset(token)
    store.save()


def parse(env: jinja2.Environment, kind: str, source: str) -> nodes.Template:
    """`env.parse(source)`, from the cache when the active session has it (raises TemplateSyntaxError)."""
    store = _active.get()
    if store is None:
        return env.parse(source)
    key = hashlib.sha256(f"{kind}\0{source}".encode()).hexdigest()
    data = store.get(key)
    ast = _tree(data, env) if data is not None else None
    if ast is not None:
        return ast
    ast = env.parse(source)  # a syntax error is not cached: it is reported every time
    buffer = io.BytesIO()
    _Pickler(buffer, env).dump(ast)
    store.put(key, buffer.getvalue())
    return ast


def load_yaml(text: str, path: str, warnings: list[Problem] | None = None) -> Any:
    """`yamlload.load_yaml(text, path, warnings)`, from the cache when the active session has this
    text (raises SpecError, which is never cached)."""
    store = _active.get()
    if store is None:
        return yamlload.load_yaml(text, path, warnings)
    key = "yaml:" + hashlib.sha256(text.encode()).hexdigest()
    data = store.get(key)
    found = _parsed_yaml(data) if data is not None else None
    if found is not None:
        value, notes = found
    else:
        collected: list[Problem] = []
        value = yamlload.load_yaml(text, path, collected)
        notes = [(p.line, p.col, p.message) for p in collected]
        store.put(key, pickle.dumps((value, notes), protocol=pickle.HIGHEST_PROTOCOL))
    if warnings is not None:
        warnings.extend(Problem(path, line, col, message, "warning") for line, col, message in notes)
    return value


def get(key: str) -> bytes | None:
    """The bytes kept under `key` in the active session, exactly as `put` gave them (None: no session,
    not kept, or not signed with this user's key); `key` must name everything the bytes were made from.
    What the caller then reads of them is its own rule."""
    store = _active.get()
    return store.get(key) if store is not None else None


def put(key: str, data: bytes) -> None:
    """Keep `data` under `key` in the active session's file, signed (nothing without a session)."""
    store = _active.get()
    if store is not None:
        store.put(key, data)


def _parsed_yaml(data: bytes) -> tuple[Any, list] | None:
    try:
        value, notes = _Unpickler(io.BytesIO(data), None, yaml=True).load()
    except Exception:
        return None
    if not isinstance(notes, list) or not all(isinstance(n, tuple) and len(n) == 3 for n in notes):
        return None
    return value, notes


def _read(path: Path) -> dict[str, bytes]:
    try:
        with open(path, "rb") as f:
            header, entries = _Unpickler(f, None).load()
    except Exception:  # missing, truncated, corrupt or foreign: an empty cache
        return {}
    if header != _header() or not isinstance(entries, dict):
        return {}
    return {k: v for k, v in entries.items() if isinstance(k, str) and isinstance(v, bytes)}


def _tree(data: bytes, env: jinja2.Environment) -> nodes.Template | None:
    try:
        ast = _Unpickler(io.BytesIO(data), env).load()
    except Exception:
        return None
    return ast if isinstance(ast, nodes.Template) else None


class _Pickler(pickle.Pickler):
    """Pickles a tree without its environment (each node points to it); the reader puts it back."""

    def __init__(self, file: io.BytesIO, env: jinja2.Environment):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.env = env

    def persistent_id(self, obj: Any) -> str | None:
        return "env" if obj is self.env else None


class _Unpickler(pickle.Unpickler):
    """Builds Jinja nodes (with `env`), or YAML's positioned containers (with `yaml`), and plain
    values only: a cache file can hold no other object."""

    def __init__(self, file: Any, env: jinja2.Environment | None, yaml: bool = False):
        super().__init__(file)
        self.env = env
        self.yaml = yaml

    def persistent_load(self, pid: Any) -> Any:
        if pid == "env" and self.env is not None:
            return self.env
        raise pickle.UnpicklingError("unknown persistent id")

    def find_class(self, module: str, name: str) -> Any:
        if self.yaml and module == yamlload.__name__ and name in ("Located", "LocatedList"):
            return getattr(yamlload, name)
        found = getattr(nodes, name, None) if module == "jinja2.nodes" and self.env is not None else None
        if isinstance(found, type) and issubclass(found, nodes.Node):
            return found
        raise pickle.UnpicklingError(f"{module}.{name} is not a template node")
