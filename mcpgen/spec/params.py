"""Parameters: the tool's JSON Schema `inputSchema`, and checking arguments against it.

>>> from mcpgen.spec.models import Parameter
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
from typing import Any

from ..errors import ArgumentError
from ..identity import current
from ..text import as_json, clipped, closest, one_of
from .models import Constraints, Items, Parameter
from .patterns import matches

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
_FIRST = ("type", "format", "description", "default")  # the keys a parameter's schema starts with, in this order
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
        if value is not None and not (type_ in _FORMATS and key in ("minimum", "maximum")):
            schema[keyword] = value  # JSON Schema has no date bounds: they go into the description
    return schema


def date_bounds(c: Constraints) -> str:
    """The bounds of a date or datetime, in words for the description (mcpgen checks them itself).

    >>> from mcpgen.spec.models import Parameter
    >>> date_bounds(Parameter(type="date", description="d", minimum="2013-01-01"))
    'on or after 2013-01-01'
    """
    if c.minimum is not None and c.maximum is not None:
        return f"from {c.minimum} to {c.maximum}"
    return f"on or after {c.minimum}" if c.minimum is not None else f"on or before {c.maximum}"


def _said(description: str, c: Constraints) -> bool:
    """Whether the description already gives every bound (`First day (2013-01-01 to 2013-12-31)`):
    then the bounds are not said a second time.

    >>> from mcpgen.spec.models import Parameter
    >>> p = Parameter(type="date", description="From 2013-01-01 on", minimum="2013-01-01", maximum="2013-12-31")
    >>> _said(p.description, p), _said("From 2013-01-01 to 2013-12-31", p)
    (False, True)
    """
    return all(str(b) in description for b in (c.minimum, c.maximum) if b is not None)


def parameter_schema(param: Parameter) -> dict[str, Any]:
    """The JSON Schema of one parameter: standard 2020-12 keywords only, so strict validators take it.

    An optional parameter keeps its plain type (clients convert form input by `type`); mcpgen
    still takes an explicit null for it, as if it were left out."""
    schema = _value_schema(param.type, param)
    schema["description"] = param.description
    bounded: list[tuple[Parameter | Items, str]] = [(param, "")] + ([(param.items, "each ")] if param.items else [])
    bounds = [
        f"{each}{date_bounds(c)}"
        for c, each in bounded
        if c.type in _FORMATS and (c.minimum or c.maximum) and not _said(param.description, c)
    ]
    if bounds:
        schema["description"] = f"{param.description.rstrip()} ({'; '.join(bounds)})"
    if param.type == "array" and param.items is not None:  # Parameter requires items for arrays
        schema["items"] = _value_schema(param.items.type, param.items)
    if "default" in param.model_fields_set and param.default is not None:
        schema["default"] = param.default
    if param.examples:
        schema["examples"] = list(param.examples)
    # Keep the declaration's key order readable: type, format, description, then constraints.
    return {**{k: schema[k] for k in _FIRST if k in schema}, **schema}


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
        self.check_names(arguments)
        # null for a parameter that is not required means "left out" (clients send it for empty fields)
        given = {k: v for k, v in arguments.items() if v is not None or self.parameters[k].is_required}
        for name, param in self.parameters.items():
            if name in given:
                _check(name, self.schema["properties"][name], given[name])
            elif param.is_required:
                raise ArgumentError(f"Missing required argument '{name}'.")
        values = {}
        for name, param in self.parameters.items():
            if name in given:
                values[name] = _convert(name, param.type, given[name], param)
            elif "default" in param.model_fields_set:
                values[name] = None if param.default is None else _convert(name, param.type, param.default, param)
            else:
                values[name] = None
        if self.bound:
            values.update(self._claimed())
        return values

    def check_names(self, arguments: dict[str, Any]) -> None:
        """Refuse an argument name that is neither a parameter nor set from the caller's identity."""
        for name in arguments:
            if name not in self.parameters and name not in self.bound:
                known = ", ".join(self.parameters) or "no arguments"
                near = closest(name, self.parameters)
                hint = f" (did you mean '{near}'?)" if near is not None else ""
                raise ArgumentError(f"Unknown argument {_name(name)}: this tool takes {known}{hint}.")

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
            raise ArgumentError(f"Invalid argument '{name}': {as_json(value)} is outside the 64-bit integer range.")
    if type_ == "string":
        _check_string(name, value, c)
    if type_ == "number" and not math.isfinite(value):
        raise ArgumentError(f"Invalid argument '{name}': {value} is not a finite number.")
    if type_ in ("date", "datetime"):
        value = _date_within(name, type_, value, c)
    return value


def _check_string(name: str, value: str, c: Parameter | Items) -> None:
    """What a database may be given as text: bounded, no NUL, valid Unicode."""
    if len(value) > MAX_STRING and c.max_length is None:
        raise ArgumentError(
            f"Invalid argument '{name}': a string of {len(value)} characters is longer than the limit of {MAX_STRING}."
        )
    if "\x00" in value:
        raise ArgumentError(f"Invalid argument '{name}': the string contains a NUL character.")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ArgumentError(f"Invalid argument '{name}': the string is not valid Unicode.") from None


