"""Command line of the broker: `robocell broker` and `robocell keys generate`."""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from robocell.common import config
from robocell.common.bus import Endpoints
from robocell.common.bus.keys import CurveKey, KeyFileError, load_key, parse_allow
from robocell.errors import CommandError
from robocell.services.broker.service import Broker
from robocell.services.broker.zap import RemoteAccess


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "broker", help="run the bus broker (pub/sub proxy, last-value cache, commands)",
        description="Run the bus broker. Endpoints come from --bus (a base address: port +0 "
                    "subscribe, +1 publish, +2 commands, +3 capture tap), else $ROBOCELL_BUS, "
                    "else tcp://127.0.0.1:$ROBOCELL_BUS_PORT (7600); each can be overridden "
                    "by --sub/--pub/--cmd/--tap or $ROBOCELL_BUS_SUB/_PUB/_CMD/_TAP.")
    p.add_argument("--bus", help="base address tcp://HOST:PORT (default $ROBOCELL_BUS or "
                                 "tcp://127.0.0.1:$ROBOCELL_BUS_PORT, 7600)")
    p.add_argument("--sub", help="subscribe endpoint (XPUB)")
    p.add_argument("--pub", help="publish endpoint (XSUB)")
    p.add_argument("--cmd", help="command endpoint (ROUTER)")
    p.add_argument("--tap", help="capture tap endpoint (XPUB)")
    p.add_argument("--no-tap", action="store_true", help="do not open the capture tap")
    p.add_argument("--stats-period", type=float, default=1.0, metavar="S",
                   help="seconds between bus.stats messages (default 1)")
    p.add_argument("--sub-hwm", type=int, default=None, metavar="N",
                   help="messages queued per subscriber before dropping for it "
                        "(default 2000)")
    p.add_argument("--no-check", action="store_true",
                   help="leave the check tap out: the broker decodes and validates nothing "
                        "(forwarding never does; receivers always validate)")
    p.add_argument("--remote", metavar="tcp://HOST:PORT",
                   help="also open a CURVE-protected endpoint for peers on other hosts: "
                        "PORT subscribe, PORT+1 publish (services), PORT+2 commands, PORT+3 "
                        "service instances (needs --curve-key and --allow; default "
                        "$ROBOCELL_BROKER_REMOTE)")
    p.add_argument("--curve-key", metavar="FILE",
                   help="the broker's key file (NAME.key; default $ROBOCELL_BROKER_KEY)")
    p.add_argument("--allow", action="append", default=[], metavar="FILE.pub[:ROLE]",
                   help="allow a client's public key; ROLE read (default: subscribe), "
                        "command (also send commands) or service:NAME[,NAME...] (also serve "
                        "as each service NAME: register, publish its topics); repeat for "
                        "more clients or roles (default $ROBOCELL_BROKER_ALLOW, separated by "
                        "spaces)")
    p.add_argument("--allow-nonlocal", action="store_true",
                   help="let the unencrypted local endpoints listen beyond loopback")
    p.set_defaults(func=run_broker)

    keys = subparsers.add_parser("keys", help="CURVE keys for remote bus access")
    keys_sub = keys.add_subparsers(dest="keys_command", metavar="SUBCOMMAND")
    g = keys_sub.add_parser("generate", help="create NAME.key (secret) and NAME.pub",
                            description="Create a CURVE key pair. For the broker: "
                                        "`keys generate broker`. For a client: `keys generate "
                                        "laptop --broker-pub broker.pub`, then start the broker "
                                        "with `--allow laptop.pub[:command]` (or "
                                        "`:service:NAME` for a service on that host) and give "
                                        "laptop.key to the client (--curve-key).")
    g.add_argument("name", help="name of the key (file names NAME.key, NAME.pub)")
    g.add_argument("--dir", type=Path, default=Path("."), help="output directory (default .)")
    g.add_argument("--broker-pub", type=Path, metavar="FILE",
                   help="the broker's public key file, stored in a client key")
    g.add_argument("--force", action="store_true", help="overwrite existing files")
    g.set_defaults(func=run_keys_generate)
    keys.set_defaults(func=lambda args: keys.print_help() or 2)


def remote_options(args: argparse.Namespace) -> None:
    """Fill ``--remote``, ``--curve-key`` and ``--allow`` left out from the environment
    (`config.broker_remote`: how `robocell up` and compose open the CURVE endpoint)."""
    remote, key, allowed = config.broker_remote()
    args.remote = args.remote or remote
    args.curve_key = args.curve_key or key
    args.allow = args.allow or allowed


def run_broker(args: argparse.Namespace) -> int:
    try:
        base = Endpoints.resolve(args.bus)
        if base.subscribe.startswith("tcp://"):  # compose passes the last port: it cannot add
            config.check_bus_block(int(base.subscribe.rsplit(":", 1)[1]))
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    endpoints = Endpoints(args.sub or base.subscribe, args.pub or base.publish,
                          args.cmd or base.command,
                          None if args.no_tap else (args.tap or base.tap))
    remote = None
    remote_options(args)
    if args.remote:
        if not args.curve_key or not args.allow:
            raise CommandError("--remote needs --curve-key BROKER.key and at least one "
                               "--allow CLIENT.pub[:ROLE]; make keys with `robocell keys "
                               "generate`")
        try:
            server_key = load_key(args.curve_key)
            remote = RemoteAccess(args.remote, server_key)
            for spec in args.allow:
                key, role = parse_allow(spec)
                remote.allow(key, role)
        except KeyFileError as exc:
            raise CommandError(str(exc)) from None
    try:
        broker = Broker(endpoints, remote=remote, stats_period=args.stats_period,
                        check=not args.no_check, allow_nonlocal=args.allow_nonlocal,
                        **({"subscriber_hwm": args.sub_hwm} if args.sub_hwm else {}))
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    except Exception as exc:  # zmq.ZMQError: address in use, bad endpoint
        raise CommandError(f"cannot open the broker's endpoints ({exc}); is another broker "
                           f"running? endpoints: {endpoints.subscribe} {endpoints.publish} "
                           f"{endpoints.command} {endpoints.tap or ''}") from None
    signal.signal(signal.SIGTERM, lambda *_: broker.stop())
    print(f"broker: subscribe {endpoints.subscribe}  publish {endpoints.publish}  "
          f"commands {endpoints.command}  tap {endpoints.tap or 'off'}"
          + (f"  remote {args.remote} (CURVE, {len(remote.allowed)} key(s))" if remote else ""),
          file=sys.stderr, flush=True)
    try:
        broker.run()
    except KeyboardInterrupt:
        pass
    return 0


def run_keys_generate(args: argparse.Namespace) -> int:
    broker_public = ""
    if args.broker_pub:
        try:
            broker_public = load_key(args.broker_pub, need_secret=False).public
        except KeyFileError as exc:
            raise CommandError(str(exc)) from None
    for suffix in (".key", ".pub"):
        path = args.dir / f"{args.name}{suffix}"
        if path.exists() and not args.force:
            raise CommandError(f"{path} exists; choose another name or pass --force")
    secret_path, public_path = CurveKey.generate(args.name, broker_public).write(args.dir)
    print(f"wrote {secret_path} (secret, keep private) and {public_path} (public)")
    return 0
