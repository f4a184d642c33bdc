"""The syntax tree the parser builds and the compiler consumes.

Nodes are plain frozen dataclasses so the tree can be printed and compared in
tests. `pos` is where the node's text starts, used for compile-time errors.
AND/OR and chains of `+ -` / `* /` are n-ary: a long flat selector such as
`a = 1 OR a = 2 OR ...` must not become a deep tree, because evaluation
recurses once per level.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Union

LiteralValue = Union[str, int, float, bool, None]


@dataclass(frozen=True, slots=True)
class Literal:
    value: LiteralValue  # None is the NULL literal
    pos: int


@dataclass(frozen=True, slots=True)
class Identifier:
    name: str
    pos: int


@dataclass(frozen=True, slots=True)
class Not:
    operand: Node
    pos: int


@dataclass(frozen=True, slots=True)
class Unary:
    op: str  # "+" or "-"
    operand: Node
    pos: int


@dataclass(frozen=True, slots=True)
class Logical:
    op: str  # "AND" or "OR"
    operands: tuple[Node, ...]
    pos: int


@dataclass(frozen=True, slots=True)
class Arithmetic:
    """`first (op operand)*`, evaluated left to right; ops of one precedence level."""

    first: Node
    rest: tuple[tuple[str, Node], ...]
    pos: int


@dataclass(frozen=True, slots=True)
class Comparison:
    op: str  # = <> < <= > >=
    left: Node
    right: Node
    pos: int


@dataclass(frozen=True, slots=True)
class Between:
    operand: Node
    low: Node
    high: Node
    negated: bool
    pos: int


@dataclass(frozen=True, slots=True)
class In:
    operand: Node
    items: tuple[str | int | float, ...]
    negated: bool
    pos: int


@dataclass(frozen=True, slots=True)
class Like:
    operand: Node
    pattern: str
    escape: str | None
    negated: bool
    pos: int


@dataclass(frozen=True, slots=True)
class IsNull:
    operand: Node
    negated: bool
    pos: int


Node = Union[Literal, Identifier, Not, Unary, Logical, Arithmetic, Comparison, Between, In, Like, IsNull]


def children(node: Node) -> Iterator[Node]:
    """The direct sub-expressions of `node`, for walks that must not recurse."""
    if isinstance(node, (Not, Unary, In, Like, IsNull)):
        yield node.operand
    elif isinstance(node, Logical):
        yield from node.operands
    elif isinstance(node, Arithmetic):
        yield node.first
        for _, operand in node.rest:
            yield operand
    elif isinstance(node, Comparison):
        yield node.left
        yield node.right
    elif isinstance(node, Between):
        yield node.operand
        yield node.low
        yield node.high
