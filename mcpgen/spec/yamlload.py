"""Safe YAML loading that remembers where every key came from.

YAML 1.2 core scalars only: `yes`, `on`, `1:20`, `012` and dates stay strings, so
nothing changes meaning behind the analyst's back. Duplicate keys, aliases and
tags are errors with a line and column.

>>> data = load_yaml("n: 3\\non: yes\\n", "x.yaml")
>>> data, data.where("on")
({'n': 3, 'on': 'yes'}, (2, 1))
"""

from __future__ import annotations

import re

import yaml

from ..errors import Problem, SpecError
from ..limits import MAX_FILE_BYTES

try:
    from yaml import CSafeLoader as _Base
except ImportError:  # PyYAML built without libyaml
    from yaml import SafeLoader as _Base  # type: ignore[assignment]

YAML11_WORDS = {"yes", "no", "on", "off"}


class Located(dict):
    """A mapping that knows the (line, col) of itself and of each key, 1-based."""

    line: int | None = None
    col: int | None = None
    lines: dict

    def where(self, key=None) -> tuple[int | None, int | None]:
        if key is not None and key in self.lines:
            return self.lines[key]
        return self.line, self.col

    def at(self, key, line: int = 1, col: int = 1) -> tuple[int | None, int | None]:
        """The file's (line, col) of (line, col) inside the text of `key`'s string value: a block
        scalar's lines keep their indentation, a quoted one starts after the quote.

        >>> load_yaml("sql: |\\n  SELECT 1\\n  FROM t\\n", "x.yaml").at("sql", 2, 6)
        (3, 8)
        """
        if ("value", key) not in self.lines:
            return self.where(key)
        start, first = self.lines[("value", key)]
        if ("block", key) in self.lines or line == 1:
            return start + line - 1, first + col - 1
        return start + line - 1, col


class LocatedList(list):
    line: int | None = None
    col: int | None = None
    lines: list


class _Loader(_Base):
    yaml_implicit_resolvers: dict = {}

    def __init__(self, stream):
        super().__init__(stream)
        self.warnings: list[tuple[int, int, str]] = []
        self.source_lines: list[str] = stream.splitlines() if isinstance(stream, str) else []


def _construct_child(loader, node):
    # A node met twice is an alias (*name): refused, so no alias bomb can expand.
    if node in loader.constructed_objects or node in loader.recursive_objects:
        raise yaml.MarkedYAMLError(None, None, "YAML aliases (*name) are not allowed in specs", node.start_mark)
    return loader.construct_object(node, deep=True)


# YAML 1.2 core schema: true/false, null, decimal/octal/hex ints, floats.
for tag, regexp, first in [
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", list("tTfF")),
    ("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", list("-+0123456789")),
    (
        "tag:yaml.org,2002:float",
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        list("-+0123456789."),
    ),
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
]:
    _Loader.add_implicit_resolver(tag, re.compile(regexp), first)


def _construct_int(loader, node):
    text = loader.construct_scalar(node)
    if text.startswith("0o"):
        return int(text[2:], 8)
    return int(text, 0) if text.startswith("0x") else int(text)


def _construct_mapping(loader, node):
    out = Located()
    out.line, out.col = node.start_mark.line + 1, node.start_mark.column + 1
    out.lines = {}
    for key_node, value_node in node.value:
        key = _construct_child(loader, key_node)
        if not isinstance(key, (str, int, float, bool)) and key is not None:
            raise yaml.MarkedYAMLError(None, None, "mapping keys must be plain scalars", key_node.start_mark)
        where = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
        if key in out:
            first = out.lines[key][0]
            raise yaml.MarkedYAMLError(
                None, None, f"duplicate key {key!r} (first defined on line {first})", key_node.start_mark
            )
        _warn_yaml11(loader, key_node)
        _warn_yaml11(loader, value_node)
        out[key] = _construct_child(loader, value_node)
        out.lines[key] = where
        if value_node.tag == "tag:yaml.org,2002:str" and value_node.style in ("|", ">"):
            # A block scalar's text starts on the line after the indicator, at the block's indentation.
            out.lines[("value", key)] = (value_node.start_mark.line + 2, _indent(loader, value_node) + 1)
            out.lines[("block", key)] = True
        else:
            quoted = isinstance(value_node, yaml.ScalarNode) and value_node.style in ("'", '"')
            out.lines[("value", key)] = (value_node.start_mark.line + 1, value_node.start_mark.column + 1 + quoted)
    return out


def _indent(loader, node) -> int:
    """The indentation of a block scalar's text: that of its first line that is not blank."""
    for text in loader.source_lines[node.start_mark.line + 1 : node.end_mark.line + 1]:
        if text.strip():
            return len(text) - len(text.lstrip(" "))
    return 0


def _construct_sequence(loader, node):
    out = LocatedList(_construct_child(loader, child) for child in node.value)
    out.line, out.col = node.start_mark.line + 1, node.start_mark.column + 1
    out.lines = [(c.start_mark.line + 1, c.start_mark.column + 1) for c in node.value]
    for child in node.value:
        _warn_yaml11(loader, child)
    return out


def _warn_yaml11(loader, node):
    if isinstance(node, yaml.ScalarNode) and not node.style and node.value.lower() in YAML11_WORDS:
        loader.warnings.append(
            (
                node.start_mark.line + 1,
                node.start_mark.column + 1,
                f"'{node.value}' is read as the string {node.value!r} (YAML 1.2), "
                "not a boolean; write true/false, or quote it",
            )
        )


