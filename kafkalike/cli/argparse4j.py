"""The command line of the tools Kafka writes with argparse4j: kafka-verifiable-producer,
kafka-verifiable-consumer and kafka-producer-perf-test.

Kafka's Scala tools read their options with jopt-simple (kafkalike.cli.joptions); these
Java tools use argparse4j, a port of Python's argparse, so they stay on argparse, with
argparse4j's habits where a script can see them: a bad command line prints the usage line
and `<prog>: error: <message>` on stderr and ends with status 1 (the tools' catch of
ArgumentParserException), and the messages are argparse4j's (`argument --topic is
required`, for the first missing argument only; `could not convert 'x' to Integer (For
input string: "x")`, ...).
"""
from __future__ import annotations

import argparse
import re
import sys
from typing import Any, Callable, NoReturn

# Python lists every missing argument ("A, B"); argparse4j stops at the first one.
_REQUIRED = re.compile(r"the following arguments are required: ([^,]+)(?:, .*)?", re.DOTALL)
_UNRECOGNIZED = re.compile(r"unrecognized arguments: (.*)")


class ArgumentParser(argparse.ArgumentParser):
    """argparse with argparse4j's error messages and exit status."""

    def error(self, message: str) -> NoReturn:
        required = _REQUIRED.fullmatch(message)
        if required:  # argparse4j names the first missing argument only
            message = f"argument {required.group(1)} is required"
        unrecognized = _UNRECOGNIZED.fullmatch(message)
        if unrecognized:
            message = f"unrecognized arguments: '{unrecognized.group(1)}'"
        self.print_usage(sys.stderr)
        self.exit(1, f"{self.prog}: error: {message}\n")

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        if action.choices is not None and value not in action.choices:
            choices = ",".join(str(c) for c in action.choices)
            raise argparse.ArgumentError(action, f"invalid choice: '{value}' (choose from {{{choices}}})")


def java_int(type_name: str = "Integer") -> Callable[[str], int]:
    """An argparse type converting as Integer.valueOf / Long.valueOf, failing with argparse4j's message."""
    bits = 31 if type_name == "Integer" else 63

    def convert(text: str) -> int:
        body = text[1:] if text[:1] in "+-" else text
        if body and body.isascii() and body.isdigit() and -2**bits <= int(text) < 2**bits:
            return int(text)
        raise argparse.ArgumentTypeError(f"could not convert '{text}' to {type_name} (For input string: \"{text}\")")
    convert.__name__ = type_name
    return convert


INTEGER = java_int("Integer")
LONG = java_int("Long")

__all__ = ["ArgumentParser", "INTEGER", "LONG", "java_int"]
