"""YAML text -> plain Python values, plus the line each key came from.

PyYAML's ``safe_load`` forgets where things were and silently lets a later
duplicate key win. Configuration errors must name the file line, and a
duplicated key is almost always a mistake, so this module composes the node
tree itself (``yaml.compose`` with the SafeLoader) and builds:

* ``data``: dicts, lists, str, int, float, bool and None only (timestamps and
  other exotic scalars are kept as their source text);
* ``lines``: key path -> 1-based line number, where a key path is a tuple of
  mapping keys and list indexes, e.g. ``("acceptors", 0, "port")``. A mapping
  entry maps to the line of its key, a list item to the line it starts on.

Merge keys (``<<: *base``) work as in PyYAML: explicit keys win over merged ones.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

KeyPath = tuple[Any, ...]

_PLAIN_SCALAR_TAGS = {
    "tag:yaml.org,2002:null",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:str",
}
_MERGE_TAG = "tag:yaml.org,2002:merge"
# Bounds alias expansion ("billion laughs"): no real node config comes close.
_MAX_VALUES = 200_000
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


@dataclass(frozen=True)
class YamlProblem:
    """One problem in the YAML text: where it is and what is wrong."""

    line: int
    path: KeyPath
    message: str


class YamlSourceError(ValueError):
    """The text is not usable YAML; ``problems`` lists every problem found."""

    def __init__(self, problems: list[YamlProblem]) -> None:
        self.problems = tuple(problems)
        super().__init__("; ".join(f"line {p.line}: {p.message}" for p in self.problems))


@dataclass(frozen=True)
class YamlDocument:
    data: Any
    lines: dict[KeyPath, int] = field(default_factory=dict)

    def line_for(self, path: KeyPath) -> int:
        """Line of ``path``, or of its longest prefix that is in the text."""
        for end in range(len(path), -1, -1):
            line = self.lines.get(tuple(path[:end]))
            if line is not None:
                return line
        return 1


def load_yaml(text: str) -> YamlDocument:
    """Parse one YAML document. An empty document gives ``data=None``.

    Raises YamlSourceError for syntax errors (with the line PyYAML reports) and
    for duplicate mapping keys (all of them, each naming both lines).
    """
    loader = yaml.SafeLoader(text)
    try:
        try:
            root = loader.get_single_node()
        except yaml.MarkedYAMLError as exc:
            raise YamlSourceError([_syntax_problem(exc)]) from None
        if root is None:
            return YamlDocument(data=None, lines={(): 1})
        builder = _Builder(loader)
        lines: dict[KeyPath, int] = {(): root.start_mark.line + 1}
        data = builder.build(root, (), lines)
        if builder.problems:
            raise YamlSourceError(sorted(builder.problems, key=lambda p: p.line))
        return YamlDocument(data=data, lines=lines)
    finally:
        loader.dispose()


def format_key_path(path: KeyPath) -> str:
    """``("address-settings", "orders.#", "max-delivery-attempts")`` ->
    ``address-settings."orders.#".max-delivery-attempts``."""
    text = ""
    for part in path:
        if isinstance(part, int) and not isinstance(part, bool):
            text += f"[{part}]"
            continue
        word = str(part)
        if not _BARE_KEY.fullmatch(word):
            word = '"' + word.replace("\\", "\\\\").replace('"', '\\"') + '"'
        text += f".{word}" if text else word
    return text


def _syntax_problem(exc: yaml.MarkedYAMLError) -> YamlProblem:
    mark = exc.problem_mark or exc.context_mark
    line = mark.line + 1 if mark is not None else 1
    parts = [p for p in (exc.context, exc.problem) if p]
    message = "invalid YAML: " + (", ".join(parts) if parts else str(exc))
    if exc.context_mark is not None and exc.problem_mark is not None and exc.context_mark.line != exc.problem_mark.line:
        message += f" (started on line {exc.context_mark.line + 1})"
    return YamlProblem(line=line, path=(), message=message)


class _Builder:
    def __init__(self, loader: yaml.SafeLoader) -> None:
        self._loader = loader
        self._active: set[int] = set()
        self._count = 0
        self.problems: list[YamlProblem] = []

    def build(self, node: yaml.Node, path: KeyPath, lines: dict[KeyPath, int]) -> Any:
        self._count += 1
        if self._count > _MAX_VALUES:
            raise YamlSourceError(
                [
                    YamlProblem(
                        node.start_mark.line + 1,
                        path,
                        f"document too large (more than {_MAX_VALUES} values; alias expansion?)",
                    )
                ]
            )
        if isinstance(node, yaml.ScalarNode):
            return self._scalar(node, path)
        if id(node) in self._active:
            self.problems.append(YamlProblem(node.start_mark.line + 1, path, "recursive alias"))
            return None
        self._active.add(id(node))
        try:
            if isinstance(node, yaml.SequenceNode):
                result = []
                for index, item in enumerate(node.value):
                    lines[path + (index,)] = item.start_mark.line + 1
                    result.append(self.build(item, path + (index,), lines))
                return result
            return self._mapping(node, path, lines)
        finally:
            self._active.discard(id(node))

    def _scalar(self, node: yaml.ScalarNode, path: KeyPath) -> Any:
        if node.tag not in _PLAIN_SCALAR_TAGS:
            return node.value
        try:
            return self._loader.construct_object(node, deep=True)
        except yaml.MarkedYAMLError as exc:
            self.problems.append(YamlProblem(node.start_mark.line + 1, path, f"invalid value: {exc.problem}"))
            return None

    def _mapping(self, node: yaml.MappingNode, path: KeyPath, lines: dict[KeyPath, int]) -> dict[Any, Any]:
        explicit: dict[Any, Any] = {}
        explicit_lines: dict[Any, int] = {}
        merge_sources: list[yaml.Node] = []
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                if isinstance(value_node, yaml.SequenceNode):
                    merge_sources.extend(value_node.value)
                else:
                    merge_sources.append(value_node)
                continue
            key = self._key(key_node, path)
            if key is _BAD_KEY:
                continue
            line = key_node.start_mark.line + 1
            if key in explicit_lines:
                self.problems.append(
                    YamlProblem(line, path + (key,), f"duplicate key, first defined on line {explicit_lines[key]}")
                )
                continue
            explicit_lines[key] = line
            lines[path + (key,)] = line
            explicit[key] = self.build(value_node, path + (key,), lines)

        if not merge_sources:
            return explicit
        merged: dict[Any, Any] = {}
        merged_lines: dict[KeyPath, int] = {}
        # The first merge source wins over later ones (YAML merge key spec).
        for source in reversed(merge_sources):
            if not isinstance(source, yaml.MappingNode):
                problem = "'<<' needs a mapping or a list of mappings"
                self.problems.append(YamlProblem(source.start_mark.line + 1, path, problem))
                continue
            merged.update(self.build(source, path, merged_lines))
        depth = len(path)
        for sub_path, line in merged_lines.items():
            if len(sub_path) > depth and sub_path[depth] not in explicit:
                lines[sub_path] = line
        return {**{k: v for k, v in merged.items() if k not in explicit}, **explicit}

    def _key(self, key_node: yaml.Node, path: KeyPath) -> Any:
        if not isinstance(key_node, yaml.ScalarNode):
            self.problems.append(YamlProblem(key_node.start_mark.line + 1, path, "a mapping key must be a plain value"))
            return _BAD_KEY
        return self._scalar(key_node, path)


_BAD_KEY = object()
