"""Named sizes of the two-phase solver: every coordinate, move set and table dimension.

Phase 1 takes any cube into the subgroup G1 = <U, D, R2, F2, L2, B2> (all corners and edges
oriented, the four middle-layer edges in the middle layer); phase 2 solves within G1.
"""

N_CORNER = 8
N_EDGE = 12
N_SLICE_EDGE = 4
"""Edges FR FL BL BR (numbers 8..11) make up the UD slice."""
FIRST_SLICE_EDGE = 8

N_TWIST = 2187
"""3^7 corner orientations (the eighth follows)."""
N_FLIP = 2048
"""2^11 edge orientations (the twelfth follows)."""
N_SLICE = 495
"""C(12, 4) positions of the four slice edges, order ignored."""
N_PERM_4 = 24
"""4! orders of the four slice edges."""
N_SLICE_SORTED = N_SLICE * N_PERM_4
"""Positions and order of the slice edges (11880)."""
N_CORNERS = 40320
"""8! corner permutations."""
N_UD_EDGES = 40320
"""8! permutations of the eight U- and D-layer edges (meaningful in phase 2)."""
N_FLIPSLICE = N_FLIP * N_SLICE
"""Flip and slice positions together (1,013,760): the part of phase 1 that is sym-reduced."""

N_MOVE = 18
"""Face turns U1 U2 U3 R1 .. B3 in kociemba order: move = 3 * face + (quarter_turns - 1)."""
FACE_ORDER = "URFDLB"
N_FACE = 6
PHASE2_MOVES = (0, 1, 2, 4, 7, 9, 10, 11, 13, 16)
"""U1 U2 U3 R2 F2 D1 D2 D3 L2 B2: the moves that keep a cube in G1."""
N_PHASE2_MOVE = len(PHASE2_MOVES)

N_SYM = 16
"""Symmetries of the cube that keep the UD axis: 8 rotations and 8 reflections."""
N_FLIPSLICE_CLASS = 64430
"""Equivalence classes of flip-slice coordinates under the 16 UD symmetries."""
N_CORNER_CLASS = 2768
"""Equivalence classes of corner permutations under the 16 UD symmetries."""

N_PHASE1_PRUNING = N_FLIPSLICE_CLASS * N_TWIST
"""Entries of the phase-1 pruning table (140,908,410)."""
N_PHASE2_PRUNING = N_CORNER_CLASS * N_UD_EDGES
"""Entries of the phase-2 pruning table (111,605,760)."""
N_PHASE1_COSETS = N_FLIPSLICE * N_TWIST
"""Phase-1 cosets the sym-reduced table stands for (2,217,093,120)."""

UNSET = 255
"""Depth marker of a table entry not reached yet while building."""

MAX_LENGTH = 31
"""Longest solution the search arrays can hold."""
