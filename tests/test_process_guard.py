"""The run's guard (tests/conftest.py): a test that leaves a process running fails the run,
and the report names that test; a test that ends what it starts is not named."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

TESTS = Path(__file__).parent
LEAKY_TESTS = '''
import subprocess, sys

def test_leaves_a_sleeper():
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                     start_new_session=True)

def test_ends_what_it_starts():
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    sleeper.kill()
    sleeper.wait()
'''


@pytest.mark.slow
def test_a_process_left_running_fails_the_run_naming_its_test(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(TESTS), *filter(None, [os.environ.get("PYTHONPATH")])]))
    pytester.makeconftest((TESTS / "conftest.py").read_text())
    pytester.makepyfile(test_leaky=LEAKY_TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=2)  # the tests pass; the run fails
    result.stdout.fnmatch_lines(["*processes left running*",
                                 "*test_leaky.py::test_leaves_a_sleeper: pid *time.sleep(60)*"])
    assert "test_ends_what_it_starts:" not in result.stdout.str()
