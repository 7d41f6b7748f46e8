"""The firmware process: the robot's motor firmware behind its serial line, as a Python simulator
or the compiled AVR firmware in simavr, with a digital twin of robot and cube."""
