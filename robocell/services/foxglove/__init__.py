"""The cell live in Foxglove: every bus topic, the camera, the cube and the twin in 3D, the plan,
service states and errors over the Foxglove WebSocket protocol (official ``foxglove-sdk``), and
the cell's commands as Foxglove services behind the monitor's token."""
