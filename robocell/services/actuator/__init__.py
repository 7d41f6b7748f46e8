"""Actuator: turns plans into motor commands for the profile's hardware on a serial line."""
