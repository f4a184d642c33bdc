"""Syntax tree to nested Python closures, built once per selector.

Evaluation is SQL three-valued logic with None standing for both NULL and
UNKNOWN. The type rules are the JMS ones and are deliberately strict:

* int and float compare and compute with each other; bool is never a number
  (Python's `True == 1` must not leak into a selector).
* strings, booleans and bytes support only `=` and `<>`, and only against
  their own type; `'a' < 'b'` is UNKNOWN.
* every other mix, and arithmetic on non-numbers, is UNKNOWN.
* `int / int` truncates toward zero as in Java; dividing by zero (int or
  float) is UNKNOWN rather than an error or an infinity, so one bad property
  cannot make a message match `x / y > 100`.
* values are checked by exact type: lookup results other than str, int,
  float, bool, bytes and None (including subclasses) are UNKNOWN operands.

Nothing here raises while evaluating: overflow (a huge int meeting a float)
is UNKNOWN. Sub-trees without identifiers are folded to constants here.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass

from .errors import SelectorError
from .like import MAX_LIKE_COST, compile_like
from .nodes import (
    Arithmetic,
    Between,
    Comparison,
    Identifier,
    In,
    IsNull,
    Like,
    Literal,
    Logical,
    Node,
    Not,
    Unary,
)

Lookup = Callable[[str], object]
Evaluator = Callable[[Lookup], object]

_EQUALITY = {"=": operator.eq, "<>": operator.ne}
_ORDERING = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
_MIRRORED = {"=": "=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_EQUATABLE = frozenset({str, int, float, bool, bytes})


def compile_tree(text: str, tree: Node) -> Evaluator:
    """An evaluator returning True, False or None (UNKNOWN) for one message."""
    return _Compiler(text).condition(tree).fn


@dataclass(frozen=True, slots=True)
class _Code:
    fn: Evaluator
    constant: bool = False


def _constant(value: object) -> _Code:
    return _Code(lambda lookup: value, constant=True)


def _no_lookup(name: str) -> object:
    raise AssertionError(f"constant folding looked up {name!r}")


def _fold(fn: Evaluator, *operands: _Code) -> _Code:
    if all(code.constant for code in operands):
        return _constant(fn(_no_lookup))
    return _Code(fn)


def _is_number(value: object) -> bool:
    t = type(value)
    return t is int or t is float


def _equal(a: object, b: object) -> bool | None:
    ta, tb = type(a), type(b)
    if ta is tb:
        return a == b if ta in _EQUATABLE else None
    if (ta is int or ta is float) and (tb is int or tb is float):
        return a == b
    return None


def _not_equal(a: object, b: object) -> bool | None:
    result = _equal(a, b)
    return None if result is None else not result


def _ordering(compare: Callable[[object, object], bool]) -> Callable[[object, object], bool | None]:
    def ordered(a: object, b: object) -> bool | None:
        return compare(a, b) if _is_number(a) and _is_number(b) else None

    return ordered


_COMPARE = {"=": _equal, "<>": _not_equal, **{op: _ordering(fn) for op, fn in _ORDERING.items()}}


def _divide(a: int | float, b: int | float) -> int | float | None:
    if b == 0:
        return None
    if type(a) is int and type(b) is int:
        quotient = a // b
        if quotient < 0 and quotient * b != a:  # floor -> truncate toward zero, as Java does
            quotient += 1
        return quotient
    return a / b


_ARITHMETIC = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": _divide}


def _and(a: object, b: object) -> bool | None:
    if a is False or b is False:
        return False
    return True if a is True and b is True else None


def _negate(value: object) -> bool | None:
    return None if value is None else not value


def _static_kind(node: Node) -> str:
    """What a node yields, as far as is known before any message is seen."""
    if isinstance(node, Literal):
        value = node.value
        if value is None or isinstance(value, bool):
            return "boolean"
        return "string" if isinstance(value, str) else "number"
    if isinstance(node, Identifier):
        return "unknown"
    if isinstance(node, (Unary, Arithmetic)):
        return "number"
    return "boolean"


class _Compiler:
    def __init__(self, text: str) -> None:
        self._text = text
        self._like_cost = 0.0  # summed over the selector's LIKE patterns, bounded by MAX_LIKE_COST

    def condition(self, node: Node) -> _Code:
        """Code yielding True/False/None where the grammar wants a boolean."""
        kind = _static_kind(node)
        if kind in ("number", "string"):
            raise SelectorError(self._text, node.pos, f"expected a boolean expression, not a {kind}")
        if isinstance(node, Identifier):
            name = node.name

            def boolean_property(lookup: Lookup) -> object:
                value = lookup(name)
                return value if type(value) is bool else None

            return _Code(boolean_property)
        return self.value(node)

    def value(self, node: Node) -> _Code:
        if isinstance(node, Literal):
            return _constant(node.value)
        if isinstance(node, Identifier):
            name = node.name
            return _Code(lambda lookup: lookup(name))
        if isinstance(node, Comparison):
            return self._comparison(node)
        if isinstance(node, Logical):
            return self._logical(node)
        if isinstance(node, Not):
            return self._not(node)
        if isinstance(node, Arithmetic):
            return self._arithmetic(node)
        if isinstance(node, Unary):
            return self._unary(node)
        if isinstance(node, Between):
            return self._between(node)
        if isinstance(node, In):
            return self._in(node)
        if isinstance(node, Like):
            return self._like(node)
        if isinstance(node, IsNull):
            return self._is_null(node)
        raise AssertionError(f"unknown node {node!r}")

    # -- logic ---------------------------------------------------------

    def _logical(self, node: Logical) -> _Code:
        operands: list[Node] = []
        pending = list(reversed(node.operands))
        while pending:  # flatten (a AND b) AND c into one n-ary AND
            operand = pending.pop()
            if isinstance(operand, Logical) and operand.op == node.op:
                pending.extend(reversed(operand.operands))
            else:
                operands.append(operand)
        codes = [self.condition(operand) for operand in operands]
        fns = tuple(code.fn for code in codes)
        # `stop` decides the result on its own (False for AND, True for OR).
        stop = node.op == "OR"

        def logical(lookup: Lookup) -> object:
            result: object = not stop
            for fn in fns:
                value = fn(lookup)
                if value is stop:
                    return stop
                if value is None:
                    result = None
            return result

        return _fold(logical, *codes)

    def _not(self, node: Not) -> _Code:
        code = self.condition(node.operand)
        fn = code.fn

        def negation(lookup: Lookup) -> object:
            value = fn(lookup)
            return None if value is None else not value

        return _fold(negation, code)

    def _is_null(self, node: IsNull) -> _Code:
        code = self.value(node.operand)
        fn, negated = code.fn, node.negated
        return _fold(lambda lookup: (fn(lookup) is None) is not negated, code)

    # -- comparisons ---------------------------------------------------

    def _comparison(self, node: Comparison) -> _Code:
        left, right = self.value(node.left), self.value(node.right)
        op = node.op
        if left.constant and right.constant:
            compare = _COMPARE[op]
            return _constant(compare(left.fn(_no_lookup), right.fn(_no_lookup)))
        if right.constant:
            return self._compare_with_constant(node.left, left, op, right.fn(_no_lookup))
        if left.constant:
            return self._compare_with_constant(node.right, right, _MIRRORED[op], left.fn(_no_lookup))
        compare = _COMPARE[op]
        left_fn, right_fn = left.fn, right.fn

        def comparison(lookup: Lookup) -> object:
            a = left_fn(lookup)
            if a is None:
                return None
            b = right_fn(lookup)
            return compare(a, b)

        return _Code(comparison)

    def _compare_with_constant(self, node: Node, code: _Code, op: str, constant: object) -> _Code:
        """The hot path: `color = 'red'`, `price > 10` with one lookup and no helper calls."""
        kind = type(constant)
        if constant is None or (op in _ORDERING and kind is not int and kind is not float):
            return _constant(None)  # NULL operand, or ordering a non-number: always UNKNOWN
        compare = _EQUALITY.get(op) or _ORDERING[op]
        get = code.fn
        name = node.name if isinstance(node, Identifier) else None

        if kind is int or kind is float:
            if name is not None:

                def numeric(lookup: Lookup) -> object:
                    value = lookup(name)
                    t = type(value)
                    return compare(value, constant) if t is int or t is float else None

            else:

                def numeric(lookup: Lookup) -> object:
                    value = get(lookup)
                    t = type(value)
                    return compare(value, constant) if t is int or t is float else None

            return _Code(numeric)

        if name is not None:

            def same_type(lookup: Lookup) -> object:
                value = lookup(name)
                return compare(value, constant) if type(value) is kind else None

        else:

            def same_type(lookup: Lookup) -> object:
                value = get(lookup)
                return compare(value, constant) if type(value) is kind else None

        return _Code(same_type)

    def _between(self, node: Between) -> _Code:
        operand, low, high = self.value(node.operand), self.value(node.low), self.value(node.high)
        operand_fn, low_fn, high_fn, negated = operand.fn, low.fn, high.fn, node.negated

        def between(lookup: Lookup) -> object:
            # low <= x AND x <= high, in three-valued logic
            x = operand_fn(lookup)
            if not _is_number(x):
                return None
            lo = low_fn(lookup)
            above = (x >= lo) if _is_number(lo) else None
            if above is False:
                return negated
            hi = high_fn(lookup)
            below = (x <= hi) if _is_number(hi) else None
            result = _and(above, below)
            return _negate(result) if negated else result

        return _fold(between, operand, low, high)

    def _in(self, node: In) -> _Code:
        # x IN (a, b) is x = a OR x = b: TRUE on a match, UNKNOWN if some item
        # could not be compared with x (a type mismatch), FALSE otherwise.
        code = self.value(node.operand)
        fn, negated = code.fn, node.negated
        strings = frozenset(item for item in node.items if type(item) is str)
        numbers = frozenset(item for item in node.items if type(item) is not str)
        miss_string = False if not numbers else None
        miss_number = False if not strings else None

        def membership(lookup: Lookup) -> object:
            x = fn(lookup)
            t = type(x)
            if t is str:
                result = True if x in strings else miss_string
            elif t is int or t is float:
                result = True if x in numbers else miss_number
            else:
                return None
            if negated:
                return None if result is None else not result
            return result

        return _fold(membership, code)

    def _like(self, node: Like) -> _Code:
        code = self.value(node.operand)
        fn, negated = code.fn, node.negated
        matcher = compile_like(node.pattern, node.escape)
        self._like_cost += matcher.cost
        if self._like_cost > MAX_LIKE_COST:
            raise SelectorError(
                self._text,
                node.pos,
                f"LIKE patterns too costly to match: the segments between '%' that contain '_' "
                f"need about {self._like_cost:.0f} steps per character of the value, the limit is "
                f"{MAX_LIKE_COST:.0f} (shorten them, or use fewer distinct characters in them)",
            )

        def like(lookup: Lookup) -> object:
            value = fn(lookup)
            if type(value) is not str:
                return None
            return matcher(value) is not negated

        return _fold(like, code)

    # -- arithmetic ----------------------------------------------------

    def _unary(self, node: Unary) -> _Code:
        code = self.value(node.operand)
        fn = code.fn
        if node.op == "-":

            def sign(lookup: Lookup) -> object:
                value = fn(lookup)
                return -value if _is_number(value) else None

        else:

            def sign(lookup: Lookup) -> object:
                value = fn(lookup)
                return value if _is_number(value) else None

        return _fold(sign, code)

    def _arithmetic(self, node: Arithmetic) -> _Code:
        first = self.value(node.first)
        rest = [(op, self.value(operand)) for op, operand in node.rest]
        first_fn = first.fn
        steps = tuple((_ARITHMETIC[op], code.fn) for op, code in rest)

        def arithmetic(lookup: Lookup) -> object:
            acc = first_fn(lookup)
            t = type(acc)
            if t is not int and t is not float:
                return None
            for apply, fn in steps:
                value = fn(lookup)
                t = type(value)
                if t is not int and t is not float:
                    return None
                try:
                    acc = apply(acc, value)
                except OverflowError:  # an int too large to meet a float
                    return None
                if acc is None:  # division by zero
                    return None
            return acc

        return _fold(arithmetic, first, *(code for _, code in rest))
