"""``--filter``: a small condition language read into a ``pyarrow.compute.Expression``.

    condition := term ("or" term)*
    term      := factor ("and" factor)*
    factor    := "not" factor | "(" condition ")" | test
    test      := COLUMN OP VALUE | COLUMN ["not"] "in" "(" VALUE ("," VALUE)* ")"
               | COLUMN "is" ["not"] "null"
    OP        := = | == | != | <> | < | <= | > | >=
    VALUE     := 5 | -2.5 | 'text' | "text" | true | false | null

Keywords are case-insensitive; a column is a name (letters, digits, ``_``, ``.``, ``-``)
or any name in backquotes. Values are cast to the column's type (``d = '2024-01-01'``
on a date column compares dates).

>>> import pyarrow as pa
>>> schema = pa.schema([("k", pa.int64()), ("v", pa.string())])
>>> str(parse("k >= 5 and v is not null", schema))
'((k >= 5) and is_valid(v))'
"""

from __future__ import annotations

import operator
import re
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from .common import UserError

_TOKEN = re.compile(
    r"\s*(?:(?P<number>-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)|(?P<string>'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\")"
    r"|(?P<quoted>`[^`]+`)|(?P<op><=|>=|<>|!=|==|=|<|>)|(?P<punct>[(),])|(?P<word>[A-Za-z_][\w.\-]*))"
)
_OPS = {
    "=": operator.eq,
    "==": operator.eq,
    "!=": operator.ne,
    "<>": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def parse(text: str, schema: pa.Schema) -> pc.Expression:
    """``text`` as an expression over the columns of ``schema``; a mistake raises
    :class:`UserError` saying where."""
    return _Parser(text, schema).condition_all()


class _Parser:
    def __init__(self, text: str, schema: pa.Schema):
        self.text, self.schema = text, schema
        self.tokens = _tokens(text)
        self.at = 0

    def fail(self, what: str) -> UserError:
        where = self.tokens[self.at][2] if self.at < len(self.tokens) else len(self.text)
        return UserError(f"--filter {self.text!r}: {what} at character {where + 1}")

    def peek(self) -> tuple[str, str, int] | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def take(self) -> tuple[str, str, int]:
        token = self.peek()
        if token is None:
            raise self.fail("the condition ends too soon")
        self.at += 1
        return token

    def keyword(self, *words: str) -> bool:
        token = self.peek()
        if token is not None and token[0] == "word" and token[1].lower() in words:
            self.at += 1
            return True
        return False

    def expect(self, text: str) -> None:
        token = self.peek()
        if token is None or token[1].lower() != text:
            raise self.fail(f"expected {text!r}")
        self.at += 1

    def condition_all(self) -> pc.Expression:
        out = self.condition()
        if self.peek() is not None:
            raise self.fail(f"unexpected {self.peek()[1]!r}")  # type: ignore[index]
        return out

    def condition(self) -> pc.Expression:
        out = self.term()
        while self.keyword("or"):
            out = out | self.term()
        return out

    def term(self) -> pc.Expression:
        out = self.factor()
        while self.keyword("and"):
            out = out & self.factor()
        return out

    def factor(self) -> pc.Expression:
        if self.keyword("not"):
            return ~self.factor()
        token = self.peek()
        if token is not None and token[1] == "(":
            self.at += 1
            out = self.condition()
            self.expect(")")
            return out
        return self.test()

    def test(self) -> pc.Expression:
        kind, text, _ = self.take()
        if kind not in ("word", "quoted"):
            raise self.fail(f"expected a column, got {text!r}")
        name = text[1:-1] if kind == "quoted" else text
        if name not in self.schema.names:
            raise UserError(f"--filter: no column {name!r} in the table (it has {', '.join(self.schema.names)})")
        column, t = pc.field(name), self.schema.field(name).type
        if self.keyword("is"):
            negated = self.keyword("not")
            if not self.keyword("null"):
                raise self.fail("expected 'null' after 'is'")
            return column.is_valid() if negated else column.is_null()
        negated = self.keyword("not")
        if self.keyword("in"):
            self.expect("(")
            values = [self.value(name, t)]
            while self.peek() is not None and self.peek()[1] == ",":  # type: ignore[index]
                self.at += 1
                values.append(self.value(name, t))
            self.expect(")")
            found = column.isin(pa.array([v.as_py() for v in values], t))
            return ~found if negated else found
        if negated:
            raise self.fail("expected 'in' after 'not'")
        kind, op, _ = self.take()
        if kind != "op":
            raise self.fail(f"expected a comparison (=, !=, <, <=, >, >=, in, is null) after {name!r}")
        return _OPS[op](column, self.value(name, t))

    def value(self, column: str, t: pa.DataType) -> Any:
        kind, text, _ = self.take()
        if kind == "number":
            raw: Any = float(text) if any(c in text for c in ".eE") else int(text)
        elif kind == "string":
            raw = text[1:-1].replace(text[0] * 2, text[0])
        elif kind == "word" and text.lower() in ("true", "false"):
            raw = text.lower() == "true"
        elif kind == "word" and text.lower() == "null":
            return pa.scalar(None, t)
        else:
            raise self.fail(f"expected a value, got {text!r}")
        try:
            return pa.scalar(raw).cast(t)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
            raise UserError(f"--filter: {text} is not a value of column {column!r} ({t}): {e}") from None


def _tokens(text: str) -> list[tuple[str, str, int]]:
    out, at = [], 0
    while at < len(text):
        if text[at:].strip() == "":
            break
        match = _TOKEN.match(text, at)
        if match is None or match.lastgroup is None:
            position = at + len(text[at:]) - len(text[at:].lstrip())
            raise UserError(
                f"--filter {text!r}: cannot read {text[position : position + 10]!r} at character {position + 1}"
            )
        out.append((match.lastgroup, match.group(match.lastgroup), match.start(match.lastgroup)))
        at = match.end()
    if not out:
        raise UserError("--filter: the condition is empty")
    return out
