"""3x3x3 solver: two-phase search with symmetry-reduced tables, robot-aware plan choice."""
