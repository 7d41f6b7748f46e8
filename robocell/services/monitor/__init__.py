"""Monitor: live web dashboard of the cell over the bus."""
