"""CEL for DRA device selectors, as kube-scheduler v1.36 evaluates them.

DeviceClass ``spec.selectors[].cel.expression`` and ResourceClaim
``spec.devices.requests[].exactly.selectors[].cel.expression`` (and ``firstAvailable[].selectors``)
are CEL expressions over one variable, ``device``, of type ``kubernetes.DRADevice``
(k8s.io/dynamic-resource-allocation/cel/compile.go, StoredExpressions environment, the
DRAConsumableCapacity gate on as in 1.36, DRAListTypeAttributes off):

- ``device.driver`` (string), ``device.allowMultipleAllocations`` (bool, false when unset);
- ``device.attributes[domain][id]``: the attribute ``domain/id`` (bool, int, string, or a
  ``kubernetes.Semver`` for a version attribute); an attribute name without a domain belongs to
  the device's driver (parseQualifiedName);
- ``device.capacity[domain][id]``: the capacity ``domain/id`` as a ``kubernetes.Quantity``.

Lookups mirror upstream exactly: an unknown *domain* yields an empty map (so
``"x" in device.attributes["no.such"]`` is false and ``has(device.attributes["no.such"].x)`` is
false), while an unknown *id* in a domain is a runtime error ``no such key: <id>``; so
``device.attributes["no.such"].model`` fails with ``no such key: model``.

The environment is Kubernetes' CEL base environment (1.36): the CEL standard library with
cross-type numeric comparisons, ``cel.bind``, two-variable comprehensions, the strings
extension v2, sets, the lists extension v3, and Kubernetes' lists, regex, quantity and semver
libraries, plus DRA's ``includes``. Optional types, timestamps/durations, the IP/CIDR/URL/format/
authz libraries and ``string.format`` are part of upstream's environment but not implemented
here: an expression using them fails to compile with a message saying so (never a silent
mismatch).

Errors:

- :class:`CelCompileError` (``.message``) carries the text the API server puts after
  ``Invalid value: "<expr>": ``, e.g. ``compilation failed: ERROR: <input>:1:1: undeclared
  reference to 'foo' (in container '')\\n | foo\\n | ^`` or ``must evaluate to bool or the
  unknown type, not int``. Syntax errors reuse the ANTLR messages of the CEL grammar (taken from
  the ``cel`` package, whose parser is generated from the same grammar as cel-go's).
- :class:`CelRuntimeError` (``.message``) is what the allocator reports as
  ``CEL runtime error: <message>`` (e.g. ``no such key: model``, ``no such overload``,
  ``operation cancelled: actual cost limit exceeded``). Upstream's allocator treats a runtime
  error as a failure of the whole allocation attempt for that claim, not as "no match".

The runtime cost limit (CELSelectorExpressionMaxCost, 1,000,000) is enforced approximately:
every node evaluated inside a comprehension counts one unit, so runaway nested comprehensions
stop with upstream's message; the static cost estimate that the API server uses to reject
"too complex" selectors is not computed.
"""

from __future__ import annotations

import functools
import math
import re
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any, Final, NoReturn

from kubesched.errors import FieldError
from kubesched.objects.quantity import ERR_FORMAT_WRONG, ERR_SUFFIX, parse_quantity

__all__ = [
    "AttributeValue",
    "CelCompileError",
    "CelRuntimeError",
    "DeviceView",
    "SelectorProgram",
    "Version",
    "compile_selector",
]

COST_LIMIT: Final = 1_000_000  # resourceapi.CELSelectorExpressionMaxCost
_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1
_UINT64_MAX: Final = 2**64 - 1


# ---------------------------------------------------------------------------------------------
# semver (github.com/blang/semver/v4, as Kubernetes' semver library uses it)

_NUMBERS: Final = frozenset("0123456789")
_ALPHANUM: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-0123456789")


class _Semver:
    """A parsed semantic version: the runtime value of CEL's ``kubernetes.Semver``."""

    __slots__ = ("major", "minor", "patch", "pre", "build", "_key")

    def __init__(self, major: int, minor: int, patch: int, pre: tuple[int | str, ...], build: tuple[str, ...]) -> None:
        self.major = major
        self.minor = minor
        self.patch = patch
        self.pre = pre
        self.build = build
        self._key = (major, minor, patch, pre)

    def compare(self, other: _Semver) -> int:
        """blang Version.Compare: -1, 0 or 1 (build metadata ignored)."""
        a, b = (self.major, self.minor, self.patch), (other.major, other.minor, other.patch)
        if a != b:
            return 1 if a > b else -1
        p, q = self.pre, other.pre
        if not p or not q:
            return 0 if not p and not q else (1 if not p else -1)
        for x, y in zip(p, q, strict=False):
            if x == y:
                continue
            if isinstance(x, int) != isinstance(y, int):
                return -1 if isinstance(x, int) else 1  # numeric identifiers sort first
            return 1 if x > y else -1  # type: ignore[operator]
        return 0 if len(p) == len(q) else (-1 if len(p) < len(q) else 1)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Semver) and self._key == other._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.pre:
            text += "-" + ".".join(str(x) for x in self.pre)
        if self.build:
            text += "+" + ".".join(self.build)
        return f"semver({text!r})"


def _parse_uint(text: str) -> int:
    """strconv.ParseUint(text, 10, 64) for a string of ASCII digits (possibly empty)."""
    if not text:
        raise ValueError(f'strconv.ParseUint: parsing "{text}": invalid syntax')
    value = int(text)
    if value > _UINT64_MAX:
        raise ValueError(f'strconv.ParseUint: parsing "{text}": value out of range')
    return value


def _semver_number(text: str, what: str) -> int:
    if not set(text) <= _NUMBERS:
        raise ValueError(f"Invalid character(s) found in {what} number {_go_quote(text)}")
    if len(text) > 1 and text[0] == "0":
        raise ValueError(f"{what.capitalize()} number must not contain leading zeroes {_go_quote(text)}")
    return _parse_uint(text)


def _parse_semver_uncached(text: str) -> _Semver:
    """blang semver.Parse, with its error messages."""
    if not text:
        raise ValueError("Version string empty")
    parts = text.split(".", 2)
    if len(parts) != 3:
        raise ValueError("No Major.Minor.Patch elements found")
    major = _semver_number(parts[0], "major")
    minor = _semver_number(parts[1], "minor")
    rest = parts[2]
    build: list[str] = []
    pre_parts: list[str] = []
    if "+" in rest:
        rest, _, meta = rest.partition("+")
        build = meta.split(".")
    if "-" in rest:
        rest, _, pre_text = rest.partition("-")
        pre_parts = pre_text.split(".")
    patch = _semver_number(rest, "patch")
    pre: list[int | str] = []
    for item in pre_parts:
        if not item:
            raise ValueError("Prerelease is empty")
        if set(item) <= _NUMBERS:
            if len(item) > 1 and item[0] == "0":
                raise ValueError(f"Numeric PreRelease version must not contain leading zeroes {_go_quote(item)}")
            pre.append(_parse_uint(item))
        elif set(item) <= _ALPHANUM:
            pre.append(item)
        else:
            raise ValueError(f"Invalid character(s) found in prerelease {_go_quote(item)}")
    for item in build:
        if not item:
            raise ValueError("Build meta data is empty")
        if not set(item) <= _ALPHANUM:
            raise ValueError(f"Invalid character(s) found in build meta data {_go_quote(item)}")
    return _Semver(major, minor, patch, tuple(pre), tuple(build))


_SEMVERS: dict[str, _Semver] = {}


def _parse_semver(text: str) -> _Semver:
    known = _SEMVERS.get(text)
    if known is None:
        known = _parse_semver_uncached(text)
        if len(_SEMVERS) >= 4096:
            _SEMVERS.clear()
        _SEMVERS[text] = known
    return known


def _normalize_and_parse(text: str) -> _Semver:
    """semverlib.go normalizeAndParse: semver("v1.02", true)."""
    if text.startswith("v"):
        text = text[1:]
    parts = text.split(".", 2)
    for i, part in enumerate(parts):
        if len(part) > 1:
            part = part.lstrip("0")
            if not part or part[0] not in _NUMBERS:
                part = "0" + part
            parts[i] = part
    if len(parts) < 3:
        if any(c in parts[-1] for c in "+-"):
            raise ValueError("short version cannot contain PreRelease/Build meta data")
        parts += ["0"] * (3 - len(parts))
    return _parse_semver(".".join(parts))


def _go_quote(text: str) -> str:
    """Go's %q for the plain strings that reach error messages here."""
    out = ['"']
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# the public input types


@dataclass(frozen=True, slots=True)
class Version:
    """A DRA ``version`` attribute value: a semver 2.0.0 string (checked when constructed,
    with blang/semver's message, as the API server validates ResourceSlices)."""

    text: str

    def __post_init__(self) -> None:
        try:
            _parse_semver(self.text)
        except ValueError as err:
            raise ValueError(f"invalid version {self.text!r}: {err}") from None


AttributeValue = bool | int | str | Version


@dataclass(frozen=True, slots=True, weakref_slot=True)
class DeviceView:
    """What a selector sees of one device.

    ``attributes`` and ``capacity`` are keyed by qualified name ``domain/id`` (a name without a
    ``/`` belongs to ``driver``'s domain, as upstream's parseQualifiedName does); capacity values
    are exact quantities (:func:`kubesched.objects.quantity.parse_quantity`).
    """

    driver: str
    attributes: Mapping[str, AttributeValue]
    capacity: Mapping[str, Fraction]
    allow_multiple_allocations: bool = False


class CelCompileError(Exception):
    """An invalid selector; ``message`` is the API server's detail text for it."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class CelRuntimeError(Exception):
    """Evaluation failed; upstream's allocator reports ``CEL runtime error: <message>``."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class _EvalError(Exception):
    """A CEL error value travelling up the evaluation."""

    __slots__ = ("message",)

    def __init__(self, message: str) -> None:
        self.message = message


def _fail(message: str) -> NoReturn:
    raise _EvalError(message)


def _no_overload() -> NoReturn:
    raise _EvalError("no such overload")


# ---------------------------------------------------------------------------------------------
# lexer


class _Token:
    __slots__ = ("kind", "text", "pos", "value")

    def __init__(self, kind: str, text: str, pos: int, value: Any = None) -> None:
        self.kind = kind  # "int", "uint", "double", "string", "bytes", "ident", "`ident`", "op", "eof"
        self.text = text
        self.pos = pos
        self.value = value


class _SyntaxError(Exception):
    def __init__(self, pos: int, message: str) -> None:
        super().__init__(message)
        self.pos = pos
        self.message = message


_OPS: Final = ("==", "!=", "<=", ">=", "&&", "||", ".?", "[?", "<", ">", "!", "+", "-", "*", "/", "%",
               "?", ":", ".", ",", "[", "]", "(", ")", "{", "}")
_NUMBER: Final = re.compile(
    r"0[xX][0-9a-fA-F]+[uU]?"
    r"|(?:[0-9]+\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+|\.[0-9]+(?:[eE][+-]?[0-9]+)?)"
    r"|[0-9]+[uU]?"
)
_IDENT: Final = re.compile(r"[_a-zA-Z][_a-zA-Z0-9]*")
_ESC_IDENT: Final = re.compile(r"`[_a-zA-Z0-9.\-/ ]+`")
_BLANK: Final = re.compile(r"(?:[ \t\r\n\f]+|//[^\n]*)+")
_ESCAPES: Final = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
                   "\\": "\\", "'": "'", '"': '"', "`": "`", "?": "?"}


def _lex(src: str) -> list[_Token]:
    out: list[_Token] = []
    i, n = 0, len(src)
    while True:
        m = _BLANK.match(src, i)
        if m:
            i = m.end()
        if i >= n:
            out.append(_Token("eof", "<EOF>", n))
            return out
        ch = src[i]
        if ch.isdigit() or (ch == "." and i + 1 < n and src[i + 1].isdigit()):
            m = _NUMBER.match(src, i)
            assert m is not None
            text = m.group()
            if text[-1] in "uU":
                out.append(_Token("uint", text, i))
            elif text[:2].lower() != "0x" and any(c in text for c in ".eE"):
                out.append(_Token("double", text, i))
            else:
                out.append(_Token("int", text, i))
            i = m.end()
            continue
        if ch in "\"'" or (ch in "rRbB" and i + 1 < n and src[i + 1] in "\"'rRbB"):
            j = i
            raw = is_bytes = False
            while j < n and src[j] in "rRbB" and j - i < 2:
                if src[j] in "rR":
                    raw = True
                else:
                    is_bytes = True
                j += 1
            if j < n and src[j] in "\"'":
                value, end = _lex_string(src, j, raw, is_bytes)
                out.append(_Token("bytes" if is_bytes else "string", src[i:end], i, value))
                i = end
                continue
        m = _IDENT.match(src, i)
        if m:
            out.append(_Token("ident", m.group(), i))
            i = m.end()
            continue
        m = _ESC_IDENT.match(src, i)
        if m:
            out.append(_Token("`ident`", m.group(), i, m.group()[1:-1]))
            i = m.end()
            continue
        for op in _OPS:
            if src.startswith(op, i):
                out.append(_Token("op", op, i))
                i += len(op)
                break
        else:
            raise _SyntaxError(i, f"Syntax error: token recognition error at: '{ch}'")


