"""The two-host recipe of docs/hosts.md, measured: the robot host and the compute host in two
Linux network namespaces joined by a veth pair (addresses from 198.18.0.0/15; needs root).

The robot host runs `robocell up --sim --without solver` with the broker's CURVE endpoint
open; the compute host runs the solver (`robocell solver --broker ... --curve-key ...`).
Printed, in one run:

- cycles through the remote solver: solved or not, cycle time and its solving stage;
- the robot host: every process's resident memory (VmRSS) and their total (target 700 MB),
  and the table bytes any of them maps (read from /proc maps: none expected);
- solve latency from the robot host through the remote endpoint, and the same requests to a
  solver beside the broker on the robot host itself (local): p50/p99 over the same cubes,
  with the search's own time beside it;
- failover: cycles (and a load of solve requests) while one of two remote solvers is
  SIGKILLed: how many failed;
- refusals: a read-only key and an unknown key running a solver against the endpoint, no
  other solver connected: how many requests reached them.

    python bench/two_hosts.py [--profile six-motor] [--requests 200] [--budget-ms 50]
        [--cycles 3] [--out bench/results/two_hosts.txt]
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from support.netns import Hosts, namespaces_problem  # noqa: E402 - the tests' namespaces
from support.two_hosts import (  # noqa: E402 - the tests' recipe
    cycle,
    generate_keys,
    robocell_cmd,
    robot_env,
    start_robot_host,
    start_solver,
    stop,
    wait_solver,
)

from robocell.common import tables  # noqa: E402
from robocell.common.bus import CommandClient, CommandFailed, Endpoints  # noqa: E402
from robocell.common.cube import random_facelets  # noqa: E402
from robocell.deploy.launcher import temporary_cell_env  # noqa: E402

LOAD_REQUESTS = 100


def latencies(requests: int, budget_ms: float, seed: int) -> list[tuple[float, float]]:
    """On the robot host: (round trip ms, search ms) of ``requests`` solves, one at a time."""
    client = CommandClient("bench-latency", Endpoints.resolve(None))
    out = []
    for i in range(requests):
        started = time.perf_counter()
        plan = client.call("solver", "solve", {"facelets": random_facelets(3, seed + i),
                                               "budget_ms": budget_ms}, timeout=30.0)
        out.append((1000 * (time.perf_counter() - started), plan["search"]["solve_ms"]))
    return out


def load(requests: int, seed: int) -> dict:
    """On the robot host: ``requests`` solves, four at a time; how many failed and why."""
    local = threading.local()  # a command client serves one thread at a time

    def one(i: int) -> str:
        if not hasattr(local, "client"):
            local.client = CommandClient(f"bench-load-{threading.get_ident()}",
                                         Endpoints.resolve(None))
        try:
            local.client.call("solver", "solve", {"facelets": random_facelets(3, seed + i),
                                            "budget_ms": 20}, timeout=30.0)
            return "ok"
        except CommandFailed as exc:
            return f"{exc.code}: {exc}"

    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(one, range(requests)))
    return {"ok": answers.count("ok"), "failed": [a for a in answers if a != "ok"]}


def inner(hosts: Hosts, env: dict, *args: str, background: bool = False):
    argv = [sys.executable, __file__, "--inner", *args]
    if background:
        return hosts.run("robot", argv, env=env, stdout=subprocess.PIPE, text=True)
    done = hosts.call("robot", argv, env=env, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(done.stderr)
    return json.loads(done.stdout.strip().splitlines()[-1])


def robot_memory(hosts: Hosts) -> tuple[dict[str, float], int]:
    """Each robot-host process's VmRSS (MB, by command) and the table bytes they map."""
    rss: dict[str, float] = {}
    mapped = 0
    for pid in hosts.pids("robot"):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            status = Path(f"/proc/{pid}/status").read_text()
            mapped += sum(tables.mapped_groups(pid).values())
        except OSError:
            continue
        words = [w.decode() for w in cmdline if w]
        name = " ".join(words[words.index("robocell") + 1:][:2]) if "robocell" in words \
            else " ".join([Path(words[0]).name, *words[1:2]]) if words else "?"
        if "spawn_main" in " ".join(words):  # a child process of a service (its pool)
            name = f"{Path(words[0]).name} (a service's child process)"
        kb = next((int(line.split()[1]) for line in status.splitlines()
                   if line.startswith("VmRSS:")), 0)
        rss[f"{name} ({pid})"] = kb / 1024
    return rss, mapped


def percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


class Lines(list):
    """The result lines, each printed as it is added (a long run shows its progress)."""

    def append(self, line: str) -> None:
        print(line, flush=True)
        super().append(line)

    def __iadd__(self, more):
        for line in more:
            self.append(line)
        return self


