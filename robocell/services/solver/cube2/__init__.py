"""2x2x2 solver: full-state tables and optimal plans for any robot profile."""
