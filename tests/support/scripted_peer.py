"""A scripted bus peer for the monitor tests: a Node that only beats (run as its own process
so that a test can SIGKILL it): ``scripted_peer.py NAME PERIOD_S``."""

from __future__ import annotations

import sys

from robocell.common.bus import Node


def main() -> None:
    name, period = sys.argv[1], float(sys.argv[2])
    with Node(name, heartbeat_period=period, track_peers=False) as node:
        node.set_state("ready", role="scripted peer")
        print("ready", flush=True)
        node.wait()


if __name__ == "__main__":
    main()
