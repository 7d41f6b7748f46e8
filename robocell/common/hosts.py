"""Host names a loopback web server answers to: a page reached by any other name (one that
resolves to this machine, as in DNS rebinding) is refused."""

from __future__ import annotations

from urllib.parse import urlsplit

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
"""The names of the loopback interface."""


def host_name(header: str) -> str:
    """The host part of a ``Host`` header (``[::1]:8765`` -> ``::1``), lower case."""
    try:
        return (urlsplit(f"//{header}").hostname or "").lower()
    except ValueError:
        return ""
