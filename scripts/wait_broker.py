"""Wait until a broker answers Metadata naming a controller (it is fully up).

usage: python scripts/wait_broker.py host:port [--timeout SECONDS]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kafkalike.client.connection import bootstrap  # noqa: E402
from kafkalike.protocol.messages.metadata import MetadataRequest  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("servers")
    ap.add_argument("--timeout", type=float, default=60)
    args = ap.parse_args()
    deadline = time.monotonic() + args.timeout
    while True:
        try:
            with bootstrap(args.servers, timeout=2) as conn:
                md = conn.send(MetadataRequest(topics=[]), version=1)
                if md.controller_id >= 0:
                    print(f"broker serving on {args.servers} (controller: broker {md.controller_id})")
                    return 0
        except Exception:
            pass
        if time.monotonic() > deadline:
            print(f"no broker serving on {args.servers} after {args.timeout:.0f}s", file=sys.stderr)
            return 1
        time.sleep(0.3)


if __name__ == "__main__":
    sys.exit(main())