def _date_within(name: str, type_: str, value: str, c: Parameter | Items) -> dt.date:
    """The date or datetime `value`, held to the parameter's minimum and maximum."""
    parsed = _parse_date(name, type_, value)
    if c.minimum is not None and _utc(parsed) < _utc(_parse_date(name, type_, str(c.minimum))):
        raise ArgumentError(f"Invalid argument '{name}': {parsed.isoformat()} is before the minimum of {c.minimum}.")
    if c.maximum is not None and _utc(parsed) > _utc(_parse_date(name, type_, str(c.maximum))):
        raise ArgumentError(f"Invalid argument '{name}': {parsed.isoformat()} is after the maximum of {c.maximum}.")
    return parsed


def _utc(value):
    # Naive datetimes compare as UTC, so naive and zoned bounds can meet.
    if isinstance(value, dt.datetime) and value.tzinfo is None:
        return value.replace(tzinfo=dt.UTC)
    return value


def _parse_date(name: str, type_: str, value: str):
    try:
        if type_ == "date":
            return dt.date.fromisoformat(value)
        if value[10:11] not in ("T", "t", " ") or not value[11:12].isdigit():  # a plain date is not a date-time
            raise ValueError(value)
        return dt.datetime.fromisoformat(value.replace("Z", "+00:00") if value.endswith("Z") else value)
    except ValueError:
        shape = "date (YYYY-MM-DD)" if type_ == "date" else "date-time (YYYY-MM-DDTHH:MM:SS, optional zone)"
        raise ArgumentError(f"Invalid argument '{name}': {as_json(value)} is not an ISO 8601 {shape}.") from None


_TYPES = {"string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,), "array": (list,)}


def _check(name: str, schema: dict[str, Any], value: Any) -> None:
    """Hold one value to its JSON Schema (the keywords `parameter_schema` writes); raise one sentence."""
    _check_type(name, schema["type"], value)
    size = len(value) if isinstance(value, (str, list)) else 0
    if "enum" in schema and value not in schema["enum"]:
        near = closest(value, schema["enum"]) if isinstance(value, str) else None
        hint = f" (did you mean {as_json(near)}?)" if near is not None else ""
        _fail(name, f"{as_json(value)} is not {one_of(schema['enum'], 30)}{hint}")
    _check_bounds(name, schema, value)
    _check_sizes(name, schema, value, size)
    if schema["type"] == "array" and isinstance(value, list):
        for i, item in enumerate(value):
            _check(f"{name}[{i}]", schema["items"], item)


def _matches(pattern: str, value: str) -> bool:
    """`matches`, leaving a string that is not valid Unicode (a lone surrogate, which RE2 cannot take)
    to the conversion, which refuses it in its own sentence."""
    try:
        return matches(pattern, value)
    except UnicodeEncodeError:
        return True


def _check_type(name: str, kind: str, value: Any) -> None:
    """JSON Schema's `type`: a bool is no number, and 3.0 is an integer."""
    if (isinstance(value, bool) and kind != "boolean") or (
        not isinstance(value, _TYPES[kind])
        and not (kind == "integer" and isinstance(value, float) and value.is_integer())
    ):
        article = "an" if kind[0] in "aeiou" else "a"
        got = as_json(value) if value is None or isinstance(value, bool) else f"{_type_name(value)} {as_json(value)}"
        raise ArgumentError(f"Invalid argument '{name}': expected {article} {kind}, got {got}.")


def _check_bounds(name: str, schema: dict[str, Any], value: Any) -> None:
    if "minimum" in schema and value < schema["minimum"]:
        _fail(name, f"{as_json(value)} is less than the minimum of {schema['minimum']}")
    if "maximum" in schema and value > schema["maximum"]:
        _fail(name, f"{as_json(value)} is greater than the maximum of {schema['maximum']}")


def _check_sizes(name: str, schema: dict[str, Any], value: Any, size: int) -> None:
    """Lengths of strings (and their pattern), numbers of items of arrays."""
    if "minLength" in schema and size < schema["minLength"]:
        _fail(name, f"{as_json(value)} is shorter than the minimum length of {schema['minLength']}")
    if "maxLength" in schema and size > schema["maxLength"]:
        _fail(name, f"a string of {size} characters is longer than the maximum length of {schema['maxLength']}")
    if "pattern" in schema and isinstance(value, str) and not _matches(schema["pattern"], value):
        _fail(name, f"{as_json(value)} does not match the pattern {schema['pattern']}")
    if "minItems" in schema and size < schema["minItems"]:
        _fail(name, f"{size} items are fewer than the minimum of {schema['minItems']}")
    if "maxItems" in schema and size > schema["maxItems"]:
        _fail(name, f"{size} items are more than the maximum of {schema['maxItems']}")


def _name(name: str) -> str:
    return f"'{clipped(name)}'"


def _fail(name: str, what: str) -> None:
    raise ArgumentError(f"Invalid argument '{name}': {what}.")


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
