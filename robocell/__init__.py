"""robocell: a robot cell that reads, plans and solves puzzles over a ZeroMQ bus."""

__version__ = "0.1.0"
