"""What can go wrong on the serial line (`robocell.services.actuator.link`), as exceptions:
one base, `LinkError`, and a subclass per failure, each with the ``code`` a job's error reply
carries."""

from __future__ import annotations

from robocell.errors import RobocellError


class LinkError(RobocellError, RuntimeError):
    """The line cannot do what was asked; ``code`` says why (see subclasses)."""

    code = "link"


class FirmwareReset(LinkError):
    """The firmware rebooted (new boot id): queued motion is lost, the cube state unknown."""

    code = "firmware_reset"


class FirmwareFault(LinkError):
    """The firmware reported a physical fault (jam, dropped cube) and stopped."""

    code = "fault"

    def __init__(self, fault_code: str, message: str, line: int | None) -> None:
        self.fault_code = fault_code
        self.line = line
        super().__init__(f"firmware fault {fault_code}: {message}"
                         + (f" (line {line})" if line else ""))


class FirmwareUnreachableError(LinkError):
    """No connection or no answer within the give-up time."""

    code = "unreachable"


class SerialOpenError(FirmwareUnreachableError):
    """The serial line cannot be opened at all (no such device, no permission, held by
    another program): the message says what to check."""

    code = "serial_open"


class FirmwareProtocolError(LinkError):
    """A report with a valid checksum whose fields make no sense (``last=notanumber``): the
    host stopped the motion rather than guess."""

    code = "protocol"


class EStopNotSentError(LinkError):
    """The e-stop byte could not be written: the firmware never got it."""

    code = "estop_not_sent"


class CommandRejectedError(LinkError):
    """The firmware refused a command (``err``): a profile or host bug."""

    code = "rejected"