def _lex_string(src: str, start: int, raw: bool, is_bytes: bool) -> tuple[Any, int]:
    quote = src[start]
    triple = src.startswith(quote * 3, start)
    delim = quote * 3 if triple else quote
    i = start + len(delim)
    n = len(src)
    chars: list[str] = []
    data = bytearray()

    def put(text: str, byte: int | None = None) -> None:
        if is_bytes:
            if byte is not None:
                data.append(byte)
            else:
                data.extend(text.encode("utf-8"))
        else:
            chars.append(text)

    while True:
        if i >= n or (not triple and src[i] in "\r\n"):
            raise _SyntaxError(start, "Syntax error: token recognition error at: " + repr(src[start:i]))
        if src.startswith(delim, i):
            i += len(delim)
            break
        ch = src[i]
        if ch == "\\" and not raw:
            if i + 1 >= n:
                raise _SyntaxError(start, "Syntax error: token recognition error")
            esc = src[i + 1]
            if esc in _ESCAPES:
                put(_ESCAPES[esc])
                i += 2
            elif esc in "xX" and re.fullmatch(r"[0-9a-fA-F]{2}", src[i + 2:i + 4]):
                code = int(src[i + 2:i + 4], 16)
                put(chr(code), code)
                i += 4
            elif esc == "u" and not is_bytes and re.fullmatch(r"[0-9a-fA-F]{4}", src[i + 2:i + 6]):
                put(chr(int(src[i + 2:i + 6], 16)))
                i += 6
            elif esc == "U" and not is_bytes and re.fullmatch(r"[0-9a-fA-F]{8}", src[i + 2:i + 10]):
                code = int(src[i + 2:i + 10], 16)
                if code > 0x10FFFF:
                    raise _SyntaxError(start, "Syntax error: invalid unicode code point")
                put(chr(code))
                i += 10
            elif esc in "0123" and re.fullmatch(r"[0-7]{3}", src[i + 1:i + 4]):
                code = int(src[i + 1:i + 4], 8)
                put(chr(code), code)
                i += 4
            else:
                raise _SyntaxError(start, "Syntax error: token recognition error")
            continue
        put(ch)
        i += 1
    return (bytes(data) if is_bytes else "".join(chars)), i


# ---------------------------------------------------------------------------------------------
# AST


class _Node:
    __slots__ = ("pos",)

    def __init__(self, pos: int) -> None:
        self.pos = pos


class _Lit(_Node):
    __slots__ = ("value",)

    def __init__(self, pos: int, value: Any) -> None:
        super().__init__(pos)
        self.value = value


class _Ident(_Node):
    __slots__ = ("name",)

    def __init__(self, pos: int, name: str) -> None:
        super().__init__(pos)
        self.name = name


class _Select(_Node):
    __slots__ = ("operand", "field", "test_only")

    def __init__(self, pos: int, operand: _Node, field: str, test_only: bool = False) -> None:
        super().__init__(pos)
        self.operand = operand
        self.field = field
        self.test_only = test_only


class _Call(_Node):
    __slots__ = ("fn", "target", "args")

    def __init__(self, pos: int, fn: str, target: _Node | None, args: list[_Node]) -> None:
        super().__init__(pos)
        self.fn = fn
        self.target = target
        self.args = args


class _ListLit(_Node):
    __slots__ = ("elems",)

    def __init__(self, pos: int, elems: list[_Node]) -> None:
        super().__init__(pos)
        self.elems = elems


class _MapLit(_Node):
    __slots__ = ("entries",)

    def __init__(self, pos: int, entries: list[tuple[_Node, _Node]]) -> None:
        super().__init__(pos)
        self.entries = entries


class _Macro(_Node):
    """An expanded comprehension macro: all/exists/exists_one/map/filter (one or two iteration
    variables), transformList/transformMap, or cel.bind (``target`` is then the bound value)."""

    __slots__ = ("kind", "target", "var", "var2", "args")

    def __init__(self, pos: int, kind: str, target: _Node, var: str, var2: str | None, args: list[_Node]) -> None:
        super().__init__(pos)
        self.kind = kind
        self.target = target
        self.var = var
        self.var2 = var2
        self.args = args


_RESERVED: Final = frozenset(("as", "break", "const", "continue", "else", "false", "for", "function", "if",
                              "import", "in", "let", "loop", "package", "namespace", "null", "return", "true",
                              "var", "void", "while"))
_RELATIONS: Final = frozenset(("<", "<=", ">=", ">", "==", "!=", "in"))
_BINARY_FN: Final = {"<": "_<_", "<=": "_<=_", ">=": "_>=_", ">": "_>_", "==": "_==_", "!=": "_!=_",
                     "in": "@in", "+": "_+_", "-": "_-_", "*": "_*_", "/": "_/_", "%": "_%_"}
_MAX_DEPTH: Final = 250


class _Parser:
    """Recursive descent over CEL.g4 (cel-go's grammar), building the macro-expanded AST."""

    def __init__(self, src: str) -> None:
        self.toks = _lex(src)
        self.i = 0
        self.depth = 0
        self.errors: list[tuple[int, str]] = []  # non-syntax parse errors (cel-go reports them after parsing)

    # -- helpers
    def peek(self) -> _Token:
        return self.toks[self.i]

    def next(self) -> _Token:
        tok = self.toks[self.i]
        self.i += 1
        return tok

    def at(self, text: str) -> bool:
        tok = self.toks[self.i]
        return tok.kind == "op" and tok.text == text or (text == "in" and tok.kind == "ident" and tok.text == "in")

    def expect(self, text: str) -> _Token:
        tok = self.next()
        if not (tok.kind == "op" and tok.text == text):
            raise _SyntaxError(tok.pos, f"Syntax error: mismatched input '{tok.text}' expecting '{text}'")
        return tok

    def parse(self) -> _Node:
        node = self.expr()
        tok = self.peek()
        if tok.kind != "eof":
            raise _SyntaxError(tok.pos, f"Syntax error: extraneous input '{tok.text}' expecting <EOF>")
        return node

    # -- grammar
    def expr(self) -> _Node:
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise _SyntaxError(self.peek().pos, "expression recursion limit exceeded: 250")
        try:
            cond = self.or_expr()
            if self.at("?"):
                op = self.next()
                then = self.or_expr()
                self.expect(":")
                other = self.expr()
                return _Call(op.pos, "_?_:_", None, [cond, then, other])
            return cond
        finally:
            self.depth -= 1

    def or_expr(self) -> _Node:
        node = self.and_expr()
        while self.at("||"):
            op = self.next()
            node = _Call(op.pos, "_||_", None, [node, self.and_expr()])
        return node

    def and_expr(self) -> _Node:
        node = self.relation()
        while self.at("&&"):
            op = self.next()
            node = _Call(op.pos, "_&&_", None, [node, self.relation()])
        return node

    def relation(self) -> _Node:
        node = self.addition()
        while True:
            tok = self.peek()
            if tok.text in _RELATIONS and (tok.kind == "op" or tok.text == "in"):
                self.next()
                node = _Call(tok.pos, _BINARY_FN[tok.text], None, [node, self.addition()])
            else:
                return node

    def addition(self) -> _Node:
        node = self.multiplication()
        while self.at("+") or self.at("-"):
            op = self.next()
            node = _Call(op.pos, _BINARY_FN[op.text], None, [node, self.multiplication()])
        return node

    def multiplication(self) -> _Node:
        node = self.unary()
        while self.at("*") or self.at("/") or self.at("%"):
            op = self.next()
            node = _Call(op.pos, _BINARY_FN[op.text], None, [node, self.unary()])
        return node

    def unary(self) -> _Node:
        if self.at("!"):
            ops = []
            while self.at("!"):
                ops.append(self.next())
            node = self.member()
            for op in reversed(ops):
                node = _Call(op.pos, "!_", None, [node])
            return node
        if self.at("-"):
            ops = []
            while self.at("-"):
                ops.append(self.next())
            tok = self.peek()
            if len(ops) % 2 == 1 and tok.kind in ("int", "double") and self._literal_is_whole_member():
                # cel-go folds a negated number literal into the literal itself.
                node = self.member(negate=True)
                ops = ops[:-1]
            else:
                node = self.member()
            for op in reversed(ops):
                node = _Call(op.pos, "-_", None, [node])
            return node
        return self.member()

    def _literal_is_whole_member(self) -> bool:
        nxt = self.toks[self.i + 1]
        return not (nxt.kind == "op" and nxt.text in (".", "[", ".?", "[?"))

    def member(self, negate: bool = False) -> _Node:
        node = self.primary(negate)
        while True:
            tok = self.peek()
            if tok.kind != "op":
                return node
            if tok.text in (".", ".?"):
                self.next()
                if tok.text == ".?":
                    raise _Unsupported(tok.pos, "optional field selection '.?'")
                name_tok = self.next()
                if name_tok.kind not in ("ident", "`ident`"):
                    raise _SyntaxError(name_tok.pos, f"Syntax error: no viable alternative at input '.{name_tok.text}'")
                name = name_tok.value if name_tok.kind == "`ident`" else name_tok.text
                if self.at("(") and name_tok.kind == "ident":
                    open_tok = self.next()
                    args = self.expr_list(")")
                    node = self.member_call(open_tok.pos, node, name, args)
                else:
                    node = _Select(tok.pos, node, name)
            elif tok.text in ("[", "[?"):
                self.next()
                if tok.text == "[?":
                    raise _Unsupported(tok.pos, "optional index '[?'")
                index = self.expr()
                self.expect("]")
                node = _Call(tok.pos, "_[_]", None, [node, index])
            else:
                return node

    def expr_list(self, close: str) -> list[_Node]:
        args: list[_Node] = []
        if self.at(close):
            self.next()
            return args
        while True:
            args.append(self.expr())
            if self.at(","):
                self.next()
                if close != ")" and self.at(close):  # trailing comma in list/map literals
                    self.next()
                    return args
                continue
            self.expect(close)
            return args

    def primary(self, negate: bool) -> _Node:
        tok = self.next()
        kind = tok.kind
        if kind in ("int", "uint", "double"):
            return _Lit(tok.pos, _number(tok, negate))
        if kind == "string" or kind == "bytes":
            return _Lit(tok.pos, tok.value)
        if kind == "ident":
            name = tok.text
            if name == "true" or name == "false":
                return _Lit(tok.pos, name == "true")
            if name == "null":
                return _Lit(tok.pos, None)
            if self.at("("):
                open_tok = self.next()
                args = self.expr_list(")")
                if name in _RESERVED:
                    raise _ParseError(tok.pos, f"reserved identifier: {name}")
                return self.global_call(open_tok.pos, name, args)
            if self.at("{"):
                raise _Unsupported(tok.pos, "message construction")
            if name in _RESERVED:
                raise _ParseError(tok.pos, f"reserved identifier: {name}")
            return _Ident(tok.pos, name)
        if kind == "op":
            if tok.text == ".":
                ident = self.next()
                if ident.kind != "ident":
                    raise _SyntaxError(ident.pos, f"Syntax error: mismatched input '{ident.text}' expecting IDENTIFIER")
                if self.at("("):
                    open_tok = self.next()
                    args = self.expr_list(")")
                    return self.global_call(open_tok.pos, ident.text, args)
                return _Ident(ident.pos, ident.text)
            if tok.text == "(":
                node = self.expr()
                self.expect(")")
                return node
            if tok.text == "[":
                if self.at("?"):
                    raise _Unsupported(self.peek().pos, "optional list elements '[?'")
                return _ListLit(tok.pos, self.expr_list("]"))
            if tok.text == "{":
                return self.map_literal(tok.pos)
        raise _SyntaxError(tok.pos, f"Syntax error: mismatched input '{tok.text}'")

    def map_literal(self, pos: int) -> _Node:
        entries: list[tuple[_Node, _Node]] = []
        if self.at("}"):
            self.next()
            return _MapLit(pos, entries)
        while True:
            if self.at("?"):
                raise _Unsupported(self.peek().pos, "optional map entries '{?'")
            key = self.expr()
            self.expect(":")
            entries.append((key, self.expr()))
            if self.at(","):
                self.next()
                if self.at("}"):
                    self.next()
                    return _MapLit(pos, entries)
                continue
            self.expect("}")
            return _MapLit(pos, entries)

    # -- macros (cel-go parser/macro.go, ext/bindings.go, ext/comprehensions.go)
    def global_call(self, pos: int, name: str, args: list[_Node]) -> _Node:
        if name == "has" and len(args) == 1:
            arg = args[0]
            if isinstance(arg, _Select):
                return _Select(pos, arg.operand, arg.field, test_only=True)
            raise _ParseError(arg.pos, "invalid argument to has() macro")
        return _Call(pos, name, None, args)

    def member_call(self, pos: int, target: _Node, name: str, args: list[_Node]) -> _Node:
        n = len(args)
        if name == "bind" and n == 3 and isinstance(target, _Ident) and target.name == "cel":
            if not isinstance(args[0], _Ident):
                raise _ParseError(args[0].pos, "cel.bind() variable names must be simple identifiers")
            return _Macro(pos, "bind", args[1], args[0].name, None, [args[2]])
        one_var = {"all": 2, "exists": 2, "exists_one": 2, "existsOne": 2, "filter": 2}
        if (name in one_var and n == 2) or (name == "map" and n in (2, 3)):
            if not isinstance(args[0], _Ident):
                message = "argument must be a simple name" if name in ("all", "exists", "exists_one") else "argument is not an identifier"
                raise _ParseError(args[0].pos, message)
            if name == "existsOne":
                return _Call(pos, name, target, args)  # only the two-variable form is a macro
            return _Macro(pos, name, target, args[0].name, None, args[1:])
        two_var = {"all": 3, "exists": 3, "existsOne": 3, "transformList": (3, 4), "transformMap": (3, 4)}
        if name in two_var and (n == two_var[name] or (isinstance(two_var[name], tuple) and n in two_var[name])):  # type: ignore[operator]
            if not isinstance(args[0], _Ident):
                raise _ParseError(args[0].pos, "first variable name must be a simple identifier")
            if not isinstance(args[1], _Ident):
                raise _ParseError(args[1].pos, "second variable name must be a simple identifier")
            if args[0].name == args[1].name:
                raise _ParseError(args[0].pos, "duplicate variable name: " + args[0].name)
            return _Macro(pos, name + "2", target, args[0].name, args[1].name, args[2:])
        return _Call(pos, name, target, args)


