"""Every bus topic and command of the cell, declared once: name, kind, publisher, fields, types.

This file is the contract between the processes. Encoding and validation are generated from
it in :mod:`robocell.common.bus.schema` (:func:`~robocell.common.bus.schema.validate`,
:func:`~robocell.common.bus.schema.validate_args`); no service writes its own checks of what
arrives. To add a topic or a field, add it here -- nowhere else.

Topics
    ``TopicSpec(topic, type_name, kind, publisher, fields, doc)``. ``kind`` is
    ``LATCHED`` for state (the broker keeps the last value and hands it to every late
    subscriber at once -- ROS 2 "transient local") or ``EVENT`` for things that happen
    (not kept). ``publisher`` names the service that publishes it (``*`` = every service).

Commands
    ``CommandSpec(service, command, args, result, doc)``: request/reply through the broker
    (see :mod:`robocell.common.bus`). ``args`` are validated before the handler runs; a
    mismatch is answered with the ``invalid_arguments`` error.

Field types (a small grammar, parsed once into validators)
    ``str int float bool bytes any map`` -- scalars (``float`` also accepts an int; ``any``
    is any msgpack value; ``map`` is any map with string keys),
    ``list[T]``, ``map[T]`` (string keys, values of type T),
    ``enum(a,b,c)`` (one of these strings), ``T?`` (T or null).
    A field is required unless declared with ``optional=True``; fields not declared are
    refused (a typo is an error, not a silently ignored key).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from robocell.common.facelets import FACES

# --- declarations -------------------------------------------------------------------------


class Kind(enum.Enum):
    """Durability of a topic."""

    LATCHED = "latched"  # state: the broker caches the last message for late joiners
    EVENT = "event"  # something happened: delivered to current subscribers only


LATCHED = Kind.LATCHED
EVENT = Kind.EVENT

ANY_SERVICE = "*"

LIFECYCLE_STATES = ("starting", "ready", "busy", "error", "stopping")
"""Lifecycle state a service announces in its heartbeat."""

PUZZLES = ("2x2x2", "3x3x3", "sokoban")
CYCLE_STAGES = ("idle", "homing", "scanning", "solving", "executing", "verifying", "done",
                "failed", "stopped")
COMMAND_ERRORS = ("unknown_command", "invalid_arguments", "busy", "timeout", "unavailable",
                  "forbidden", "failed")
"""Error codes of a command reply: the command is not offered by the service; the arguments
do not match the declaration; the service cannot take it now; the deadline passed; no such
service is connected; the caller's key may not command; the handler raised."""


@dataclass(frozen=True)
class F:
    """One field of a payload: name, type (see the grammar above), meaning."""

    name: str
    type: str
    doc: str = ""
    optional: bool = False


@dataclass(frozen=True)
class TopicSpec:
    """One topic: its message type, durability, publisher and payload fields."""

    topic: str
    type_name: str
    kind: Kind
    publisher: str
    fields: tuple[F, ...]
    doc: str = ""

    @property
    def latched(self) -> bool:
        return self.kind is Kind.LATCHED


@dataclass(frozen=True)
class CommandSpec:
    """One command a service answers: its arguments and the fields of its result."""

    service: str
    command: str
    args: tuple[F, ...]
    result: tuple[F, ...] = ()
    doc: str = ""
    retry_safe: bool = False
    """Running it twice does no harm (a pure computation or a read): a request in flight
    on an instance that dies is sent to another instance of the service instead of being
    answered ``unavailable``."""


TWIN_FIELDS = (
    F("puzzle", f"enum({','.join(PUZZLES[:2])})", "which cube"),
    F("facelets", "str", "the twin cube, faces U R F D L B"),
    F("solved", "bool", "the twin cube is solved"),
    F("grips", "map[str]", "gripper name -> open/closed"),
    F("arm_angles", "map[float]", "arm name -> angle in degrees"),
    F("misaligned", "list[str]", "faces whose layer stands part-turned (homing squares "
      "them)", optional=True),
    F("fault", "str?", "jam or other physical fault, if any", optional=True),
    F("boot_id", "str", "firmware boot id", optional=True),
    F("line", "int", "the last firmware line whose motion the twin shows", optional=True),
)
"""The digital twin as the firmware simulator reports it (topic and command alike)."""

HEALTH = F("health", "map", "free-form health details (queue depth, drops, last error, ...)")

