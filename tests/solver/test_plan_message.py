"""The plan as one type: `Plan` is generated from the declaration of `solver.plan`, is what
`solver.solve` answers and `actuator.execute` takes, and carries its moves as lists."""

from robocell.common.bus.payloads import Plan
from robocell.common.bus.schema import command_spec, topic_spec, validate_payload
from robocell.common.notation import parse_moves
from robocell.services.solver.planning import plan_message
from robocell.services.solver.solution import Solution

PAYLOAD = {"plan_id": "p1", "puzzle": "2x2x2", "profile": "soltvvo-2x2", "facelets": "",
           "primitives": ["R'", "B2"], "face_turns": ["R'"], "predicted_ms": 10.0,
           "search": {"length": 1}}


def test_the_plan_type_has_the_fields_of_the_topic():
    declared = {f.name for f in topic_spec("solver.plan").fields}
    assert set(Plan.__struct_fields__) == declared


def test_a_plan_round_trips_through_its_payload():
    assert Plan.from_checked(PAYLOAD).to_payload() == PAYLOAD
    with_scan = {**PAYLOAD, "scan_id": "s1"}
    assert Plan.from_checked(with_scan).to_payload() == with_scan


def test_solve_answers_a_plan_and_execute_takes_one():
    assert command_spec("solver", "solve").result_name == "Plan"
    args = {f.name: f for f in command_spec("actuator", "execute").args}
    # the plan itself, not an id to look up; the only other argument is the optional hold
    # of the rolling search (actuator.amend)
    assert list(args) == ["plan", "hold_at"]
    assert args["plan"].type == "Plan" and not args["plan"].optional
    assert args["hold_at"].optional


def test_solve_takes_no_puzzle_argument():
    # the facelets' length says which cube; an argument nobody reads is not declared
    assert "puzzle" not in {f.name for f in command_spec("solver", "solve").args}


def test_a_solutions_moves_stay_a_list_into_the_plan():
    moves = parse_moves("R U2 F'")
    solution = Solution(puzzle="3x3x3", profile="htm", facelets="", primitives=["R", "U2", "F'"],
                        moves=moves, cost=3.0, cost_ms=300.0, solve_ms=1.0,
                        robot_ms=300.0)
    row = solution.to_dict()
    assert row["moves"] == ["R", "U2", "F'"]
    plan = plan_message(row, "p1", None, 2.0)
    assert plan.face_turns == ["R", "U2", "F'"] and parse_moves(plan.face_turns) == moves
    validate_payload("solver.plan", plan.to_payload())
    assert "scan_id" not in plan.to_payload()  # not known: absent, not null
    already_solved = Solution(puzzle="3x3x3", profile="htm", facelets="", primitives=[],
                              moves=[], cost=0.0, cost_ms=0.0, solve_ms=1.0,
                              robot_ms=0.0)
    assert plan_message(already_solved.to_dict(), "p2", "s1", 2.0).face_turns == []
