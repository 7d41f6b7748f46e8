"""The AVR firmware (firmware/ at the top of the repository): its build from a robot profile,
its flashing, and running the compiled binary in simavr with the digital twin."""
