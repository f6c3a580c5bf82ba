"""Reading prompt files (`NAME.prompt.yaml` beside the specs): the model's checks, then the template's
(syntax, hazards, names that are not arguments) and the arguments' defaults, each problem at
file:line:col. Whether `tools:` names tools of the project is checked where the tools are known:
here against the spec files when the folder has no Python tools, else when the project is opened.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from jinja2 import TemplateSyntaxError, nodes
from pydantic import ValidationError

from ..checks import filter_problems, template_hazards
from ..errors import ArgumentError, Problem
from ..spec.params import Arguments
from ..spec.prompts import PromptSpec, prompt_stem
from ..spec.yamlload import Located
from ..templates.render import Template
from ..text import column_of, did_you_mean
from .discovery import prompt_paths
from .messages import read_mapping, validation_problems

JINJA_GLOBALS = {"range", "loop", "lipsum", "cycler", "joiner", "namespace", "dict"}


@dataclass
class LoadedPrompt:
    path: Path
    spec: PromptSpec
    name: str
    data: Located
    template: Template
    arguments: Arguments
    problems: list[Problem] = field(default_factory=list)

    def where(self, key: str) -> tuple[int | None, int | None]:
        return self.data.where(key)


def load_prompts(specs_dir: Path, tools: set[str] | None, problems: list[Problem]) -> list[LoadedPrompt]:
    """The folder's prompt files that pass their checks, names unique; `tools:` checked against `tools`
    (None: not yet, the project's Python files may add tools)."""
    prompts = [p for p in (load_prompt(path, problems) for path in prompt_paths(specs_dir)) if p is not None]
    prompts = check_unique_prompts(prompts, problems)
    return prompts if tools is None else check_prompt_tools(prompts, tools, problems)


def load_prompt(path: Path, problems: list[Problem]) -> LoadedPrompt | None:
    """Read and check one prompt file; what is wrong is added to `problems` (None: not usable)."""
    data = read_mapping(path, problems, "a prompt must be a YAML mapping (description, arguments, template)")
    if data is None:
        return None
    shown = str(path)
    try:
        spec = PromptSpec.model_validate(data)
    except ValidationError as exc:
        problems.extend(validation_problems(exc, data, path, PromptSpec))
        return None
    found: list[Problem] = []
    arguments = _arguments(spec, data, shown, found)
    template = _template(spec, data, shown, found)
    problems.extend(found)
    if arguments is None or template is None or any(p.severity == "error" for p in found):
        return None
    return LoadedPrompt(path, spec, spec.name or prompt_stem(path.name), data, template, arguments)


def _arguments(spec: PromptSpec, data: Located, shown: str, problems: list[Problem]) -> Arguments | None:
    """The arguments' checker; each default must pass its own argument's checks."""
    parameters = {}
    for name, argument in spec.arguments.items():
        parameter = argument.parameter()
        parameters[name] = parameter
        if parameter.default is not None:
            try:
                Arguments({name: parameter}).validate({name: parameter.default})
            except ArgumentError as exc:
                line, col = data["arguments"][name].where("default")
                problems.append(Problem(shown, line, col, f"arguments.{name}.default: {exc}"))
    return Arguments(parameters)


def _template(spec: PromptSpec, data: Located, shown: str, problems: list[Problem]) -> Template | None:
    line, col = data.where("template")

    def at(offset_line: int, message: str, word: str | None = None) -> Problem:
        at_line, at_col = data.at("template", offset_line, column_of(spec.template, offset_line, word) if word else 1)
        return Problem(shown, at_line or line, at_col if at_line else col, message)

    try:
        # A failure to render names the file from its folder, as a caller may be told it (specs/x.prompt.yaml).
        named = f"{Path(shown).parent.name}/{Path(shown).name}"
        template = Template(spec.template, origin=(named, data.at("template")[0], "template"))
    except TemplateSyntaxError as exc:
        problems.append(at(exc.lineno or 1, f"template: syntax error: {exc.message}"))
        return None
    hazards = template_hazards(template.ast)
    problems += [at(hazard_line, f"template: the template {what}") for hazard_line, what in hazards]
    problems += [
        at(n, f"template: the template {what}", name) for n, name, what in filter_problems(template.ast, template.env)
    ]
    unknown = sorted(template.names() - set(spec.arguments) - JINJA_GLOBALS)
    if unknown:
        first = min((n.lineno for n in template.ast.find_all(nodes.Name) if n.name in unknown), default=1)
        known = ", ".join(spec.arguments) or "none"
        hint = did_you_mean(unknown[0], set(spec.arguments)) if len(unknown) == 1 else ""
        verb = "is not an argument" if len(unknown) == 1 else "are not arguments"
        problems.append(at(first, f"template: {', '.join(unknown)} {verb} (arguments: {known}){hint}", unknown[0]))
    unused = [name for name in spec.arguments if name not in template.names()]
    for name in unused:
        at_line, at_col = data["arguments"].where(name)
        problems.append(Problem(shown, at_line, at_col, f"argument '{name}' is not used in the template", "warning"))
    return None if hazards or unknown else template


def check_prompt_tools(prompts: list[LoadedPrompt], tools: set[str], problems: list[Problem]) -> list[LoadedPrompt]:
    """Each prompt's `tools:` must be tools of the project; the prompts that pass."""
    kept = []
    for prompt in prompts:
        unknown = [t for t in prompt.spec.tools if t not in tools]
        for name in unknown:
            hint = did_you_mean(name, tools)
            index = prompt.spec.tools.index(name)
            node = prompt.data["tools"]
            line, col = (
                node.lines[index] if hasattr(node, "lines") and index < len(node.lines) else prompt.where("tools")
            )
            problems.append(
                Problem(str(prompt.path), line, col, f"tools: '{name}' is not a tool of this project{hint}")
            )
        if not unknown:
            kept.append(prompt)
    return kept


def check_unique_prompts(prompts: list[LoadedPrompt], problems: list[Problem]) -> list[LoadedPrompt]:
    seen: dict[str, LoadedPrompt] = {}
    kept = []
    for prompt in prompts:
        first = seen.get(prompt.name)
        if first is not None:
            message = f"prompt name '{prompt.name}' is already used by {first.path.name}"
            line, col = prompt.where("name")
            problems.append(Problem(str(prompt.path), line, col, message))
            continue
        seen[prompt.name] = prompt
        kept.append(prompt)
    return kept
