"""The run's history on disk, so that a long run's driver holds none of it in memory.

The driver appends every shipment of records as it arrives (multi-process sites ship them
pickled: the bytes go to the file as they came, undecoded) to one file of length-prefixed
frames in a private temporary directory; the checker and the serial replay read it back
frame by frame. `MemoryHistory` is the same interface over a list (a driver made without a
spool directory: unit tests that build one by hand). `SortedRuns` is the external sort the
streamed checker orders the executions with: sorted runs of a bounded size on disk, merged.
"""
from __future__ import annotations

import heapq
import pickle
import shutil
import struct
from pathlib import Path
from typing import Iterable, Iterator

from costmodel.temp_dirs import owned_temp_dir

SPOOL_PREFIX = "eng-history-"  # under the "eng-" prefix the runner sweeps for killed runs
_FRAME = struct.Struct("<Q")


def new_spool_dir() -> Path:
    """A private temporary directory (owner pid inside, so a later run sweeps it if this
    process is killed); whoever makes it removes it with `remove_spool_dir`."""
    return owned_temp_dir(SPOOL_PREFIX)


def remove_spool_dir(folder: str | Path | None) -> None:
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


def _write_frame(fh, blob: bytes) -> None:
    try:
        fh.write(_FRAME.pack(len(blob)))
        fh.write(blob)
    except OSError as exc:  # a full disk: the error names the file (a write's error does not)
        raise OSError(exc.errno, exc.strerror, fh.name) from None


def _read_frames(path: Path) -> Iterator[bytes]:
    with open(path, "rb") as fh:
        while True:
            head = fh.read(_FRAME.size)
            if not head:
                return
            (size,) = _FRAME.unpack(head)
            yield fh.read(size)


class MemoryHistory:
    """The history in this process's memory (decoded when first read, as the driver did)."""

    def __init__(self):
        self._records: list = []
        self._packed: list[bytes] = []

    def append(self, records: list) -> None:
        self._decode()
        self._records.extend(records)

    def append_packed(self, blob: bytes) -> None:
        self._packed.append(blob)

    def _decode(self) -> list:
        if self._packed:
            packed, self._packed = self._packed, []
            for blob in packed:
                self._records.extend(pickle.loads(blob))
        return self._records

    def __iter__(self) -> Iterator:
        return iter(self._decode())

    def rewrite(self, records: list) -> None:
        self._packed, self._records = [], list(records)

    @property
    def held(self) -> int:
        """Records (or shipments not decoded yet) this history holds in memory."""
        return len(self._records) + len(self._packed)

    @property
    def spooled(self) -> bool:
        return False

    def close(self) -> None:
        self._records, self._packed = [], []


class HistorySpool:
    """The history as frames in `folder/history.N.bin`: appended as it arrives, read back in
    arrival order as often as asked. Nothing of it stays in memory but the file's buffer."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        self._generation = 0
        self.path = self.folder / "history.0.bin"
        self._fh = open(self.path, "ab")
        self.frames = 0
        self.bytes = 0

    def append(self, records: list) -> None:
        if records:
            self.append_packed(pickle.dumps(list(records), protocol=pickle.HIGHEST_PROTOCOL))

    def append_packed(self, blob: bytes) -> None:
        _write_frame(self._fh, blob)
        self.frames += 1
        self.bytes += len(blob) + _FRAME.size

    def __iter__(self) -> Iterator:
        self._fh.flush()
        for blob in _read_frames(self.path):
            yield from pickle.loads(blob)

    def rewrite(self, records: Iterable) -> None:
        """The history is now `records` (a crash drops what it undid): written to a fresh file
        of this private folder, which then becomes the spool (the old one is removed)."""
        self._generation += 1
        fresh = self.folder / f"history.{self._generation}.bin"
        with open(fresh, "wb") as fh:
            chunk: list = []
            for r in records:
                chunk.append(r)
                if len(chunk) >= 512:
                    _write_frame(fh, pickle.dumps(chunk, protocol=pickle.HIGHEST_PROTOCOL))
                    chunk = []
            if chunk:
                _write_frame(fh, pickle.dumps(chunk, protocol=pickle.HIGHEST_PROTOCOL))
        self._fh.close()
        old, self.path = self.path, fresh
        old.unlink()
        self._fh = open(self.path, "ab")
        self.bytes = self.path.stat().st_size

    @property
    def held(self) -> int:
        return 0

    @property
    def spooled(self) -> bool:
        return True

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.close()


class SortedRuns:
    """An external sort: items (tuples whose leading fields are a unique key) are buffered up
    to `run_size`, written sorted as a run file, and read back merged; memory holds one
    buffer while adding and one frame per run while merging."""

    FRAME_ITEMS = 2048

    def __init__(self, folder: str | Path, name: str, run_size: int = 100_000):
        self.folder = Path(folder)
        self.name = name
        self.run_size = max(1, int(run_size))
        self.buffer: list = []
        self.runs: list[Path] = []
        self.count = 0
        self.peak_buffered = 0

    def add(self, item: tuple) -> None:
        self.buffer.append(item)
        self.count += 1
        if len(self.buffer) >= self.run_size:
            self._spill()

    def _spill(self) -> None:
        self.peak_buffered = max(self.peak_buffered, len(self.buffer))
        if not self.buffer:
            return
        self.buffer.sort()
        path = self.folder / f"{self.name}.{len(self.runs)}.run"
        with open(path, "wb") as fh:
            for i in range(0, len(self.buffer), self.FRAME_ITEMS):
                _write_frame(fh, pickle.dumps(self.buffer[i:i + self.FRAME_ITEMS],
                                              protocol=pickle.HIGHEST_PROTOCOL))
        self.runs.append(path)
        self.buffer = []

    def finish(self) -> "SortedRuns":
        self._spill()
        return self

    def __iter__(self) -> Iterator[tuple]:
        """Every item, in order (call `finish` first); may be read more than once."""
        def run(path: Path) -> Iterator[tuple]:
            for blob in _read_frames(path):
                yield from pickle.loads(blob)

        return heapq.merge(*(run(p) for p in self.runs))
