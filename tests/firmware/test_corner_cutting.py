"""The simulator's planner queue cuts corners itself: a ``MOVE ... ov=<steps>`` starts when the
perpendicular move before has that many steps left, the cube turns as if one followed the
other, and past the cube's cut tolerance the layers jam, the firmware stops and says so."""

from __future__ import annotations

import pytest

from robocell.common.facelets import solved
from robocell.common.moves import apply_to_facelets
from robocell.common.notation import parse_moves
from robocell.common.profile import load_profile
from robocell.robot import protocol as proto
from robocell.robot.physics import PhysicsError, load_physics
from robocell.services.actuator.executor import Job, Line, measured_steps
from robocell.services.firmware.simulator import FirmwareCore


def reports(data: list[bytes]) -> list[proto.Report]:
    return [proto.parse_report(proto.unframe(raw)) for raw in data]


def line(n: int, text: str) -> bytes:
    return proto.frame(f"N{n} {text}")[:-1]


def physics(tmp_path, tolerance: float):
    path = tmp_path / "physics.toml"
    path.write_text(f"[cube]\ncut_tolerance_deg = {tolerance}\n")
    return load_physics(path)


def run(core: FirmwareCore, texts: list[str], until: float = 5000.0) -> list[proto.Report]:
    out = []
    for n, text in enumerate(texts, 1):
        out += reports(core.line(line(n, text), 0.0))
    t = 0.0
    while t < until and core.state != "fault":
        deadline = core.next_deadline()
        if deadline is None:
            break
        t = deadline
        out += reports(core.advance(t))
    return out


def test_an_overlapped_move_starts_at_its_step_and_the_cube_turns_both(tmp_path):
    six = load_profile("six-motor")
    core = FirmwareCore(six, physics=physics(tmp_path, 25))
    got = run(core, ["MOVE R:200", "MARK step=1 U", "MOVE U:200 ov=44", "MARK step=2 F",
                     "MOVE F:-400 ov=44"])
    done = [(r.line, r.float_field("t")) for r in got if r.kind == "done"]
    assert [n for n, _ in done] == [1, 2, 3, 4, 5]  # line order kept
    quarter = core.motors["R"].move_ms(90.0)
    cut = core.motors["R"].time_left_ms(90.0, 19.8)  # 44 steps
    assert done[0][1] == pytest.approx(quarter, abs=1e-3)
    assert done[2][1] == pytest.approx(2 * quarter - cut, abs=1e-3)
    assert done[4][1] == pytest.approx(2 * quarter - 2 * cut + core.motors["F"].move_ms(180),
                                        abs=1e-3)
    assert core.twin.facelets == apply_to_facelets(solved(3), parse_moves("R U F2"), 3)
    assert core.state == "idle" and not core.twin.jammed


def test_an_overlapped_start_is_reported_inside_the_move_before_and_measured_once(tmp_path):
    path = tmp_path / "physics.toml"
    path.write_text("[defaults]\nstart_latency_ms = 4\n[cube]\ncut_tolerance_deg = 25\n")
    core = FirmwareCore(load_profile("six-motor"), physics=load_physics(path))
    texts = ["MARK step=0 R", "MOVE R:200", "MARK step=1 U", "MOVE U:200 ov=44"]
    done = {r.line: (r.int_field("start"), r.int_field("end"))
            for r in run(core, texts) if r.kind == "done"}
    quarter = core.motors["R"].move_ms(90.0) - 4  # from R's first step (after its latency)
    cut = core.motors["R"].time_left_ms(90.0, 19.8)  # 44 steps, counted from R's first step
    assert done[2] == pytest.approx((0, 1000 * (4 + quarter)), abs=1)
    assert done[4][0] == pytest.approx(1000 * (4 + quarter - cut), abs=1)  # inside R's span
    assert done[4][1] == pytest.approx(1000 * (8 + 2 * quarter - cut), abs=1)
    job = Job("plan", ["R", "U"], [Line(text, int(i > 1), 0.0) for i, text in enumerate(texts)])
    steps = measured_steps(job, {i: done[i + 1] for i in range(len(texts))})
    # the robot was busy from R's start to U's end: the overlap is counted once, on U
    assert steps == pytest.approx([4 + quarter, 4 + quarter - cut], abs=1e-2)
    assert sum(steps) == pytest.approx(done[4][1] / 1000, abs=1e-2)


