"""docs/foxglove-layout.json is the layout the code generates, and names only channels and
services the bridge offers."""

from __future__ import annotations

import json
import re
from pathlib import Path

import foxglove

from robocell.services.foxglove.control import CALLS
from robocell.services.foxglove.layout import LAYOUT_FILE, cell_layout, layout_text
from robocell.services.foxglove.service import CellChannels

REPO = Path(__file__).resolve().parents[2]


def test_the_layout_in_docs_is_the_generated_one():
    assert (REPO / LAYOUT_FILE).read_text() == layout_text(), (
        f"regenerate it: robocell foxglove --write-layout {LAYOUT_FILE}")


def _paths(config: object) -> list[str]:
    """Every topic or message path a panel's settings name."""
    found = []
    if isinstance(config, dict):
        for key, value in config.items():
            if key in ("topicPath", "path", "value", "topicToRender", "imageTopic"):
                found.append(value)
            else:
                found += _paths(value)
    elif isinstance(config, list):
        for value in config:
            found += _paths(value)
    return found


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
        for path in _paths(config):
            quoted = re.fullmatch(r'"([^"]+)"(\..*)?', path)
            if quoted:  # a topic with dots in its name must be quoted
                named.add(quoted.group(1))
            elif path in topics:  # a topic name (imageTopic, topicToRender) or a whole message
                named.add(path)
            else:
                topic = path.split(".")[0]
                assert "." not in topic and path.startswith(topic), path
                named.add(topic)
        named.update(config.get("topics", {}))
        if key.startswith("CallService!"):
            assert config["serviceName"] in CALLS
            assert "token" in json.loads(config["requestPayload"])
    assert named <= topics and {"/twin/scene", "/vision.face/image", "/log"} <= named
    panels = set(re.findall(r'"([A-Za-z0-9]+![^"]+)"', json.dumps(layout["layout"])))
    assert panels == set(layout["configById"])  # every panel placed, none missing
