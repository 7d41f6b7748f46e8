"""A scripted bus peer for tests: a real service process answering `echo`, `sleep`, `whoami`
and `record`.

Run as ``python scripted_service.py NAME [HEARTBEAT_PERIOD]``; prints ``ready`` once it is on
the bus. ``record`` appends the request id to the file named by $SCRIPTED_LOG (one line per
execution, written before the reply), so a test can count how often each request ran.
"""

from __future__ import annotations

import os
import sys
import threading
import time

from robocell.common.bus import Node


def main() -> None:
    name = sys.argv[1]
    period = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
    log_path = os.environ.get("SCRIPTED_LOG")
    log = open(log_path, "a", buffering=1) if log_path else None  # noqa: SIM115 -- process-long
    lock = threading.Lock()

    def whoami(args, ctx):
        time.sleep(args.get("s", 0))
        return os.getpid()

    def record(args, ctx):
        time.sleep(args.get("s", 0))
        if log is not None:
            with lock:
                log.write(f"{ctx.request_id} {os.getpid()}\n")
        return ctx.request_id

    with Node(name, heartbeat_period=period) as node:
        node.serve("echo", lambda args, ctx: args, concurrency=64)
        node.serve("sleep", lambda args, ctx: time.sleep(args.get("s", 0.1)) or "slept")
        node.serve("whoami", whoami, concurrency=8)
        node.serve("record", record, concurrency=8)
        node.set_state("ready")
        print("ready", flush=True)
        node.wait()


if __name__ == "__main__":
    main()
