"""The cell: the solve cycle across services, the local launcher, the demo."""
