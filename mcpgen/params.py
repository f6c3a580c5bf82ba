"""Parameters: the tool's JSON Schema `inputSchema`, and checking arguments against it.

>>> from mcpgen.spec import Parameter
>>> args = Arguments({"n": Parameter(type="integer", description="How many", default=3, maximum=10)})
>>> args.schema["properties"]["n"]
{'type': 'integer', 'description': 'How many', 'default': 3, 'maximum': 10}
>>> args.validate({})
{'n': 3}
>>> args.validate({"n": 11})
Traceback (most recent call last):
...
mcpgen.errors.ArgumentError: Invalid argument 'n': 11 is greater than the maximum of 10.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from functools import lru_cache
from typing import Any

from .errors import ArgumentError
from .identity import current
from .spec import Constraints, Items, Parameter

INT64 = (-(2**63), 2**63 - 1)
MAX_STRING = 65536  # characters, for strings without max_length
_JSON_TYPES = {
    "string": "string",
    "integer": "integer",
    "number": "number",
    "boolean": "boolean",
    "date": "string",
    "datetime": "string",
    "array": "array",
}
_FORMATS = {"date": "date", "datetime": "date-time"}
_KEYWORDS = {
    "minimum": "minimum",
    "maximum": "maximum",
    "min_length": "minLength",
    "max_length": "maxLength",
    "pattern": "pattern",
    "min_items": "minItems",
    "max_items": "maxItems",
}


def _value_schema(type_: str, c: Constraints) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": _JSON_TYPES[type_]}
    if type_ in _FORMATS:
        schema["format"] = _FORMATS[type_]
    if c.enum is not None:
        schema["enum"] = list(c.enum)
    for key, keyword in _KEYWORDS.items():
        value = getattr(c, key, None)
        if value is None:
            continue
        if type_ in _FORMATS and key in ("minimum", "maximum"):
            # JSON Schema has no date bounds: shown to the model, checked by us.
            schema["formatMinimum" if key == "minimum" else "formatMaximum"] = value
        else:
            schema[keyword] = value
    return schema


def parameter_schema(param: Parameter) -> dict[str, Any]:
    schema = _value_schema(param.type, param)
    schema["description"] = param.description
    if param.type == "array" and param.items is not None:  # Parameter requires items for arrays
        schema["items"] = _value_schema(param.items.type, param.items)
    if "default" in param.model_fields_set:
        schema["default"] = param.default
    elif not param.is_required:
        # Optional with no default: null is the same as leaving it out (NULL in SQL).
        schema["type"] = [schema["type"], "null"]
        if "enum" in schema:
            schema["enum"] = [*schema["enum"], None]
    if param.examples:
        schema["examples"] = list(param.examples)
    # Keep the declaration's key order readable: type, format, description, then constraints.
    order = ["type", "format", "description", "default"]
    return {k: schema[k] for k in sorted(schema, key=lambda k: order.index(k) if k in order else len(order))}


class Arguments:
    """The input schema of a tool, and the check that turns JSON arguments into bound values.

    Parameters with `from_claim` are not arguments: they are left out of the schema and
    take the caller's claim (see mcpgen.identity), which no argument can override."""

    def __init__(self, all_parameters: dict[str, Parameter]):
        self.bound = {name: p for name, p in all_parameters.items() if p.from_claim is not None}
        parameters = {name: p for name, p in all_parameters.items() if p.from_claim is None}
        self.parameters = parameters
        self.schema: dict[str, Any] = {
            "type": "object",
            "properties": {name: parameter_schema(p) for name, p in parameters.items()},
            "required": [name for name, p in parameters.items() if p.is_required],
            "additionalProperties": False,
        }
        if not self.schema["required"]:
            del self.schema["required"]

    def validate(self, arguments: dict[str, Any] | None) -> dict[str, Any]:
        """Check arguments and return every parameter's value, typed for binding."""
        arguments = {} if arguments is None else arguments
        if not isinstance(arguments, dict):
            raise ArgumentError("Arguments must be a JSON object.")
        for name in arguments:
            if name in self.bound:
                raise ArgumentError(f"Argument '{name}' is set from the caller's identity and cannot be passed.")
            if name not in self.parameters:
                known = ", ".join(self.parameters) or "no arguments"
                raise ArgumentError(f"Unknown argument {_short(name)}: this tool takes {known}.")
        for name, param in self.parameters.items():
            if name in arguments:
                _check(name, self.schema["properties"][name], arguments[name])
            elif param.is_required:
                raise ArgumentError(f"Missing required argument '{name}'.")
        values = {}
        for name, param in self.parameters.items():
            if name in arguments:
                values[name] = _convert(name, param.type, arguments[name], param)
            elif "default" in param.model_fields_set:
                values[name] = None if param.default is None else _convert(name, param.type, param.default, param)
            else:
                values[name] = None
        if self.bound:
            values.update(self._claimed())
        return values

    def _claimed(self) -> dict[str, Any]:
        caller, values = current(), {}
        for name, param in self.bound.items():
            claim = str(param.from_claim)
            value = caller.claim(claim)
            try:
                _check(name, parameter_schema(param), value)
            except ArgumentError:
                raise ArgumentError(
                    f"The caller's '{claim}' claim is not a valid {param.type} for parameter '{name}'."
                ) from None
            values[name] = _convert(name, param.type, value, param)
        return values


