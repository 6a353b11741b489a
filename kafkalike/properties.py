"""Java .properties files, read and written the way java.util.Properties does it.

server.properties, meta.properties and every file an operator hands to a bin/ script
are in this format, and people copy them between real Kafka and kafkalike. A value that
Java reads one way and we read another (a trailing backslash, a `key value` line, a
`\\u00e9` escape) would be a silent misconfiguration, so the reader follows
Properties.load's LineReader/loadConvert rules exactly rather than "roughly key=value".
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Iterable, Iterator, Mapping

_WHITESPACE = " \t\f"
_SEPARATORS = "=:"
_SIMPLE_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


class PropertiesError(ValueError):
    """A line Java would also refuse (a malformed \\uXXXX escape)."""


# ----------------------------------------------------------------- reading

def _natural_lines(text: str) -> Iterator[str]:
    """Lines split on \\n, \\r or \\r\\n, the three terminators Java accepts."""
    start = 0
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\n" or c == "\r":
            yield text[start:i]
            if c == "\r" and i + 1 < n and text[i + 1] == "\n":
                i += 1
            start = i + 1
        i += 1
    if start < n:
        yield text[start:]


def _ends_with_odd_backslashes(line: str) -> bool:
    count = 0
    for c in reversed(line):
        if c != "\\":
            break
        count += 1
    return count % 2 == 1


def _logical_lines(text: str) -> Iterator[str]:
    """Join continuation lines; drop blank and comment lines, as LineReader does.

    A comment is recognised only at the start of a logical line: a continuation line that
    begins with '#' is part of the value. Leading whitespace of every natural line,
    continuation lines included, is discarded.
    """
    pending: list[str] | None = None
    for raw in _natural_lines(text):
        line = raw.lstrip(_WHITESPACE)
        if pending is None:
            if not line or line[0] in "#!":
                continue
            pending = []
        if _ends_with_odd_backslashes(line):
            pending.append(line[:-1])
            continue
        pending.append(line)
        yield "".join(pending)
        pending = None
    if pending is not None:
        # End of input right after a continuation backslash: Java drops the backslash.
        joined = "".join(pending)
        if joined:
            yield joined


def _unescape(text: str) -> str:
    """loadConvert: \\uXXXX, \\t \\n \\r \\f, and any other escaped char stands for itself."""
    if "\\" not in text:
        return text
    out: list[str] = []
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        i += 1
        if c != "\\":
            out.append(c)
            continue
        if i >= n:
            break  # a lone trailing backslash contributes nothing
        c = text[i]
        i += 1
        if c == "u":
            digits = text[i:i + 4]
            if len(digits) != 4 or any(d not in "0123456789abcdefABCDEF" for d in digits):
                raise PropertiesError("Malformed \\uxxxx encoding.")
            out.append(chr(int(digits, 16)))
            i += 4
        else:
            out.append(_SIMPLE_ESCAPES.get(c, c))
    return _join_surrogates("".join(out))


def _join_surrogates(text: str) -> str:
    """Java strings are UTF-16: '\\uD83D\\uDE00' is one character, so make it one here too."""
    if not any("\ud800" <= c <= "\udfff" for c in text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def _split_key_value(line: str) -> tuple[str, str]:
    """Key ends at the first unescaped '=', ':' or whitespace; one separator may follow spaces."""
    n = len(line)
    key_end = n
    value_start = n
    has_separator = False
    escaped = False
    for i, c in enumerate(line):
        if not escaped and c in _SEPARATORS:
            key_end, value_start, has_separator = i, i + 1, True
            break
        if not escaped and c in _WHITESPACE:
            key_end, value_start = i, i + 1
            break
        escaped = (not escaped) if c == "\\" else False
    while value_start < n:
        c = line[value_start]
        if c not in _WHITESPACE:
            if not has_separator and c in _SEPARATORS:
                has_separator = True
            else:
                break
        value_start += 1
    return _unescape(line[:key_end]), _unescape(line[value_start:])


def loads(text: str) -> dict[str, str]:
    """Parse properties text; a repeated key keeps its last value, as Properties.put does."""
    result: dict[str, str] = {}
    for line in _logical_lines(text):
        key, value = _split_key_value(line)
        result[key] = value
    return result


def load(path: str | os.PathLike[str], encoding: str = "latin-1") -> dict[str, str]:
    """Read a properties file.

    Kafka's Utils.loadProps hands Properties.load an InputStream, which Java decodes as
    ISO-8859-1; anything else has to be written as a \\uXXXX escape. Latin-1 is
    therefore the faithful default (it never fails to decode, just as Java never does).
    """
    return loads(Path(path).read_bytes().decode(encoding))


# ----------------------------------------------------------------- writing

def _escape(text: str, is_key: bool) -> str:
    """saveConvert: what Properties.store escapes, so `loads(dumps(x)) == x` for any strings."""
    out: list[str] = []
    for i, c in enumerate(text):
        if c == " ":
            out.append("\\ " if (i == 0 or is_key) else " ")
        elif c == "\\":
            out.append("\\\\")
        elif c == "\t":
            out.append("\\t")
        elif c == "\n":
            out.append("\\n")
        elif c == "\r":
            out.append("\\r")
        elif c == "\f":
            out.append("\\f")
        elif c in "=:#!":
            out.append("\\" + c)
        elif ord(c) < 0x20 or ord(c) > 0x7E:
            for unit in _utf16_units(c):
                out.append(f"\\u{unit:04X}")
        else:
            out.append(c)
    return "".join(out)


def _utf16_units(c: str) -> Iterable[int]:
    code = ord(c)
    if code <= 0xFFFF:
        return (code,)
    code -= 0x10000
    return (0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF))


def _java_date(now: float | None) -> str:
    """Date.toString's shape: 'Sun Nov 22 03:00:00 UTC 2026'."""
    t = time.localtime(now)
    return time.strftime("%a %b %d %H:%M:%S %Z %Y", t)


def dumps(props: Mapping[str, str], comment: str | None = None, *, now: float | None = None) -> str:
    """Properties.store's output: optional '#comment', a '#date' line, then key=value lines.

    Keys keep the mapping's order (Java's order is a hash table's, i.e. arbitrary), so
    files we write are stable and diffable.
    """
    lines: list[str] = []
    if comment is not None:
        for part in comment.splitlines() or [""]:
            lines.append("#" + part)
    lines.append("#" + _java_date(now))
    for key, value in props.items():
        lines.append(f"{_escape(key, True)}={_escape(value, False)}")
    return "\n".join(lines) + "\n"


def dump(path: str | os.PathLike[str], props: Mapping[str, str], comment: str | None = "") -> None:
    """Write a properties file crash-safely: temp file, fsync, rename, fsync the directory.

    This is how Kafka writes meta.properties (BrokerMetadataCheckpoint): a broker killed
    mid-write must find either the old file or the new one, never half of one. Blocking;
    a caller on the reactor thread should run it in a thread.
    """
    target = Path(path)
    tmp = target.with_name(target.name + ".tmp")
    data = dumps(props, comment).encode("utf-8")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, target)
    dir_fd = os.open(target.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
