"""The test tiers: which fixtures mark a test ``cell``, ``browser`` or ``avr``, and the marker
expression of the fast tier (``--fast``, ``./dev test --fast``). tests/conftest.py applies
them; ``slow`` is marked by hand on tests that take more than about 2 s on their own."""

from __future__ import annotations

from collections.abc import Iterable

TIER_FIXTURES = {
    "cell": frozenset({"launch_cell", "cell_env"}),
    "browser": frozenset({"browser"}),
    "avr": frozenset({"avr_toolchain"}),
}
"""Each tier marker and the fixtures that earn it: a test using one of them, directly or
through another fixture, is marked (the compiled firmware's parameter of ``any_firmware`` is
marked ``avr`` by its own ``pytest.param``)."""
HEAVY = (*TIER_FIXTURES, "slow")
"""The markers the fast tier leaves out."""
FAST_TIER = " and ".join(f"not {mark}" for mark in HEAVY)
"""The marker expression ``--fast`` adds to ``-m``."""


def tier_marks(fixturenames: Iterable[str]) -> set[str]:
    """The tier markers a test using ``fixturenames`` gets."""
    used = set(fixturenames)
    return {mark for mark, fixtures in TIER_FIXTURES.items() if used & fixtures}
