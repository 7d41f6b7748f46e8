"""robocell: a robot cell that reads, plans and solves puzzles over a ZeroMQ bus."""

from pathlib import Path

from robocell.common.numba_cache import sweep

__version__ = "0.1.0"

# numba's cached compiled functions, deleted when any source changed (numba alone would keep a
# function's old callees from other modules: `robocell.common.numba_cache`)
sweep(Path(__file__).resolve().parent)
