"""Every bus topic and command of the cell, declared once: name, kind, publisher, fields, types.

This file is the contract between the processes. Validation is generated from it in
:mod:`robocell.common.bus.schema` (:func:`~robocell.common.bus.schema.validate`,
:func:`~robocell.common.bus.schema.validate_args`,
:func:`~robocell.common.bus.schema.validate_result`), the typed classes in
:mod:`robocell.common.bus.payloads`; no service writes its own checks of what arrives. To add
a topic, a command or a field, add it here -- nowhere else.

Topics
    ``TopicSpec(topic, type_name, kind, publisher, fields, doc)``. ``kind`` is
    ``LATCHED`` for state (the broker keeps the last value and hands it to every late
    subscriber at once -- ROS 2 "transient local") or ``EVENT`` for things that happen
    (not kept). ``publisher`` names the service that publishes it (``*`` = every service).

Commands
    ``CommandSpec(service, command, args, result, doc)``: request/reply through the broker
    (see :mod:`robocell.common.bus`). ``args`` are validated by the service before the
    handler runs (a mismatch is answered ``invalid_arguments``); ``result`` by the caller when
    the reply arrives (a mismatch becomes the error ``invalid_result``, naming the command and
    the field).

Typed payloads
    Each topic's payload and each command's result is a msgspec Struct class generated from
    these fields, named by ``type_name`` (a topic) or ``result_name`` (a command):
    :mod:`robocell.common.bus.payloads` (``Plan``, ``ActuatorResult``,
    ``ActuatorStatusResult``, ...).

Field types (a small grammar, parsed once into validators)
    ``str int float bool bytes any map`` -- scalars (``float`` also accepts an int; ``any``
    is any msgpack value; ``map`` is any map with string keys),
    ``list[T]``, ``map[T]`` (string keys, values of type T),
    ``enum(a,b,c)`` (one of these strings), ``T?`` (T or null), and the name of a declared
    payload or result type (``Plan``): a map with exactly that type's fields.
    A field is required unless declared with ``optional=True``; fields not declared are
    refused (a typo is an error, not a silently ignored key).
"""

from __future__ import annotations

import enum
import re
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
                  "forbidden", "failed", "invalid_result")
"""Error codes of a command reply: the command is not offered by the service; the arguments
do not match the declaration; the service cannot take it now; the deadline passed; no such
service is connected; the caller's key may not command; the handler raised; the result does
not match the declaration (found by the caller, never sent by a service)."""


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
    result: tuple[F, ...] | None = None
    """the fields of the result map (None: not declared, any plain value is taken)"""
    doc: str = ""
    retry_safe: bool = False
    """Running it twice does no harm (a pure computation or a read): a request in flight
    on an instance that dies is sent to another instance of the service instead of being
    answered ``unavailable``."""
    result_type: str = ""
    """the name of the result's generated class when another declaration shares it (a topic
    whose payload the result is, another command answering alike); default: service and
    command in CamelCase + ``Result`` (``actuator.status`` -> ``ActuatorStatusResult``)."""

    @property
    def result_name(self) -> str:
        """The name of the result's generated class (see ``result_type``)."""
        if self.result_type:
            return self.result_type
        words = [] if self.service == ANY_SERVICE else re.split(r"[-_]", self.service)
        return "".join(w.capitalize() for w in (*words, self.command)) + "Result"


TWIN_FIELDS = (
    F("puzzle", f"enum({','.join(PUZZLES[:2])})", "which cube"),
    F("facelets", "str", "the twin cube, faces U R F D L B"),
    F("solved", "bool", "the twin cube is solved"),
    F("grips", "map[str]", "gripper name -> open/closed"),
    F("arm_angles", "map[float]", "arm name -> angle in degrees"),
    F("misaligned", "list[str]", "faces whose layer stands part-turned (homing squares "
      "them)", optional=True),
    F("fault", "str?", "jam or other physical fault, if any", optional=True),
    F("jammed", "bool", "two layers locked by a corner cut too soon (until CLEAR)",
      optional=True),
    F("boot_id", "str", "firmware boot id", optional=True),
    F("line", "int", "the last firmware line whose motion the twin shows", optional=True),
)
"""The digital twin as the firmware simulator reports it (topic and command alike)."""

HEALTH = F("health", "map", "free-form health details (queue depth, drops, last error, ...)")

