"""`robocell cube` as a user runs it: a real subprocess, JSON out, exit codes."""

import json
import subprocess
import sys

import pytest

from robocell.common.cube import solved

# A published example of a kociemba-style solver: this cube and the solution it returns.
KOCIEMBA_EXAMPLE = "DRLUUBFBRBLURRLRUBLRDDFDLFUFUFFDBRDUBRUFLLFDDBFLUBLRBD"
KOCIEMBA_SOLUTION = "D2 R' D' F2 B D R2 D2 R' F2 D' F2 U' B2 L2 U2 D R2 U"


def robocell(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "robocell", *args], capture_output=True,
                          text=True, input=stdin, timeout=120)


def test_apply_prints_a_kociemba_facelet_string():
    out = robocell("cube", "apply", "R U R' U'", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["facelets"] == "UULUUFUUFRRUBRRURRFFDFFUFFFDDRDDDDDDBLLLLLLLLBRRBBBBBB"


def test_a_kociemba_solution_applied_from_its_cube_solves_it():
    out = robocell("cube", "apply", "--from", KOCIEMBA_EXAMPLE, KOCIEMBA_SOLUTION, "--json")
    assert json.loads(out.stdout)["facelets"] == solved(3)


def test_apply_on_2x2_and_bad_moves():
    out = robocell("cube", "apply", "--size", "2", "R U", "--json")
    assert len(json.loads(out.stdout)["facelets"]) == 24
    bad = robocell("cube", "apply", "R U Q")
    assert bad.returncode == 2 and "position 4" in bad.stderr


@pytest.mark.parametrize("facelets, code", [
    (solved(3)[:-1] + "F", "colour_count"),
    ("UUUUUUUUURRRRRRRRRFFFFFFFFFDDDDDDDDDLLLLLLLLLBBBBBBBBX", "letters"),
    (solved(3)[:10] + "F" + solved(3)[11:19] + "R" + solved(3)[20:], "parity"),  # UR <-> UF
])
def test_check_rejects_with_the_specific_code(facelets, code):
    out = robocell("cube", "check", facelets, "--json")
    assert out.returncode == 1
    assert json.loads(out.stdout)["code"] == code


def test_check_accepts_valid_and_reads_stdin():
    out = robocell("cube", "check", "-", "--json", stdin=f"{solved(3)}\n{solved(2)}\n")
    assert out.returncode == 0
    assert [json.loads(line)["valid"] for line in out.stdout.splitlines()] == [True, True]


def test_invert_simplify_show():
    assert json.loads(robocell("cube", "invert", "R U2' F'", "--json").stdout)["moves"] == (
        "F U2 R'")
    assert json.loads(robocell("cube", "simplify", "R L R'", "--json").stdout)["moves"] == "L"
    shown = robocell("cube", "show", solved(2), "--plain")
    assert shown.returncode == 0 and shown.stdout.count("U") == 4


def test_scramble_state_only_is_valid_and_seeded():
    a = robocell("cube", "scramble", "--seed", "7", "--no-moves", "--json")
    b = robocell("cube", "scramble", "--seed", "7", "--no-moves", "--json")
    assert a.stdout == b.stdout
    assert robocell("cube", "check", json.loads(a.stdout)["facelets"]).returncode == 0


def test_show_is_coloured_on_a_terminal_unless_no_color_is_set():
    import os
    import pty

    def drawn(env: dict) -> str:
        master, slave = pty.openpty()
        proc = subprocess.Popen([sys.executable, "-m", "robocell", "cube", "show"],
                                stdout=slave, stderr=subprocess.PIPE, env=env)
        os.close(slave)
        out = b""
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        os.close(master)
        proc.wait(60)
        proc.stderr.close()
        return out.decode()

    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    assert "\x1b[" in drawn(env)
    plain = drawn({**env, "NO_COLOR": "1"})
    assert "\x1b[" not in plain
    assert "U U U" in plain
