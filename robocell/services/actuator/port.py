"""Opening the serial line: which device paths and URLs pyserial can open, and in words a
person can act on, why one could not be opened (no such device, permission, held by another
program). `link.Link` uses it; so does `robocell actuator` to refuse a bad URL at once."""

from __future__ import annotations

import errno
import os

import serial

from robocell.errors import RobocellError

DEFAULT_TIMEOUT_S = 0.005
"""Read timeout of a new port (the link reads without blocking once it has a descriptor)."""


class SerialUrlError(RobocellError, ValueError):
    """A serial URL no transport knows (``bogus://x``): a configuration mistake, not retried."""

    code = "serial_url"


SERIAL_SCHEMES = ("socket", "rfc2217", "loop", "spy", "alt", "hwgrep", "cp2110")
"""URL schemes pyserial opens (``serial.protocol_handler_packages``: serial.urlhandler)."""


def check_serial_url(url: str) -> None:
    """SerialUrlError unless ``url`` is a device path or a URL of a scheme pyserial knows."""
    scheme, sep, _ = url.partition("://")
    if not url.strip():
        raise SerialUrlError("empty serial device; give a device path such as /dev/ttyUSB0 "
                             "or a URL such as socket://127.0.0.1:7700")
    if sep and scheme.lower() not in SERIAL_SCHEMES:
        raise SerialUrlError(
            f"serial URL {url!r}: unknown scheme {scheme!r}; use a device path (/dev/ttyUSB0, "
            f"/dev/serial/by-id/...) or one of {', '.join(s + '://' for s in SERIAL_SCHEMES)} "
            "(the simulator listens on socket://127.0.0.1:PORT)")


def open_port(url: str, timeout: float = DEFAULT_TIMEOUT_S) -> serial.SerialBase:
    """A pyserial port for a device path or URL (``socket://``, ``loop://``, a pty path)."""
    check_serial_url(url)
    try:
        return serial.serial_for_url(url, baudrate=115200, timeout=timeout, write_timeout=2.0,
                                     **({} if "://" in url else {"exclusive": True}))
    except ValueError as exc:  # pyserial's word for a URL or setting it cannot use
        raise SerialUrlError(f"serial device {url!r}: {exc}") from None


def precheck_device(url: str) -> str | None:
    """Without opening it (opening a board's port may reset it): why a device path cannot be
    opened, if the file system already tells (missing, no permission); None otherwise."""
    if "://" in url:
        return None
    if not os.path.exists(url):
        return describe_open_error(url, FileNotFoundError(errno.ENOENT, "No such file", url))
    if not os.access(url, os.R_OK | os.W_OK):
        return describe_open_error(url, PermissionError(errno.EACCES, "Permission denied", url))
    return None


def describe_open_error(url: str, exc: BaseException) -> str:
    """What could not be opened and what to check, from the error pyserial raised."""
    code = getattr(exc, "errno", None)
    text = str(exc)
    if "://" in url:
        return (f"cannot connect to {url} ({text}); check that the firmware (or `robocell "
                "firmware-sim`) runs and listens there")
    if code == errno.ENOENT or "No such file" in text:
        return (f"cannot open {url}: no such device. Check that the device exists (`ls "
                "/dev/ttyUSB* /dev/ttyACM* /dev/serial/by-id/`), that the cable is plugged in "
                "and the board powered, and that --serial / ROBOCELL_SERIAL names it")
    if code in (errno.EACCES, errno.EPERM) or "Permission denied" in text:
        return (f"cannot open {url}: permission denied. Add this user to the group owning "
                f"the device (usually dialout: `sudo usermod -aG dialout $USER`, then log in "
                f"again); `ls -l {url}` shows the group")
    if code in (errno.EBUSY, errno.EAGAIN) or "busy" in text.lower() or "lock" in text.lower():
        return (f"cannot open {url}: another program holds it (`fuser -v {url}` names it: "
                "a serial console such as screen or minicom, ModemManager, another actuator); "
                "close it")
    return (f"cannot open {url} ({text}); check that the device exists, that this user may "
            "open it (dialout group) and that no other program holds it")


def port_fd(port: object) -> int | None:
    """The port's file descriptor, for ports that have one (devices, ptys, ``socket://``)."""
    try:
        fd = port.fileno()  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError, NotImplementedError):
        # no descriptor to wait on (loop://, rfc2217://, a closed port): not a failure, the
        # caller reads through pyserial's own timeout instead (`Link._read_reports`)
        return None
    return fd if isinstance(fd, int) and fd >= 0 else None
