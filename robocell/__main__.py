"""Entry point for `python -m robocell`."""

from robocell.cli import main

raise SystemExit(main())