def _reject_tag(loader, suffix, node):
    raise yaml.MarkedYAMLError(None, None, f"YAML tag '{node.tag}' is not allowed", node.start_mark)


_Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)
_Loader.add_constructor("tag:yaml.org,2002:map", _construct_mapping)
_Loader.add_constructor("tag:yaml.org,2002:seq", _construct_sequence)
for _tag in ("timestamp", "binary", "omap", "pairs", "set"):
    _Loader.add_constructor(f"tag:yaml.org,2002:{_tag}", lambda loader, node: _reject_tag(loader, None, node))
_Loader.add_multi_constructor("", _reject_tag)


def _first_alias(text: str):
    try:
        return next((t.start_mark for t in yaml.scan(text) if isinstance(t, yaml.AliasToken)), None)
    except yaml.YAMLError:
        return None


def _explain(exc: yaml.MarkedYAMLError, lines: list[str]) -> tuple[int, int, str] | None:
    """(line, col, what to do) for the parser errors people make most, instead of the parser's words
    ("while parsing a block mapping, did not find expected key")."""
    problem = exc.problem or ""
    at, opened = exc.problem_mark, exc.context_mark
    if at is None:
        return None
    if problem == "did not find expected key":
        return _indentation(lines, at.line)
    if problem.startswith("mapping values are not allowed"):
        above = _previous(lines, at.line)
        if (
            above is not None
            and _line_indent(lines, at.line) != _line_indent(lines, above)
            and not lines[above].rstrip().endswith(":")
        ):
            return _indentation(lines, at.line)
        return (
            at.line + 1,
            at.column + 1,
            "a value that contains ': ' must be quoted, e.g. description: \"Note: ...\", or written as a "
            "block (description: | and the text on the lines below)",
        )
    unclosed = _unclosed(exc, lines) if opened is not None else None
    if unclosed is not None:
        return unclosed
    if problem == "found character that cannot start any token":
        char = lines[at.line][at.column] if at.line < len(lines) and at.column < len(lines[at.line]) else "?"
        return at.line + 1, at.column + 1, f"a plain value cannot start with {char!r}: put the value in quotes"
    return None


def _unclosed(exc: yaml.MarkedYAMLError, lines: list[str]) -> tuple[int, int, str] | None:
    """A key without its colon, a quote or a flow collection left open: pointed at where it opened."""
    problem, context, at, opened = exc.problem or "", exc.context or "", exc.problem_mark, exc.context_mark
    assert at is not None and opened is not None
    if problem == "could not find expected ':'":
        return (
            opened.line + 1,
            opened.column + 1,
            f"line {opened.line + 1} is not a 'key: value' pair: add ': ' after the key, or indent the line "
            "under the key whose value it continues",
        )
    if context == "while scanning a quoted scalar":
        return (
            opened.line + 1,
            opened.column + 1,
            f"the quote opened on line {opened.line + 1} is never closed: close it on the same line, or write "
            "a long text as a block (key: | and the text on the lines below)",
        )
    if context.startswith("while parsing a flow"):
        close = "}" if "mapping" in context else "]"
        return (
            at.line + 1,
            at.column + 1,
            f"the {lines[opened.line][opened.column]} opened on line {opened.line + 1} is not closed: separate its "
            f"items with commas and end it with {close} (a text containing , : {{ }} [ ] must be quoted)",
        )
    return None


def _line_indent(lines: list[str], n: int) -> int:
    return len(lines[n]) - len(lines[n].lstrip(" ")) if n < len(lines) else 0


def _previous(lines: list[str], n: int) -> int | None:
    """The nearest line above line `n` that holds something."""
    return next((i for i in range(n - 1, -1, -1) if lines[i].strip() and not lines[i].lstrip().startswith("#")), None)


def _indentation(lines: list[str], n: int) -> tuple[int, int, str]:
    above = _previous(lines, n)
    around = _line_indent(lines, above) if above is not None else 0
    has = _line_indent(lines, n)
    spaces = "1 space" if has == 1 else f"{has} spaces"
    return n + 1, has + 1, f"check the indentation of line {n + 1} (it has {spaces}; the keys around it have {around})"


def load_yaml(text: str, path: str, warnings: list[Problem] | None = None):
    """Parse one YAML document; raise SpecError with path:line:col on any problem."""
    if len(text) > MAX_FILE_BYTES:
        raise SpecError([Problem(path, None, None, f"file is larger than {MAX_FILE_BYTES // 1024} KiB")])
    loader = _Loader(text)
    try:
        data = loader.get_single_data()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        message = exc.problem or exc.context or "invalid YAML"
        line_text = (text.splitlines()[mark.line : mark.line + 1] or [""])[0] if mark else ""
        if "\t" in line_text[: mark.column + 1 if mark else 0]:
            message = "tab characters are not allowed for indentation in YAML; use spaces"
        elif exc.context and exc.problem and "tag" not in exc.problem:
            message = f"{exc.context}, {exc.problem}"
        if message.startswith("YAML aliases"):
            mark = _first_alias(text) or mark  # the C loader only knows where the anchor was
        line, col = (mark.line + 1, mark.column + 1) if mark else (None, None)
        explained = _explain(exc, text.splitlines()) if not message.startswith("tab characters") else None
        if explained is not None:
            line, col, message = explained
        raise SpecError([Problem(path, line, col, message)]) from None
    except yaml.YAMLError as exc:
        raise SpecError([Problem(path, None, None, f"invalid YAML: {exc}")]) from None
    finally:
        loader.dispose()
    if warnings is not None:
        warnings.extend(Problem(path, line, col, msg, "warning") for line, col, msg in loader.warnings)
    return data