PLAN_FIELDS: tuple[F, ...] = (
    F("plan_id", "str", "unique id of this plan"),
    F("scan_id", "str?", "cube state it answers", optional=True),
    F("puzzle", f"enum({','.join(PUZZLES)})", "which puzzle"),
    F("profile", "str", "robot profile the plan is for"),
    F("facelets", "str", "start state"),
    F("primitives", "list[str]", "the robot's primitives, in order"),
    F("face_turns", "list[str]", "the same solution as face turns, one move each"),
    F("predicted_ms", "float", "predicted robot execution time"),
    F("search", "map", "search statistics (nodes, time_ms, depth, ...)"),
    F("overlap_deg", "float", "robocell calibrate's timing program only: every stepper cuts "
      "corners by this many degrees in this plan (absent: as the profile says)", optional=True),
)
"""A plan for one cube and one robot, in the robot's primitives: the payload of solver.plan,
the result of solver.solve and the ``plan`` argument of actuator.execute (type ``Plan``)."""

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
    TopicSpec("vision.scan_faces", "ScanFaces", LATCHED, "vision", (
        F("scan_id", "str", "the latest scan"),
        F("faces", "list[FaceResult]", "its faces read so far, each as its vision.face "
          "message, in the order read"),
    ), "The faces of the latest scan, republished after each one: kept by the broker, so "
       "that a dashboard started after the scan shows its images."),
    TopicSpec("vision.cube_state", "CubeState", LATCHED, "vision", (
        F("scan_id", "str", "scan the state was read from"),
        F("puzzle", f"enum({','.join(PUZZLES[:2])})", "which cube"),
        F("facelets", "str", "kociemba facelet string, faces U R F D L B"),
        F("confidence", "list[float]", "per-sticker confidence, facelet order"),
        F("wall_time", "float", "when the scan finished", optional=True),
        F("margin", "float", "how much worse the nearest other valid cube fits the colours "
          "(readings below 12 are refused; absent: none within 48)", optional=True),
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
        F("pose_faces", "list[str]", "every face in view at this pose, one event each, in "
          "the order published (a six-camera robot: six faces at one pose)", optional=True),
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
        F("last_line", "int", "the last firmware line streamed (the twin shows the end of "
          "the motion once it reports this line)"),
        F("boot_id", "str?", "the firmware's boot id at the end (null: it never answered)"),
        F("predicted_ms", "float", "the robot time the profile predicts for the plan as "
          "executed", optional=True),
        F("measured_ms", "float?", "the robot's motion time on its own clock (null: the "
          "plan did not finish, or a protocol-1 firmware)", optional=True),
        F("primitive_ms", "list[float]?", "measured ms per primitive, in order",
          optional=True),
        F("line_ms", "list[float]?", "measured ms per firmware line of the plan (a MARK "
          "line before each primitive's commands; robocell calibrate fits the motors to "
          "them)", optional=True),
    ), "Final result of a plan execution."),
    # --- solver ---------------------------------------------------------------------------
    TopicSpec("solver.plan", "Plan", LATCHED, "solver", PLAN_FIELDS,
              "The plan for the current cube state (the answer of solver.solve, published "
              "for watchers when asked)."),
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

PAUSED = (F("paused", "bool", "no new line is sent (the robot stops at the next allowed "
                                "boundary)"),
          F("job", "str?", "the job running (plan, scan, home), if any"))
SCRAMBLED = (F("facelets", "str", "the twin cube now"),
             F("moves", "list[str]", "the face turns of a random scramble, one move each "
               "(empty when facelets were given)"))
CYCLE_STARTED = (F("cycle_id", "str", "the cycle started; its cell.result names it"),
                 F("homing", "bool", "the cycle homes the robot before it scans"))

COMMON_COMMANDS: tuple[CommandSpec, ...] = (
    CommandSpec("*", "ping", (), (F("service", "str"),
                                  F("state", f"enum({','.join(LIFECYCLE_STATES)})")),
                "Answered by every command server: name and lifecycle state.",
                retry_safe=True),
)