def test_a_motor_still_turning_is_never_overlapped(tmp_path):
    # which layers are perpendicular is the host's to know (it writes ov= only then); the
    # firmware's own rule is that a motor finishes one move before it starts the next
    core = FirmwareCore(load_profile("six-motor"), physics=physics(tmp_path, 25))
    got = run(core, ["MOVE R:200", "MOVE R:200 ov=44", "MOVE R:200 L:200 ov=44"])
    quarter = core.motors["R"].move_ms(90.0)
    assert [r.float_field("t") for r in got if r.kind == "done"] == pytest.approx(
        [quarter, 2 * quarter, 3 * quarter], abs=1e-3)


def test_a_corner_cut_past_the_tolerance_jams_and_clear_and_home_recover(tmp_path):
    six = load_profile("six-motor")
    core = FirmwareCore(six, physics=physics(tmp_path, 12))
    got = run(core, ["MOVE R:200", "MARK step=1 U", "MOVE U:200 ov=44", "MOVE F:200"])
    fault = [r for r in got if r.kind == "fault"]
    assert len(fault) == 1 and fault[0].words[0] == "jam"
    assert "layer U started while layer R stood 19.8 degrees" in fault[0].text()
    assert fault[0].int_field("line") == 1 and not [r for r in got if r.kind == "done"]
    assert core.state == "fault" and core.twin.jammed and not core.twin.solved
    assert core.twin.state()["jammed"] is True and core.twin.misaligned == ["R"]
    refused = reports(core.line(line(1, "MOVE F:200"), 1000.0))
    assert refused[0].kind == "err"
    core.line(proto.frame("CLEAR")[:-1], 1000.0)
    assert core.state == "idle" and not core.twin.jammed
    core.expected = 1
    homed = run(core, ["HOME"])
    assert [r.kind for r in homed if r.kind in ("done", "fault")] == ["done"]
    # the R layer squared where it was nearer (its quarter turn done): a rescan reads it
    assert not core.twin.misaligned and not core.twin.jammed
    assert core.twin.facelets == apply_to_facelets(solved(3), parse_moves("R"), 3)


def test_without_a_tolerance_the_cube_takes_any_cut_corner():
    core = FirmwareCore(load_profile("six-motor"))
    got = run(core, ["MOVE R:200", "MOVE U:200 ov=150"])
    assert [r.kind for r in got if r.kind in ("done", "fault")] == ["done", "done"]


@pytest.mark.parametrize(("text", "key"), [
    ("[cube]\ncut_tolerance_deg = -3\n", "cube.cut_tolerance_deg"),
    ("[defaults]\naccel_scale = 0.5\naccel_dps2 = 100\n", "defaults.accel_dps2"),
    ("[cube]\nslack = 1\n", "cube.slack"),
    ("[robot]\n", "robot"),
])
def test_a_bad_physics_file_names_file_and_key(tmp_path, text, key):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(PhysicsError, match=f"bad.toml: {key}"):
        load_physics(path)


def test_a_pair_on_one_axis_is_never_overlapped_whatever_the_line_says(tmp_path):
    # R and L share no motor but turn layers of one axis: not a corner to cut
    core = FirmwareCore(load_profile("six-motor"), physics=physics(tmp_path, 25))
    got = run(core, ["MOVE R:200", "MOVE L:200 ov=44", "MOVE U:200 D:-200 ov=44"])
    quarter = core.motors["R"].move_ms(90.0)
    cut = core.motors["R"].time_left_ms(90.0, 19.8)
    assert [r.float_field("t") for r in got if r.kind == "done"] == pytest.approx(
        [quarter, 2 * quarter, 3 * quarter - cut], abs=1e-3)
