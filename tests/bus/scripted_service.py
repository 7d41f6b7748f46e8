"""A scripted bus peer for tests: a real service process answering `echo` and `sleep`.

Run as ``python scripted_service.py NAME``; prints ``ready`` once it is on the bus.
"""

from __future__ import annotations

import sys
import time

from robocell.common.bus import Node


def main() -> None:
    name = sys.argv[1]
    period = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
    with Node(name, heartbeat_period=period) as node:
        node.serve("echo", lambda args, ctx: args)
        node.serve("sleep", lambda args, ctx: time.sleep(args.get("s", 0.1)) or "slept")
        node.set_state("ready")
        print("ready", flush=True)
        node.wait()


if __name__ == "__main__":
    main()
