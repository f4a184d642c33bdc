"""Selector text to tokens, each remembering the offset where it starts.

Follows the JMS literal rules, which defer to Java: exact numerics are Java
integer literals (decimal, `0x` hex, leading-zero octal, optional `L`),
approximate numerics are Java floating-point literals (`1.5`, `.5`, `7.`,
`6.02E23`, optional `f`/`d`), identifiers use Java identifier characters, and
keywords are case-insensitive while identifiers are not.
"""

from __future__ import annotations

import enum
import unicodedata
from dataclasses import dataclass

from .errors import SelectorError

KEYWORDS = frozenset({"NULL", "TRUE", "FALSE", "NOT", "AND", "OR", "BETWEEN", "LIKE", "IN", "IS", "ESCAPE"})

# Exact literals must fit a Java long; 2**63 itself is allowed so that
# `-9223372036854775808` (Long.MIN_VALUE) can be written.
MAX_INTEGER_MAGNITUDE = 2**63

_WHITESPACE = frozenset(" \t\n\r\f")  # the JMS/JavaCC skip set; other spaces are a typo worth reporting
_OPERATORS = ("<>", "<=", ">=", "=", "<", ">", "+", "-", "*", "/", "(", ")", ",")
_DIGITS = frozenset("0123456789")
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
_OCTAL_DIGITS = frozenset("01234567")
# Character.isJavaIdentifierStart / isJavaIdentifierPart by Unicode category;
# the "identifier-ignorable" controls Java also allows are refused on purpose.
_START_CATEGORIES = frozenset({"Lu", "Ll", "Lt", "Lm", "Lo", "Nl", "Sc", "Pc"})
_PART_CATEGORIES = _START_CATEGORIES | {"Mn", "Mc", "Nd"}


class TokenKind(enum.Enum):
    IDENTIFIER = "identifier"
    KEYWORD = "keyword"
    STRING = "string"
    NUMBER = "number"
    OPERATOR = "operator"
    END = "end of input"


@dataclass(frozen=True, slots=True)
class Token:
    kind: TokenKind
    value: object  # identifier name, upper-cased keyword, operator text, string or number value
    pos: int
    source: str  # the token exactly as written, for error messages


def describe(token: Token) -> str:
    """How an error message names a token."""
    if token.kind is TokenKind.END:
        return "end of input"
    source = token.source if len(token.source) <= 30 else token.source[:27] + "..."
    if token.kind is TokenKind.STRING:
        return f"string {source}"
    return f"'{source}'"


def is_identifier_start(ch: str) -> bool:
    if ch < "\x80":
        return ch.isalpha() or ch == "_" or ch == "$"
    return unicodedata.category(ch) in _START_CATEGORIES


def is_identifier_part(ch: str) -> bool:
    if ch < "\x80":
        return ch.isalnum() or ch == "_" or ch == "$"
    return unicodedata.category(ch) in _PART_CATEGORIES


def tokenize(text: str) -> list[Token]:
    """All tokens of `text`, ending with one END token at `len(text)`."""
    tokens: list[Token] = []
    n = len(text)
    pos = 0
    while pos < n:
        ch = text[pos]
        if ch in _WHITESPACE:
            pos += 1
        elif ch == "'":
            token = _scan_string(text, pos)
            tokens.append(token)
            pos += len(token.source)
        elif ch in _DIGITS or (ch == "." and pos + 1 < n and text[pos + 1] in _DIGITS):
            token = _scan_number(text, pos)
            tokens.append(token)
            pos += len(token.source)
        elif is_identifier_start(ch):
            end = pos + 1
            while end < n and is_identifier_part(text[end]):
                end += 1
            word = text[pos:end]
            # ASCII-only upper-casing: "ın".upper() == "IN" must not make a keyword.
            if word.isascii() and word.upper() in KEYWORDS:
                tokens.append(Token(TokenKind.KEYWORD, word.upper(), pos, word))
            else:
                tokens.append(Token(TokenKind.IDENTIFIER, word, pos, word))
            pos = end
        else:
            for op in _OPERATORS:
                if text.startswith(op, pos):
                    tokens.append(Token(TokenKind.OPERATOR, op, pos, op))
                    pos += len(op)
                    break
            else:
                hint = "; use '<>' for not-equal" if text.startswith("!=", pos) else ""
                raise SelectorError(text, pos, f"unexpected character {ch!r}{hint}")
    tokens.append(Token(TokenKind.END, None, n, ""))
    return tokens


def _scan_string(text: str, start: int) -> Token:
    parts: list[str] = []
    pos = start + 1
    while True:
        close = text.find("'", pos)
        if close < 0:
            raise SelectorError(text, start, "unterminated string literal")
        parts.append(text[pos:close])
        if text.startswith("''", close):  # doubled quote is an escaped quote
            parts.append("'")
            pos = close + 2
            continue
        return Token(TokenKind.STRING, "".join(parts), start, text[start : close + 1])


def _scan_number(text: str, start: int) -> Token:
    """The longest numeric literal at `start`; like Java's lexer, `5AND` is `5` then `AND`."""
    n = len(text)

    def skip(pos: int, allowed: frozenset[str]) -> int:
        while pos < n and text[pos] in allowed:
            pos += 1
        return pos

    value: int | float
    if text.startswith(("0x", "0X"), start):
        end = skip(start + 2, _HEX_DIGITS)
        if end == start + 2:
            raise SelectorError(text, start, "hexadecimal literal needs at least one digit after '0x'")
        value = _checked_integer(text, start, text[start + 2 : end], 16)
        if end < n and text[end] in "lL":
            end += 1
    else:
        end = skip(start, _DIGITS)
        is_float = False
        if end < n and text[end] == ".":
            is_float = True
            end = skip(end + 1, _DIGITS)
        if end < n and text[end] in "eE":
            digits_at = end + 1
            if digits_at < n and text[digits_at] in "+-":
                digits_at += 1
            if digits_at >= n or text[digits_at] not in _DIGITS:
                raise SelectorError(text, end, "exponent needs at least one digit")
            is_float = True
            end = skip(digits_at, _DIGITS)
        body = text[start:end]
        if end < n and text[end] in "fFdD":
            is_float = True
            end += 1
        elif not is_float and end < n and text[end] in "lL":
            end += 1
        if is_float:
            value = float(body)  # overflow gives inf, as Java's Double.valueOf does
        elif len(body) > 1 and body[0] == "0":
            if not set(body) <= _OCTAL_DIGITS:
                reason = f"invalid octal literal '{body}' (digits after a leading 0 must be 0-7)"
                raise SelectorError(text, start, reason)
            value = _checked_integer(text, start, body, 8)
        else:
            value = _checked_integer(text, start, body, 10)
    return Token(TokenKind.NUMBER, value, start, text[start:end])


def _checked_integer(text: str, start: int, digits: str, base: int) -> int:
    # Length check first: int() refuses very long decimal strings with its own ValueError.
    if len(digits.lstrip("0")) > 64 or int(digits, base) > MAX_INTEGER_MAGNITUDE:
        raise SelectorError(text, start, "integer literal does not fit in a 64-bit long")
    return int(digits, base)
