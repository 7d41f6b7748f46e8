"""Helpers shared by the tests: real processes on free loopback ports (bus, monitor, the
whole cell), scripted bus peers, waiting for messages. Imported as ``support.<module>``."""
