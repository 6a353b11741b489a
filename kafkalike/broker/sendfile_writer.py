"""A plaintext connection's answers, some of them carrying segment file ranges, written in order.

A large Fetch answer's record sets are ranges of segment files (LogSlice). On a plaintext
listener they go from the page cache to the socket with os.sendfile, as Kafka's
FileRecords.writeTo uses transferTo, instead of being read into Python and copied
through the transport's buffer. The writer is a pull producer registered with the TCP
transport: Twisted calls resumeProducing when the transport's buffer has drained, so
the bytes before a file range (size prefix, headers) are on the socket before sendfile
starts, and a sendfile the socket could take only part of continues when the socket is
writable again; the reactor never waits. While the writer holds anything, every later
answer of the connection queues behind it, so answers keep their order.

Answers of bytes only go through the same writer: when nothing is queued or buffered
they are sent at once with one sendmsg (write_bytes), which spares a small answer
Twisted's buffer-then-wait-for-writability round; what the socket does not take is
left to the transport, in order.

Each range's descriptor is duplicated when queued: the segment may be deleted or
closed before the range is sent (a slow consumer), and the duplicate keeps the file
readable and its number from being reused.
"""
from __future__ import annotations

import logging
import os
from collections import deque

from twisted.internet import tcp
from twisted.internet.interfaces import IPullProducer, ISSLTransport
from zope.interface import implementer

log = logging.getLogger("kafka.network.Processor")


class _Range:
    __slots__ = ("fd", "position", "left")

    def __init__(self, fd: int, position: int, left: int):
        self.fd = fd
        self.position = position
        self.left = left


def transport_supports_sendfile(transport) -> bool:
    """A plain TCP transport whose buffer the writer can see is empty (Twisted's
    FileDescriptor keeps it in dataBuffer/offset/_tempDataLen); TLS or any other
    transport gets bytes instead. The type is checked, not the attributes: Twisted's TLS
    protocol hands attribute lookups on to the TCP transport below it."""
    return (hasattr(os, "sendfile") and isinstance(transport, tcp.Connection)
            and not ISSLTransport.providedBy(transport) and not getattr(transport, "TLS", False)
            and hasattr(transport, "dataBuffer") and hasattr(transport, "_tempDataLen"))


def _buffered(transport) -> int:
    return len(transport.dataBuffer) - transport.offset + transport._tempDataLen


@implementer(IPullProducer)
class SendfileWriter:
    """Queues answers as runs of bytes and file ranges; see the module docstring."""

    def __init__(self, transport):
        self.transport = transport
        self._queue: deque = deque()
        self._registered = False
        self.sent_by_sendfile = 0            # bytes, for tests and the benchmark

    @property
    def busy(self) -> bool:
        return self._registered

    def write(self, chunks: list) -> None:
        """Queue one answer: bytes chunks, and objects with fd/position/size (LogSlice)."""
        queue = self._queue
        for chunk in chunks:
            if type(chunk) is bytes:
                if queue and type(queue[-1]) is list:
                    queue[-1].append(chunk)
                else:
                    queue.append([chunk])
            elif chunk.size:
                queue.append(_Range(os.dup(chunk.fd), chunk.position, chunk.size))
        if not self._registered:
            self._registered = True
            self.transport.registerProducer(self, False)     # calls resumeProducing at once

    def write_bytes(self, chunks: list) -> None:
        """An answer of bytes only. Behind a file range in progress it queues; otherwise,
        when the transport holds nothing, it goes to the socket at once with one sendmsg
        and only what the socket did not take is left to the transport. Twisted's write
        would buffer it, start watching for writability (an epoll change), send on the
        next turn of the reactor and stop watching (another change): for a small answer,
        such as a produce's, that was most of the cost of writing it."""
        if self._registered:
            self.write(chunks)
            return
        transport = self.transport
        if _buffered(transport) or not transport.connected or transport._writeDisconnected:
            transport.writeSequence(chunks)
            return
        try:
            sent = transport.socket.sendmsg(chunks)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError:
            transport.writeSequence(chunks)     # Twisted's own send meets the error and closes
            return
        for i, chunk in enumerate(chunks):
            size = len(chunk)
            if sent < size:
                transport.writeSequence([chunk[sent:] if sent else chunk] + chunks[i + 1:])
                return
            sent -= size

    def resumeProducing(self) -> None:
        transport, queue = self.transport, self._queue
        while queue:
            item = queue[0]
            if type(item) is list:
                queue.popleft()
                transport.writeSequence(item)
                if queue:
                    return          # the range after these bytes waits until they are sent
                break
            if _buffered(transport):
                return              # called again once the transport's buffer is empty
            try:
                sent = os.sendfile(transport.fileno(), item.fd, item.position, item.left)
            except BlockingIOError:
                sent = -1
            except OSError as exc:
                log.debug("sendfile to %s failed: %s", transport.getPeer(), exc)
                self._abort()
                return
            if sent == 0:
                # The file ends before the range does (truncated since it was read): the
                # answer's size prefix is already out, so the stream cannot be completed.
                log.warning("Closing connection to %s: a segment ended %d bytes before the fetched range",
                            transport.getPeer(), item.left)
                self._abort()
                return
            if sent > 0:
                self.sent_by_sendfile += sent
                item.position += sent
                item.left -= sent
            if item.left:
                transport.startWriting()     # doWrite finds nothing buffered and calls us back
                return
            os.close(item.fd)
            queue.popleft()
        self._registered = False
        transport.unregisterProducer()

    def stopProducing(self) -> None:
        """The connection is gone: drop what is queued."""
        self._registered = False
        while self._queue:
            item = self._queue.popleft()
            if type(item) is _Range:
                os.close(item.fd)

    def _abort(self) -> None:
        self.stopProducing()
        self.transport.unregisterProducer()
        self.transport.abortConnection()