def _convert(name: str, type_: str, value: Any, c: Parameter | Items) -> Any:
    if value is None:
        return None
    if type_ == "array":
        items = c.items if isinstance(c, Parameter) else None
        assert items is not None  # Parameter requires items for arrays
        return [_convert(f"{name}[{i}]", items.type, v, items) for i, v in enumerate(value)]
    if type_ == "integer":
        if isinstance(value, float):
            value = int(value)
        if not INT64[0] <= value <= INT64[1]:
            raise ArgumentError(f"Invalid argument '{name}': {_short(value)} is outside the 64-bit integer range.")
    if type_ == "string":
        if len(value) > MAX_STRING and c.max_length is None:
            raise ArgumentError(
                f"Invalid argument '{name}': a string of {len(value)} characters is longer than "
                f"the limit of {MAX_STRING}."
            )
        if "\x00" in value:
            raise ArgumentError(f"Invalid argument '{name}': the string contains a NUL character.")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ArgumentError(f"Invalid argument '{name}': the string is not valid Unicode.") from None
    if type_ == "number" and not math.isfinite(value):
        raise ArgumentError(f"Invalid argument '{name}': {value} is not a finite number.")
    if type_ in ("date", "datetime"):
        value = _parse_date(name, type_, value)
        if c.minimum is not None and _utc(value) < _utc(_parse_date(name, type_, str(c.minimum))):
            raise ArgumentError(f"Invalid argument '{name}': {value.isoformat()} is before the minimum of {c.minimum}.")
        if c.maximum is not None and _utc(value) > _utc(_parse_date(name, type_, str(c.maximum))):
            raise ArgumentError(f"Invalid argument '{name}': {value.isoformat()} is after the maximum of {c.maximum}.")
    return value


def _utc(value):
    # Naive datetimes compare as UTC, so naive and zoned bounds can meet.
    if isinstance(value, dt.datetime) and value.tzinfo is None:
        return value.replace(tzinfo=dt.UTC)
    return value


def _parse_date(name: str, type_: str, value: str):
    try:
        if type_ == "date":
            return dt.date.fromisoformat(value)
        return dt.datetime.fromisoformat(value.replace("Z", "+00:00") if value.endswith("Z") else value)
    except ValueError:
        shape = "date (YYYY-MM-DD)" if type_ == "date" else "date-time (YYYY-MM-DDTHH:MM:SS, optional zone)"
        raise ArgumentError(f"Invalid argument '{name}': {_short(value)} is not an ISO 8601 {shape}.") from None


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text if len(text) <= limit else text[: limit - 3] + "..."


_TYPES = {"string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,), "array": (list,)}


def _check(name: str, schema: dict[str, Any], value: Any) -> None:
    """Hold one value to its JSON Schema (the keywords `parameter_schema` writes); raise one sentence."""
    kind = schema["type"]
    if isinstance(kind, list):  # [type, "null"]: an optional parameter without a default
        if value is None:
            return
        kind = kind[0]
    if (isinstance(value, bool) and kind != "boolean") or (
        not isinstance(value, _TYPES[kind])
        and not (kind == "integer" and isinstance(value, float) and value.is_integer())
    ):
        article = "an" if kind[0] in "aeiou" else "a"
        raise ArgumentError(
            f"Invalid argument '{name}': expected {article} {kind}, got {_type_name(value)} {_short(value)}."
        )
    shown, size = _short(value), len(value) if isinstance(value, (str, list)) else 0
    if "enum" in schema and value not in schema["enum"]:
        _fail(name, f"{shown} is not one of {', '.join(_short(v, 30) for v in schema['enum'] if v is not None)}")
    if "minimum" in schema and value < schema["minimum"]:
        _fail(name, f"{shown} is less than the minimum of {schema['minimum']}")
    if "maximum" in schema and value > schema["maximum"]:
        _fail(name, f"{shown} is greater than the maximum of {schema['maximum']}")
    if "minLength" in schema and size < schema["minLength"]:
        _fail(name, f"{shown} is shorter than the minimum length of {schema['minLength']}")
    if "maxLength" in schema and size > schema["maxLength"]:
        _fail(name, f"a string of {size} characters is longer than the maximum length of {schema['maxLength']}")
    if "pattern" in schema and not _pattern(schema["pattern"]).search(value):
        _fail(name, f"{shown} does not match the pattern {schema['pattern']}")
    if "minItems" in schema and size < schema["minItems"]:
        _fail(name, f"{size} items are fewer than the minimum of {schema['minItems']}")
    if "maxItems" in schema and size > schema["maxItems"]:
        _fail(name, f"{size} items are more than the maximum of {schema['maxItems']}")
    if kind == "array" and isinstance(value, list):
        for i, item in enumerate(value):
            _check(f"{name}[{i}]", schema["items"], item)


def _fail(name: str, what: str) -> None:
    raise ArgumentError(f"Invalid argument '{name}': {what}.")


@lru_cache(maxsize=1024)
def _pattern(pattern: str) -> re.Pattern:
    return re.compile(pattern)


def _type_name(value: Any) -> str:
    return {
        bool: "boolean",
        int: "integer",
        float: "number",
        str: "string",
        list: "array",
        dict: "object",
        type(None): "null",
    }.get(type(value), type(value).__name__)


def param_types(parameters: dict[str, Parameter]) -> dict[str, str]:
    """Declared types for `Engine.prepare(sql, types)`: `{"n": "integer", "ids": "date[]"}`."""
    return {name: f"{p.items.type}[]" if p.type == "array" and p.items else p.type for name, p in parameters.items()}
