"""The pure core of the monitor: coalescing of bus messages into views, the control gate."""

from __future__ import annotations

import json

import pytest

from robocell.common.bus.schema import validate
from robocell.common.bus.wire import Envelope
from robocell.common.operator_control import (
    ACTIONS,
    ControlRefusedError,
    check_configured_token,
    check_token,
    plan_control,
)
from robocell.services.monitor.dashboard import (
    MAX_CYCLES,
    MAX_ERRORS,
    SERVICES_REFRESH_S,
    Dashboard,
)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def message(topic: str, payload: dict, source: str = "test", seq: int = 0) -> Envelope:
    return validate(Envelope.now(topic, source, seq, payload))


def beat(service: str, period: float = 1.0, state: str = "ready", seq: int = 0) -> Envelope:
    return message("heartbeat", {"service": service, "state": state, "health": {"queue": 0},
                                 "period_s": period, "pid": 42, "host": "cellhost",
                                 "uptime_s": 5.0, "commands": ["ping"]}, service, seq)


def progress(step: int, n_steps: int = 10_000) -> Envelope:
    return message("actuator.progress", {"plan_id": "p1", "step": step, "n_steps": n_steps,
                                         "primitive": "R", "eta_s": 1.0, "state": "running"},
                   "actuator", step)


def test_many_messages_of_one_topic_become_one_update_with_the_latest():
    board = Dashboard(FakeClock())
    board.take_changes()
    for step in range(10_000):
        board.ingest(progress(step))
    changes = board.take_changes()
    assert changes["progress"]["step"] == 9_999
    assert board.ingested == 10_000
    assert "progress" not in board.take_changes()  # nothing new: nothing sent


def test_histories_are_bounded_whatever_the_message_count():
    board = Dashboard(FakeClock())
    for i in range(5 * MAX_ERRORS):
        board.ingest(message("errors", {"service": "vision", "stage": "scan", "code": "glare",
                                        "message": f"glare #{i}"}, "vision", i))
    for i in range(5 * MAX_CYCLES):
        board.ingest(message("cell.result", {"cycle_id": f"c{i}", "ok": True,
                                             "stages_s": {"scanning": 1.0}, "total_s": 1.0},
                             "cell", i))
    snapshot = board.snapshot()
    assert len(snapshot["errors"]) == MAX_ERRORS
    assert snapshot["errors"][0]["message"] == f"glare #{5 * MAX_ERRORS - 1}"  # newest first
    assert len(snapshot["cycles"]) == MAX_CYCLES
    assert snapshot["cycles"][0]["cycle_id"] == f"c{5 * MAX_CYCLES - 1}"


def test_a_peer_that_stops_beating_turns_stale_after_three_periods():
    clock = FakeClock()
    board = Dashboard(clock)
    board.ingest(beat("vision", period=1.0))
    services = board.take_changes()["services"]
    assert services[0]["service"] == "vision" and services[0]["stale"] is False
    clock.now += 2.9
    assert board.take_changes()["services"][0]["stale"] is False
    clock.now += 0.2
    view = board.take_changes()["services"][0]
    assert view["stale"] is True and view["age_s"] == pytest.approx(3.1)
    board.ingest(beat("vision", seq=1))
    assert board.take_changes()["services"][0]["stale"] is False


def test_services_are_refreshed_periodically_even_without_beats():
    clock = FakeClock()
    board = Dashboard(clock)
    board.ingest(beat("solver"))
    board.take_changes()
    assert "services" not in board.take_changes()
    clock.now += SERVICES_REFRESH_S
    assert "services" in board.take_changes()


def test_a_new_scan_clears_the_faces_of_the_previous_one():
    board = Dashboard(FakeClock())

    def face(scan_id: str, face: str, ok: bool = True) -> Envelope:
        return message("vision.face", {
            "scan_id": scan_id, "pose": 0, "face": face, "size": 2, "jpeg": b"\xff\xd8jpeg",
            "grid": [[1.0, 1.0]] * 4, "colors": [[1, 2, 3]] * 4, "confidence": [1.0] * 4,
            "ok": ok, **({} if ok else {"error": "no grid found"})}, "vision")

    board.ingest(face("s1", "U"))
    board.ingest(face("s1", "R", ok=False))
    changes = board.take_changes()
    assert changes["face.U"]["jpeg"] == "/9hqcGVn"  # base64 of the JPEG bytes
    assert "face R: no grid found" in changes["errors"][0]["message"]
    board.ingest(face("s2", "F"))
    changes = board.take_changes()
    assert changes["face.U"] is None and changes["face.R"] is None
    assert changes["face.F"]["scan_id"] == "s2"