class _ParseError(Exception):
    """A parser error that is not an ANTLR syntax error (cel-go reports these itself)."""

    def __init__(self, pos: int, message: str) -> None:
        super().__init__(message)
        self.pos = pos
        self.message = message


class _Unsupported(Exception):
    def __init__(self, pos: int, what: str) -> None:
        super().__init__(what)
        self.pos = pos
        self.what = what


def _number(tok: _Token, negate: bool) -> Any:
    text = tok.text
    sign = "-" if negate else ""
    if tok.kind == "double":
        value = float(sign + text)
        if math.isinf(value):
            raise _ParseError(tok.pos, "invalid double literal")
        return value
    if tok.kind == "uint":
        body = text[:-1]
        value_u = int(body, 16) if body[:2].lower() == "0x" else int(body)
        if value_u > _UINT64_MAX or negate:
            raise _ParseError(tok.pos, "invalid uint literal")
        return _UInt(value_u)
    value_i = int(text, 16) if text[:2].lower() == "0x" else int(text)
    if negate:
        value_i = -value_i
    if not _INT64_MIN <= value_i <= _INT64_MAX:
        raise _ParseError(tok.pos, "invalid int literal")
    return value_i


# ---------------------------------------------------------------------------------------------
# runtime value types that Python lacks


class _UInt(int):
    """CEL ``uint``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"{int(self)}u"


class _PtrQuantity(Fraction):
    """A quantity made by ``add``/``sub``: upstream returns those as *apiservercel.Quantity, whose
    Equal only accepts a Quantity value, so ``quantity("2") == quantity("1").add(1)`` is an error
    (no such overload) while the operands the other way round compare fine."""

    __slots__ = ()


class _TypeValue:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


_TYPE_VALUES: Final = {name: _TypeValue(name) for name in (
    "bool", "int", "uint", "double", "string", "bytes", "list", "map", "null_type", "type",
    "kubernetes.Quantity", "kubernetes.Semver", "kubernetes.DRADevice")}


# ---------------------------------------------------------------------------------------------
# checker types (cel-go common/types.Type, the parts selectors can reach)


class _T:
    __slots__ = ("kind", "name", "params")

    def __init__(self, kind: str, name: str, params: tuple[_T, ...] = ()) -> None:
        self.kind = kind  # bool int uint double string bytes null dyn any error list map type struct param
        self.name = name
        self.params = params

    def exact(self, other: _T) -> bool:
        return (self.kind == other.kind and self.name == other.name and len(self.params) == len(other.params)
                and all(a.exact(b) for a, b in zip(self.params, other.params, strict=True)))

    def fmt(self) -> str:
        """checker.FormatCELType (used in type-check error messages)."""
        if self.kind == "null":
            return "null"
        if not self.params:
            return self.name
        return f"{self.name}({', '.join(p.fmt() for p in self.params)})"

    def __str__(self) -> str:
        """types.Type.String (used by compile.go's "must evaluate to bool" message)."""
        if self.kind == "param":
            return f"<{self.name}>"
        if not self.params:
            return self.name
        return f"{self.name}({', '.join(str(p) for p in self.params)})"


BOOL: Final = _T("bool", "bool")
INT: Final = _T("int", "int")
UINT: Final = _T("uint", "uint")
DOUBLE: Final = _T("double", "double")
STRING: Final = _T("string", "string")
BYTES: Final = _T("bytes", "bytes")
NULL: Final = _T("null", "null_type")
DYN: Final = _T("dyn", "dyn")
ANY: Final = _T("any", "any")
ERROR: Final = _T("error", "!error!")
QUANTITY: Final = _T("struct", "kubernetes.Quantity")
SEMVER: Final = _T("struct", "kubernetes.Semver")
DEVICE: Final = _T("struct", "kubernetes.DRADevice")


def _list(elem: _T) -> _T:
    return _T("list", "list", (elem,))


def _map(key: _T, val: _T) -> _T:
    return _T("map", "map", (key, val))


def _type_of(t: _T) -> _T:
    return _T("type", "type", (t,))


def _param(name: str) -> _T:
    return _T("param", name)


_A, _B = _param("A"), _param("B")
_K, _V = _param("K"), _param("V")
_DEVICE_FIELDS: Final = {
    "driver": STRING,
    "allowMultipleAllocations": BOOL,
    "attributes": _map(STRING, _map(STRING, ANY)),
    "capacity": _map(STRING, _map(STRING, QUANTITY)),
}
_TYPE_IDENTS: Final = {"bool": BOOL, "int": INT, "uint": UINT, "double": DOUBLE, "string": STRING, "bytes": BYTES,
                       "list": _list(DYN), "map": _map(DYN, DYN), "null_type": NULL, "type": _type_of(DYN)}


def _is_dyn(t: _T) -> bool:
    return t.kind in ("dyn", "any")


def _is_dyn_or_error(t: _T) -> bool:
    return t.kind in ("dyn", "any", "error")


Subs = dict[str, _T]


def _find(m: Subs, t: _T) -> _T | None:
    return m.get(t.name) if t.kind == "param" else None


def _substitute(m: Subs, t: _T, to_dyn: bool) -> _T:
    sub = _find(m, t)
    if sub is not None:
        return _substitute(m, sub, to_dyn)
    if t.kind == "param":
        return DYN if to_dyn else t
    if t.params:
        return _T(t.kind, t.name, tuple(_substitute(m, p, to_dyn) for p in t.params))
    return t


def _less_specific(t1: _T, t2: _T) -> bool:
    """isEqualOrLessSpecific."""
    if _is_dyn(t1) or t1.kind == "param":
        return True
    if _is_dyn(t2) or t2.kind == "param":
        return False
    if t1.kind != t2.kind:
        return False
    if t1.kind in ("list", "map"):
        return all(_less_specific(a, b) for a, b in zip(t1.params, t2.params, strict=True))
    if t1.kind == "type":
        return True
    return t1.exact(t2)


def _most_general(t1: _T, t2: _T) -> _T:
    return t1 if _less_specific(t1, t2) else t2


def _not_referenced_in(m: Subs, t: _T, within: _T) -> bool:
    if t.exact(within):
        return False
    if within.kind == "param":
        sub = _find(m, within)
        return True if sub is None else _not_referenced_in(m, t, sub)
    return all(_not_referenced_in(m, t, p) for p in within.params)


def _valid_substitution(m: Subs, t1: _T, t2: _T) -> tuple[bool, bool]:
    if t1.kind == t2.kind and t1.exact(t2):
        return True, True
    sub = _find(m, t2)
    if sub is not None:
        if t1.kind == sub.kind and t1.exact(sub):
            return True, True
        if _assignable_into(m, t1, sub):
            new = _most_general(t1, sub)
            if _not_referenced_in(m, t2, new):
                m[t2.name] = new
            return True, True
        return False, True
    if _not_referenced_in(m, t2, t1):
        m[t2.name] = t1
        return True, False
    return False, False


def _assignable_into(m: Subs, t1: _T, t2: _T) -> bool:
    """internalIsAssignable: is t1 assignable to t2 (updating m)."""
    if t2.kind == "param":
        valid, has_sub = _valid_substitution(m, t1, t2)
        if valid:
            return True
        if has_sub:
            return False
    if t1.kind == "param":
        return _valid_substitution(m, t2, t1)[0]
    if _is_dyn_or_error(t1) or _is_dyn_or_error(t2):
        return True
    if t1.kind == "null":
        return t2.kind in ("null", "struct", "any")
    if t2.kind == "null":
        return t1.kind in ("struct", "any")
    if t1.kind in ("list", "map", "type"):
        if t1.kind == "type":
            return t2.kind == "type"
        return t1.kind == t2.kind and all(_assignable_into(m, a, b) for a, b in zip(t1.params, t2.params, strict=True))
    return t1.kind == t2.kind and t1.name == t2.name


def _assignable(m: Subs, t1: _T, t2: _T) -> Subs | None:
    copy = dict(m)
    return copy if _assignable_into(copy, t1, t2) else None


def _assignable_list(m: Subs, l1: Sequence[_T], l2: Sequence[_T]) -> Subs | None:
    if len(l1) != len(l2):
        return None
    copy = dict(m)
    for a, b in zip(l1, l2, strict=True):
        if not _assignable_into(copy, a, b):
            return None
    return copy


# ---------------------------------------------------------------------------------------------
# runtime: values, equality, ordering


def _type_name(v: Any) -> str:
    t = type(v)
    if t is bool:
        return "bool"
    if t is int:
        return "int"
    if t is _UInt:
        return "uint"
    if t is float:
        return "double"
    if t is str:
        return "string"
    if t is bytes:
        return "bytes"
    if v is None:
        return "null_type"
    if t is list:
        return "list"
    if isinstance(v, Mapping):
        return "map"
    if isinstance(v, Fraction):
        return "kubernetes.Quantity"
    if t is _Semver:
        return "kubernetes.Semver"
    if t is _TypeValue:
        return "type"
    if t is DeviceView:
        return "kubernetes.DRADevice"
    return "unknown"


_NUMERIC: Final = (int, _UInt, float)


def _is_num(v: Any) -> bool:
    t = type(v)
    return t is int or t is _UInt or t is float


def _equal(a: Any, b: Any) -> bool:
    """types.Equal: CEL's heterogeneous equality."""
    if a is None or b is None:
        return a is None and b is None
    ta = type(a)
    if ta is str or ta is bool or ta is bytes:
        return type(b) is ta and a == b
    if ta is int or ta is _UInt or ta is float:
        return _is_num(b) and a == b
    if ta is Fraction or ta is _PtrQuantity:
        if type(b) is Fraction or (ta is _PtrQuantity and type(b) is _PtrQuantity):
            return bool(a == b)
        _no_overload()
    if ta is _Semver:
        if type(b) is _Semver:
            return bool(a.compare(b) == 0)
        _no_overload()
    if ta is list:
        if type(b) is not list or len(a) != len(b):
            return False
        return all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, Mapping):
        if not isinstance(b, Mapping) or len(a) != len(b):
            return False
        for k, v in a.items():
            found, other = _map_find(b, k)
            if not found or not _equal(v, other):
                return False
        return True
    if ta is _TypeValue:
        return type(b) is _TypeValue and a.name == b.name
    if ta is DeviceView:
        return a is b or a == b
    return False


def _compare(a: Any, b: Any) -> int:
    ta, tb = type(a), type(b)
    if (ta is tb and ta in (bool, str, bytes)) or (_is_num(a) and _is_num(b)):
        if ta is float and math.isnan(a) or tb is float and math.isnan(b):
            _fail("NaN values cannot be ordered")
        return -1 if a < b else (1 if a > b else 0)
    _no_overload()


