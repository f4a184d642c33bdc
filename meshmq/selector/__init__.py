"""JMS / Artemis message selectors (filter expressions).

`compile_selector("color = 'red' AND weight > 2.5")` returns a `Selector`
whose `matches(lookup)` decides one message. The grammar and the SQL
three-valued logic are those of JMS 2.0 as Apache ActiveMQ Artemis
implements them; where the two differ, see `compiler` for the type rules
chosen. Modules: `lexer` (text to tokens), `parser` (tokens to `nodes`),
`compiler` (tree to closures), `like` (LIKE matching), `selector` (the API).
"""

from .errors import SelectorError
from .parser import MAX_NESTING_DEPTH, MAX_SELECTOR_LENGTH
from .selector import Selector, compile_selector

__all__ = ["MAX_NESTING_DEPTH", "MAX_SELECTOR_LENGTH", "Selector", "SelectorError", "compile_selector"]
