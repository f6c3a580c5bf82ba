"""Prompt files: `NAME.prompt.yaml` beside the specs, each one MCP prompt that helps a person start an
analysis with the tools: typed arguments and a template for the message it puts in the conversation.

>>> p = PromptSpec.model_validate({"description": "d", "template": "Since {{ year }}",
...     "arguments": {"year": {"type": "integer", "description": "First year", "minimum": 1952}}})
>>> p.arguments["year"].parameter().minimum
1952
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, StrictBool, field_validator

from .models import NAME_RE, PARAM_NAME_RE, Constraints, Parameter, Strict

PROMPT_SUFFIXES = (".prompt.yaml", ".prompt.yml")
ArgumentType = Literal["string", "integer", "number", "boolean", "date", "datetime"]


def prompt_stem(filename: str) -> str:
    """The prompt's default name: the file name without `.prompt.yaml`.

    >>> prompt_stem("compare_countries.prompt.yaml")
    'compare_countries'
    """
    for suffix in PROMPT_SUFFIXES:
        if filename.endswith(suffix):
            return filename[: -len(suffix)]
    return filename


class PromptArgument(Constraints):
    """One argument. MCP sends prompt arguments as text; mcpgen reads them as `type` and checks them."""

    type: ArgumentType = Field(
        default="string", description="string (default), integer, number, boolean, date or datetime."
    )
    description: str = Field(min_length=1, description="What the person (and the client's form) reads about it.")
    default: Any = Field(default=None, description="A default makes the argument optional.")
    required: StrictBool | None = Field(default=None, description="Default: true unless a default is given.")
    examples: list[Any] | None = Field(default=None, description="Example values.")
    complete: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z][A-Za-z0-9_.-]*\.[A-Za-z][A-Za-z0-9_]*$",
        description="TOOL.PARAMETER: complete this argument as that tool's parameter is completed.",
    )

    def parameter(self) -> Parameter:
        """The same argument as a spec parameter, whose checks (and their sentences) it shares."""
        own = self.model_dump(exclude_unset=True, exclude={"complete"})
        return Parameter.model_validate(own | {"type": self.type})


class PromptSpec(Strict):
    name: str | None = Field(default=None, pattern=NAME_RE, description="Prompt name; default: the file's stem.")
    title: str | None = Field(default=None, description="Human title of the prompt.")
    description: str = Field(min_length=1, description="What the prompt is for, as clients list it.")
    arguments: dict[str, PromptArgument] = Field(
        default={}, description="Typed arguments, in the order a client asks for them."
    )
    tools: list[str] = Field(
        default=[], description="The tools the prompt leads to; each must be a tool of the project."
    )
    template: str = Field(min_length=1, description="Jinja2 text of the message, with the arguments by name.")

    @field_validator("arguments")
    @classmethod
    def _argument_names(cls, value):
        for name in value:
            if not isinstance(name, str) or not re.match(PARAM_NAME_RE, name):
                raise ValueError(f"argument name {name!r} must be a letter followed by letters, digits or _")
        return value
