"""Solver: turns a puzzle state and a robot profile into the fastest plan for that robot."""
