"""The broker's check tap: decode and validate, within a CPU budget, what the proxy forwards.

The proxy copies every message to a capture PUB socket; the check reader subscribes to it
only while within its budget (CHECK_BUDGET of a core), so otherwise libzmq drops each copy
at once. On a timer the broker reads what was queued: a good message costs one call of its
topic's compiled decoder; a bad one is explained, counted by reason and reported (the
receivers refuse it themselves; this tells the operator where it came from). A trickle is
checked in full, of a flood only what the budget allows."""

from __future__ import annotations

import collections
import time
from collections.abc import Callable

import zmq

from robocell.common.bus.endpoints import ZMQ_NOBLOCK
from robocell.common.bus.schema import TOPIC_WIRE_DECODERS, validate
from robocell.common.bus.topics import TOPIC_SPECS
from robocell.common.bus.wire import (
    ANSWER_MARK,
    BATCH_MARK,
    MAX_BATCH_BYTES,
    MAX_TOPIC_BYTES,
    TOPIC_END,
    MessageError,
    decode_frame,
    unbatch_frame,
)

CHECK_HWM = 1_000
"""Messages queued for the check tap; beyond, libzmq drops for the check tap alone."""
CHECK_BUDGET = 0.02
"""Share of one core the check tap may spend decoding and validating; beyond it the tap
stops reading until the next budget slice. A good message costs the tap about 1 us (its
topic's compiled decoder), so it checks everything up to about 20,000 messages a second --
the cell sends hundreds."""
CHECK_SLICE_S = 1.0
"""The budget is counted per slice of this length: a burst of malformed messages (each
explained in Python, tens of microseconds) is checked in full when the second is quiet
otherwise, a flood is still held to CHECK_BUDGET."""
CHECK_PERIOD_S = 0.05
"""The check tap is read on a timer, not when a message arrives: a reader woken for every
message would cost libzmq a signal and the loop a wake-up per message, outside the budget.
Every 50 ms, with the cache refresh: CHECK_HWM frames a period are 20,000 a second, about
what the budget can check; an idle broker wakes 20 times a second (each wake-up costs
about 0.15 ms of CPU on a small virtual machine: at 100 a second, 2% of a core)."""
BATCH = 500
"""Messages checked before the budget is looked at again."""
SUBSCRIBE_MARK = b"\x01"  # first byte of a subscription message (b"\x00": unsubscribe)
SUBSCRIPTION_MARKS = (b"\x00", SUBSCRIBE_MARK)

Refused = Callable[[str, "str | None", str, "str | None"], None]
"""(reason, declared topic or None, what is wrong, source or None) -> None"""


def topic_of(frame: bytes) -> str | None:
    """The declared topic a frame starts with, if any."""
    end = frame.find(TOPIC_END, 0, MAX_TOPIC_BYTES)
    name = frame[:end].decode("utf-8", "replace") if end > 0 else ""
    return name if name in TOPIC_SPECS else None


class CheckTap:
    """Reads the capture copies of ``reader`` within the budget; ``rejected`` counts bad
    messages by reason, ``refused`` is told of each."""

    def __init__(self, reader: zmq.Socket, max_bytes: int,
                 rejected: collections.Counter[str], refused: Refused) -> None:
        self.reader = reader
        self.max_bytes = max_bytes
        self.rejected = rejected
        self.refused = refused
        self.checked = 0
        """Frames decoded and validated (every message in them), as the proxy counts what
        it forwards."""
        self._subscribed = True
        self._slice = 0.0
        self._used = 0.0
        self._wire = {topic.encode(): wire for topic, wire in TOPIC_WIRE_DECODERS.items()}
        """topic bytes -> its compiled decoder (the fast path)."""

    def within_budget(self) -> bool:
        """True while this slice's checking CPU time is under CHECK_BUDGET of the slice."""
        now = time.monotonic()
        if now - self._slice >= CHECK_SLICE_S:
            self._slice, self._used = now, 0.0
        return self._used < CHECK_BUDGET * CHECK_SLICE_S

    def subscribe_within_budget(self) -> None:
        """Take capture copies only while within the budget: unsubscribed, the check tap
        costs the proxy one dropped copy a message and nothing else."""
        on = self.within_budget()
        if on != self._subscribed:
            self.reader.setsockopt(zmq.SUBSCRIBE if on else zmq.UNSUBSCRIBE, b"")
            self._subscribed = on

    def read(self) -> None:
        """Check what the tap has queued, batch by batch, while within the budget."""
        while self.within_budget():
            started = time.thread_time()
            read = self._check_batch()
            self._used += time.thread_time() - started
            if read < BATCH:
                return

    def _check_batch(self) -> int:
        """Check about BATCH queued messages (a batch frame counts as the messages it
        carries: the budget is looked at in between); how many were read."""
        reader = self.reader
        read = 0
        while read < BATCH:
            try:
                frame = reader.recv(ZMQ_NOBLOCK)
            except zmq.Again:
                break
            if frame.startswith(ANSWER_MARK) and not reader.rcvmore:
                end = frame.find(TOPIC_END, len(ANSWER_MARK))  # a cache answer: its message
                frame = frame[end + 1:] if end > 0 else frame
            elif frame[:1] in SUBSCRIPTION_MARKS and not reader.rcvmore:
                read += 1
                continue  # a subscription on its way upstream, copied by the proxy too
            if reader.rcvmore:  # a sender put several frames into one message
                n = 1
                while reader.rcvmore:
                    reader.recv()
                    n += 1
                self.checked += n  # in frames, as the proxy counts what it forwards
                self.refused("decode", topic_of(frame),
                             f"a message of {n} frames; a bus message is one frame", None)
                read += 1
                continue
            try:
                read += self._inspect(frame)
            except Exception as exc:  # never let one message stop the broker: count, say
                read += 1
                self.refused("internal", topic_of(frame),
                             f"checking it raised {type(exc).__name__}: {exc}", None)
        return read

    def _inspect(self, frame: bytes) -> int:
        """Decode and validate one message (each of a batch frame); refusals are counted
        and reported. A good message takes one call of its topic's compiled decoder (a good
        batch one too); anything else goes through the explaining checks. How many
        messages the frame carried (1 for one that cannot be taken apart)."""
        self.checked += 1  # in frames, as the proxy counts what it forwards
        end = frame.find(TOPIC_END, 0, MAX_TOPIC_BYTES)
        wire = self._wire.get(frame[:end]) if end > 0 else None
        if end > 0 and len(frame) > end + 1 and frame[end + 1] == BATCH_MARK:
            count = wire.accepts_batch(memoryview(frame)[end + 1:]) if wire and \
                len(frame) - end - 1 <= MAX_BATCH_BYTES else 0
            if count:
                return count
            try:
                parts = unbatch_frame(frame)
            except MessageError as exc:
                self.refused(exc.reason, topic_of(frame), str(exc), None)
                return 1
            for part in parts:  # something in it is wrong: explain envelope by envelope
                self._explain(part)
            return len(parts)
        if wire is not None and len(frame) - end - 1 <= self.max_bytes \
                and wire.accepts(frame[end + 1:]):
            return 1
        self._explain(frame)
        return 1

    def _explain(self, frame: bytes) -> None:
        """Decode and validate one plain message frame with the explaining checks."""
        try:
            validate(decode_frame(frame, self.max_bytes))
        except MessageError as exc:
            self.refused(exc.reason, topic_of(frame), str(exc), exc.source)
