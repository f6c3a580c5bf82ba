"""The options a connection hands its driver (the URL's query and `connect_args`), checked before any
connection is made: a name the driver does not take, a value of the wrong type or a TLS file that is
not there is one sentence naming the option, not the driver's error at the first call.

Names are known for drivers whose `connect` lists them (PyMySQL), for libpq's (psycopg, psycopg2:
libpq's own keywords) and for Python's sqlite3; other drivers' options are left to the driver.

>>> import sqlalchemy as sa
>>> engine = sa.create_engine("mysql+pymysql://reader@db/x?chrset=utf8mb4")
>>> check_options(engine.dialect, engine.url, {})
Traceback (most recent call last):
mcpgen.errors.SettingError: url: the pymysql driver takes no option 'chrset'; did you mean 'charset'?
>>> check_options(engine.dialect, engine.url.set(query={}), {"connect_timeout": "soon"})
Traceback (most recent call last):
mcpgen.errors.SettingError: connect_args: the pymysql driver takes a whole number for connect_timeout, not 'soon'
"""

from __future__ import annotations

import functools
import inspect
import os
from typing import Any

from ...errors import SettingError
from ...spec.config import FILE_OPTIONS, SECRET_NAME
from ...text import did_you_mean

__all__ = ["check_options"]

# Python's sqlite3.connect (its signature cannot be read), and the URI parameters SQLite reads.
_SQLITE = {
    "timeout": float,
    "detect_types": int,
    "isolation_level": None,
    "check_same_thread": bool,
    "factory": None,
    "cached_statements": int,
    "uri": bool,
    "autocommit": None,
}
_SQLITE_URI = ("mode", "cache", "vfs", "psow", "nolock", "immutable", "modeof")
_SCALAR = (str, int, float)  # what a libpq keyword takes (psycopg writes it as text)
_TYPE_NAMES = {
    int: "a whole number",
    float: "a number",
    bool: "true or false",
    str: "text",
    _SCALAR: "text or a number",
}
# libpq keywords whose values libpq itself checks only when connecting: whole numbers, and choices.
_LIBPQ_NUMBERS = ("connect_timeout", "port", "keepalives", "keepalives_idle", "keepalives_interval", "keepalives_count")
_LIBPQ_CHOICES = {
    "sslmode": ("disable", "allow", "prefer", "require", "verify-ca", "verify-full"),
    "gssencmode": ("disable", "prefer", "require"),
    "channel_binding": ("disable", "prefer", "require"),
    "target_session_attrs": ("any", "read-write", "read-only", "primary", "standby", "prefer-standby"),
}
# Options naming a file the driver reads inside PyMySQL's `ssl` mapping (the others: FILE_OPTIONS).
_SSL_FILES = ("ca", "cert", "key")


def check_options(dialect, url, connect_args: dict[str, Any]) -> None:
    """Raise SettingError naming the first option the dialect's driver cannot take, in `connect_args` or
    in the URL's query (its `setting`: ("connect_args", NAME) or ("url",))."""
    kinds = _accepted(dialect)
    _, given = dialect.create_connect_args(url)
    if dialect.name == "sqlite":  # the rest of the query goes into SQLite's URI, where it would be ignored
        given = {**{k: v for k, v in url.query.items() if k not in _SQLITE_URI}, **given}
    for name, value in {**given, **connect_args}.items():
        setting = ("connect_args", name) if name in connect_args else ("url",)
        where = setting[0]  # the option is named in the sentence: `password: ...` would read as a secret
        if kinds is not None and name not in kinds:
            hint = did_you_mean(name, kinds)
            raise SettingError(f"{where}: the {dialect.driver} driver takes no option {name!r}{hint}", setting)
        kind = kinds.get(name) if kinds is not None else None
        if kinds is not None and value is not None and (isinstance(value, list) or not _fits(value, kind)):
            shown = f"{_TYPE_NAMES.get(kind, 'a single value')} for {name}, not {_shown(name, value)}"
            raise SettingError(f"{where}: the {dialect.driver} driver takes {shown}", setting)
        if kind is _SCALAR and value is not None:
            _check_libpq(where, setting, name, value)
        files: list[tuple[tuple[str, ...], str, Any]] = [(setting, name, value)] if name in FILE_OPTIONS else []
        if name == "ssl" and isinstance(value, dict):
            files = [
                ((*setting, key) if len(setting) > 1 else setting, f"ssl.{key}", value[key])
                for key in _SSL_FILES
                if key in value
            ]
        for at, option, path in files:
            if isinstance(path, str) and path != "system" and not os.path.isfile(os.path.expanduser(path)):
                raise SettingError(f"{at[0]}: the file {path} that {option} names does not exist", at)


def _check_libpq(where: str, setting: tuple[str, ...], name: str, value: Any) -> None:
    """A libpq value that libpq would refuse when connecting, refused now."""
    text = str(value).strip()
    numbers = text.split(",")  # port: one per host
    if name in _LIBPQ_NUMBERS and not all(n.strip().lstrip("-").isdigit() for n in numbers):
        raise SettingError(f"{where}: {name} takes a whole number, not {value!r}", setting)
    choices = _LIBPQ_CHOICES.get(name)
    if choices and text not in choices:
        raise SettingError(
            f"{where}: {name} is one of {', '.join(choices)}, not {value!r}{did_you_mean(text, choices)}", setting
        )


def _fits(value: Any, kind: Any) -> bool:
    """Whether `value` is of `kind` (None: any; a number for a float; true and false are not numbers)."""
    if kind is None:
        return True
    if isinstance(value, bool):
        return kind is bool
    return isinstance(value, (int, float) if kind is float else kind)


def _accepted(dialect) -> dict[str, Any] | None:
    """Option name -> the type its value must have (None: any) for the dialect's driver; None: not known."""
    if dialect.name == "sqlite" and dialect.driver == "pysqlite":
        return _SQLITE
    own, more = _parameters(dialect.loaded_dbapi.connect)
    if dialect.driver in ("psycopg", "psycopg2"):  # the rest are libpq's keywords
        keywords = _libpq_keywords()
        return None if keywords is None else {**own, **dict.fromkeys(keywords, _SCALAR)}
    return None if more else own


def _parameters(connect) -> tuple[dict[str, Any], bool]:
    """`connect`'s named parameters with the type of each one's default (None: any), and whether it
    takes others (**kwargs, or a signature that cannot be read)."""
    try:
        parameters = inspect.signature(connect).parameters.values()
    except (TypeError, ValueError):
        return {}, True
    kinds = (bool, int, float, str)
    named = {
        p.name: type(p.default) if type(p.default) in kinds else None
        for p in parameters
        if p.kind is p.KEYWORD_ONLY or p.kind is p.POSITIONAL_OR_KEYWORD
    }
    return named, any(p.kind is p.VAR_KEYWORD for p in parameters)


@functools.cache
def _libpq_keywords() -> tuple[str, ...] | None:
    """The connection keywords of the libpq psycopg loads (psycopg2 links the same kind), if it is installed."""
    try:
        from psycopg import pq

        return tuple(o.keyword.decode() for o in pq.Conninfo.get_defaults())
    except ImportError:
        return None


def _shown(name: str, value: Any) -> str:
    """The value as a message may show it: a secret's (a password's) only by its kind."""
    if isinstance(value, (dict, list)):
        return "a mapping" if isinstance(value, dict) else "a list"
    return f"a value of type {type(value).__name__}" if SECRET_NAME.search(name) else repr(value)
