"""What is wrong with a file of a project, one sentence each at file:line:col: pydantic's validation
errors (an unknown key with the field it was probably meant to be, a missing field, a value out of
its choices), and `read_mapping`, the one reader of a spec or prompt file (its size, its UTF-8 text,
a mapping at the top).

>>> from mcpgen.spec.models import Spec
>>> "type" in fields_at(Spec, ("parameters", "n")), fields_at(Spec, ("parameters", "n"))[:3]
(True, ['enum', 'minimum', 'maximum'])
"""

from __future__ import annotations

import re
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from .. import cachefile
from ..errors import Problem, SpecError
from ..limits import MAX_FILE_BYTES
from ..redaction import redact
from ..spec.config import SECRET_NAME
from ..spec.models import Spec, is_union_tag
from ..spec.yamlload import Located
from ..text import as_json, closest, did_you_mean, line_col


def not_utf8(path: Path, exc: UnicodeDecodeError) -> Problem:
    line, col = line_col(exc.object, exc.start)
    return Problem(str(path), line, col, f"the file is not UTF-8 text (byte 0x{exc.object[exc.start]:02x})")


def read_mapping(path: Path, problems: list[Problem], not_a_mapping: str) -> Located | None:
    """The file's top-level YAML mapping (parsed through the cache), or None with the problem added:
    too large, not UTF-8, not YAML, or not a mapping (`not_a_mapping` says what the file must be)."""
    text = read_text(path, problems)
    return None if text is None else mapping_of(text, str(path), problems, not_a_mapping)


def read_text(path: Path, problems: list[Problem]) -> str | None:
    """The file's text, or None with the problem added: too large, or not UTF-8."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            problems.append(Problem(str(path), None, None, f"the file is larger than {MAX_FILE_BYTES // 1024} KiB"))
            return None
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        problems.append(not_utf8(path, exc))
        return None


def mapping_of(text: str, shown: str, problems: list[Problem], not_a_mapping: str) -> Located | None:
    """The top-level YAML mapping of `text` (parsed through the cache), or None with the problem added."""
    try:
        data = cachefile.load_yaml(text, shown, problems)
    except SpecError as exc:
        problems.extend(exc.problems)
        return None
    if not isinstance(data, Located):
        problems.append(Problem(shown, 1, 1, not_a_mapping))
        return None
    return data


def validation_problems(exc: ValidationError, data: Any, path: Path, model: type[BaseModel] = Spec) -> list[Problem]:
    """One problem per pydantic error; an unknown key that is a typo of a missing required field is
    one problem ("unknown key 'descripton'; did you mean 'description'?"), not two."""
    errors = exc.errors()
    meant = typos(errors, model)
    out = []
    for err in errors:
        loc = [p for p in err["loc"] if not is_union_tag(p)]  # unions are tagged by shape or kind, not keys
        if err["type"] == "missing" and tuple(loc) in meant.values():
            continue  # reported as the unknown key that was meant to be it
        line, col, node, shown = None, None, data, []
        parent = data
        for i, part in enumerate(loc):
            last = i == len(loc) - 1
            parent = node
            if isinstance(node, Located) and part in node:
                line, col = node.where(part)
                node = node[part]
                shown.append(str(part))
            elif isinstance(node, list) and isinstance(part, int) and part < len(node):
                line, col = getattr(node, "lines", [(line, col)] * (part + 1))[part]
                node = node[part]
                shown.append(f"[{part}]")
            elif isinstance(node, Located) and (
                err["type"] == "extra_forbidden" or (err["type"] == "missing" and last)
            ):
                line, col = node.where(part) if part in node.lines else (line, col)
                shown.append(str(part))
        where = ".".join(shown).replace(".[", "[") or "spec"
        if line is None and isinstance(data, Located):
            line, col = data.line, data.col
        present = set(parent) if isinstance(parent, dict) else set()
        out.append(Problem(str(path), line, col, _message(err, where, model, present)))
    return out


def typos(errors: list[ErrorDetails], model: type[BaseModel]) -> dict[tuple, tuple]:
    """Unknown keys whose nearest field is missing: {location of the key: location of the field}."""
    missing = {tuple(p for p in e["loc"] if not is_union_tag(p)) for e in errors if e["type"] == "missing"}
    out = {}
    for err in errors:
        loc = tuple(p for p in err["loc"] if not is_union_tag(p))
        if err["type"] == "extra_forbidden" and loc:
            meant = closest(loc[-1], fields_at(model, loc[:-1]))
            if meant is not None and (*loc[:-1], meant) in missing:
                out[loc] = (*loc[:-1], meant)
    return out


def fields_at(model: Any, loc: tuple | list) -> list[str]:
    """The keys a mapping at `loc` inside `model` may have: `fields_at(Spec, ("parameters", "n"))`
    gives a Parameter's fields."""
    return list(dict.fromkeys(name for kind in _kinds_at(model, loc) for name in _model_fields(kind)))


