"""Tokens to a syntax tree, by precedence climbing.

Precedence, lowest first: OR, AND, NOT, comparison (`= <> < <= > >=`,
`[NOT] BETWEEN`, `[NOT] IN`, `[NOT] LIKE`, `IS [NOT] NULL`), `+ -`, `* /`,
unary `+ -`. Precedence climbing needs about two Python frames per nesting
level (a classic one-function-per-level descent needs eight), which is what
lets a 100-level limit stay far from the interpreter's recursion limit.

Two limits keep hostile input cheap and the evaluator's recursion bounded:
at most MAX_SELECTOR_LENGTH characters, and at most MAX_NESTING_DEPTH levels,
counted both as open parentheses/prefix operators while parsing and as the
depth of the finished tree (every operator is a level).
"""

from __future__ import annotations

from typing import NoReturn

from .errors import SelectorError
from .lexer import Token, TokenKind, describe, tokenize
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
    children,
)

MAX_SELECTOR_LENGTH = 8192
MAX_NESTING_DEPTH = 100

_TOO_DEEP = f"expression is nested more than {MAX_NESTING_DEPTH} levels deep"

_PREC_OR = 1
_PREC_AND = 2
_PREC_NOT = 3
_PREC_COMPARISON = 4
_PREC_ADDITIVE = 5
_PREC_MULTIPLICATIVE = 6
_PREC_UNARY = 7

_COMPARISON_OPERATORS = frozenset({"=", "<>", "<", "<=", ">", ">="})
_COMPARISON_KEYWORDS = frozenset({"NOT", "BETWEEN", "LIKE", "IN", "IS"})


def parse(text: str) -> tuple[Node, frozenset[str]]:
    """The tree of `text` and the identifiers it references; SelectorError if malformed."""
    if not isinstance(text, str):
        raise TypeError(f"a selector must be a str, not {type(text).__name__}")
    if len(text) > MAX_SELECTOR_LENGTH:
        raise SelectorError(text, MAX_SELECTOR_LENGTH, f"selector is longer than {MAX_SELECTOR_LENGTH} characters")
    if not text.strip(" \t\n\r\f"):
        raise SelectorError(text, 0, "selector is empty")
    parser = _Parser(text, tokenize(text))
    tree = parser.parse()
    _check_depth(text, tree)
    return tree, frozenset(parser.identifiers)


def _check_depth(text: str, tree: Node) -> None:
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_NESTING_DEPTH:
            raise SelectorError(text, node.pos, _TOO_DEEP)
        stack.extend((child, depth + 1) for child in children(node))