TOPICS: tuple[TopicSpec, ...] = (
    # --- bus infrastructure ---------------------------------------------------------------
    TopicSpec("heartbeat", "Heartbeat", EVENT, ANY_SERVICE, (
        F("service", "str", "name of the service (also the envelope source)"),
        F("state", f"enum({','.join(LIFECYCLE_STATES)})", "lifecycle state"),
        HEALTH,
        F("period_s", "float", "seconds between heartbeats; stale after 3 missed"),
        F("pid", "int", "operating-system process id"),
        F("host", "str", "host name"),
        F("uptime_s", "float", "seconds since the service started"),
        F("commands", "list[str]", "commands this service answers"),
    ), "Liveness: every service, every second."),
    TopicSpec("diagnostics", "Diagnostic", EVENT, ANY_SERVICE, (
        F("service", "str", "who reports"),
        F("level", "enum(info,warning,error)", "severity"),
        F("code", "str", "machine-readable reason, e.g. bad_message, dropped_messages"),
        F("message", "str", "what is wrong, where, what to do"),
        F("topic", "str?", "topic concerned, if any", optional=True),
        F("peer", "str?", "source of the offending message, if known", optional=True),
        F("count", "int", "how many times this happened so far", optional=True),
    ), "Problems with the bus itself: rejected messages, drops, slow consumers."),
    TopicSpec("bus.stats", "BusStats", LATCHED, "broker", (
        F("period_s", "float", "statistics window in seconds"),
        F("uptime_s", "float", "seconds since the broker started"),
        F("topics", "map[map]", "per topic, as the publishers count it: messages, bytes, "
          "rate_hz, bytes_per_s, kind, type, publishers, gaps (messages dropped before the "
          "broker)"),
        F("messages", "int", "messages published since start (sum of the publishers' counts)"),
        F("bytes", "int", "bytes published since start"),
        F("rejected", "map[int]", "malformed messages seen by the broker's check tap, by "
                                  "reason (receivers refuse them; the broker forwards without "
                                  "decoding)"),
        F("gaps", "int", "messages dropped between publishers and the broker"),
        F("forwarded", "int", "frames the proxy forwarded (its own count, in C; a batch "
          "frame carries several messages of one topic)", optional=True),
        F("forwarded_bytes", "int", "bytes the proxy forwarded", optional=True),
        F("checked", "int", "frames the check tap decoded and validated (every message in "
                            "them)", optional=True),
        F("unchecked", "int", "frames forwarded but not checked (over the tap's CPU "
                              "budget)", optional=True),
        F("subscriptions", "int", "subscription requests seen"),
        F("commands", "map[int]", "command traffic: requests, replies, errors by code"),
        F("services", "list[str]", "services connected to the command channel (at least one "
          "live instance)"),
        F("instances", "map[list[map]]", "per service, its live instances on the command "
          "channel: id, pid, host, outstanding (requests in flight), answered, commands",
          optional=True),
    ), "The broker's own statistics, published every period."),
    TopicSpec("bus.traffic", "PublisherTraffic", EVENT, ANY_SERVICE, (
        F("instance", "str", "this publisher (source name and a random id: a restarted "
          "process is a new instance)"),
        F("topics", "map[map[int]]", "per topic, since the publisher started: messages and "
          "bytes sent, dropped (refused by ZeroMQ at the high-water mark)"),
        F("before_link", "int", "messages sent before the broker link was up"),
    ), "What one publisher sent, reported every second while it sends (and when it closes); "
       "the broker adds these up into bus.stats."),
    TopicSpec("errors", "CellError", EVENT, ANY_SERVICE, (
        F("service", "str", "who reports"),
        F("stage", "str", "what was being done (scan, resolve, solve, execute, ...)"),
        F("code", "str", "machine-readable error code"),
        F("message", "str", "what is wrong and where"),
        F("action", "str", "what to do next", optional=True),
        F("detail", "map", "extra facts (doubtful stickers, line numbers, ...)", optional=True),
    ), "Domain failures of the cell, for the monitor and the cycle."),
    # --- vision ---------------------------------------------------------------------------
    TopicSpec("vision.captured", "FrameCaptured", EVENT, "vision", (
        F("scan_id", "str", "scan this frame belongs to"),
        F("pose", "int", "index of the scan pose"),
        F("face", f"enum({','.join(FACES)})", "which face of the cube is in view"),
        F("ok", "bool", "a frame was taken (false: the camera gave none)"),
    ), "A scan pose's frame was taken: the robot may move on while vision reads it."),
    TopicSpec("vision.face", "FaceResult", EVENT, "vision", (
        F("scan_id", "str", "scan this face belongs to"),
        F("pose", "int", "index of the scan pose"),
        F("face", f"enum({','.join(FACES)})", "which face of the cube is in view"),
        F("rotation", "int", "quarter turns of the face in the image", optional=True),
        F("size", "int", "N of the N x N face"),
        F("jpeg", "bytes", "thumbnail of the camera frame (JPEG)"),
        F("grid", "list[list[float]]", "sticker centres [x, y] in thumbnail pixels, row-major"),
        F("colors", "list[list[int]]", "measured sticker colours [r, g, b], row-major"),
        F("confidence", "list[float]", "per-sticker confidence 0..1, row-major"),
        F("ok", "bool", "detection succeeded"),
        F("error", "str?", "why detection failed", optional=True),
    ), "One scanned face, with a thumbnail and the detected grid."),
    TopicSpec("vision.cube_state", "CubeState", LATCHED, "vision", (
        F("scan_id", "str", "scan the state was read from"),
        F("puzzle", f"enum({','.join(PUZZLES[:2])})", "which cube"),
        F("facelets", "str", "kociemba facelet string, faces U R F D L B"),
        F("confidence", "list[float]", "per-sticker confidence, facelet order"),
        F("wall_time", "float", "when the scan finished", optional=True),
    ), "The current cube state as read by the camera."),
    # --- actuator -------------------------------------------------------------------------
    TopicSpec("actuator.scan_pose", "ScanPoseReached", EVENT, "actuator", (
        F("scan_id", "str", "scan in progress"),
        F("pose", "int", "index of the pose reached"),
        F("n_poses", "int", "number of poses in the scan program"),
        F("face", f"enum({','.join(FACES)})", "face in view of the camera"),
        F("rotation", "int", "quarter turns of the face as seen by the camera"),
        F("at", f"enum({','.join(FACES)})", "robot-frame face position the camera looks at "
          "(a sim camera renders the twin's face there)", optional=True),
        F("line", "int", "firmware line after which the pose is held (a sim camera films "
          "the twin once it shows this line)", optional=True),
    ), "The robot holds the cube still at a scan pose: the camera may capture."),
    TopicSpec("actuator.progress", "ActuatorProgress", EVENT, "actuator", (
        F("plan_id", "str", "plan being executed"),
        F("step", "int", "index of the primitive now executing (0-based)"),
        F("n_steps", "int", "number of primitives in the plan"),
        F("primitive", "str", "the primitive now executing"),
        F("eta_s", "float", "estimated seconds to the end of the plan"),
        F("state", "enum(running,paused,stopped)", "execution state"),
    ), "Execution progress, one message per primitive."),
    TopicSpec("actuator.amended", "ActuatorAmended", EVENT, "actuator", (
        F("plan_id", "str", "plan being executed"),
        F("at_step", "int", "the first step replaced"),
        F("primitives", "list[str]", "the whole plan as it now stands"),
        F("predicted_ms", "float", "its predicted robot time"),
    ), "The running plan's rest was replaced (actuator.amend): the plan as it now stands."),
    TopicSpec("actuator.result", "ActuatorResult", LATCHED, "actuator", (
        F("plan_id", "str", "plan executed"),
        F("ok", "bool", "every primitive executed exactly once"),
        F("executed", "int", "primitives executed"),
        F("n_steps", "int", "primitives in the plan"),
        F("duration_s", "float", "wall time of the execution"),
        F("error", "str?", "why execution stopped", optional=True),
        F("cube_state_known", "bool", "false after a firmware reset: rescan", optional=True),
        F("amendments", "int", "rests of the plan replaced while it ran (actuator.amend)",
          optional=True),
        F("primitives", "list[str]", "the primitives of the plan as executed, amendments "
          "included", optional=True),
    ), "Final result of a plan execution."),
    # --- solver ---------------------------------------------------------------------------
    TopicSpec("solver.plan", "Plan", LATCHED, "solver", (
        F("plan_id", "str", "unique id of this plan"),
        F("scan_id", "str?", "cube state it answers", optional=True),
        F("puzzle", f"enum({','.join(PUZZLES)})", "which puzzle"),
        F("profile", "str", "robot profile the plan is for"),
        F("facelets", "str", "start state"),
        F("primitives", "list[str]", "the robot's primitives, in order"),
        F("face_turns", "list[str]", "the same solution as face turns"),
        F("predicted_ms", "float", "predicted robot execution time"),
        F("search", "map", "search statistics (nodes, time_ms, depth, ...)"),
    ), "The plan for the current cube state."),
    TopicSpec("solver.sokoban_result", "SokobanResult", LATCHED, "solver", (
        F("level", "str", "the level solved, in XSB text"),
        F("status", "str", "how the search ended (solved, no solution, timeout, ...)"),
        F("solved", "bool", "a solution was found"),
        F("lurd", "str", "the solution in LURD (empty when none)"),
        F("pushes", "int?", "pushes of the solution"),
        F("moves", "int?", "moves of the solution"),
        F("metric", "enum(pushes,moves)", "what the solution minimises"),
        F("optimal", "bool", "proven optimal in that metric"),
    ), "The Sokoban level the solver last answered a `sokoban` command for, and its result "
       "(the dashboard draws its state space)."),
    # --- simulation -----------------------------------------------------------------------
    TopicSpec("sim.twin_state", "TwinState", LATCHED, "firmware-sim", TWIN_FIELDS,
              "The digital twin (simulation only), for views: what verifies a solve is the "
              "firmware simulator's `twin` command (a topic anyone local may publish on)."),
    # --- the cell cycle -------------------------------------------------------------------
    TopicSpec("cell.status", "CycleStatus", LATCHED, "cell", (
        F("cycle_id", "str", "current or last cycle"),
        F("stage", f"enum({','.join(CYCLE_STAGES)})", "stage now"),
        F("detail", "str", "human-readable detail", optional=True),
    ), "Where the solve cycle is now."),
    TopicSpec("cell.result", "CycleResult", LATCHED, "cell", (
        F("cycle_id", "str", "the cycle"),
        F("ok", "bool", "the cube was solved (confirmed by the twin in simulation)"),
        F("stages_s", "map[float]", "duration of each stage in seconds"),
        F("total_s", "float", "duration of the cycle"),
        F("failed_stage", "str?", "stage that failed", optional=True),
        F("error", "str?", "why it failed and what to do", optional=True),
        F("homed", "bool", "the robot was stopped, cleared and homed before scanning (the "
          "recovery path)", optional=True),
    ), "Result of a finished cycle with stage durations."),
    TopicSpec("cell.history", "CycleHistory", LATCHED, "cell", (
        F("cycles", "list[map]", "the latest cycles of the cycle log, oldest first: cycle_id, "
          "started_wall, result (solved, failed, interrupted), total_s, stages_s, "
          "failed_stage, error"),
        F("summary", "map", "over the whole log: cycles, solved, failed, success_rate"),
    ), "The cycle log as the cell keeps it across restarts (published at start and after "
       "each cycle)."),
    # --- command channel (request/reply through the broker; see robocell.common.bus) ------
    TopicSpec("cmd.request", "CommandRequest", EVENT, ANY_SERVICE, (
        F("id", "str", "request id; a retry carries the same id and is not executed twice"),
        F("service", "str", "service addressed"),
        F("command", "str", "command name"),
        F("args", "map", "arguments, checked against the command's declaration"),
        F("timeout_ms", "float", "time the caller waits; the service drops it after that"),
    ), "A command request (command channel, not pub/sub)."),
    TopicSpec("cmd.reply", "CommandReply", EVENT, ANY_SERVICE, (
        F("id", "str", "request id answered"),
        F("ok", "bool", "the command ran and succeeded"),
        F("result", "any", "the handler's result when ok"),
        F("error", f"enum({','.join(COMMAND_ERRORS)})?", "error code when not ok"),
        F("message", "str", "what went wrong, where, and what to do (empty when ok)"),
    ), "A command reply (command channel, not pub/sub)."),
)

