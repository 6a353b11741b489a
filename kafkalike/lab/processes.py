"""Processes the lab owns by pid rather than by a Popen handle.

Lab daemons outlive the command that started them, so later commands (status, kill,
down, from another shell) know them only by the pid kept in the lab's state file. A pid
alone is not proof: the kernel reuses them. A process counts as ours only while its
command line still carries the markers we started it with (the main module or class,
and the node's config path), and a zombie counts as gone: an orphaned daemon is reaped
by whoever is pid 1, which on some machines never happens.
"""
from __future__ import annotations

import errno
import os
import socket
import time
from pathlib import Path
from typing import Iterable, Iterator


def process_state(pid: int) -> str | None:
    """The one-letter state from /proc/PID/stat, or None when there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[0]


def command_line(pid: int) -> list[bytes]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return []


def is_alive(pid: int | None, markers: Iterable[str] = ()) -> bool:
    """pid runs (not a zombie) and every marker is one of its command-line words."""
    if not pid or process_state(pid) in (None, "Z"):
        return False
    words = command_line(pid)
    return all(marker.encode() in words for marker in markers)


def wait_gone(pid: int, timeout: float, markers: Iterable[str] = ()) -> bool:
    """True once pid has exited (or become a zombie), False when it outlives timeout."""
    markers = tuple(markers)
    deadline = time.monotonic() + timeout
    while is_alive(pid, markers):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def send_signal(pid: int, sig: int) -> bool:
    """False when the process was already gone."""
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return False
    return True


def processes_mentioning(text: str, markers: Iterable[str] = ()) -> Iterator[int]:
    """Live pids whose command line holds `text` in some word and every marker as a word.

    The lab's safety net: every daemon of a lab names a config file inside the lab
    directory, so scanning for it finds one even if the state file lost its pid.
    """
    needle = text.encode()
    markers = tuple(marker.encode() for marker in markers)
    own = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == own:
            continue
        pid = int(entry.name)
        words = command_line(pid)
        if not any(needle in word for word in words) or not all(m in words for m in markers):
            continue
        if process_state(pid) not in (None, "Z"):
            yield pid


def group_alive(pgid: int) -> bool:
    """Any non-zombie process still in process group `pgid` (what kill -9 of a group leaves)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()   # state ppid pgrp ...
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def port_in_use(host: str, port: int) -> bool:
    """Could a server bind host:port right now? Checked with SO_REUSEADDR, as servers bind,
    so a socket in TIME_WAIT does not count but a listener (on this address or on all) does."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as error:
        if error.errno in (errno.EADDRINUSE, errno.EACCES):
            return True
        raise
    finally:
        sock.close()
    return False


def free_ports(host: str, count: int, avoid: set[int] = frozenset()) -> list[int]:
    """`count` distinct ports free on every interface now (the OS picks them), none in
    `avoid`. Sockets are held until all are chosen, so the ports differ; a server started
    later could in principle take one first, which `up` would then report as a failed
    start."""
    held: list[socket.socket] = []
    ports: list[int] = []
    try:
        while len(ports) < count:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            held.append(sock)
            sock.bind(("", 0))
            port = sock.getsockname()[1]
            if port not in avoid:   # bound on every interface just now: free on `host` too
                ports.append(port)
    finally:
        for sock in held:
            sock.close()
    return ports
