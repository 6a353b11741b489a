"""The error codes a response carries, counted for Kafka's ErrorsPerSec.

Kafka marks kafka.network:type=RequestMetrics,name=ErrorsPerSec,request=R,error=E with
each response's errorCounts(): for nearly every API, one count per error code field the
response holds, NONE included (a Produce answer counts one per partition; a Fetch answer
its top-level code and one per partition). Here the same count is made by a function
compiled once per response class from its declaration: plain loops down to each
`error_code` field, so a one-partition Produce answer costs two loop steps and a dict
update, and nothing looks at records.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

from kafkalike.protocol.schema import Field

ErrorCounter = Callable[[Any, dict], None]


def _has_error_code(fields: list[Field] | None) -> bool:
    return any(f.name == "error_code" or (f.fields and _has_error_code(f.fields)) for f in fields or ())


def _walk(fields: list[Field], var: str, depth: int, indent: str, lines: list[str]) -> None:
    for f in fields:
        if f.name == "error_code" and not f.is_array:
            lines.append(f"{indent}counts[{var}.error_code] += 1")
        elif f.fields and _has_error_code(f.fields):
            item = f"x{depth}"
            if f.is_array:
                lines.append(f"{indent}for {item} in {var}.{f.name} or ():")
            else:
                lines.append(f"{indent}{item} = {var}.{f.name}")
                lines.append(f"{indent}if {item} is not None:")
            _walk(f.fields, item, depth + 1, indent + "    ", lines)


@functools.lru_cache(maxsize=None)
def error_counter(response_class: type) -> ErrorCounter:
    """`count(response, counts)`: adds one to counts[code] for each error code field of
    a response of this class (a generated message class with its declaration); `counts`
    is a defaultdict(int)."""
    lines = ["def count(r, counts):"]
    _walk(getattr(response_class, "SCHEMA").fields, "r", 0, "    ", lines)
    if len(lines) == 1:
        lines.append("    return None")
    namespace: dict[str, Any] = {}
    exec(compile("\n".join(lines), f"<error counter of {response_class.__name__}>", "exec"), namespace)
    return namespace["count"]