COMMANDS: tuple[CommandSpec, ...] = (
    CommandSpec("solver", "solve", (
        F("facelets", "str", "cube state, faces U R F D L B (its length says which cube)"),
        F("profile", "str", "robot profile", optional=True),
        F("publish", "bool", "also publish the plan on solver.plan", optional=True),
        F("scan_id", "str", "the cube state this answers", optional=True),
        F("budget_ms", "float", "3x3 search budget, its wall time: every idle worker "
          "searches all of it (default: the robot profile's)", optional=True),
    ), PLAN_FIELDS, "Plan a solution: the plan (the fields of solver.plan).",
        retry_safe=True, result_type="Plan"),
    CommandSpec("solver", "sokoban", (
        F("level", "str", "one Sokoban level in XSB text"),
        F("metric", "enum(pushes,moves)", "what the solution minimises (default pushes)",
          optional=True),
        F("timeout_s", "float", "search budget in seconds (default 10)", optional=True),
        F("fast", "bool", "non-optimal fast mode for large levels", optional=True),
    ), (
        F("status", "str", "how the search ended (solved, no solution, timeout, ...)"),
        F("solved", "bool", "a solution was found"),
        F("lurd", "str?", "the solution in LURD"),
        F("pushes", "int?", "pushes of the solution"),
        F("moves", "int?", "moves of the solution"),
        F("metric", "enum(pushes,moves)", "what the solution minimises"),
        F("optimal", "bool", "proven optimal in that metric"),
        F("expanded", "int", "positions expanded"),
        F("solve_ms", "float", "search time"),
        F("lower_bound", "int?", "the start position's lower bound"),
        F("stage", "str?", "fast mode: the schedule stage whose result this is"),
        F("service_ms", "float", "time in the service, queue included"),
    ), "Solve a Sokoban level: LURD solution, pushes, moves, optimality, statistics.",
        retry_safe=True),
    CommandSpec("actuator", "execute", (
        F("plan", "Plan", "the plan to execute, as solver.solve answers it"),
        F("hold_at", "int", "send nothing of this step until actuator.amend answers for it "
          "(or the robot has finished every step before it)", optional=True),
    ), (
        F("plan_id", "str", "the plan started"),
        F("n_steps", "int", "primitives in it"),
        F("predicted_ms", "float", "its predicted robot time on this robot"),
    ), "Start executing a plan; progress and result on actuator.* topics."),
    CommandSpec("actuator", "amend", (
        F("plan_id", "str", "the running plan"),
        F("at_step", "int", "the step it is held at"),
        F("primitives", "list[str]", "the new rest, from at_step to the end (omitted: keep "
          "the rest as it is)", optional=True),
        F("hold_at", "int", "hold again before this step (omitted: run to the end)",
          optional=True),
    ), (
        F("accepted", "bool", "the amendment or release took effect"),
        F("reason", "str", "why not, when not accepted", optional=True),
        F("n_steps", "int", "primitives in the plan as it now stands", optional=True),
        F("predicted_ms", "float", "its predicted robot time", optional=True),
    ), "Replace a running plan's rest from the step it is held at, or release the hold: "
        "accepted, or not and why (the robot had begun that step: the rest runs as it was)."),
    CommandSpec("actuator", "scan", (
        F("scan_id", "str", "id for this scan", optional=True),
    ), (
        F("scan_id", "str", "the scan run"),
        F("poses", "int", "poses held"),
    ), "Run the scan program; one actuator.scan_pose event per pose."),
    CommandSpec("actuator", "home", (
        F("motors", "list[str]", "the motors to home (omitted or empty: every one)",
          optional=True),
    ), (
        F("ok", "bool", "the firmware reported the homing done"),
        F("homed", "list[str]", "the motors homed"),
        F("cleared", "bool", "an e-stop or fault was cleared first"),
        F("rebooted", "bool", "the firmware had rebooted (its new boot id is taken)"),
        F("boot_id", "str", "the firmware's boot id"),
        F("duration_s", "float", "wall time of the homing"),
        F("status", "map", "the firmware's status report after it"),
    ), "Bring the robot to its reference position (clearing an e-stop or fault first)."),
    CommandSpec("actuator", "pause", (), PAUSED, "Stop feeding the robot new lines at the "
                "next allowed boundary.",
                result_type="PauseState"),
    CommandSpec("actuator", "resume", (), PAUSED, "Feed a paused robot again.",
                result_type="PauseState"),
    CommandSpec("actuator", "estop", (), (
        F("sent_wall", "float", "wall time the e-stop byte was written"),
        F("job", "str?", "the job it stopped, if any"),
    ), "Emergency stop, acted on at once. Answers with the wall time the e-stop byte was "
       "written; fails (and says so on errors, code serial_estop_failed) when it could not "
       "be written."),
    CommandSpec("actuator", "status", (), (
        F("profile", "str", "the robot profile driven"),
        F("serial", "str", "the serial line"),
        F("job", "str?", "the job running (plan, scan, home), if any"),
        F("connection", "str", "connecting, connected, or why the line cannot be opened"),
        F("firmware", "str?", "firmware name and version (null: it never answered)"),
        F("boot_id", "str?", "the firmware's boot id (null: it never answered)"),
        F("cube_state_known", "bool", "false after a firmware reset or a motion stopped "
          "part way: home and rescan"),
        F("last_line", "int", "the last firmware line streamed"),
        F("link", "map[int]", "counters of the serial line (resends, reconnects, ...)"),
    ), "Firmware info, link counters, job running.", retry_safe=True),
    CommandSpec("firmware-sim", "scramble", (
        F("moves", "int", "number of random face turns", optional=True),
        F("seed", "int", "random seed", optional=True),
        F("facelets", "str", "set this cube instead of a random one", optional=True),
    ), SCRAMBLED, "Simulation only: scramble the twin cube by hand (as a person would).",
        result_type="Scrambled"),
    CommandSpec("firmware-sim", "twin", (), TWIN_FIELDS,
                "Simulation only: the twin as this simulator holds it now (its boot id and "
                "the last line it executed included): the cell's evidence of a solve, "
                "answered by a registered instance, which no publisher can forge.",
                retry_safe=True, result_type="TwinNow"),
    CommandSpec("cell", "start", (), CYCLE_STARTED,
                "Run one cycle: scan, solve, execute, verify.", result_type="CycleStarted"),
    CommandSpec("cell", "recover", (), CYCLE_STARTED, "The recovery path as one cycle: "
                "e-stop, clear, home, rescan, plan, solve; answers with the cycle id like "
                "start.", result_type="CycleStarted"),
    CommandSpec("cell", "history", (
        F("since", "float", "wall time: only cycles started then or later", optional=True),
        F("limit", "int", "at most this many of the newest cycles", optional=True),
    ), (
        F("summary", "map", "cycles, solved, failed, success rate, stage time percentiles"),
        F("cycles", "list[map]", "the cycles asked for, oldest first"),
        F("path", "str", "the cycle log file"),
    ), "The cycle log: cycles and summary statistics.", retry_safe=True),
    CommandSpec("cell", "estop", (), (
        F("cycle_running", "bool", "a cycle was running (it reports failed)"),
        F("actuator", "str", "stopped, or why the actuator's stop is not confirmed"),
    ), "Stop the cycle at once (the monitor's e-stop sends this together with "
       "actuator.estop)."),
    CommandSpec("cell", "scramble", (
        F("moves", "int", "number of random moves", optional=True),
        F("seed", "int", "random seed", optional=True),
    ), SCRAMBLED, "Scramble the twin (simulation only): the firmware simulator's answer.",
        result_type="Scrambled"),
)

