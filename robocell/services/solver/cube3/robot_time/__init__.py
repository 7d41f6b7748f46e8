"""The 3x3x3 two-phase search in a robot's own time: IDA* on what a profile's primitives cost.

Its modules, in the order they build on one another:

- `axial_metric`: blocks (what a robot does about one axis between turns of others) and the
  axial-metric distance tables;
- `profile_costs`: a profile as the search sees it, every block's cost from every robot state
  to every other (from the motion compiler) and the least cost of n more steps;
- `cost_tables`, `move_words`: a profile's own tables of exact least costs, and per phase-1
  entry what each face turn adds to them; `cost_lookups`: the search's reads of both;
- `search_state`: the records the compiled search runs on (stacks, control words, prices);
- `block_costs`: a path's cost vector over the robot states, block by block, and its bound;
- `phase2_search`, `phase1_search`: the compiled IDA* of each phase (`prefetch` starts the
  table reads ahead); `driver`: `RobotTimeSearch`, the directions and the budget;
- `table_groups`: the tables for `robocell tables`; `counting_bound`: a lower bound on the
  mean least robot time over all cubes, for any planner.
"""