def run(args: argparse.Namespace, hosts: Hosts, keys: dict, env: dict) -> list[str]:
    lines = Lines()
    lines += [f"two hosts in network namespaces: robot host {hosts['robot'].namespace} "
             f"({hosts.robot_address_for('compute')}), compute host "
             f"{hosts['compute'].namespace} ({hosts['compute'].address}); profile "
             f"{args.profile}, simulation speed {args.speed:g}"]
    up = start_robot_host(hosts, keys, env)
    solver = start_solver(hosts, keys["compute"], args.profile, workers=2)
    waited = wait_solver(hosts, env, timeout=900, solver=solver)
    lines.append(f"remote solver answering {waited:.0f} s after it started (tables mapped, "
                 "search compiled)")
    results = [cycle(hosts, env, 100 + i) for i in range(args.cycles)]
    for r in results:
        lines.append(f"cycle through the remote solver: {'SOLVED' if r['ok'] else 'FAILED'} "
                     f"in {r['total_s']:.2f} s (solving {r['stages_s'].get('solving', 0):.3f}"
                     f" s){'' if r['ok'] else ': ' + str(r.get('error'))}")
    rss, mapped = robot_memory(hosts)
    lines.append(f"robot host processes (VmRSS MB): total {sum(rss.values()):,.0f} (target "
                 f"700); table bytes mapped by them: {mapped}")
    lines += [f"    {name:<44} {mb:7.1f}" for name, mb in sorted(rss.items())]
    remote = inner(hosts, env, "latency", str(args.requests), str(args.budget_ms))
    # failover: a second remote solver, one of the two SIGKILLed under load
    second = start_solver(hosts, keys["compute"], args.profile, workers=2)
    time.sleep(5.0)
    wait_solver(hosts, env, timeout=900)
    loader = inner(hosts, env, "load", str(LOAD_REQUESTS), background=True)
    failover = [cycle(hosts, env, 200)]
    stop(solver, signal.SIGKILL)
    failover += [cycle(hosts, env, 201 + i) for i in range(args.cycles)]
    loaded = json.loads(loader.communicate(timeout=1800)[0].strip().splitlines()[-1])
    failed = [r for r in failover if not r["ok"]]
    lines.append(f"failover: {len(failover)} cycles while one of two remote solvers was "
                 f"SIGKILLed after the first: {len(failed)} failed; {LOAD_REQUESTS} solve "
                 f"requests meanwhile: {loaded['ok']} answered, {len(loaded['failed'])} failed"
                 + (f" {loaded['failed'][:3]}" if loaded["failed"] else ""))
    stop(second)
    # refusals: keys without the service role running a solver, no other solver there
    refused = [start_solver(hosts, keys[name], args.profile) for name in ("reader", "stranger")]
    time.sleep(30.0)
    answers = [hosts.call("robot", robocell_cmd(
        "bus", "call", "--timeout", "5", "solver", "solve",
        json.dumps({"facelets": "U" * 4 + "R" * 4 + "F" * 4 + "D" * 4 + "L" * 4 + "B" * 4})),
        env=env) for _ in range(20)]
    reached = sum(1 for a in answers if a.returncode == 0)
    unavailable = sum(1 for a in answers if "unavailable" in a.stdout + a.stderr)
    lines.append(f"refusals: solvers with a read-only key and an unknown key, 20 requests: "
                 f"{reached} reached them, {unavailable} answered unavailable by the broker")
    for proc in refused:
        stop(proc)
    # local: the same requests to a solver beside the broker on the robot host
    local_solver = hosts.run("robot", robocell_cmd("solver", "--profile", args.profile,
                                                   "--workers", "2"),
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_solver(hosts, env, timeout=900)
    local = inner(hosts, env, "latency", str(args.requests), str(args.budget_ms))
    stop(local_solver)
    lines.append(f"solve latency from the robot host, {args.requests} cubes, {args.budget_ms:g}"
                 " ms search budget (round trip ms; search ms):")
    for name, rows in (("remote (CURVE, veth)", remote), ("local (loopback)", local)):
        trip = [r[0] for r in rows]
        search = [r[1] for r in rows]
        lines.append(f"    {name:<22} p50 {percentile(trip, 50):7.1f}  p99 "
                     f"{percentile(trip, 99):7.1f}   search p50 {percentile(search, 50):6.1f}"
                     f"  p99 {percentile(search, 99):6.1f}")
    stop(up, signal.SIGINT)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default="six-motor")
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--budget-ms", type=float, default=50.0)
    parser.add_argument("--cycles", type=int, default=3)
    parser.add_argument("--speed", type=float, default=20.0)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--inner", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inner:
        what, count, *rest = args.inner
        if what == "latency":
            print(json.dumps(latencies(int(count), float(rest[0]), 7000)))
        else:
            print(json.dumps(load(int(count), 8000)))
        return
    problem = namespaces_problem()
    if problem is not None:
        sys.exit(f"bench/two_hosts.py: {problem}")
    hosts = Hosts.make("robot", "compute")
    try:
        with tempfile.TemporaryDirectory(prefix="robocell-keys-") as key_dir, \
                temporary_cell_env(args.profile, args.speed) as cell_env:
            keys = generate_keys(Path(key_dir), ("compute", "reader", "stranger"))
            lines = run(args, hosts, keys, robot_env(cell_env))
    finally:
        hosts.close()
    text = "\n".join(lines)
    if args.out is not None:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