class _Parser:
    def __init__(self, text: str, tokens: list[Token]) -> None:
        self._text = text
        self._tokens = tokens
        self._index = 0
        self._depth = 0
        self.identifiers: set[str] = set()

    def parse(self) -> Node:
        tree = self._expression(_PREC_OR)
        token = self._peek()
        if token.kind is not TokenKind.END:
            if self._is_operator(token, ")"):
                self._fail(token, "unexpected ')' without a matching '('")
            self._fail(token, "expected an operator or end of input")
        return tree

    # -- token helpers -------------------------------------------------

    def _peek(self) -> Token:
        return self._tokens[self._index]

    def _advance(self) -> Token:
        token = self._tokens[self._index]
        if token.kind is not TokenKind.END:
            self._index += 1
        return token

    @staticmethod
    def _is_keyword(token: Token, word: str) -> bool:
        return token.kind is TokenKind.KEYWORD and token.value == word

    @staticmethod
    def _is_operator(token: Token, op: str) -> bool:
        return token.kind is TokenKind.OPERATOR and token.value == op

    def _fail(self, token: Token, reason: str) -> NoReturn:
        raise SelectorError(self._text, token.pos, f"{reason} (got {describe(token)})")

    def _enter(self, token: Token) -> None:
        self._depth += 1
        if self._depth > MAX_NESTING_DEPTH:
            raise SelectorError(self._text, token.pos, _TOO_DEEP)

    # -- grammar -------------------------------------------------------

    def _expression(self, min_prec: int) -> Node:
        """An expression whose binary operators all bind at least as tightly as `min_prec`."""
        left = self._prefix(min_prec)
        compared = False
        while True:
            token = self._peek()
            if token.kind is TokenKind.OPERATOR:
                op = token.value
                if op in ("+", "-") and min_prec <= _PREC_ADDITIVE:
                    left = self._chain(left, ("+", "-"), _PREC_MULTIPLICATIVE)
                    continue
                if op in ("*", "/") and min_prec <= _PREC_MULTIPLICATIVE:
                    left = self._chain(left, ("*", "/"), _PREC_UNARY)
                    continue
                if op in _COMPARISON_OPERATORS and min_prec <= _PREC_COMPARISON:
                    left = self._comparison(left, compared)
                    compared = True
                    continue
            elif token.kind is TokenKind.KEYWORD:
                word = token.value
                if word == "OR" and min_prec <= _PREC_OR:
                    left = Logical("OR", self._operands(left, "OR", _PREC_AND), left.pos)
                    continue
                if word == "AND" and min_prec <= _PREC_AND:
                    left = Logical("AND", self._operands(left, "AND", _PREC_NOT), left.pos)
                    continue
                if word in _COMPARISON_KEYWORDS and min_prec <= _PREC_COMPARISON:
                    left = self._comparison(left, compared)
                    compared = True
                    continue
            return left

    def _operands(self, first: Node, word: str, operand_prec: int) -> tuple[Node, ...]:
        operands = [first]
        while self._is_keyword(self._peek(), word):
            self._advance()
            operands.append(self._expression(operand_prec))
        return tuple(operands)

    def _chain(self, first: Node, ops: tuple[str, str], operand_prec: int) -> Arithmetic:
        rest: list[tuple[str, Node]] = []
        while (token := self._peek()).kind is TokenKind.OPERATOR and token.value in ops:
            self._advance()
            rest.append((token.value, self._expression(operand_prec)))
        return Arithmetic(first, tuple(rest), first.pos)

    def _prefix(self, min_prec: int) -> Node:
        """A value, a parenthesised expression, or a prefix operator and its operand."""
        token = self._peek()
        if token.kind is TokenKind.KEYWORD:
            word = token.value
            if word == "NOT":
                if min_prec > _PREC_NOT:
                    self._fail(token, "NOT cannot be used here without parentheses")
                self._advance()
                self._enter(token)
                operand = self._expression(_PREC_NOT)
                self._depth -= 1
                return Not(operand, token.pos)
            if word in ("TRUE", "FALSE", "NULL"):
                self._advance()
                return Literal({"TRUE": True, "FALSE": False, "NULL": None}[word], token.pos)
        elif token.kind is TokenKind.OPERATOR:
            if token.value in ("+", "-"):
                self._advance()
                self._enter(token)
                operand = self._expression(_PREC_UNARY)
                self._depth -= 1
                return Unary(token.value, operand, token.pos)
            if token.value == "(":
                self._advance()
                self._enter(token)
                inner = self._expression(_PREC_OR)
                if not self._is_operator(self._peek(), ")"):
                    self._fail(self._peek(), f"expected ')' to close the '(' at position {token.pos}")
                self._advance()
                self._depth -= 1
                return inner
        elif token.kind is TokenKind.IDENTIFIER:
            self._advance()
            self.identifiers.add(token.value)
            return Identifier(token.value, token.pos)
        elif token.kind in (TokenKind.STRING, TokenKind.NUMBER):
            self._advance()
            return Literal(token.value, token.pos)
        if self._index == 0:
            self._fail(token, "expected an expression")
        self._fail(token, f"expected a value after {describe(self._tokens[self._index - 1])}")

    def _comparison(self, left: Node, already_compared: bool) -> Node:
        token = self._advance()
        if already_compared:
            self._fail(token, "comparisons cannot be chained; use parentheses or AND")
        if token.kind is TokenKind.OPERATOR:
            return Comparison(token.value, left, self._expression(_PREC_ADDITIVE), left.pos)
        word = token.value
        if word == "IS":
            negated = self._is_keyword(self._peek(), "NOT")
            if negated:
                self._advance()
            if not self._is_keyword(self._peek(), "NULL"):
                self._fail(self._peek(), "expected NULL or NOT NULL after IS")
            self._advance()
            return IsNull(left, negated, left.pos)
        negated = word == "NOT"
        if negated:
            token = self._advance()
            word = token.value if token.kind is TokenKind.KEYWORD else None
            if word not in ("BETWEEN", "LIKE", "IN"):
                self._fail(token, "expected BETWEEN, LIKE or IN after NOT")
        if word == "BETWEEN":
            low = self._expression(_PREC_ADDITIVE)
            if not self._is_keyword(self._peek(), "AND"):
                self._fail(self._peek(), "expected AND between the bounds of BETWEEN")
            self._advance()
            return Between(left, low, self._expression(_PREC_ADDITIVE), negated, left.pos)
        if word == "LIKE":
            return self._like(left, negated)
        return self._in(left, negated)

    def _like(self, left: Node, negated: bool) -> Like:
        pattern = self._advance()
        if pattern.kind is not TokenKind.STRING:
            self._fail(pattern, "expected a string literal pattern after LIKE")
        escape = None
        if self._is_keyword(self._peek(), "ESCAPE"):
            self._advance()
            token = self._advance()
            if token.kind is not TokenKind.STRING:
                self._fail(token, "expected a one-character string literal after ESCAPE")
            escape = token.value
            if len(escape) != 1:
                raise SelectorError(
                    self._text, token.pos, f"the ESCAPE string must be exactly one character, not {len(escape)}"
                )
        return Like(left, pattern.value, escape, negated, left.pos)

    def _in(self, left: Node, negated: bool) -> In:
        opening = self._advance()
        if not self._is_operator(opening, "("):
            self._fail(opening, "expected '(' after IN")
        items: list[str | int | float] = []
        while True:
            items.append(self._in_item())
            token = self._advance()
            if self._is_operator(token, ")"):
                return In(left, tuple(items), negated, left.pos)
            if not self._is_operator(token, ","):
                self._fail(token, f"expected ',' or ')' in the IN list opened at position {opening.pos}")

    def _in_item(self) -> str | int | float:
        token = self._advance()
        sign = 1
        if token.kind is TokenKind.OPERATOR and token.value in ("+", "-"):
            sign = -1 if token.value == "-" else 1
            token = self._advance()
            if token.kind is not TokenKind.NUMBER:
                self._fail(token, "expected a number after the sign in the IN list")
        if token.kind is TokenKind.NUMBER:
            return sign * token.value
        if token.kind is TokenKind.STRING:
            return token.value
        self._fail(token, "expected a string or numeric literal in the IN list")