def _kinds_at(model: Any, loc: tuple | list) -> list[Any]:
    kinds = [model]
    for part in loc:
        kinds = [step for kind in kinds for step in _step(kind, part)]
    return kinds


def _unwrap(kind: Any) -> list[Any]:
    """The concrete types behind Annotated, Optional and unions."""
    origin = get_origin(kind)
    if origin is Annotated:
        return _unwrap(get_args(kind)[0])
    if origin in (Union, UnionType):
        return [t for arg in get_args(kind) for t in _unwrap(arg)]
    return [kind]


def _step(kind: Any, part: Any) -> list[Any]:
    out = []
    for t in _unwrap(kind):
        origin, args = get_origin(t), get_args(t)
        if isinstance(t, type) and issubclass(t, BaseModel) and isinstance(part, str) and part in t.model_fields:
            out.append(t.model_fields[part].annotation)
        elif origin is list and isinstance(part, int):
            out.append(args[0])
        elif origin is dict and isinstance(part, str):
            out.append(args[1])
    return out


def _required(model: Any, loc: tuple | list) -> set[str]:
    """The required keys of the mapping at `loc` inside `model`."""
    return {
        n
        for kind in _kinds_at(model, loc)
        for t in _unwrap(kind)
        if isinstance(t, type) and issubclass(t, BaseModel)
        for n, f in t.model_fields.items()
        if f.is_required()
    }


def _model_fields(kind: Any) -> list[str]:
    return [n for t in _unwrap(kind) if isinstance(t, type) and issubclass(t, BaseModel) for n in t.model_fields]


def _message(
    err: ErrorDetails, where: str, model: type[BaseModel] = Spec, present: frozenset | set = frozenset()
) -> str:
    kind, msg = err["type"], err["msg"]
    loc = [p for p in err["loc"] if not is_union_tag(p)]
    if kind == "extra_forbidden":
        key = where.rsplit(".", 1)[-1]
        inside = f" in {where.rsplit('.', 1)[0]}" if "." in where else ""
        fields = [f for f in fields_at(model, loc[:-1]) if f not in present]  # not one that is already there
        return f"unknown key '{key}'{inside}" + did_you_mean(loc[-1], fields)
    if kind == "missing":
        return f"missing required field '{where}'"
    if kind in ("model_type", "dict_type"):  # pydantic names its class here ("instance of Parameter")
        keys = ", ".join(sorted(fields_at(model, loc), key=lambda f: f not in _required(model, loc))[:3])
        got = "nothing" if err["input"] is None else repr(err["input"])
        return f"{where}: expected its keys ({keys}, ...) indented below it, got {got}"
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    if kind == "literal_error":
        expected = re.findall(r"'([^']*)'", msg)
        shown = repr(err["input"]) if isinstance(err["input"], str) else err["input"]
        msg = f"{shown} is not one of {', '.join(expected)}" + did_you_mean(err["input"], expected)
    elif kind not in ("value_error", "assertion_error") and "input" in err:  # a validator's sentence says its own
        msg += _given(err["input"], loc)
    return f"{where}: {msg}"


def _given(value: Any, loc: list) -> str:
    """What was given, cut to 40 characters; none of a key named like a secret (or of a secret in a URL)."""
    if any(SECRET_NAME.search(str(part)) for part in loc):
        return ""
    return f", got {redact(as_json(value, limit=40))}"
