"""Dedicated codecs for the broker's hot path: the request header, Produce and Fetch
requests, and the Produce and Fetch responses.

The generic schema walker (kafkalike.protocol.schema) makes a call per field and builds a
dict per struct; for a 16 KiB produce that was about 60% of the broker's time per request
outside the log, and a consumer's Fetch naming 100 partitions takes it about 5x as long
as the dedicated decoder (docs/benchmarks.md). These modules read and write the same
bytes with `struct` over whole runs of fixed fields and keep record sets as views of the
frame, and the property tests (tests/unit/test_protocol_fast_codecs.py) hold them byte-equal to the
generic codec at every version. kafkalike.protocol.api dispatches to them, so callers
and handlers see the same dataclasses either way.
"""
