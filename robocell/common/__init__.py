"""Shared by more than one process: the cube model, notation, validation, profiles, tables, bus."""
