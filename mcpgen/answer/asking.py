"""Asking the person: the questions a call needs answered before it runs, as elicitation forms.

A call asks when a required argument is missing (one form for all of them, `arguments`), when its
spec says it needs confirmation (`confirm`), or when a hand-written tool calls `ask`. How the
question reaches the person (an `input_required` result on 2026-07-28, `elicitation/create` on
2025-11-25) is the server's business (mcpgen.serve.asking); a client that cannot be asked is
answered as if nobody asked: a missing argument is refused as before.

>>> form = missing_arguments({"properties": {"year": {"type": "integer", "minimum": 1950}},
...                           "required": ["year"]}, {}, "life_expectancy")
>>> form.key, form.schema()["required"], form.schema()["properties"]["year"]["type"]
('arguments', ['year'], 'integer')
>>> missing_arguments({"properties": {"year": {"type": "integer"}}, "required": ["year"]}, {"year": 1}, "t") is None
True
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from ..errors import ArgumentError

ARGUMENTS = "arguments"  # the key of the form asking for missing required arguments
CONFIRM = "confirm"  # the key of the form confirming a call, and its one boolean field
NOT_CONFIRMED = "Not run: the person did not confirm it."  # a confirmation answered anything but yes
# What an elicitation form may hold (the protocol's primitive schemas): anything else is not asked for.
PRIMITIVES = frozenset({"string", "number", "integer", "boolean"})
KEPT = ("type", "title", "description", "enum", "format", "minimum", "maximum", "minLength", "maxLength", "default")
FORMATS = frozenset({"date", "date-time", "email", "uri"})

# The person's answers to this call's questions so far (key -> the accepted form's content), set by the
# server around a call it can ask for; None when nobody can be asked (the CLI, a client without elicitation).
ANSWERS: ContextVar[dict[str, dict[str, Any]] | None] = ContextVar("mcpgen_answers", default=None)


@dataclass(frozen=True)
class Question:
    """One form: `key` names it among the call's questions; `properties` are its fields (JSON Schema)."""

    key: str
    message: str
    properties: dict[str, dict[str, Any]]
    required: list[str] = field(default_factory=list)

    def schema(self) -> dict[str, Any]:
        """The form's `requestedSchema`."""
        out: dict[str, Any] = {"type": "object", "properties": self.properties}
        if self.required:
            out["required"] = self.required
        return out


class NeedsInput(Exception):
    """Raised by a call that cannot go on before the person answers `questions`."""

    def __init__(self, questions: list[Question]):
        super().__init__("; ".join(q.message for q in questions))
        self.questions = questions

    def sentence(self, tool: str) -> str:
        """What a client that cannot ask is told."""
        return f"Tool '{tool}' needs an answer from the person ({self}), and this client cannot ask for it."


def ask(key: str, message: str, properties: dict[str, dict[str, Any]], required: list[str] | None = None) -> dict:
    """For a hand-written tool: the person's answer to the form `key` (its fields' values), asking first.

    Raises NeedsInput until the answer has come; the server asks and calls the tool again with it.

    >>> token = ANSWERS.set({"user_name": {"name": "Ada"}})
    >>> ask("user_name", "What is your name?", {"name": {"type": "string"}})["name"]
    'Ada'
    >>> ANSWERS.reset(token)
    """
    fields = list(properties) if required is None else required
    answered = (ANSWERS.get() or {}).get(key)
    if answered is None:
        raise NeedsInput([Question(key, message, properties, fields)])
    left_out = [name for name in fields if name not in answered]
    if left_out:  # the form came back without them: asking again would ask forever
        raise ArgumentError(f"The person's answer to '{key}' left out {', '.join(left_out)}.")
    return answered


def elicitable(prop: dict[str, Any]) -> dict[str, Any] | None:
    """A parameter's JSON Schema as a form field, or None when a form cannot hold it (an array, an object).

    >>> elicitable({"type": "string", "format": "date", "pattern": "^x"})
    {'type': 'string', 'format': 'date'}
    >>> elicitable({"type": "array", "items": {"type": "string"}}) is None
    True
    """
    if prop.get("type") not in PRIMITIVES:
        return None
    out = {k: prop[k] for k in KEPT if k in prop}
    if "format" in out and out["format"] not in FORMATS:
        del out["format"]
    return out


def missing_arguments(schema: dict[str, Any], arguments: dict[str, Any], name: str) -> Question | None:
    """The form asking for the required arguments not given, or None when none are missing or a form
    cannot hold one of them (the call is then refused as always)."""
    properties = schema.get("properties") or {}
    missing = [p for p in schema.get("required") or [] if p not in arguments]
    fields = {p: elicitable(properties.get(p) or {}) for p in missing}
    if not fields or any(f is None for f in fields.values()):
        return None
    message = f"{name} needs {' and '.join(missing) if len(missing) < 3 else ', '.join(missing)}."
    return Question(ARGUMENTS, message, {p: f for p, f in fields.items() if f is not None}, missing)


def confirmation(message: str) -> Question:
    """The form confirming a call: one required boolean."""
    field = {"type": "boolean", "title": "Run it", "description": "Run the query now?"}
    return Question(CONFIRM, message, {CONFIRM: field}, [CONFIRM])


def merged(arguments: dict[str, Any], schema: dict[str, Any], answers: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The call's arguments with the person's answers to the `arguments` form filled in: only the tool's
    own parameters, and never in place of a value given as an argument.

    >>> merged({"a": 1}, {"properties": {"a": {}, "b": {}}}, {"arguments": {"a": 2, "b": 3, "c": 4}})
    {'b': 3, 'a': 1}
    """
    answer = answers.get(ARGUMENTS)
    if not answer:
        return arguments
    properties = schema.get("properties") or {}
    return {**{k: v for k, v in answer.items() if k in properties and k not in arguments}, **arguments}


def questions_for(
    schema: dict[str, Any], name: str, arguments: dict[str, Any], answers: dict[str, dict[str, Any]], confirm=None
) -> tuple[dict[str, Any], list[Question] | str]:
    """(the arguments with the answers filled in, what is still to ask) for a call of tool or prompt
    `name`: the missing required arguments first, then the confirmation its spec asks for (`confirm`:
    its message). A confirmation answered "no" is the sentence the call is refused with.

    >>> schema = {"properties": {"year": {"type": "integer"}}, "required": ["year"]}
    >>> questions_for(schema, "t", {}, {"arguments": {"year": 2000}}, "Scan it all?")[1][0].key
    'confirm'
    >>> questions_for(schema, "t", {"year": 1}, {"confirm": {"confirm": False}}, "Scan it all?")[1]
    'Not run: the person did not confirm it.'
    """
    filled = merged(arguments, schema, answers)
    missing = missing_arguments(schema, filled, name)
    if missing is not None:  # refused as before once the form came back without them, rather than asked forever
        return filled, f"Missing required argument '{missing.required[0]}'." if ARGUMENTS in answers else [missing]
    if confirm is None:
        return filled, []
    answer = answers.get(CONFIRM)
    if answer is None:
        return filled, [confirmation(confirm)]
    return filled, [] if answer.get(CONFIRM) is True else NOT_CONFIRMED


def prompt_schema(prompt) -> dict[str, Any]:
    """A prompt's arguments (an MCP Prompt) as the JSON Schema its form is built from: text fields."""
    arguments = prompt.arguments or []
    return {
        "properties": {a.name: {"type": "string", "description": a.description or a.name} for a in arguments},
        "required": [a.name for a in arguments if a.required],
    }
