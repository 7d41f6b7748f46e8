"""The bus every service uses: publish, subscribe, commands, heartbeats, liveness.

A service is a :class:`Node`; it connects to the broker, publishes validated messages,
calls back on subscribed topics, answers commands, beats every second and knows who is
alive::

    from robocell.common.bus import Node
    from robocell.common.bus.payloads import Plan

    def on_pose(msg):                              # msg: robocell.common.bus.wire.Envelope
        print("pose", msg.payload["pose"], "face", msg.payload["face"])

    def rescan(args, ctx):                         # runs in a worker thread
        return {"started": True}                   # -> the reply's result

    with Node("vision") as node:                   # endpoints from $ROBOCELL_BUS*
        node.subscribe("actuator.scan_pose", on_pose)
        node.serve("rescan", rescan)
        node.set_state("ready")
        node.publish("vision.cube_state", {...})   # validated against topics.py
        plan = node.call("solver", "solve", {"facelets": f}, timeout=2.0)  # or CommandFailed
        Plan.from_checked(plan)                    # checked on arrival: the typed class
        node.peers()                               # {"solver": PeerStatus(...), ...}
        node.wait()                                # until stop() or Ctrl-C

The package, one role per module:

- :mod:`~robocell.common.bus.endpoints` -- where the broker listens (:class:`Endpoints`),
  CURVE on a client socket, why a link is down;
- :mod:`~robocell.common.bus.wire` -- the one writer and reader of frames: the envelope,
  message and batch frames, the publisher's frame writer;
- :mod:`~robocell.common.bus.topics` -- every topic and command, declared once;
  :mod:`~robocell.common.bus.schema` -- the checks and decoders generated from them;
  :mod:`~robocell.common.bus.payloads` -- the typed payload and result classes generated
  from them (``Plan``, ``ActuatorResult``, ...);
- :mod:`~robocell.common.bus.publisher`, :mod:`~robocell.common.bus.subscriber` --
  :class:`Publisher` and :class:`Subscriber` (``recv(timeout)``, ``recv_batch(timeout)``)
  for tools and single-threaded code;
- :mod:`~robocell.common.bus.commands` -- request/reply through the broker, the client side
  (:class:`CommandClient`);
- :mod:`~robocell.common.bus.liveness` -- who is alive, from heartbeats (:class:`Liveness`);
- :mod:`~robocell.common.bus.node` -- :class:`Node`, a service on the bus, and its command
  server;
- :mod:`~robocell.common.bus.keys` -- CURVE key files for remote access.
"""

from robocell.common.bus.commands import (
    Busy,
    CommandClient,
    CommandFailed,
    Reply,
    reply_payload,
)
from robocell.common.bus.endpoints import Endpoints, LinkWatch
from robocell.common.bus.liveness import STALE_AFTER_BEATS, Liveness, PeerStatus
from robocell.common.bus.node import CommandContext, Node
from robocell.common.bus.publisher import PUB_HWM, Publisher
from robocell.common.bus.subscriber import SUB_HWM, ReceiveStats, Rejection, Subscriber
from robocell.common.bus.wire import REPLAY_PREFIX, Envelope, MessageError, is_replayed

__all__ = [
    "PUB_HWM",
    "REPLAY_PREFIX",
    "STALE_AFTER_BEATS",
    "SUB_HWM",
    "Busy",
    "CommandClient",
    "CommandContext",
    "CommandFailed",
    "Endpoints",
    "Envelope",
    "LinkWatch",
    "Liveness",
    "MessageError",
    "Node",
    "PeerStatus",
    "Publisher",
    "ReceiveStats",
    "Rejection",
    "Reply",
    "Subscriber",
    "is_replayed",
    "reply_payload",
]