# --- derived tables -----------------------------------------------------------------------

TOPIC_SPECS: dict[str, TopicSpec] = {spec.topic: spec for spec in TOPICS}
LATCHED_TOPICS: frozenset[str] = frozenset(s.topic for s in TOPICS if s.latched)
COMMAND_SPECS: dict[tuple[str, str], CommandSpec] = {
    (spec.service, spec.command): spec for spec in COMMON_COMMANDS + COMMANDS
}


def _message_types() -> dict[str, tuple[F, ...]]:
    """Type name -> fields, of every topic payload and every declared command result; a
    name given twice must have the same fields both times."""
    named = [(spec.type_name, spec.fields) for spec in TOPICS]
    named += [(spec.result_name, spec.result) for spec in COMMON_COMMANDS + COMMANDS
              if spec.result is not None]
    types: dict[str, tuple[F, ...]] = {}
    for name, fields in named:
        if types.setdefault(name, fields) != fields:
            raise ValueError(f"type {name!r} is declared twice with different fields in "
                             "robocell.common.bus.topics")
    return types


MESSAGE_TYPES: dict[str, tuple[F, ...]] = _message_types()
"""type name -> its fields: every payload and result type (``Plan``, ``ActuatorResult``,
``ActuatorStatusResult``, ...), each a class in :mod:`robocell.common.bus.payloads` and a
field type of the grammar."""
