"""The robocell processes, one package each."""