def _face(scan_id: str, face: str) -> dict:
    return {"scan_id": scan_id, "pose": 0, "face": face, "size": 2, "jpeg": b"\xff\xd8jpeg",
            "grid": [[1.0, 1.0]] * 4, "colors": [[1, 2, 3]] * 4, "confidence": [1.0] * 4,
            "ok": True}


def test_a_monitor_started_after_a_scan_shows_the_faces_the_broker_kept():
    board = Dashboard(FakeClock())
    board.ingest(message("vision.scan_faces", {"scan_id": "s1", "faces": [
        _face("s1", "U"), _face("s1", "R")]}, "vision"))
    changes = board.take_changes()
    assert changes["face.U"]["jpeg"] == "/9hqcGVn" and changes["face.R"]["scan_id"] == "s1"
    assert "face.F" not in changes
    assert board.snapshot()["face.R"]["face"] == "R"


def test_the_kept_faces_of_an_older_scan_do_not_replace_a_newer_scans():
    board = Dashboard(FakeClock())
    kept = message("vision.scan_faces", {"scan_id": "s1", "faces": [_face("s1", "U")]},
                   "vision")
    board.ingest(message("vision.face", _face("s2", "F"), "vision"))
    board.ingest(kept.__class__(kept.topic, kept.source, kept.seq, kept.wall_time - 60,
                                kept.mono_time, kept.payload))
    snapshot = board.snapshot()
    assert snapshot["face.F"]["scan_id"] == "s2" and snapshot["face.U"] is None


def test_every_view_is_json():
    board = Dashboard(FakeClock())
    board.ingest(beat("vision"))
    board.ingest(progress(1))
    board.ingest(message("diagnostics", {"service": "broker", "level": "warning",
                                         "code": "dropped_messages", "message": "slow"}))
    board.ingest(message("diagnostics", {"service": "broker", "level": "info",
                                         "code": "note", "message": "fine"}))
    text = json.dumps(board.snapshot())
    assert "dropped_messages" in text and "note" not in text


def test_control_needs_a_configured_token_and_the_same_token():
    assert check_token("s3cret-token", "s3cret-token")
    assert not check_token("s3cret-token", "s3cret-tokem")
    assert not check_token("s3cret-token", None)
    assert not check_token(None, "anything")
    assert not check_token("", "")
    with pytest.raises(ValueError, match="at least"):
        check_configured_token("short")
    assert check_configured_token(None) is None


def test_control_requests_are_refused_unless_authorised_and_well_formed():
    with pytest.raises(ControlRefusedError) as refused:
        plan_control({"action": "start"}, authorised=False)
    assert refused.value.code == "forbidden"
    for bad in ({"action": "launch"}, {"action": "start", "args": {"moves": 3}},
                {"action": "scramble", "args": {"moves": "many"}}, ["start"]):
        with pytest.raises(ControlRefusedError) as refused:
            plan_control(bad, authorised=True)
        assert refused.value.code == "invalid_arguments"
    action, args = plan_control({"action": "scramble", "args": {"moves": 20, "seed": 3}}, True)
    assert action.commands == (("cell", "scramble"),) and args == {"moves": 20, "seed": 3}
    assert ("actuator", "estop") in ACTIONS["estop"].commands


def test_a_view_that_cannot_be_built_says_so_and_the_others_still_update():
    board = Dashboard(FakeClock())
    board.ingest(progress(1))
    board.ingest(beat("vision"))
    board._latest.heartbeats.clear()  # liveness and heartbeats out of step: services breaks
    changes = board.take_changes()
    assert "cannot be built" in changes["services"]["unavailable"]
    assert changes["progress"]["step"] == 1
    assert board.build_errors == 1