def _map_find(m: Mapping[Any, Any], key: Any) -> tuple[bool, Any]:
    """Look a key up with CEL's numeric key equivalence (1 == 1u == 1.0)."""
    tk = type(key)
    if tk is int or tk is _UInt or tk is float or tk is bool:
        if tk is float and not key.is_integer():
            return False, None
        if tk is not bool:
            for k, v in m.items():
                if _is_num(k) and k == key:
                    return True, v
            return False, None
        for k, v in m.items():
            if type(k) is bool and k == key:
                return True, v
        return False, None
    if key in m:
        return True, m[key]
    return False, None


def _fmt_key(key: Any) -> str:
    if type(key) is bool:
        return "true" if key else "false"
    return str(key)


def _index(container: Any, key: Any) -> Any:
    if type(container) is list:
        tk = type(key)
        if tk is int or tk is _UInt or (tk is float and key.is_integer()):
            i = int(key)
            if 0 <= i < len(container):
                return container[i]
            _fail(f"index '{i}' out of range in list size '{len(container)}'")
        if tk is float:
            _fail(f"unsupported index value {_go_float(key)} in list")
        _fail(f"unsupported index type '{_type_name(key)}' in list")
    if isinstance(container, Mapping):
        if type(container) is _DomainMap:
            found = container.get(key)
            return _EMPTY_MAP if found is None else found
        found2, value = _map_find(container, key)
        if found2:
            return value
        _fail(f"no such key: {_fmt_key(key)}")
    _no_overload()


def _in(elem: Any, container: Any) -> bool:
    if type(container) is list:
        return any(_equal(elem, x) for x in container)
    if isinstance(container, Mapping):
        return _map_find(container, elem)[0]
    _no_overload()


def _size(v: Any) -> int:
    t = type(v)
    if t is str or t is bytes or t is list or isinstance(v, Mapping):
        return len(v)
    _no_overload()


def _check_int(v: int) -> int:
    if not _INT64_MIN <= v <= _INT64_MAX:
        _fail("integer overflow")
    return v


def _check_uint(v: int) -> _UInt:
    if not 0 <= v <= _UINT64_MAX:
        _fail("unsigned integer overflow")
    return _UInt(v)


def _add(a: Any, b: Any) -> Any:
    ta = type(a)
    if ta is not type(b):
        _no_overload()
    if ta is int:
        return _check_int(a + b)
    if ta is _UInt:
        return _check_uint(a + b)
    if ta is float or ta is str or ta is bytes or ta is list:
        return a + b
    _no_overload()


def _sub(a: Any, b: Any) -> Any:
    ta = type(a)
    if ta is not type(b):
        _no_overload()
    if ta is int:
        return _check_int(a - b)
    if ta is _UInt:
        return _check_uint(a - b)
    if ta is float:
        return a - b
    _no_overload()


def _mul(a: Any, b: Any) -> Any:
    ta = type(a)
    if ta is not type(b):
        _no_overload()
    if ta is int:
        return _check_int(a * b)
    if ta is _UInt:
        return _check_uint(a * b)
    if ta is float:
        return a * b
    _no_overload()


def _div(a: Any, b: Any) -> Any:
    ta = type(a)
    if ta is not type(b):
        _no_overload()
    if ta is int or ta is _UInt:
        if b == 0:
            _fail("division by zero")
        q = abs(a) // abs(b)
        q = q if (a >= 0) == (b >= 0) else -q
        return _check_int(q) if ta is int else _UInt(q)
    if ta is float:
        if b == 0.0:
            if a == 0.0 or math.isnan(a):
                return math.nan
            return math.copysign(math.inf, a) * math.copysign(1.0, b)
        return a / b
    _no_overload()


def _mod(a: Any, b: Any) -> Any:
    ta = type(a)
    if ta is not type(b) or (ta is not int and ta is not _UInt):
        _no_overload()
    if b == 0:
        _fail("modulus by zero")
    if ta is int and a == _INT64_MIN and b == -1:
        _fail("integer overflow")
    r = abs(a) % abs(b)
    r = r if a >= 0 else -r
    return r if ta is int else _UInt(r)


def _neg(a: Any) -> Any:
    ta = type(a)
    if ta is int:
        return _check_int(-a)
    if ta is float:
        return -a
    _no_overload()


def _not(a: Any) -> Any:
    if type(a) is bool:
        return not a
    _no_overload()


def _go_float(f: float) -> str:
    """Go's fmt %g for a float64 (shortest digits; exponent form below 1e-4 and from 1e6)."""
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    if f == 0:
        return "-0" if math.copysign(1.0, f) < 0 else "0"
    dec = Decimal(repr(f))
    sign = "-" if dec.is_signed() else ""
    digits = "".join(map(str, dec.as_tuple().digits)).lstrip("0").rstrip("0") or "0"
    exp = dec.adjusted()
    if exp < -4 or exp >= 6:
        body = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{body}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if exp < 0:
        return f"{sign}0.{'0' * (-exp - 1)}{digits}"
    if len(digits) <= exp + 1:
        return sign + digits + "0" * (exp + 1 - len(digits))
    return f"{sign}{digits[:exp + 1]}.{digits[exp + 1:]}"


# -- conversions


def _to_int(v: Any) -> int:
    t = type(v)
    if t is int:
        return int(v)
    if t is _UInt:
        if v > _INT64_MAX:
            _fail("integer overflow")
        return int(v)
    if t is float:
        if math.isnan(v) or not (-9.223372036854775808e18 <= v < 9.223372036854775808e18):
            _fail("integer overflow")
        return int(v)
    if t is str:
        if re.fullmatch(r"[+-]?[0-9]+", v) and _INT64_MIN <= int(v) <= _INT64_MAX:
            return int(v)
        _fail("type conversion error from 'string' to 'int'")
    _no_overload()


def _to_uint(v: Any) -> _UInt:
    t = type(v)
    if t is _UInt:
        return v  # type: ignore[no-any-return]
    if t is int:
        if v < 0:
            _fail("unsigned integer overflow")
        return _UInt(v)
    if t is float:
        if math.isnan(v) or not (0 <= v < 1.8446744073709552e19):
            _fail("unsigned integer overflow")
        return _UInt(int(v))
    if t is str:
        if re.fullmatch(r"\+?[0-9]+", v) and int(v) <= _UINT64_MAX:
            return _UInt(int(v))
        _fail("type conversion error from 'string' to 'uint'")
    _no_overload()


_GO_FLOAT: Final = re.compile(r"[+-]?(?:(?:[0-9](?:_?[0-9])*)?\.?[0-9]*(?:[eE][+-]?[0-9]+)?|inf(?:inity)?|nan)", re.I)


def _to_double(v: Any) -> float:
    t = type(v)
    if t is float:
        return v  # type: ignore[no-any-return]
    if t is int or t is _UInt:
        return float(v)
    if t is str:
        try:
            if _GO_FLOAT.fullmatch(v) and v.strip():
                return float(v.replace("_", ""))
        except (ValueError, OverflowError):
            pass
        _fail("type conversion error from 'string' to 'double'")
    _no_overload()


def _to_string(v: Any) -> str:
    t = type(v)
    if t is str:
        return v  # type: ignore[no-any-return]
    if t is bool:
        return "true" if v else "false"
    if t is int or t is _UInt:
        return str(int(v))
    if t is float:
        return _go_float(v)
    if t is bytes:
        try:
            return v.decode("utf-8")  # type: ignore[no-any-return]
        except UnicodeDecodeError:
            _fail("invalid UTF-8 in bytes, cannot convert to string")
    _no_overload()


def _to_bytes(v: Any) -> bytes:
    if type(v) is bytes:
        return v
    if type(v) is str:
        return v.encode("utf-8")
    _no_overload()


_GO_BOOLS: Final = {"1": True, "t": True, "T": True, "TRUE": True, "true": True, "True": True,
                    "0": False, "f": False, "F": False, "FALSE": False, "false": False, "False": False}


def _to_bool(v: Any) -> bool:
    if type(v) is bool:
        return v
    if type(v) is str:
        if v in _GO_BOOLS:
            return _GO_BOOLS[v]
        _fail("type conversion error from 'string' to 'bool'")
    _no_overload()


def _type(v: Any) -> _TypeValue:
    return _TYPE_VALUES.get(_type_name(v)) or _TypeValue(_type_name(v))


# -- strings (core and ext.Strings v2)


def _str(v: Any) -> str:
    if type(v) is not str:
        _no_overload()
    return v


def _int(v: Any) -> int:
    if type(v) is not int:
        _no_overload()
    return v


def _contains(s: Any, sub: Any) -> bool:
    return _str(sub) in _str(s)


def _starts_with(s: Any, prefix: Any) -> bool:
    return _str(s).startswith(_str(prefix))


def _ends_with(s: Any, suffix: Any) -> bool:
    return _str(s).endswith(_str(suffix))


_REGEXES: dict[str, re.Pattern[str]] = {}


def _regex(pattern: str) -> re.Pattern[str]:
    """A Python regex for an RE2 pattern (the common subset: RE2-only syntax such as \\pL or \\z
    is not translated)."""
    known = _REGEXES.get(pattern)
    if known is None:
        try:
            known = re.compile(pattern)
        except re.error as err:
            _fail(f"error parsing regexp: {err}")
        if len(_REGEXES) >= 1024:
            _REGEXES.clear()
        _REGEXES[pattern] = known
    return known


def _matches(s: Any, pattern: Any) -> bool:
    return _regex(_str(pattern)).search(_str(s)) is not None


def _regex_find(s: Any, pattern: Any) -> str:
    m = _regex(_str(pattern)).search(_str(s))
    return m.group() if m else ""


def _find_all(s: Any, pattern: Any, limit: Any = -1) -> list[Any]:
    n = _int(limit)
    if n == 0:
        return []
    found = [m.group() for m in _regex(_str(pattern)).finditer(_str(s))]
    return found if n < 0 else found[:n]


def _char_at(s: Any, i: Any) -> str:
    text, n = _str(s), _int(i)
    if n < 0 or n > len(text):
        _fail(f"index out of range: {n}")
    return text[n] if n < len(text) else ""


def _index_of(s: Any, sub: Any, offset: Any = 0) -> int:
    text, needle, off = _str(s), _str(sub), _int(offset)
    if needle == "":
        return off
    if off < 0:
        _fail(f"index out of range: {off}")
    if off >= len(text):
        return -1
    return text.find(needle, off)


def _last_index_of(s: Any, sub: Any, offset: Any = None) -> int:
    text, needle = _str(s), _str(sub)
    if offset is None:
        return len(text) if needle == "" else text.rfind(needle)
    off = _int(offset)
    if needle == "":
        return off
    if off < 0:
        _fail(f"index out of range: {off}")
    if off >= len(text):
        return -1
    return text.rfind(needle, 0, min(off, len(text) - len(needle)) + len(needle))


def _lower_ascii(s: Any) -> str:
    return "".join(c.lower() if c < "\x80" else c for c in _str(s))


def _upper_ascii(s: Any) -> str:
    return "".join(c.upper() if c < "\x80" else c for c in _str(s))


def _replace(s: Any, old: Any, new: Any, n: Any = -1) -> str:
    count = _int(n)
    return _str(s).replace(_str(old), _str(new), count if count >= 0 else -1)


def _split(s: Any, sep: Any, n: Any = -1) -> list[Any]:
    text, separator, limit = _str(s), _str(sep), _int(n)
    if limit == 0:
        return []
    if separator == "":
        chars = list(text)
        if 0 < limit < len(chars):
            return chars[:limit - 1] + ["".join(chars[limit - 1:])]
        return chars
    return text.split(separator, limit - 1 if limit > 0 else -1)


def _substring(s: Any, start: Any, end: Any = None) -> str:
    text, a = _str(s), _int(start)
    if end is None:
        if a < 0 or a > len(text):
            _fail(f"index out of range: {a}")
        return text[a:]
    b = _int(end)
    if a > b:
        _fail(f"invalid substring range. start: {a}, end: {b}")
    if a < 0 or a > len(text):
        _fail(f"index out of range: {a}")
    if b < 0 or b > len(text):
        _fail(f"index out of range: {b}")
    return text[a:b]


_GO_SPACE: Final = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"


def _trim(s: Any) -> str:
    return _str(s).strip(_GO_SPACE)


def _join(items: Any, sep: Any = "") -> str:
    if type(items) is not list:
        _no_overload()
    for item in items:
        if type(item) is not str:
            _fail(f"join: invalid input: {item}")
    return _str(sep).join(items)


def _quote(s: Any) -> str:
    out = ['"']
    for ch in _str(s):
        code = ord(ch)
        if ch in _QUOTE_ESCAPES:
            out.append(_QUOTE_ESCAPES[ch])
        elif 0xD800 <= code <= 0xDFFF:
            out.append("\ufffd")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


_QUOTE_ESCAPES: Final = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t",
                         "\v": "\\v", "\\": "\\\\", '"': '\\"'}


# -- lists (Kubernetes' lists library, ext.Lists v3, ext.Sets)


def _lst(v: Any) -> list[Any]:
    if type(v) is not list:
        _no_overload()
    return v


