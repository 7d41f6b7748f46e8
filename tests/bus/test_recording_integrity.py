"""Damaged recordings: CRCs are checked, the damaged chunk is named, play/export refuse."""

from __future__ import annotations

import subprocess
from pathlib import Path

from support.bus import free_base_port, robocell_cmd, robocell_env

from robocell.common.bus.wire import Envelope, encode
from robocell.tools.recording import Recorder, verify_recording

N_MESSAGES = 600
DETAIL = "x" * 1000  # ~1 KB a message: about three chunks of CHUNK_BYTES


def _record(path: Path) -> None:
    with Recorder(path) as recorder:
        for i in range(N_MESSAGES):
            env = Envelope("cell.status", "cell", i, 1000.0 + i, float(i),
                           {"cycle_id": f"c{i}", "stage": "idle", "detail": DETAIL + str(i)})
            recorder.write("cell.status", encode(env), (1000 + i) * 10**9,
                           int(env.wall_time * 10**9), i)


def _chunk_offsets(path: Path) -> list[tuple[int, int]]:
    from mcap.reader import make_reader

    with open(path, "rb") as stream:
        summary = make_reader(stream).get_summary()
    return [(index.chunk_start_offset, index.chunk_length) for index in summary.chunk_indexes]


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = robocell_env(f"tcp://127.0.0.1:{free_base_port()}")  # no broker there
    return subprocess.run(robocell_cmd("bus", *args), env=env, capture_output=True,
                          text=True, timeout=30)


def test_a_flipped_byte_in_a_chunk_is_found_named_and_refused(tmp_path: Path) -> None:
    recording = tmp_path / "run.mcap"
    _record(recording)
    chunks = _chunk_offsets(recording)
    assert len(chunks) >= 3, "the recording should span several chunks"
    intact = verify_recording(recording)
    assert intact.ok and intact.chunks == len(chunks) and intact.messages == N_MESSAGES
    checked = _cli("info", str(recording), "--verify")
    assert checked.returncode == 0, checked.stderr
    assert f"CRCs:      ok ({len(chunks)} chunks, {N_MESSAGES} messages read)" in checked.stdout

    offset, length = chunks[1]
    data = bytearray(recording.read_bytes())
    data[offset + length - 100] ^= 0x01  # inside the second chunk's records
    recording.write_bytes(bytes(data))

    found = verify_recording(recording)
    assert not found.ok and [d.chunk for d in found.damage] == [1]
    assert found.damage[0].offset == offset
    assert found.messages < N_MESSAGES  # the good chunks are still read

    info = _cli("info", str(recording), "--verify")
    assert info.returncode == 1
    assert f"chunk 1 at byte {offset}" in info.stderr and "messages logged" in info.stderr
    play = _cli("play", str(recording))
    assert play.returncode == 2
    assert "is damaged" in play.stderr and f"chunk 1 at byte {offset}" in play.stderr
    assert "no broker answered" not in play.stderr  # refused before connecting
    out = tmp_path / "run.json.mcap"
    export = _cli("export", str(recording), "--json", "-o", str(out))
    assert export.returncode == 2 and "is damaged" in export.stderr
    assert not out.exists()
