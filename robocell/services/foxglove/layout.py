"""The Foxglove layout that opens the cell in one step (docs/foxglove-layout.json).

The file is in the format the Foxglove app exports and imports (Layouts > Import from file):
``configById`` holds each panel's settings under ``"<panel type>!<id>"`` and ``layout`` the
splits between them. It is generated here from the channel and service names of the bridge,
so that the two cannot drift (a test compares the file in docs/ with :func:`cell_layout`);
`robocell foxglove --write-layout FILE` writes it.

Panels: the twin and the cube as read in 3D, the camera, the cycle's stage over time and its
last verdict, the service states, the plan and its progress, the log of errors, and one
button per service (each request carries an empty ``token``: paste the monitor's token).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from robocell.common.bus.views import IMAGE_CHANNEL
from robocell.services.foxglove.scene import FRAME
from robocell.services.foxglove.service import CUBE_SCENE, LOG, PLAN_PROGRESS, SERVICES, TWIN_SCENE

LAYOUT_FILE = "docs/foxglove-layout.json"
_BUTTONS = (
    ("cell.scramble", "Scramble the twin", {"token": "", "seed": 3}, "#8e44ad"),
    ("cell.start", "Start a cycle", {"token": ""}, "#2e7d32"),
    ("cell.estop", "E-STOP", {"token": ""}, "#c62828"),
    ("solver.solve", "Solve a cube", {"token": "", "facelets": "", "publish": True}, "#1565c0"),
)


def message_path(topic: str, field: str) -> str:
    """A Foxglove message path: a topic whose name holds dots (the bus's) is quoted, else
    Foxglove would read ``cell.status.stage`` as topic ``cell``."""
    return f'"{topic}".{field}' if "." in topic else f"{topic}.{field}"


def _split(direction: str, first: Any, second: Any, percent: float) -> dict[str, Any]:
    return {"direction": direction, "first": first, "second": second,
            "splitPercentage": percent}


def _column(*panels: str) -> Any:
    """Panels stacked top to bottom in equal shares."""
    if len(panels) == 1:
        return panels[0]
    return _split("column", panels[0], _column(*panels[1:]), 100.0 / len(panels))


def cell_layout() -> dict[str, Any]:
    """The layout as JSON-ready data."""
    panels: dict[str, Any] = {
        "3D!cell": {
            "followTf": FRAME, "followMode": "follow-pose",
            "cameraState": {"distance": 0.32, "perspective": True, "phi": 60.0,
                            "thetaOffset": 35.0, "target": [0.0, 0.05, 0.0],
                            "targetOffset": [0.0, 0.0, 0.0],
                            "targetOrientation": [0.0, 0.0, 0.0, 1.0], "fovy": 45.0,
                            "near": 0.001, "far": 50.0},
            "topics": {TWIN_SCENE: {"visible": True}, CUBE_SCENE: {"visible": True}},
            "scene": {}, "transforms": {}, "layers": {},
        },
        "Image!camera": {"imageMode": {"imageTopic": IMAGE_CHANNEL}},
        "RosOut!errors": {"topicToRender": LOG, "minLogLevel": 1, "searchTerms": []},
        "StateTransitions!stage": {
            "paths": [{"value": message_path("cell.status", "stage"),
                       "timestampMethod": "receiveTime", "label": "cycle stage"},
                      {"value": message_path(PLAN_PROGRESS, "state"),
                       "timestampMethod": "receiveTime", "label": "plan"}],
            "isSynced": True},
        "Indicator!verdict": {
            "path": message_path("cell.result", "ok"), "style": "background",
            "rules": [{"operator": "=", "rawValue": "true", "color": "#2e7d32",
                       "label": "last cycle: solved"},
                      {"operator": "=", "rawValue": "false", "color": "#c62828",
                       "label": "last cycle: failed"}],
            "fallbackColor": "#607d8b", "fallbackLabel": "no cycle yet"},
        "Table!services": {"topicPath": message_path(SERVICES, "services")},
        "RawMessages!plan": {"topicPath": PLAN_PROGRESS, "diffEnabled": False,
                             "diffMethod": "custom", "diffTopicPath": "",
                             "showFullMessageForDiff": False, "expansion": "all"},
    }
    titles = {"3D!cell": "twin (turning) and cube as read", "Image!camera": "camera",
              "RosOut!errors": "errors", "StateTransitions!stage": "cycle stage",
              "Indicator!verdict": "last cycle", "Table!services": "services",
              "RawMessages!plan": "plan and progress"}
    for key, title in titles.items():
        panels[key]["foxglovePanelTitle"] = title
    buttons = []
    for service, text, request, colour in _BUTTONS:
        key = f"CallService!{service.replace('.', '-')}"
        panels[key] = {"serviceName": service, "requestPayload": json.dumps(request, indent=2),
                       "layout": "vertical", "buttonText": text, "buttonColor": colour,
                       "editingMode": False, "timeoutSeconds": 30,
                       "foxglovePanelTitle": service}
        buttons.append(key)
    left = _split("column", "3D!cell", _split("row", "Image!camera", "RosOut!errors", 50.0),
                  62.0)
    right = _split("column", _column("Indicator!verdict", "StateTransitions!stage"),
                   _split("column", _split("row", "Table!services", "RawMessages!plan", 50.0),
                          _split("row", _column(*buttons[:2]), _column(*buttons[2:]), 50.0),
                          55.0), 30.0)
    return {"configById": panels, "globalVariables": {}, "userNodes": {},
            "playbackConfig": {"speed": 1.0}, "layout": _split("row", left, right, 58.0)}


def layout_text() -> str:
    """The layout file's text."""
    return json.dumps(cell_layout(), indent=2) + "\n"


def write_layout(path: Path | str) -> Path:
    path = Path(path)
    path.write_text(layout_text())
    return path
