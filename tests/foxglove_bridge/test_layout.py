"""docs/foxglove-layout.json is the layout the code generates, and names only channels and
services the bridge offers."""

from __future__ import annotations

import json
import re
from pathlib import Path

import foxglove

from robocell.services.foxglove.bridge import CellChannels
from robocell.services.foxglove.control import CALLS
from robocell.services.foxglove.layout import LAYOUT_FILE, cell_layout, layout_text

REPO = Path(__file__).resolve().parents[2]


def test_the_layout_in_docs_is_the_generated_one():
    assert (REPO / LAYOUT_FILE).read_text() == layout_text(), (
        f"regenerate it: robocell foxglove --write-layout {LAYOUT_FILE}")


def test_every_panel_shows_a_channel_or_service_the_bridge_offers():
    channels = CellChannels(foxglove.Context())
    try:
        topics = set(channels.topics) | {c.topic() for c in (
            channels.camera, channels.cube_scene, channels.twin_scene, channels.plan,
            channels.services, channels.log)}
    finally:
        channels.close()
    layout = cell_layout()
    named: set[str] = set()
    for key, config in layout["configById"].items():
        text = json.dumps(config)
        for path in re.findall(r'"(?:topicPath|path|value|topicToRender|imageTopic)": "([^"]+)"',
                               text):
            named.add(next(t for t in sorted(topics, key=len, reverse=True)
                           if path == t or path.startswith(t + ".")))
        named.update(config.get("topics", {}))
        if key.startswith("CallService!"):
            assert config["serviceName"] in CALLS
            assert "token" in json.loads(config["requestPayload"])
    assert named <= topics and {"/twin/scene", "/vision.face/image", "/log"} <= named
    panels = set(re.findall(r'"([A-Za-z0-9]+![^"]+)"', json.dumps(layout["layout"])))
    assert panels == set(layout["configById"])  # every panel placed, none missing