COMMON_COMMANDS: tuple[CommandSpec, ...] = (
    CommandSpec("*", "ping", (), (F("service", "str"), F("state", "str")),
                "Answered by every command server: name and lifecycle state.",
                retry_safe=True),
)

COMMANDS: tuple[CommandSpec, ...] = (
    CommandSpec("solver", "solve", (
        F("facelets", "str", "cube state, faces U R F D L B"),
        F("puzzle", f"enum({','.join(PUZZLES)})", "which puzzle", optional=True),
        F("profile", "str", "robot profile", optional=True),
        F("publish", "bool", "also publish the plan on solver.plan", optional=True),
        F("scan_id", "str", "the cube state this answers", optional=True),
        F("budget_ms", "float", "3x3 search budget, its wall time: every idle worker "
          "searches all of it (default: the robot profile's)", optional=True),
    ), (), "Plan a solution; the result has the fields of solver.plan.", retry_safe=True),
    CommandSpec("solver", "sokoban", (
        F("level", "str", "one Sokoban level in XSB text"),
        F("metric", "enum(pushes,moves)", "what the solution minimises (default pushes)",
          optional=True),
        F("timeout_s", "float", "search budget in seconds (default 10)", optional=True),
        F("fast", "bool", "non-optimal fast mode for large levels", optional=True),
    ), (), "Solve a Sokoban level: LURD solution, pushes, moves, optimality, statistics.",
        retry_safe=True),
    CommandSpec("actuator", "execute", (
        F("plan", "map", "the plan to execute: the fields of solver.plan (see `Plan` in "
          "robocell.common.bus.messages)"),
        F("hold_at", "int", "send nothing of this step until actuator.amend answers for it "
          "(or the robot has finished every step before it)", optional=True),
    ), (), "Start executing a plan; progress and result on actuator.* topics."),
    CommandSpec("actuator", "amend", (
        F("plan_id", "str", "the running plan"),
        F("at_step", "int", "the step it is held at"),
        F("primitives", "list[str]", "the new rest, from at_step to the end (omitted: keep "
          "the rest as it is)", optional=True),
        F("hold_at", "int", "hold again before this step (omitted: run to the end)",
          optional=True),
    ), (), "Replace a running plan's rest from the step it is held at, or release the hold: "
        "accepted, or not and why (the robot had begun that step: the rest runs as it was)."),
    CommandSpec("actuator", "scan", (
        F("scan_id", "str", "id for this scan", optional=True),
    ), (), "Run the scan program; one actuator.scan_pose event per pose."),
    CommandSpec("actuator", "pause", ()),
    CommandSpec("actuator", "resume", ()),
    CommandSpec("actuator", "estop", (), (), "Emergency stop, acted on at once. Answers "
                "with the wall time the e-stop byte was written; fails (and says so on "
                "errors, code serial_estop_failed) when it could not be written."),
    CommandSpec("actuator", "status", (), (), "Firmware info, link counters, job running.",
                retry_safe=True),
    CommandSpec("firmware-sim", "scramble", (
        F("moves", "int", "number of random face turns", optional=True),
        F("seed", "int", "random seed", optional=True),
        F("facelets", "str", "set this cube instead of a random one", optional=True),
    ), (), "Simulation only: scramble the twin cube by hand (as a person would)."),
    CommandSpec("firmware-sim", "twin", (), TWIN_FIELDS,
                "Simulation only: the twin as this simulator holds it now (its boot id and "
                "the last line it executed included): the cell's evidence of a solve, "
                "answered by a registered instance, which no publisher can forge.",
                retry_safe=True),
    CommandSpec("cell", "start", (), (), "Run one cycle: scan, solve, execute, verify."),
    CommandSpec("cell", "recover", (), (), "The recovery path as one cycle: e-stop, clear, "
                "home, rescan, plan, solve; answers with the cycle id like start."),
    CommandSpec("cell", "history", (
        F("since", "float", "wall time: only cycles started then or later", optional=True),
        F("limit", "int", "at most this many of the newest cycles", optional=True),
    ), (), "The cycle log: cycles and summary statistics.", retry_safe=True),
    CommandSpec("cell", "estop", (), (), "Stop the cycle at once (the monitor's e-stop sends "
                "this together with actuator.estop)."),
    CommandSpec("cell", "scramble", (
        F("moves", "int", "number of random moves", optional=True),
        F("seed", "int", "random seed", optional=True),
    ), (), "Scramble the twin (simulation only)."),
)

# --- derived tables -----------------------------------------------------------------------

TOPIC_SPECS: dict[str, TopicSpec] = {spec.topic: spec for spec in TOPICS}
LATCHED_TOPICS: frozenset[str] = frozenset(s.topic for s in TOPICS if s.latched)
COMMAND_SPECS: dict[tuple[str, str], CommandSpec] = {
    (spec.service, spec.command): spec for spec in COMMON_COMMANDS + COMMANDS
}
