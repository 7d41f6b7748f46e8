"""Sokoban: levels, the push graph, optimal solving and level generation."""