def _is_sorted(v: Any) -> bool:
    items = _lst(v)
    return all(_compare(items[i], items[i + 1]) <= 0 for i in range(len(items) - 1))


def _sum(zero: Any) -> Callable[[Any], Any]:
    def run(v: Any) -> Any:
        acc = zero
        for item in _lst(v):
            acc = _add(acc, item)
        return acc
    return run


def _extreme(name: str, prefer: int) -> Callable[[Any], Any]:
    def run(v: Any) -> Any:
        items = _lst(v)
        if not items:
            _fail(f"{name} called on empty list")
        best = items[0]
        for item in items[1:]:
            if _compare(best, item) == prefer:
                best = item
        return best
    return run


def _list_index_of(v: Any, item: Any) -> int:
    for i, x in enumerate(_lst(v)):
        if _equal(x, item):
            return i
    return -1


def _list_last_index_of(v: Any, item: Any) -> int:
    items = _lst(v)
    for i in range(len(items) - 1, -1, -1):
        if _equal(items[i], item):
            return i
    return -1


def _slice(v: Any, start: Any, end: Any) -> list[Any]:
    items, a, b = _lst(v), _int(start), _int(end)
    if a < 0 or b < 0:
        _fail(f"cannot slice({a}, {b}), negative indexes not supported")
    if a > b:
        _fail(f"cannot slice({a}, {b}), start index must be less than or equal to end index")
    if len(items) < b:
        _fail(f"cannot slice({a}, {b}), list is length {len(items)}")
    return items[a:b]


def _flatten(v: Any, depth: Any = 1) -> list[Any]:
    level = _int(depth)
    if level < 0:
        _fail("level must be non-negative")
    out: list[Any] = []
    for item in _lst(v):
        if type(item) is list and level > 0:
            out.extend(_flatten(item, level - 1))
        else:
            out.append(item)
    return out


def _sort(v: Any) -> list[Any]:
    items = _lst(v)
    if items:
        first = type(items[0])
        if first not in (bool, int, _UInt, float, str, bytes):
            _fail("list elements must be comparable")
        if any(type(x) is not first for x in items):
            _fail("list elements must have the same type")
    return sorted(items, key=functools.cmp_to_key(_compare))


def _range(n: Any) -> list[Any]:
    return list(range(_int(n)))


def _reverse(v: Any) -> list[Any]:
    return list(reversed(_lst(v)))


def _distinct(v: Any) -> list[Any]:
    out: list[Any] = []
    for item in _lst(v):
        if not any(_equal(item, x) for x in out):
            out.append(item)
    return out


def _sets_contains(a: Any, b: Any) -> bool:
    left = _lst(a)
    return all(any(_equal(x, y) for y in left) for x in _lst(b))


def _sets_equivalent(a: Any, b: Any) -> bool:
    return _sets_contains(a, b) and _sets_contains(b, a)


def _sets_intersects(a: Any, b: Any) -> bool:
    right = _lst(b)
    return any(any(_equal(x, y) for y in right) for x in _lst(a))


def _includes(target: Any, arg: Any) -> bool:
    """DRA's includes (compile.go includesFunc)."""
    if type(target) is list:
        for i, item in enumerate(target):
            if i >= 64:  # resourceapi.ResourceSliceMaxAttributeValuesPerDevice
                _fail("'includes' function cannot be applied to lists longer than 64 values")
            if _is_true_equal(item, arg):
                return True
        return False
    return _is_true_equal(target, arg)


def _is_true_equal(a: Any, b: Any) -> bool:
    try:
        return _equal(a, b)
    except _EvalError:
        return False


# -- quantity (Kubernetes' quantity library)


def _qty(v: Any) -> Fraction:
    if not isinstance(v, Fraction):
        _no_overload()
    return v


def _quantity(s: Any) -> Fraction:
    try:
        return parse_quantity(_str(s))
    except FieldError as err:
        text = str(err)
        _fail(ERR_SUFFIX if ERR_SUFFIX in text else ERR_FORMAT_WRONG)


def _is_quantity(s: Any) -> bool:
    try:
        parse_quantity(_str(s))
    except FieldError:
        return False
    return True


def _q_sign(q: Any) -> int:
    v = _qty(q)
    return (v > 0) - (v < 0)


def _q_compare(a: Any, b: Any) -> int:
    x, y = _qty(a), _qty(b)
    return (x > y) - (x < y)


def _q_greater(a: Any, b: Any) -> bool:
    return _q_compare(a, b) == 1 if isinstance(b, Fraction) else _cmp_any(a, b, 1)


def _q_less(a: Any, b: Any) -> bool:
    return _q_compare(a, b) == -1 if isinstance(b, Fraction) else _cmp_any(a, b, -1)


def _cmp_any(a: Any, b: Any, want: int) -> bool:
    """isGreaterThan/isLessThan/compareTo dispatch on the receiver's runtime type."""
    if type(a) is _Semver and type(b) is _Semver:
        return bool(a.compare(b) == want)
    if isinstance(a, Fraction) and isinstance(b, Fraction):
        return bool(((a > b) - (a < b)) == want)
    _no_overload()


def _compare_to(a: Any, b: Any) -> int:
    if type(a) is _Semver and type(b) is _Semver:
        return a.compare(b)
    return _q_compare(a, b)


def _q_float(q: Any) -> float:
    v = _qty(q)
    try:
        return float(v)
    except OverflowError:
        return math.inf if v > 0 else -math.inf


def _q_is_integer(q: Any) -> bool:
    v = _qty(q)
    return v.denominator == 1 and _INT64_MIN <= v.numerator <= _INT64_MAX


def _q_as_integer(q: Any) -> int:
    v = _qty(q)
    if v.denominator != 1 or not _INT64_MIN <= v.numerator <= _INT64_MAX:
        _fail("cannot convert value to integer")
    return v.numerator


def _q_add(a: Any, b: Any) -> Fraction:
    x = _qty(a)
    if isinstance(b, Fraction):
        return _PtrQuantity(x + b)
    return _PtrQuantity(x + _int(b))


def _q_sub(a: Any, b: Any) -> Fraction:
    x = _qty(a)
    if isinstance(b, Fraction):
        return _PtrQuantity(x - b)
    return _PtrQuantity(x - _int(b))


# -- semver (Kubernetes' semver library)


def _sv(v: Any) -> _Semver:
    if type(v) is not _Semver:
        _no_overload()
    return v


def _semver(s: Any, normalize: Any = False) -> _Semver:
    text = _str(s)
    if type(normalize) is not bool:
        _no_overload()
    try:
        return _normalize_and_parse(text) if normalize else _parse_semver(text)
    except ValueError as err:
        _fail(str(err))


def _is_semver(s: Any, normalize: Any = False) -> bool:
    try:
        _semver(s, normalize)
    except _EvalError as err:
        if err.message == "no such overload":
            raise
        return False
    return True


def _sv_major(v: Any) -> int:
    return _sv(v).major


def _sv_minor(v: Any) -> int:
    return _sv(v).minor


def _sv_patch(v: Any) -> int:
    return _sv(v).patch


# ---------------------------------------------------------------------------------------------
# declarations: name -> overloads (id, member?, argument types, result type)

_Overload = tuple[str, bool, tuple[_T, ...], _T]
_DECLS: dict[str, list[_Overload]] = {}


def _decl(name: str, oid: str, member: bool, args: Sequence[_T], result: _T) -> None:
    _DECLS.setdefault(name, []).append((oid, member, tuple(args), result))


def _declare_library() -> None:
    prims = {"bool": BOOL, "int": INT, "uint": UINT, "double": DOUBLE, "string": STRING, "bytes": BYTES}
    _decl("_==_", "equals", False, (_A, _A), BOOL)
    _decl("_!=_", "not_equals", False, (_A, _A), BOOL)
    nums = {"int64": INT, "uint64": UINT, "double": DOUBLE}
    for op, word in (("_<_", "less"), ("_<=_", "less_equals"), ("_>_", "greater"), ("_>=_", "greater_equals")):
        for name, t in prims.items():
            _decl(op, f"{word}_{name}", False, (t, t), BOOL)
        for n1, t1 in nums.items():
            for n2, t2 in nums.items():
                if n1 != n2:
                    _decl(op, f"{word}_{n1}_{n2}", False, (t1, t2), BOOL)
    for name in ("int", "uint", "double", "string", "bytes"):
        _decl("_+_", f"add_{name}", False, (prims[name], prims[name]), prims[name])
    _decl("_+_", "add_list", False, (_list(_A), _list(_A)), _list(_A))
    for op, word in (("_-_", "subtract"), ("_*_", "multiply"), ("_/_", "divide")):
        for name in ("int", "uint", "double"):
            _decl(op, f"{word}_{name}", False, (prims[name], prims[name]), prims[name])
    _decl("_%_", "modulo_int64", False, (INT, INT), INT)
    _decl("_%_", "modulo_uint64", False, (UINT, UINT), UINT)
    _decl("-_", "negate_int64", False, (INT,), INT)
    _decl("-_", "negate_double", False, (DOUBLE,), DOUBLE)
    _decl("!_", "logical_not", False, (BOOL,), BOOL)
    _decl("_&&_", "logical_and", False, (BOOL, BOOL), BOOL)
    _decl("_||_", "logical_or", False, (BOOL, BOOL), BOOL)
    _decl("_?_:_", "conditional", False, (BOOL, _A, _A), _A)
    _decl("_[_]", "index_list", False, (_list(_A), INT), _A)
    _decl("_[_]", "index_map", False, (_map(_K, _V), _K), _V)
    _decl("@in", "in_list", False, (_A, _list(_A)), BOOL)
    _decl("@in", "in_map", False, (_K, _map(_K, _V)), BOOL)
    for member in (False, True):
        for name, t in (("string", STRING), ("bytes", BYTES), ("list", _list(_A)), ("map", _map(_K, _V))):
            _decl("size", f"size_{name}", member, (t,), INT)
    for fn in ("contains", "startsWith", "endsWith", "matches"):
        _decl(fn, fn, True, (STRING, STRING), BOOL)
    _decl("matches", "matches", False, (STRING, STRING), BOOL)
    for target, sources in (("int", ("int", "uint", "double", "string")), ("uint", ("int", "uint", "double", "string")),
                            ("double", ("int", "uint", "double", "string")),
                            ("string", ("int", "uint", "double", "string", "bytes", "bool")),
                            ("bytes", ("bytes", "string")), ("bool", ("bool", "string"))):
        for src in sources:
            _decl(target, f"{src}_to_{target}", False, (prims[src],), prims[target])
    _decl("dyn", "to_dyn", False, (_A,), DYN)
    _decl("type", "type", False, (_A,), _type_of(_A))
    # ext.Strings(2)
    _decl("charAt", "string_char_at_int", True, (STRING, INT), STRING)
    _decl("indexOf", "string_index_of_string", True, (STRING, STRING), INT)
    _decl("indexOf", "string_index_of_string_int", True, (STRING, STRING, INT), INT)
    _decl("lastIndexOf", "string_last_index_of_string", True, (STRING, STRING), INT)
    _decl("lastIndexOf", "string_last_index_of_string_int", True, (STRING, STRING, INT), INT)
    _decl("lowerAscii", "string_lower_ascii", True, (STRING,), STRING)
    _decl("upperAscii", "string_upper_ascii", True, (STRING,), STRING)
    _decl("replace", "string_replace_string_string", True, (STRING, STRING, STRING), STRING)
    _decl("replace", "string_replace_string_string_int", True, (STRING, STRING, STRING, INT), STRING)
    _decl("split", "string_split_string", True, (STRING, STRING), _list(STRING))
    _decl("split", "string_split_string_int", True, (STRING, STRING, INT), _list(STRING))
    _decl("substring", "string_substring_int", True, (STRING, INT), STRING)
    _decl("substring", "string_substring_int_int", True, (STRING, INT, INT), STRING)
    _decl("trim", "string_trim", True, (STRING,), STRING)
    _decl("join", "list_join", True, (_list(STRING),), STRING)
    _decl("join", "list_join_string", True, (_list(STRING), STRING), STRING)
    _decl("strings.quote", "strings_quote", False, (STRING,), STRING)
    # Kubernetes regex library
    _decl("find", "string_find_string", True, (STRING, STRING), STRING)
    _decl("findAll", "string_find_all_string", True, (STRING, STRING), _list(STRING))
    _decl("findAll", "string_find_all_string_int", True, (STRING, STRING, INT), _list(STRING))
    # Kubernetes lists library
    for name in ("int", "uint", "double", "bool", "string", "bytes"):
        t = prims[name]
        _decl("isSorted", f"list_{name}_is_sorted_bool", True, (_list(t),), BOOL)
        _decl("max", f"list_{name}_max_{name}", True, (_list(t),), t)
        _decl("min", f"list_{name}_min_{name}", True, (_list(t),), t)
        if name in ("int", "uint", "double"):
            _decl("sum", f"list_{name}_sum_{name}", True, (_list(t),), t)
    _decl("indexOf", "list_a_index_of_int", True, (_list(_A), _A), INT)
    _decl("lastIndexOf", "list_a_last_index_of_int", True, (_list(_A), _A), INT)
    # ext.Lists(3)
    _decl("slice", "list_slice", True, (_list(_A), INT, INT), _list(_A))
    _decl("flatten", "list_flatten", True, (_list(_list(_A)),), _list(_A))
    _decl("flatten", "list_flatten_int", True, (_list(DYN), INT), _list(DYN))
    for name in ("int", "uint", "double", "bool", "string", "bytes"):
        _decl("sort", f"list_{name}_sort", True, (_list(prims[name]),), _list(prims[name]))
    _decl("lists.range", "lists_range", False, (INT,), _list(INT))
    _decl("reverse", "list_reverse", True, (_list(_A),), _list(_A))
    _decl("distinct", "list_distinct", True, (_list(_A),), _list(_A))
    # ext.Sets
    for fn in ("sets.contains", "sets.equivalent", "sets.intersects"):
        _decl(fn, fn.replace(".", "_") + "_list", False, (_list(_A), _list(_A)), BOOL)
    # Kubernetes quantity library
    _decl("quantity", "string_to_quantity", False, (STRING,), QUANTITY)
    _decl("isQuantity", "is_quantity_string", False, (STRING,), BOOL)
    _decl("sign", "quantity_sign", False, (QUANTITY,), INT)
    _decl("isGreaterThan", "quantity_is_greater_than", True, (QUANTITY, QUANTITY), BOOL)
    _decl("isLessThan", "quantity_is_less_than", True, (QUANTITY, QUANTITY), BOOL)
    _decl("compareTo", "quantity_compare_to", True, (QUANTITY, QUANTITY), INT)
    _decl("asApproximateFloat", "quantity_get_float", True, (QUANTITY,), DOUBLE)
    _decl("asInteger", "quantity_get_int", True, (QUANTITY,), INT)
    _decl("isInteger", "quantity_is_integer", True, (QUANTITY,), BOOL)
    _decl("add", "quantity_add", True, (QUANTITY, QUANTITY), QUANTITY)
    _decl("add", "quantity_add_int", True, (QUANTITY, INT), QUANTITY)
    _decl("sub", "quantity_sub", True, (QUANTITY, QUANTITY), QUANTITY)
    _decl("sub", "quantity_sub_int", True, (QUANTITY, INT), QUANTITY)
    # Kubernetes semver library (version 1)
    _decl("semver", "string_to_semver", False, (STRING,), SEMVER)
    _decl("semver", "string_bool_to_semver", False, (STRING, BOOL), SEMVER)
    _decl("isSemver", "is_semver_string", False, (STRING,), BOOL)
    _decl("isSemver", "is_semver_string_bool", False, (STRING, BOOL), BOOL)
    _decl("isGreaterThan", "semver_is_greater_than", True, (SEMVER, SEMVER), BOOL)
    _decl("isLessThan", "semver_is_less_than", True, (SEMVER, SEMVER), BOOL)
    _decl("compareTo", "semver_compare_to", True, (SEMVER, SEMVER), INT)
    _decl("major", "semver_major", True, (SEMVER,), INT)
    _decl("minor", "semver_minor", True, (SEMVER,), INT)
    _decl("patch", "semver_patch", True, (SEMVER,), INT)
    # DRA (compile.go, 1.36; declared in the StoredExpressions environment the scheduler uses)
    _decl("includes", "dra_includes_dyn_dyn", True, (DYN, DYN), BOOL)


