"""Firmware simulator: the robot's firmware and a digital twin of robot and cube, behind
the same serial protocol as the real microcontroller."""
