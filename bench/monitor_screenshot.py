"""Screenshot of the dashboard during a simulated cycle, taken by Debian's Chromium (headless).

With ``--live PROFILE`` the whole simulated cell runs (docker-compose.yml's `sim` profile as
local processes: broker, solver, vision, actuator, firmware simulator, cell, monitor) and the
picture is taken while a real cycle executes its plan. Without it, real broker and monitor
processes show a scripted cell's cycles (history, a failure, an e-stop).

    python bench/monitor_screenshot.py --live six-motor [--out docs/monitor.png]
"""

from __future__ import annotations

import argparse
import secrets
import sys
import tempfile
import time
from pathlib import Path

from monitor_rig import CHROMIUM, CHROMIUM_ARGS, ScriptedCell, start_rig

VIEWPORT = {"width": 1360, "height": 900}
UI_TIMEOUT_MS = 10_000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path,
                        default=Path(__file__).resolve().parents[1] / "docs" / "monitor.png")
    parser.add_argument("--live", metavar="PROFILE",
                        help="run the real simulated cell with this robot profile")
    args = parser.parse_args()
    if args.live:
        return live_screenshot(args.live, args.out)
    from playwright.sync_api import sync_playwright

    token = secrets.token_urlsafe(12)
    with tempfile.TemporaryDirectory() as tmp:
        rig = start_rig(token, Path(tmp))
        cell = ScriptedCell(rig.endpoints)
        try:
            cell.run_cycle("c-101", step_s=0.01)
            cell.run_cycle("c-102", step_s=0.01, fail_at_step=7)
            cell.run_cycle("c-103", step_s=0.01)
            cell.run_cycle("c-104", step_s=0.02, stop_at_step=9)
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM,
                                                     args=CHROMIUM_ARGS)
                page = browser.new_page(viewport=VIEWPORT)
                page.goto(f"{rig.url}/#token={token}")
                page.wait_for_selector("button[data-action=estop]", timeout=UI_TIMEOUT_MS)
                page.wait_for_selector("#plan-steps li.current[data-step='9']",
                                       timeout=UI_TIMEOUT_MS)
                page.wait_for_selector(".face[data-face=B] .grid-overlay circle",
                                       timeout=UI_TIMEOUT_MS)
                page.wait_for_selector("#services tr[data-service=cell]",
                                       timeout=UI_TIMEOUT_MS)
                page.click("button[data-action=pause]")  # no real actuator: an explicit error
                page.wait_for_selector(".log-error", timeout=UI_TIMEOUT_MS)
                time.sleep(1.2)  # one bus.stats period, so topic rates are filled in
                args.out.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(args.out), full_page=True)
                browser.close()
        finally:
            cell.close()
            rig.close()
    print(f"wrote {args.out} ({args.out.stat().st_size // 1024} KiB)")
    return 0


def live_screenshot(profile: str, out: Path) -> int:
    """The real simulated cell, one scramble and one cycle, pictured while it executes."""
    from playwright.sync_api import sync_playwright

    from robocell.common.bus import Endpoints, Node
    from robocell.deploy.launcher import Launcher, temporary_cell_env

    token = secrets.token_urlsafe(12)
    with temporary_cell_env(profile, speed=0.5) as env:  # its cycle log: removed after
        env["ROBOCELL_MONITOR_TOKEN"] = token
        launcher = Launcher("sim", env, quiet={"broker", "solver", "firmware-sim", "actuator-sim",
                                               "vision-sim", "cell", "monitor", "foxglove"})
        url = f"http://127.0.0.1:{env['ROBOCELL_MONITOR_PORT']}/#token={token}"
        with launcher:
            launcher.start()
            bus = launcher.services[0].environment["ROBOCELL_BUS"]
            with Node("screenshot", Endpoints.resolve(bus), track_peers=False) as node, \
                    sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                page = browser.new_page(viewport=VIEWPORT)
                page.goto(url)
                page.wait_for_selector("button[data-action=estop]", timeout=UI_TIMEOUT_MS)
                node.call("cell", "scramble", {"seed": 7}, timeout=10.0)
                node.call("cell", "start", {}, timeout=5.0)
                page.wait_for_selector("#plan-steps li.current", timeout=120_000)
                time.sleep(1.5)
                out.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(out), full_page=True)
                browser.close()
    print(f"wrote {out} ({out.stat().st_size // 1024} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