_declare_library()


def _lt(a: Any, b: Any) -> bool:
    return _compare(a, b) < 0


def _le(a: Any, b: Any) -> bool:
    return _compare(a, b) <= 0


def _gt(a: Any, b: Any) -> bool:
    return _compare(a, b) > 0


def _ge(a: Any, b: Any) -> bool:
    return _compare(a, b) >= 0


def _ne(a: Any, b: Any) -> bool:
    return not _equal(a, b)


def _index_of_any(target: Any, *args: Any) -> int:
    return _index_of(target, *args) if type(target) is str else _list_index_of(target, *args)


def _last_index_of_any(target: Any, *args: Any) -> int:
    return _last_index_of(target, *args) if type(target) is str else _list_last_index_of(target, *args)


def _flatten_any(v: Any, *depth: Any) -> list[Any]:
    if not depth:
        out: list[Any] = []
        for item in _lst(v):
            if type(item) is not list:
                _no_overload()
            out.extend(item)
        return out
    return _flatten(v, depth[0])


# Runtime implementations by function name: each checks its arguments' runtime types (raising
# "no such overload"), so one callable serves all of a name's overloads.
_IMPLS: Final[dict[str, Callable[..., Any]]] = {
    "_==_": _equal, "_!=_": _ne, "_<_": _lt, "_<=_": _le, "_>_": _gt, "_>=_": _ge,
    "_+_": _add, "_-_": _sub, "_*_": _mul, "_/_": _div, "_%_": _mod, "-_": _neg, "!_": _not,
    "_[_]": _index, "@in": _in, "size": _size,
    "contains": _contains, "startsWith": _starts_with, "endsWith": _ends_with, "matches": _matches,
    "int": _to_int, "uint": _to_uint, "double": _to_double, "string": _to_string, "bytes": _to_bytes,
    "bool": _to_bool, "dyn": lambda v: v, "type": _type,
    "charAt": _char_at, "indexOf": _index_of_any, "lastIndexOf": _last_index_of_any,
    "lowerAscii": _lower_ascii, "upperAscii": _upper_ascii, "replace": _replace, "split": _split,
    "substring": _substring, "trim": _trim, "join": _join, "strings.quote": _quote,
    "find": _regex_find, "findAll": _find_all,
    "isSorted": _is_sorted, "sum": _sum(0), "max": _extreme("max", -1), "min": _extreme("min", 1),
    "slice": _slice, "flatten": _flatten_any, "sort": _sort, "lists.range": _range, "reverse": _reverse,
    "distinct": _distinct, "sets.contains": _sets_contains, "sets.equivalent": _sets_equivalent,
    "sets.intersects": _sets_intersects,
    "quantity": _quantity, "isQuantity": _is_quantity, "sign": _q_sign,
    "isGreaterThan": lambda a, b: _cmp_any(a, b, 1), "isLessThan": lambda a, b: _cmp_any(a, b, -1),
    "compareTo": _compare_to, "asApproximateFloat": _q_float, "asInteger": _q_as_integer,
    "isInteger": _q_is_integer, "add": _q_add, "sub": _q_sub,
    "semver": _semver, "isSemver": _is_semver, "major": _sv_major, "minor": _sv_minor, "patch": _sv_patch,
    "includes": _includes,
}

# In upstream's environment but not implemented here: compiling them fails with this note.
_UNSUPPORTED: Final = frozenset((
    "optional.of", "optional.ofNonZeroValue", "optional.none", "hasValue", "value", "or", "orValue",
    "optMap", "optFlatMap", "timestamp", "duration", "getDate", "getDayOfMonth", "getDayOfWeek", "getDayOfYear",
    "getFullYear", "getHours", "getMilliseconds", "getMinutes", "getMonth", "getSeconds", "ip", "isIP", "cidr",
    "isCIDR", "ip.isCanonical", "url", "isURL", "getScheme", "getHost", "getHostname", "getPort",
    "getEscapedPath", "getQuery", "format", "format.named", "validate", "authorizer", "sortBy",
    "transformMapEntry", "lists.first", "lists.last",
))


# ---------------------------------------------------------------------------------------------
# type checker (cel-go checker/checker.go, over the expanded AST)


class _CheckError(Exception):
    pass


class _Checker:
    def __init__(self) -> None:
        self.types: dict[int, _T] = {}
        self.fn: dict[int, str] = {}  # call node -> resolved function name (namespaced calls drop the target)
        self.rtypes: dict[int, _T] = {}  # call node -> result type of the resolution
        self.subs: Subs = {}
        self.scopes: list[dict[str, _T]] = []
        self.errors: list[tuple[int, str]] = []
        self.fresh = 0
        self.unsupported: tuple[int, str] | None = None

    def error(self, pos: int, message: str) -> None:
        self.errors.append((pos, message))

    def lookup(self, name: str) -> _T | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        if name == "device":
            return DEVICE
        if name in _TYPE_IDENTS:
            return _type_of(_TYPE_IDENTS[name])
        return None

    def set(self, node: _Node, t: _T) -> _T:
        self.types[id(node)] = t
        return t

    def check(self, node: _Node) -> _T:
        if isinstance(node, _Lit):
            v = node.value
            t = (BOOL if type(v) is bool else INT if type(v) is int else UINT if type(v) is _UInt
                 else DOUBLE if type(v) is float else STRING if type(v) is str else BYTES if type(v) is bytes else NULL)
            return self.set(node, t)
        if isinstance(node, _Ident):
            found = self.lookup(node.name)
            if found is None:
                self.error(node.pos, f"undeclared reference to '{node.name}' (in container '')")
                return self.set(node, ERROR)
            return self.set(node, found)
        if isinstance(node, _Select):
            return self.set(node, self.check_select(node))
        if isinstance(node, _Call):
            return self.set(node, self.check_call(node))
        if isinstance(node, _ListLit):
            elem: _T | None = None
            for e in node.elems:
                elem = self.join(e, elem, self.check(e))
            return self.set(node, _list(elem if elem is not None else self.new_var()))
        if isinstance(node, _MapLit):
            key: _T | None = None
            val: _T | None = None
            for k, v in node.entries:
                key = self.join(k, key, self.check(k))
                val = self.join(v, val, self.check(v))
            if key is None or val is None:
                return self.set(node, _map(self.new_var(), self.new_var()))
            return self.set(node, _map(key, val))
        assert isinstance(node, _Macro)
        return self.set(node, self.check_macro(node))

    def new_var(self) -> _T:
        self.fresh += 1
        return _param(f"_var{self.fresh - 1}")

    def join(self, node: _Node, prev: _T | None, cur: _T) -> _T:
        if prev is None:
            return cur
        subs = _assignable(self.subs, prev, cur)
        if subs is not None:
            self.subs = subs
            return _most_general(prev, cur)
        self.error(node.pos, f"expected type '{_substitute(self.subs, prev, True).fmt()}' but found '{_substitute(self.subs, cur, True).fmt()}'")
        return ERROR

    def qualified_name(self, node: _Node) -> str | None:
        if isinstance(node, _Ident):
            return node.name
        if isinstance(node, _Select) and not node.test_only:
            prefix = self.qualified_name(node.operand)
            return None if prefix is None else prefix + "." + node.field
        return None

    def check_select(self, node: _Select) -> _T:
        operand = _substitute(self.subs, self.check(node.operand), False)
        result = ERROR
        if operand.kind == "map":
            result = operand.params[1]
        elif operand.kind == "struct":
            if operand.name == "kubernetes.DRADevice" and node.field in _DEVICE_FIELDS:
                result = _DEVICE_FIELDS[node.field]
            else:
                self.error(node.pos, f"undefined field '{node.field}'")
        elif operand.kind == "param":
            subs = _assignable(self.subs, DYN, operand)
            if subs is not None:
                self.subs = subs
            result = DYN
        else:
            if not _is_dyn_or_error(operand):
                self.error(node.pos, f"type '{operand.fmt()}' does not support field selection")
            result = DYN
        if node.test_only:
            return BOOL
        return _substitute(self.subs, result, False)

    def check_call(self, node: _Call) -> _T:
        for arg in node.args:
            self.check(arg)
        name = node.fn
        target = node.target
        if target is not None:
            prefix = self.qualified_name(target)
            if prefix is not None and prefix + "." + name in _DECLS and self.lookup(prefix.split(".")[0]) is None:
                node.fn = name = prefix + "." + name
                node.target = target = None
        if target is None:
            if name not in _DECLS:
                return self.undeclared(node, name)
            return self.resolve(node, name, None)
        self.check(target)
        if name not in _DECLS:
            return self.undeclared(node, name)
        return self.resolve(node, name, target)

    def undeclared(self, node: _Call, name: str) -> _T:
        if name in _UNSUPPORTED and self.unsupported is None:
            self.unsupported = (node.pos, f"function '{name}'")
        self.error(node.pos, f"undeclared reference to '{name}' (in container '')")
        return ERROR

    def resolve(self, node: _Call, name: str, target: _Node | None) -> _T:
        arg_types = [self.types[id(a)] for a in ([target] if target is not None else []) + node.args]
        if name in ("_&&_", "_||_"):
            bad = False
            for arg, t in zip(node.args, arg_types, strict=True):
                subs = _assignable(self.subs, t, BOOL)
                if subs is None:
                    self.error(arg.pos, f"expected type 'bool' but found '{_substitute(self.subs, t, True).fmt()}'")
                    bad = True
                else:
                    self.subs = subs
            self.fn[id(node)] = name
            return ERROR if bad else BOOL
        result: _T | None = None
        for _oid, member, params, res in _DECLS[name]:
            if member != (target is not None):
                continue
            fresh: Subs = {}
            for p in set(_collect_params(params) + _collect_params((res,))):
                fresh[p] = self.new_var()
            inst_params = [_substitute(fresh, p, False) for p in params]
            subs = _assignable_list(self.subs, arg_types, inst_params)
            if subs is None:
                continue
            self.subs = subs
            res_t = _substitute(self.subs, _substitute(fresh, res, False), False)
            if result is None:
                result = res_t
            elif not _is_dyn(result) and not res_t.exact(result):
                result = DYN
        if result is None:
            shown = [_substitute(self.subs, t, True).fmt() for t in arg_types]
            if target is not None:
                sig = f"{shown[0]}.({', '.join(shown[1:])})"
            else:
                sig = f"({', '.join(shown)})"
            self.error(node.pos, f"found no matching overload for '{name}' applied to '{sig}'")
            return ERROR
        self.fn[id(node)] = name
        self.rtypes[id(node)] = result
        if name in ("matches", "find", "findAll") and len(node.args) >= 1:
            pattern = node.args[0] if target is not None else node.args[1] if len(node.args) > 1 else None
            if isinstance(pattern, _Lit) and type(pattern.value) is str:
                try:
                    re.compile(pattern.value)
                except re.error as err:
                    self.error(pattern.pos, f"invalid matches argument: error parsing regexp: {err}")
        return result

    def check_macro(self, node: _Macro) -> _T:
        if node.kind == "bind":
            init = self.check(node.target)
            self.scopes.append({node.var: init})
            body = self.check(node.args[0])
            self.scopes.pop()
            return _substitute(self.subs, body, False)
        rng = _substitute(self.subs, self.check(node.target), False)
        two = node.var2 is not None
        if rng.kind == "list":
            var, var2 = (INT, rng.params[0]) if two else (rng.params[0], None)
        elif rng.kind == "map":
            var, var2 = rng.params[0], (rng.params[1] if two else None)
        elif rng.kind in ("dyn", "any", "error", "param"):
            subs = _assignable(self.subs, DYN, rng)
            if subs is not None:
                self.subs = subs
            var, var2 = DYN, (DYN if two else None)
        else:
            self.error(node.target.pos, f"expression of type '{rng.fmt()}' cannot be range of a comprehension (must be list, map, or dynamic)")
            var, var2 = ERROR, (ERROR if two else None)
        scope = {node.var: var}
        if node.var2 is not None and var2 is not None:
            scope[node.var2] = var2
        self.scopes.append(scope)
        kind = node.kind
        arg_types = [self.check(a) for a in node.args]
        self.scopes.pop()
        if kind in ("all", "exists", "exists_one", "all2", "exists2", "existsOne2"):
            self.assert_bool(node.args[0], arg_types[0])
            return BOOL
        if kind == "filter":
            self.assert_bool(node.args[0], arg_types[0])
            return _list(var)
        if kind == "map":
            if len(node.args) == 2:
                self.assert_bool(node.args[0], arg_types[0])
            return _list(_substitute(self.subs, arg_types[-1], False))
        if len(node.args) == 2:
            self.assert_bool(node.args[0], arg_types[0])
        if kind == "transformList2":
            return _list(_substitute(self.subs, arg_types[-1], False))
        if rng.kind == "list":
            self.error(node.target.pos, f"expression of type '{rng.fmt()}' cannot be range of a comprehension (must be list, map, or dynamic)")
        return _map(var, _substitute(self.subs, arg_types[-1], False))

    def assert_bool(self, node: _Node, t: _T) -> None:
        subs = _assignable(self.subs, BOOL, t)
        if subs is None:
            self.error(node.pos, f"expected type 'bool' but found '{_substitute(self.subs, t, True).fmt()}'")
        else:
            self.subs = subs