def test_replayed_messages_are_shown_as_replayed_and_replayed_heartbeats_ignored() -> None:
    clock = FakeClock()
    board = Dashboard(clock)
    board.ingest(beat("vision"))
    board.ingest(message(
        "heartbeat", {"service": "cell", "state": "ready", "health": {}, "period_s": 1.0,
                      "pid": 7, "host": "old", "uptime_s": 1.0, "commands": []},
        source="replay:cell"))
    board.ingest(message("cell.status", {"cycle_id": "c1", "stage": "done"},
                         source="replay:cell"))
    views = board.take_changes()
    assert [s["service"] for s in views["services"]] == ["vision"]
    assert views["cell"]["replayed"] is True and views["cell"]["source"] == "replay:cell"
    assert views["monitor"]["replay"] == {"messages": 2, "active": True}
    board.ingest(message("cell.status", {"cycle_id": "c2", "stage": "idle"}, source="cell"))
    assert board.take_changes()["cell"]["replayed"] is False


def test_the_cycle_list_comes_back_from_the_cells_log_after_a_restart():
    board = Dashboard(FakeClock())  # a monitor just started: no cell.result seen
    logged = [{"cycle_id": f"c{i}", "started_wall": 1000.0 + i, "profile": "soltvvo-2x2",
               "result": result, "total_s": 2.5, "stages_s": {"scanning": 1.0},
               "failed_stage": None if result == "solved" else "executing",
               "error": None if result == "solved" else "the cell process ended"}
              for i, result in enumerate(("solved", "failed", "interrupted"))]
    board.ingest(message("cell.history", {"cycles": logged, "summary": {"cycles": 3}}, "cell"))
    cycles = board.take_changes()["cycles"]
    assert [c["cycle_id"] for c in cycles] == ["c2", "c1", "c0"]  # newest first
    assert [c["ok"] for c in cycles] == [False, False, True]
    assert cycles[0]["result"] == "interrupted" and cycles[0]["time"] == 1002.0
    assert cycles[1]["failed_stage"] == "executing"


def test_a_node_that_said_it_was_stopping_leaves_the_services_table_when_silent():
    """A finished command (`cycle-cli`, `scramble-cli`, a second monitor) beats "stopping"
    and ends: a normal exit, not a red stale service. One that went silent while ready does
    stay, as stale."""
    clock = FakeClock()
    board = Dashboard(clock)
    board.ingest(beat("cycle-cli", state="stopping"))
    board.ingest(beat("vision"))
    names = [s["service"] for s in board.take_changes()["services"]]
    assert names == ["cycle-cli", "vision"]
    clock.now += 3.5
    services = board.take_changes()["services"]
    assert [(s["service"], s["stale"]) for s in services] == [("vision", True)]


def test_a_remote_instance_is_shown_with_its_host_and_key():
    """A solver on another host, joined over the CURVE endpoint: the services view names its
    host (from its heartbeat) and the key it joined with (from bus.stats)."""
    board = Dashboard(FakeClock())
    board.ingest(message("heartbeat", {
        "service": "solver", "state": "ready", "health": {}, "period_s": 1.0, "pid": 7,
        "host": "compute-1", "uptime_s": 5.0, "commands": ["ping", "solve"]}, "solver"))
    board.ingest(message("bus.stats", {
        "period_s": 1.0, "uptime_s": 9.0, "topics": {}, "messages": 0, "bytes": 0,
        "rejected": {}, "gaps": 0, "subscriptions": 0, "commands": {},
        "services": ["solver"], "instances": {"solver": [{
            "id": "ab12", "pid": 7, "host": "compute-1", "outstanding": 0, "answered": 3,
            "commands": ["ping", "solve"], "key": "compute"}]}}, "broker"))
    (solver,) = [s for s in board.snapshot()["services"] if s["service"] == "solver"]
    assert solver["host"] == "compute-1"
    assert solver["instances"] == [{"id": "ab12", "pid": 7, "host": "compute-1",
                                    "outstanding": 0, "key": "compute"}]
