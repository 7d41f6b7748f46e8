"""Actuator: turns plans into motor commands on a serial line; the firmware simulator and twin."""