def _collect_params(ts: Iterable[_T]) -> list[str]:
    out: list[str] = []
    for t in ts:
        if t.kind == "param":
            out.append(t.name)
        out.extend(_collect_params(t.params))
    return out


# ---------------------------------------------------------------------------------------------
# the device as CEL sees it

_EMPTY_MAP: Final[dict[str, Any]] = {}


class _DomainMap(dict[str, dict[str, Any]]):
    """``device.attributes`` / ``device.capacity``: domain -> (id -> value). Looking up a
    missing domain yields an empty map (compile.go's newStringInterfaceMapWithDefault)."""

    __slots__ = ()


def _attr_value(v: AttributeValue) -> Any:
    return _parse_semver(v.text) if type(v) is Version else v


def _split_name(name: str, driver: str) -> tuple[str, str]:
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (driver, name)


def _build_nested(device: DeviceView) -> tuple[_DomainMap, _DomainMap]:
    attrs = _DomainMap()
    for name, value in device.attributes.items():
        domain, ident = _split_name(name, device.driver)
        attrs.setdefault(domain, {})[ident] = _attr_value(value)
    caps = _DomainMap()
    for name, q in device.capacity.items():
        domain, ident = _split_name(name, device.driver)
        caps.setdefault(domain, {})[ident] = q
    return attrs, caps


_NESTED: dict[int, tuple[Any, _DomainMap, _DomainMap]] = {}


def _nested(device: DeviceView) -> tuple[_DomainMap, _DomainMap]:
    """The domain maps of a device, built once per DeviceView object (only needed when an
    expression uses ``device.attributes`` / ``device.capacity`` other than as
    ``[<literal>][<literal>]`` or ``[<literal>].<id>``)."""
    known = _NESTED.get(id(device))
    if known is not None and known[0]() is device:
        return known[1], known[2]
    attrs, caps = _build_nested(device)
    if len(_NESTED) >= 4096:
        _NESTED.clear()
    _NESTED[id(device)] = (weakref.ref(device), attrs, caps)
    return attrs, caps


def _device_field(device: DeviceView, field: str) -> Any:
    if field == "driver":
        return device.driver
    if field == "allowMultipleAllocations":
        return device.allow_multiple_allocations
    if field == "attributes":
        return _nested(device)[0]
    if field == "capacity":
        return _nested(device)[1]
    _fail(f"no such key: {field}")


_GO_TYPES: Final = {"int": "types.Int", "uint": "types.Uint", "double": "types.Double", "string": "types.String",
                    "bool": "types.Bool", "bytes": "types.Bytes", "null_type": "types.Null",
                    "kubernetes.Semver": "cel.Semver", "kubernetes.Quantity": "cel.Quantity", "type": "*types.Type",
                    "kubernetes.DRADevice": "map[string]interface {}"}


def _iterable(v: Any) -> Any:
    if type(v) is list or isinstance(v, Mapping):
        return v
    name = "*cel.Quantity" if type(v) is _PtrQuantity else _GO_TYPES.get(_type_name(v), _type_name(v))
    _fail(f"got '{name}', expected iterable type")


def _cost_exceeded() -> NoReturn:
    _fail("operation cancelled: actual cost limit exceeded")


# ---------------------------------------------------------------------------------------------
# code generation: the checked AST becomes nested closures over a frame list
# (frame[0] = the DeviceView, frame[1] = runtime cost so far, frame[2:] = comprehension variables)

Ev = Callable[[list[Any]], Any]


def _node_count(node: _Node) -> int:
    if isinstance(node, _Select):
        return 1 + _node_count(node.operand)
    if isinstance(node, _Call):
        return 1 + sum(_node_count(a) for a in node.args) + (_node_count(node.target) if node.target else 0)
    if isinstance(node, _ListLit):
        return 1 + sum(_node_count(e) for e in node.elems)
    if isinstance(node, _MapLit):
        return 1 + sum(_node_count(k) + _node_count(v) for k, v in node.entries)
    if isinstance(node, _Macro):
        return 2 + _node_count(node.target) + sum(_node_count(a) for a in node.args)
    return 1


class _Codegen:
    def __init__(self, checker: _Checker) -> None:
        self.ck = checker
        self.scopes: list[dict[str, int]] = []
        self.slots = 2

    def local(self, name: str) -> int | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def is_device(self, node: _Node) -> bool:
        return isinstance(node, _Ident) and node.name == "device" and self.local("device") is None

    def domain_access(self, node: _Node) -> tuple[str, str] | None:
        """``device.attributes[<literal>]`` (or ``.capacity``): (field, domain)."""
        if (isinstance(node, _Call) and node.fn == "_[_]" and node.target is None
                and isinstance(node.args[0], _Select) and not node.args[0].test_only
                and node.args[0].field in ("attributes", "capacity") and self.is_device(node.args[0].operand)
                and isinstance(node.args[1], _Lit) and type(node.args[1].value) is str):
            return node.args[0].field, node.args[1].value
        if (isinstance(node, _Select) and not node.test_only and isinstance(node.operand, _Select)
                and not node.operand.test_only and node.operand.field in ("attributes", "capacity")
                and self.is_device(node.operand.operand)):
            return node.operand.field, node.field
        return None

    def gen(self, node: _Node) -> Ev:
        if isinstance(node, _Lit):
            value = node.value
            return lambda fr: value
        if isinstance(node, _Ident):
            return self.gen_ident(node)
        if isinstance(node, _Select):
            return self.gen_select(node)
        if isinstance(node, _Call):
            return self.gen_call(node)
        if isinstance(node, _ListLit):
            elems = [self.gen(e) for e in node.elems]
            return lambda fr: [e(fr) for e in elems]
        if isinstance(node, _MapLit):
            entries = [(self.gen(k), self.gen(v)) for k, v in node.entries]

            def make_map(fr: list[Any]) -> Any:
                out: dict[Any, Any] = {}
                for k, v in entries:
                    key = k(fr)
                    if type(key) not in (str, int, _UInt, bool):
                        _fail(f"unsupported key type: {_type_name(key)}")
                    if _map_find(out, key)[0]:
                        _fail(f"Failed with repeated key: {_fmt_key(key)}")
                    out[key] = v(fr)
                return out
            return make_map
        assert isinstance(node, _Macro)
        return self.gen_macro(node)

    def gen_ident(self, node: _Ident) -> Ev:
        slot = self.local(node.name)
        if slot is not None:
            return lambda fr: fr[slot]
        if node.name == "device":
            return lambda fr: fr[0]
        tv = _TYPE_VALUES[node.name]
        return lambda fr: tv

    def gen_select(self, node: _Select) -> Ev:
        field = node.field
        access = self.domain_access(node.operand)
        if access is not None:
            return self.gen_leaf(access[0], access[1], field, node.test_only)
        if self.is_device(node.operand) and not node.test_only:
            if field == "driver":
                return lambda fr: fr[0].driver
            if field == "allowMultipleAllocations":
                return lambda fr: fr[0].allow_multiple_allocations
            index = 0 if field == "attributes" else 1
            return lambda fr: _nested(fr[0])[index]
        operand = self.gen(node.operand)
        if node.test_only:
            def has(fr: list[Any]) -> Any:
                v = operand(fr)
                if type(v) is _DomainMap:
                    return True
                if isinstance(v, Mapping):
                    return field in v
                if type(v) is DeviceView:
                    return True
                _no_overload()
            return has

        def select(fr: list[Any]) -> Any:
            v = operand(fr)
            if type(v) is _DomainMap:
                return v.get(field, _EMPTY_MAP)
            if isinstance(v, Mapping):
                if field in v:
                    return v[field]
                _fail(f"no such key: {field}")
            if type(v) is DeviceView:
                return _device_field(v, field)
            _no_overload()
        return select

    def gen_leaf(self, which: str, domain: str, ident: str, test_only: bool) -> Ev:
        """``device.attributes[domain][ident]`` without building any map."""
        flat = domain + "/" + ident
        missing = f"no such key: {ident}"
        if test_only:
            if which == "attributes":
                return lambda fr: flat in fr[0].attributes or (ident in fr[0].attributes and fr[0].driver == domain)
            return lambda fr: flat in fr[0].capacity or (ident in fr[0].capacity and fr[0].driver == domain)
        if which == "capacity":
            def capacity(fr: list[Any]) -> Any:
                caps = fr[0].capacity
                v = caps.get(flat)
                if v is None:
                    if fr[0].driver == domain:
                        v = caps.get(ident)
                    if v is None:
                        _fail(missing)
                return v
            return capacity

        def attribute(fr: list[Any]) -> Any:
            attrs = fr[0].attributes
            v = attrs.get(flat)
            if v is None:
                if fr[0].driver == domain:
                    v = attrs.get(ident)
                if v is None:
                    _fail(missing)
            if type(v) is Version:
                return _parse_semver(v.text)
            return v
        return attribute

    def gen_call(self, node: _Call) -> Ev:
        name = self.ck.fn[id(node)]
        args = node.args
        if name == "_[_]":
            access = self.domain_access(args[0])
            if access is not None and isinstance(args[1], _Lit) and type(args[1].value) is str:
                return self.gen_leaf(access[0], access[1], args[1].value, False)
        if name == "@in":
            access = self.domain_access(args[1])
            if access is not None and isinstance(args[0], _Lit) and type(args[0].value) is str:
                return self.gen_leaf(access[0], access[1], args[0].value, True)
        if name == "_&&_":
            return _gen_and(self.gen(args[0]), self.gen(args[1]))
        if name == "_||_":
            return _gen_or(self.gen(args[0]), self.gen(args[1]))
        if name == "_?_:_":
            cond, then, other = (self.gen(a) for a in args)

            def ternary(fr: list[Any]) -> Any:
                c = cond(fr)
                if c is True:
                    return then(fr)
                if c is False:
                    return other(fr)
                _no_overload()
            return ternary
        impl = _IMPLS[name]
        if name in _FOLDABLE and node.target is None and all(isinstance(a, _Lit) for a in args):
            try:  # quantity("40Gi"), semver("1.0.0"): parse once; an invalid literal still fails at run time
                folded = impl(*[a.value for a in args if isinstance(a, _Lit)])
            except _EvalError:
                pass
            else:
                return lambda fr: folded
        if name == "sum":
            result = self.ck.rtypes[id(node)]
            impl = _sum(_UInt(0) if result.kind == "uint" else 0.0 if result.kind == "double" else 0)
        compiled = ([self.gen(node.target)] if node.target is not None else []) + [self.gen(a) for a in args]
        if len(compiled) == 1:
            a0 = compiled[0]
            return lambda fr: impl(a0(fr))
        if len(compiled) == 2:
            a0, a1 = compiled
            return lambda fr: impl(a0(fr), a1(fr))
        return lambda fr: impl(*[a(fr) for a in compiled])

    def gen_macro(self, node: _Macro) -> Ev:
        target = self.gen(node.target)
        slot = self.slots
        self.slots += 1
        slot2 = 0
        scope = {node.var: slot}
        if node.var2 is not None:
            slot2 = self.slots
            self.slots += 1
            scope[node.var2] = slot2
        self.scopes.append(scope)
        body = [self.gen(a) for a in node.args]
        self.scopes.pop()
        if node.kind == "bind":
            expr = body[0]

            def bind(fr: list[Any]) -> Any:
                fr[slot] = target(fr)
                return expr(fr)
            return bind
        step = 2 + sum(_node_count(a) for a in node.args)
        return _COMPREHENSIONS[node.kind](target, slot, slot2, body, step)


