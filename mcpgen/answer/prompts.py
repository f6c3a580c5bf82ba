"""A prompt as clients get it: `prompts/list` entries and `prompts/get` messages, its text arguments
read as their declared types and checked like tool arguments (one sentence naming the argument).

    prompt = Prompt.from_loaded(loaded)      # a mcpgen.load.prompts.LoadedPrompt
    prompt.get({"year": "1990"})             # GetPromptResult, or ArgumentError
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ArgumentError, RenderError
from ..spec.params import Arguments
from ..spec.prompts import PromptSpec
from ..templates.render import Template
from ..text import as_json, inert, one_of
from .completions import builtin, read_text

if TYPE_CHECKING:  # the protocol types load where a prompt is listed or got: `mcpgen call` never pays for them
    from mcp_types import GetPromptResult
    from mcp_types import Prompt as MCPPrompt


@dataclass
class Prompt:
    name: str
    spec: PromptSpec
    template: Template
    arguments: Arguments
    source: str | None = None  # the file that defined it

    @classmethod
    def from_loaded(cls, loaded) -> Prompt:
        return cls(loaded.name, loaded.spec, loaded.template, loaded.arguments, str(loaded.path))

    @property
    def tools(self) -> list[str]:
        """The tools it leads to and those its arguments complete from: a caller must see them all."""
        return list(dict.fromkeys([*self.spec.tools, *(tool for tool, _ in self.completes_from.values())]))

    def to_mcp(self) -> MCPPrompt:
        from mcp_types import Prompt as MCPPrompt
        from mcp_types import PromptArgument as MCPPromptArgument

        return MCPPrompt(
            name=self.name,
            title=self.spec.title,
            description=self.spec.description,
            arguments=[
                MCPPromptArgument(
                    name=name, description=_described(arg), required=self.arguments.parameters[name].is_required
                )
                for name, arg in self.spec.arguments.items()
            ]
            or None,
        )

    def get(self, arguments: dict[str, Any] | None) -> GetPromptResult:
        """The prompt's message for these arguments; ArgumentError with one sentence when they are wrong."""
        if arguments is not None and not isinstance(arguments, dict):
            raise ArgumentError("Prompt arguments must be an object of names and values.")
        typed = {name: self._typed(name, value) for name, value in (arguments or {}).items()}
        try:
            values = self.arguments.validate(typed)
        except ArgumentError as exc:
            raise ArgumentError(str(exc).replace("this tool takes", "this prompt takes")) from None
        try:
            text = self.template.render(values)
        except RenderError as exc:
            raise ArgumentError(f"Prompt '{self.name}' could not be written for these arguments: {exc}.") from None
        from mcp_types import GetPromptResult, PromptMessage, TextContent

        message = PromptMessage(role="user", content=TextContent(type="text", text=text))
        return GetPromptResult(description=self.spec.description, messages=[message])

    def _typed(self, name: str, value: Any) -> Any:
        parameter = self.arguments.parameters.get(name)
        return value if parameter is None else read_text(parameter, value)

    @property
    def completes_from(self) -> dict[str, tuple[str, str]]:
        """argument -> (tool, parameter) whose completions it takes (`complete: TOOL.PARAMETER`)."""
        out = {}
        for name, argument in self.spec.arguments.items():
            if argument.complete:
                tool, _, parameter = argument.complete.rpartition(".")
                out[name] = (tool, parameter)
        return out

    def complete(self, argument: str, prefix: str, context: dict[str, str], tools) -> tuple[list[str], bool]:
        """(values, more?) for `argument` typed so far as `prefix`; `tools` looks a tool up by name."""
        if argument not in self.spec.arguments:
            known = ", ".join(self.spec.arguments) or "no arguments"
            raise ArgumentError(inert(f"Prompt '{self.name}' has no argument '{argument[:60]}' (it takes {known})."))
        linked = self.completes_from.get(argument)
        if linked is None:
            return builtin(self.arguments.parameters[argument], prefix), False
        tool = tools(linked[0])
        completer = tool.completers.get(linked[1])
        if completer is None:
            return builtin(tool.parameters[linked[1]], prefix), False
        return completer(prefix, context)


def _described(argument) -> str:
    """The argument's description with what it must be, for clients that show only this text."""
    hints = []
    if argument.type != "string":
        hints.append(argument.type)
    if argument.enum:
        hints.append(one_of(argument.enum))
    if argument.minimum is not None:
        hints.append(f"at least {argument.minimum}")
    if argument.maximum is not None:
        hints.append(f"at most {argument.maximum}")
    if argument.default is not None:
        hints.append(f"default {as_json(argument.default)}")
    return f"{argument.description} ({'; '.join(hints)})" if hints else argument.description


__all__ = ["Prompt"]