_FOLDABLE: Final = frozenset(("quantity", "isQuantity", "semver", "isSemver"))


def _gen_and(left: Ev, right: Ev) -> Ev:
    def and_(fr: list[Any]) -> Any:
        try:
            a = left(fr)
        except _EvalError as err:
            try:
                b = right(fr)
            except _EvalError:
                raise err from None
            if b is False:
                return False
            raise
        if a is False:
            return False
        b = right(fr) if a is True else _and_after_bad(right, fr)
        if b is True or b is False:
            return b
        _no_overload()
    return and_


def _and_after_bad(right: Ev, fr: list[Any]) -> Any:
    try:
        b = right(fr)
    except _EvalError:
        _no_overload()
    if b is False:
        return False
    _no_overload()


def _gen_or(left: Ev, right: Ev) -> Ev:
    def or_(fr: list[Any]) -> Any:
        try:
            a = left(fr)
        except _EvalError as err:
            try:
                b = right(fr)
            except _EvalError:
                raise err from None
            if b is True:
                return True
            raise
        if a is True:
            return True
        if a is False:
            b = right(fr)
        else:
            try:
                b = right(fr)
            except _EvalError:
                _no_overload()
            if b is not True:
                _no_overload()
        if b is True or b is False:
            return b
        _no_overload()
    return or_


def _pairs(rng: Any) -> Iterator[tuple[Any, Any]]:
    if type(rng) is list:
        return iter(enumerate(rng))
    return iter(rng.items())


_Comp = Callable[[Ev, int, int, list[Ev], int], Ev]


def _comp_quantifier(want: bool, two: bool) -> _Comp:
    """all (want=False: stop at the first false) / exists (want=True: stop at the first true),
    errors absorbed the way the && / || steps of upstream's expansion absorb them."""

    def make(target: Ev, slot: int, slot2: int, body: list[Ev], step: int) -> Ev:
        pred = body[0]

        def run(fr: list[Any]) -> Any:
            rng = _iterable(target(fr))
            err: _EvalError | None = None
            items: Iterable[Any] = _pairs(rng) if two else rng
            for item in items:
                fr[1] += step
                if fr[1] > COST_LIMIT:
                    _cost_exceeded()
                if two:
                    fr[slot], fr[slot2] = item
                else:
                    fr[slot] = item
                try:
                    r = pred(fr)
                except _EvalError as e:
                    err = err or e
                    continue
                if r is want:
                    return want
                if r is not (not want):
                    err = err or _EvalError("no such overload")
            if err is not None:
                raise err
            return not want
        return run
    return make


def _comp_exists_one(two: bool) -> _Comp:
    def make(target: Ev, slot: int, slot2: int, body: list[Ev], step: int) -> Ev:
        pred = body[0]

        def run(fr: list[Any]) -> Any:
            rng = _iterable(target(fr))
            count = 0
            items: Iterable[Any] = _pairs(rng) if two else rng
            for item in items:
                fr[1] += step
                if fr[1] > COST_LIMIT:
                    _cost_exceeded()
                if two:
                    fr[slot], fr[slot2] = item
                else:
                    fr[slot] = item
                r = pred(fr)
                if r is True:
                    count += 1
                elif r is not False:
                    _no_overload()
            return count == 1
        return run
    return make


def _comp_collect(kind: str) -> _Comp:
    """map / filter / transformList / transformMap."""
    two = kind.endswith("2")

    def make(target: Ev, slot: int, slot2: int, body: list[Ev], step: int) -> Ev:
        cond = body[0] if len(body) == 2 or kind == "filter" else None
        expr = body[-1] if kind != "filter" else None

        def run(fr: list[Any]) -> Any:
            rng = _iterable(target(fr))
            out_list: list[Any] = []
            out_map: dict[Any, Any] = {}
            items: Iterable[Any] = _pairs(rng) if two else rng
            for item in items:
                fr[1] += step
                if fr[1] > COST_LIMIT:
                    _cost_exceeded()
                if two:
                    fr[slot], fr[slot2] = item
                else:
                    fr[slot] = item
                if cond is not None:
                    c = cond(fr)
                    if c is False:
                        continue
                    if c is not True:
                        _no_overload()
                if kind == "transformMap2":
                    assert expr is not None
                    out_map[fr[slot]] = expr(fr)
                else:
                    out_list.append(expr(fr) if expr is not None else item)
            return out_map if kind == "transformMap2" else out_list
        return run
    return make


_COMPREHENSIONS: Final[dict[str, _Comp]] = {
    "all": _comp_quantifier(False, False), "exists": _comp_quantifier(True, False),
    "all2": _comp_quantifier(False, True), "exists2": _comp_quantifier(True, True),
    "exists_one": _comp_exists_one(False), "existsOne2": _comp_exists_one(True),
    "map": _comp_collect("map"), "filter": _comp_collect("filter"),
    "transformList2": _comp_collect("transformList2"), "transformMap2": _comp_collect("transformMap2"),
}


# ---------------------------------------------------------------------------------------------
# compile errors, as cel-go prints them


def _location(src: str, pos: int) -> tuple[int, int, str]:
    """(1-based line, 0-based column in code points, that line's text)."""
    line_start = src.rfind("\n", 0, pos) + 1
    line_end = src.find("\n", pos)
    line_text = src[line_start:] if line_end < 0 else src[line_start:line_end]
    return src.count("\n", 0, pos) + 1, pos - line_start, line_text


def _display(src: str, errors: Sequence[tuple[int, str]]) -> str:
    """common.Errors.ToDisplayString: each error with its source line and a caret."""
    out = []
    located = sorted(((*_location(src, pos), msg) for pos, msg in errors), key=lambda e: (e[0], e[1]))
    for line, col, text, msg in located[:100]:
        snippet = text.replace("\t", " ")
        marker = "".join("\uff0e" if len(c.encode()) > 1 else "." for c in snippet[:col])
        caret = "\uff3e" if col < len(snippet) and len(snippet[col].encode()) > 1 else "^"
        out.append(f"ERROR: <input>:{line}:{col + 1}: {msg}\n | {snippet}\n | {marker}{caret}")
    if len(located) > 100:
        out.append(f"{len(located) - 100} more errors were truncated")
    return "\n".join(out)


def _antlr_message(src: str) -> str | None:
    """The syntax error cel-go's ANTLR parser reports, taken from the ``cel`` package (its parser is
    generated from the same CEL.g4 grammar); None if that package accepts the expression."""
    try:
        import cel as celrs
    except ImportError:  # pragma: no cover - a declared dependency
        return None
    try:
        celrs.compile(src)
    except Exception as err:  # the package raises ValueError for parse errors
        text = str(err)
        start = text.find("ERROR: <input>:")
        if start < 0 or "Syntax error" not in text:
            return None
        lines = text[start:].split("\n")
        return "\n".join(" " + line if line.startswith("| ") else line for line in lines)
    return None


# ---------------------------------------------------------------------------------------------
# the public API


class SelectorProgram:
    """A compiled device selector (compile with :func:`compile_selector`)."""

    __slots__ = ("expression", "_fn", "_pad")

    def __init__(self, expression: str, fn: Ev, slots: int = 2) -> None:
        self.expression = expression
        self._fn = fn
        self._pad: list[Any] | None = [None] * (slots - 2) if slots > 2 else None

    def evaluate(self, device: DeviceView) -> bool:
        """Whether the device matches; raises :class:`CelRuntimeError` where upstream's
        DeviceMatches returns an error (the allocator then reports ``CEL runtime error: <msg>``)."""
        try:
            result = self._fn([device, 0] if self._pad is None else [device, 0, *self._pad])
        except _EvalError as err:
            raise CelRuntimeError(err.message) from None
        except RecursionError:
            raise CelRuntimeError("operation cancelled: actual cost limit exceeded") from None
        if result is True or result is False:
            return result
        name = _type_name(result)
        raise CelRuntimeError(f"CEL result of type {name} could not be converted to bool: "
                              f"type conversion error from '{name}' to 'bool'")

    def __repr__(self) -> str:
        return f"SelectorProgram({self.expression!r})"


_CACHE: dict[str, SelectorProgram | CelCompileError] = {}
_CACHE_MAX: Final = 4096


def compile_selector(expression: str) -> SelectorProgram:
    """Compile a device selector, as the API server validates it and the scheduler compiles it.

    Raises :class:`CelCompileError` whose ``message`` is upstream's detail, e.g.
    ``compilation failed: ERROR: <input>:1:3: Syntax error: ...`` or
    ``must evaluate to bool or the unknown type, not string`` (the API server reports it as
    ``spec...expression: Invalid value: "<expr>": <message>``). Programs and errors are cached by
    expression text, so each distinct selector is compiled once.
    """
    known = _CACHE.get(expression)
    if known is None:
        try:
            known = _compile(expression)
        except CelCompileError as err:
            known = err
        if len(_CACHE) >= _CACHE_MAX:
            _CACHE.clear()
        _CACHE[expression] = known
    if isinstance(known, CelCompileError):
        raise CelCompileError(known.message)
    return known


def _unsupported(src: str, pos: int, what: str) -> CelCompileError:
    err = CelCompileError("compilation failed: " + _display(
        src, [(pos, f"{what} is part of Kubernetes' CEL environment but not supported by kubesched")]))
    return err


def _compile(src: str) -> SelectorProgram:
    try:
        root = _Parser(src).parse()
    except _SyntaxError as err:
        antlr = _antlr_message(src)
        raise CelCompileError("compilation failed: " + (antlr or _display(src, [(err.pos, err.message)]))) from None
    except _ParseError as err:
        antlr = _antlr_message(src)
        raise CelCompileError("compilation failed: " + (antlr or _display(src, [(err.pos, err.message)]))) from None
    except _Unsupported as err:
        raise _unsupported(src, err.pos, err.what) from None
    checker = _Checker()
    out = checker.check(root)
    if checker.unsupported is not None:
        raise _unsupported(src, *checker.unsupported)
    if checker.errors:
        raise CelCompileError("compilation failed: " + _display(src, checker.errors))
    out = _substitute(checker.subs, out, True)
    if out.kind not in ("bool", "any"):
        raise CelCompileError(f"must evaluate to bool or the unknown type, not {out}")
    codegen = _Codegen(checker)
    fn = codegen.gen(root)
    return SelectorProgram(src, fn, codegen.slots)
