"""Files and directories a reader never sees half of: the only module that renames into place.

Every output is built under a unique temporary name in the directory it will live in (the
same filesystem, so the rename is atomic), then renamed over the target in one step. A failed
write leaves no temporary file behind and the previous output, if any, untouched. Temporary
files and directories are created with the modes `open` and `mkdir` would give (the umask
applies), so what we publish is readable like any other file the user writes.

A directory is replaced only when it is ours: missing, empty, or holding one of the marker
files our writers leave in it (`_trace.json`, `_stats.json`, `demo.json`...) and nothing our
writer did not put there. A published directory keeps a record of every path it was published
with (`WRITTEN`), so a file the user added since (notes beside a trace, statistics aggregated
into a tuning folder) makes it theirs too: refused in one line, never deleted with the rest.
A directory of ours without that record (written before the record existed) is replaced on
its marker alone.

Writers of the same directory at once (two terminals, a cron job beside a user): each checks
and renames under an exclusive lock on the parent directory (`_renaming`), so the last to
publish wins, whole; an output built in place (`rebuilding_dir`) names its process while it
is built, and another writer is refused in one line meanwhile.
"""
from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import secrets
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator

from costmodel.errors import UserError
from costmodel.temp_dirs import pid_alive

OURS = "a directory this tool wrote"
WRITTEN = ".advisor-written.json"  # in a directory we published: every path it was published with
WRITTEN_FORMAT = "sstore-advisor.written/1"
BUILDING = ".advisor-building"  # in a directory built in place: the pid of the process building it

# a disk that is full: the input was fine, the run failed (exit 1); any other reason a path
# cannot be written (read-only, no permission, a file in the way) is the path's (exit 2)
FULL_ERRNOS = frozenset(getattr(errno, name) for name in ("ENOSPC", "EDQUOT", "EFBIG", "EIO")
                        if hasattr(errno, name))


class DiskFullError(UserError):
    """A write that failed because the disk is full (or failing): exit 1, the input was fine."""

    exit_code = 1


def errno_of(exc: OSError) -> int | None:
    """The errno of a failed write, also where only the message says it (pyarrow's do:
    'Error writing bytes to file. Detail: [errno 28] No space left on device')."""
    if exc.errno is not None:
        return exc.errno
    found = re.search(r"\[errno (\d+)\]", str(exc))
    return int(found.group(1)) if found else None


def cannot_write(path: str | Path, exc: OSError) -> UserError:
    """The one-line error of a failed write: the path, the reason and the errno's name."""
    number = errno_of(exc)
    if number is None:
        reason = str(exc.strerror or exc)
    else:
        said = exc.strerror if exc.errno is not None else None  # else a message around the errno
        refused = _refused_by_its_directory(exc) if number == errno.ENOENT else None
        reason = f"{refused or said or os.strerror(number)} ({errno.errorcode.get(number, number)})"
    kind = DiskFullError if number in FULL_ERRNOS else UserError
    return kind(f"{path}: cannot write: {reason}")


def _refused_by_its_directory(exc: OSError) -> str | None:
    """Why an ENOENT that named a new file (or directory) in a directory that is there failed:
    the directory takes none (/proc and other pseudo filesystems). "No such file or directory"
    read as if the directory were missing. None where that is not the case (a rename names
    two paths, and its source may be what is gone)."""
    name = exc.filename
    if exc.filename2 is not None or not isinstance(name, (str, bytes)) or not name:
        return None
    made = Path(os.fsdecode(name))
    try:
        if made.is_symlink() or made.exists() or not made.parent.is_dir():
            return None
    except OSError:  # (a directory above that cannot be searched: what it holds is unknown)
        return None
    return f"{made.parent} exists but takes no new files or directories"


@contextmanager
def writing(path: str | Path) -> Iterator[None]:
    """Within the block, an OSError (a full or read-only disk...) is the one-line error of
    writing `path`, the output the user asked for, whatever file inside it failed."""
    try:
        yield
    except OSError as exc:
        raise cannot_write(path, exc) from None


MAX_NAME_BYTES = 255  # of one name in a path (Linux, macOS)
MAX_PATH_BYTES = 4095  # of a whole path


def as_path(path, error: type[Exception] = UserError) -> Path:
    """A path the Python API was given: a str or os.PathLike, else one `error` line (pathlib's
    TypeError for None or 5 named neither the argument nor the value). A path no system call
    takes is one line too: a NUL byte was Python's ValueError, a name over 255 bytes an
    OSError (ENAMETOOLONG) from the first `is_dir()`. An empty one too: read as the working
    directory, it was refused as a folder named `.`."""
    if not isinstance(path, (str, os.PathLike)) or isinstance(path, bytes):
        raise error(f"expected a file path, got {path!r:.80}")
    if os.fspath(path) == "":  # Path("") is the working directory: an unset variable read it
        raise error("an empty path: name a file or a folder")
    path = Path(path)
    text = str(path)
    shown = text if len(text) <= 80 else f"{text[:60]}...({len(text):,} characters)"
    if "\0" in text:
        raise error(f"{shown!r}: a path cannot hold a NUL byte")
    if len(os.fsencode(text)) > MAX_PATH_BYTES or any(len(os.fsencode(part)) > MAX_NAME_BYTES
                                                      for part in path.parts):
        raise error(f"{shown}: path too long (at most {MAX_NAME_BYTES} bytes a name, "
                    f"{MAX_PATH_BYTES:,} in all)")
    return path


def file_target(path: str | Path) -> Path:
    """Where a file written to `path` lands: `path`, or the file a symbolic link there points
    to; one UserError line where something other than a regular file is in the way.

    Why: a write renames a new file into place, so a device (/dev/null for a user who wants no
    output), a pipe or a socket named as the output would be replaced by a plain file (as
    root, /dev/null itself), and a link by a file that no longer points where the user meant.
    Also for a long command to call before its work, so a bad `--out` costs nothing."""
    typed = path
    path = as_path(path)
    check_file_name(typed)
    if path.exists() and not path.is_file() and not path.is_dir():  # (before following links:
        raise _not_a_regular_file(path)  # /dev/stdout into a pipe links to "pipe:[N]": ENOENT said)
    target = _followed(path)
    _no_file_above(target)
    if target.is_dir():
        raise UserError(f"{path}: is a directory; name a file to write")
    if target.exists() and not target.is_file():
        raise _not_a_regular_file(path)
    return target


def _not_a_regular_file(path: Path) -> UserError:
    return UserError(f"{path}: exists and is not a regular file (a device, pipe or socket): "
                     f"not replaced; name a file to write")


def _followed(path: Path) -> Path:
    """`path`, or where the symbolic link there points (one that loops: one UserError line;
    the write would replace the link with a file)."""
    if not path.is_symlink():
        return path
    try:
        return Path(os.path.realpath(path, strict=True))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UserError(f"{path}: a symbolic link that loops (too many levels of links): not "
                            f"replaced; name a file or folder to write") from None
        return Path(os.path.realpath(path))  # a link to nothing yet: written where it points


def dir_target(path: str | Path) -> Path:
    """Where a folder output at `path` lands: its parent resolved (`out/../out` is `out`: the
    previous output is set aside and the new one renamed in through that parent, which the
    unresolved path no longer reaches once `out` is moved), and a symbolic link followed (the
    folder it names is replaced, the link kept)."""
    given = as_path(path)
    check_not_standard_output(given, "folder")
    try:  # (a folder output holds Parquet datasets, whose writer and Spark take UTF-8 paths only)
        str(given.absolute()).encode("utf-8")
    except UnicodeEncodeError:
        raise UserError(f"{repr(os.fsencode(given))[2:-1]}: a folder name that is not UTF-8 text: "
                        f"Parquet and Spark cannot use it; name the folder in UTF-8") from None
    path = _followed(given).absolute()
    return Path(os.path.realpath(path.parent)) / path.name


def check_not_a_uri(path, error: type[Exception] = UserError) -> None:
    """One `error` line where an output's path, as typed, is a URI (`s3a://bucket/x`,
    `file:///tmp/x`). Why: a Path folds the `//`, so the output was written to a local
    folder named `s3a:` (or `file:`) in the working directory and the command said it wrote
    the URI. Outputs are local paths; only `trace aggregate` reads its trace from a URI."""
    if isinstance(path, str) and re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", path):
        shown = path if len(path) <= 80 else f"{path[:60]}..."
        raise error(f"{shown}: a URI; an output is written to a local path only: name a local "
                    "file or folder")


def check_file_name(path, error: type[Exception] = UserError) -> None:
    """One `error` line where a file's path, as the user typed it, ends in a slash: that names
    a directory. Why: a Path drops the slash, so `-o notes.txt/` replaced notes.txt and
    `-o results/` wrote a file named results."""
    if isinstance(path, str) and path.endswith(("/", os.sep)):
        shown = path if len(path) <= 80 else f"...{path[-60:]}"
        raise error(f"{shown}: ends in {path[-1]!r}, so it names a directory; name a file to write")
    check_not_standard_output(path, "file", error)


def check_not_standard_output(path, kind: str, error: type[Exception] = UserError) -> None:
    """One `error` line where an output is `-`, which by custom means standard output. Why:
    every output is a file or folder written under a temporary name and renamed (progress
    lines go to standard output too), so `--out -` wrote a file named `-` in the working
    directory and said "wrote -"."""
    if isinstance(path, (str, os.PathLike)) and not isinstance(path, bytes) and os.fspath(path) == "-":
        raise error(f"'-': outputs are written to a {kind}, not to standard output; name a {kind} to write")


def check_writable(path: str | Path, markers: str | Iterable[str] | None = None, what: str = OURS, *,
                   inputs: Iterable[str | Path | None] = ()) -> Path:
    """Before a long command's work: one UserError line where its output `path` (a file, or
    with `markers` a directory it builds, `check_replaceable` first) cannot be written there,
    not after the work.

    Why: a place the user cannot write (no permission, a read-only or pseudo filesystem such
    as /proc) only shows when the output is renamed into place, after a Spark job or a report.
    So a file is created and removed where the output will go (in the nearest directory that
    exists: no directory is made, nothing is left behind). An output that is one of the
    command's `inputs` (the design it reads, say) is refused: the command would replace it."""
    check_not_a_uri(path)
    check_not_an_input(path, inputs)
    if markers is None:
        target = file_target(path)
    else:
        target = Path(path)
        _followed(target)  # a link looping on itself: refused here, not at the rename after the work
        with _renaming(target):  # (not while another writer renames it)
            check_replaceable(target, markers, what)
    above = next(p for p in target.absolute().parents if p.exists())
    try:
        probe, fd = _new_file(above / f"{target.name or 'out'}.probe")
        os.close(fd)
        probe.unlink()
    except OSError as exc:
        raise cannot_write(path, exc) from None
    return target


def check_not_an_input(path: str | Path, inputs: Iterable[str | Path | None]) -> None:
    """One UserError line where the output `path` is the same file as one of `inputs` (None:
    not given, or a name that is no path), or lies inside an input directory (statistics):
    `export -d x.json -o x.json` replaced the design with its export, `recommend S --out
    S/_stats.json` the statistics' manifest with a design."""
    out = as_path(path)  # a name over 255 bytes: `out.exists()` below raised ENAMETOOLONG (internal error)
    for given in inputs:
        if given is None or not Path(given).exists():
            continue
        given = Path(given)  # as the command reads it ("" is ".": os.path.samefile raised on "")
        if out.exists() and os.path.samefile(out, given):
            raise UserError(f"{path}: is also this command's input {given}; writing there would replace "
                            "it: choose another output")
        # realpath, not resolve(): an output that is a symbolic link looping on itself made
        # resolve() raise RuntimeError (an internal error); the write's own check says it loops
        if given.is_dir() and given.resolve() in Path(os.path.realpath(out)).parents:
            raise UserError(f"{path}: is inside this command's input {given}; writing there would change "
                            "it: choose another output")


def _no_file_above(path: Path) -> None:
    """One UserError line where a file stands where `path` needs a directory (`x.txt/out`):
    creating the directories would fail with a misleading "File exists"."""
    for above in path.absolute().parents:
        if above.exists():
            if not above.is_dir():
                raise UserError(f"{path}: cannot write: {above} is a file, not a directory")
            return


def atomic_write_bytes(path: str | Path, data: bytes, *, fsync: bool = True) -> Path:
    """Write `data` to `path` through a temporary file beside it, then rename.

    `fsync` forces the data (and then the directory entry) to disk before returning; the
    engine turns it off where its runs model no disk. A path that cannot be written (no
    permission, a directory in the way, a full disk) is one UserError line, and the temporary
    file is removed. A symbolic link is written through (its target is replaced, the link
    stays); a target that is there but is no regular file (a device such as /dev/null, a pipe,
    a socket, a directory) is refused, never renamed over."""
    path = file_target(path)
    tmp: Path | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp, fd = _new_file(path)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            if fsync:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
        tmp = None
        if fsync:
            _fsync_dir(path.parent)
    except OSError as exc:
        raise cannot_write(path, exc) from None
    finally:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
    return path


def atomic_write_text(path: str | Path, text: str, *, fsync: bool = True) -> Path:
    """`atomic_write_bytes` of `text` as UTF-8 (every format we write is UTF-8)."""
    return atomic_write_bytes(path, text.encode("utf-8"), fsync=fsync)


def check_replaceable(target: str | Path, markers: str | Iterable[str], what: str = OURS) -> None:
    """Refuse (UserError) to replace anything but a missing path, an empty directory, or a
    directory holding one of the `markers` (a previous output of ours); `what` names the
    kind of directory that would be fine, for the message."""
    target = Path(target)
    if not target.exists():
        _no_file_above(target)
        return
    if not target.is_dir():
        raise UserError(f"{target}: exists and is not a directory")
    names = {markers} if isinstance(markers, str) else set(markers)
    entries = {p.name for p in target.iterdir()}
    if entries and not names & entries:
        raise UserError(f"{target}: exists and is not {what}; refusing to replace it "
                        "(choose another path or remove it)")
    added = _added_since_written(target)
    if added:
        more = f" and {len(added) - 1:,} more" if len(added) > 1 else ""
        raise UserError(f"{target}: holds {added[0]}{more}, which this tool did not write there; "
                        "refusing to replace it (move it out, or choose another path)")


def _paths_within(folder: Path) -> list[str]:
    """Every file and directory under `folder` (links not followed), relative, sorted; the
    record itself left out."""
    found = []
    for top, dirs, files in os.walk(folder):
        for name in dirs + files:
            relative = os.path.relpath(os.path.join(top, name), folder)
            if relative != WRITTEN:
                found.append(relative)
    return sorted(found)


def record_written(folder: str | Path) -> None:
    """Record every path in `folder`, which we are about to publish (`check_replaceable`
    reads it the next time the folder would be replaced)."""
    folder = Path(folder)
    record = {"format": WRITTEN_FORMAT, "paths": _paths_within(folder)}
    (folder / WRITTEN).write_text(json.dumps(record, indent=1) + "\n")


def _added_since_written(target: Path) -> list[str]:
    """The paths in our directory `target` that its record does not hold (none without a
    record); a record that cannot be read counts as every path (whose they are is unknown)."""
    record = target / WRITTEN
    if not record.exists():
        return []
    try:
        data = json.loads(record.read_text(encoding="utf-8"))
        written = set(data["paths"]) if data.get("format") == WRITTEN_FORMAT else None
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        written = None
    if written is None:
        return [f"{WRITTEN} (not a record this tool wrote)"]
    return [p for p in _paths_within(target) if p not in written]


def staging_dir(target: str | Path, markers: str | Iterable[str], what: str = OURS) -> Path:
    """A fresh directory beside `target` to build the output in (checked replaceable first,
    so a doomed job fails before it starts)."""
    target = dir_target(target)
    with _renaming(target):
        check_replaceable(target, markers, what)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with _renaming(target):
            _sweep_siblings(target)
            return _new_dir(target, "tmp")
    except OSError as exc:
        raise cannot_write(target, exc) from None


def publish_dir(staged: str | Path, target: str | Path, markers: str | Iterable[str],
                what: str = OURS) -> Path:
    """Move `staged` to `target`, replacing a previous output of ours in one rename step; if
    that rename fails, the previous output is put back. Another writer's publishing of the
    same target waits (`_renaming`): the last one wins."""
    target = dir_target(target)
    with _renaming(target):
        return _publish_dir(Path(staged), target, markers, what)


def _publish_dir(staged: Path, target: Path, markers: str | Iterable[str], what: str) -> Path:
    check_replaceable(target, markers, what)
    old = None
    try:
        record_written(staged)
        if target.exists():
            old = _new_dir(target, "old")
            os.rename(target, old / "previous")
        try:
            os.rename(staged, target)
        except BaseException:
            if old is not None:
                os.rename(old / "previous", target)
            raise
    except OSError as exc:
        raise cannot_write(target, exc) from None
    finally:
        if old is not None and not (old / "previous").exists():  # else rolling back failed: keep it
            shutil.rmtree(old, ignore_errors=True)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return target


@contextmanager
def rebuilding_dir(target: str | Path, markers: str | Iterable[str], what: str = OURS) -> Iterator[Path]:
    """Build an output in place at `target`, for outputs whose files name their own final
    paths (a demo's statistics name its trace): the previous output is set aside under a
    hidden sibling name first, and put back if the build fails or is interrupted (the partial
    build removed), dropped once it succeeds. A build killed outright leaves the set-aside
    copy for the next writer beside it to sweep.

    While it is built, the folder names its process (`BUILDING`): another writer of the same
    folder meanwhile is refused in one line. Without it the second set the first's build
    aside as "the previous output" and built its own there, the first went on writing into
    the second's folder, and whichever failed removed the other's."""
    target = dir_target(target)
    aside = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with _renaming(target):
            _check_not_being_built(target)
            check_replaceable(target, (*([markers] if isinstance(markers, str) else markers), BUILDING), what)
            _sweep_siblings(target)
            if target.exists():
                aside = _new_dir(target, "old")
                os.rename(target, aside / "previous")
            target.mkdir()
            (target / BUILDING).write_text(f"{os.getpid()}\n")
    except OSError as exc:
        if aside is not None and (aside / "previous").exists() and not target.exists():
            os.rename(aside / "previous", target)
        if aside is not None:
            shutil.rmtree(aside, ignore_errors=True)
        raise cannot_write(target, exc) from None
    try:
        yield target
        with writing(target):
            (target / BUILDING).unlink()
            record_written(target)
    except BaseException:
        shutil.rmtree(target, ignore_errors=True)
        if aside is not None:
            os.rename(aside / "previous", target)
            shutil.rmtree(aside, ignore_errors=True)
        raise
    if aside is not None:
        shutil.rmtree(aside, ignore_errors=True)


def _check_not_being_built(target: Path) -> None:
    """One UserError line where another live process is building `target` in place now."""
    try:
        pid = int((target / BUILDING).read_text().strip())
    except (OSError, ValueError):  # none, or a build's own marker unreadable: not a live one's
        return
    if pid != os.getpid() and pid_alive(pid):
        raise UserError(f"{target}: another advisor process (pid {pid}) is writing there now; wait for "
                        "it to end, or choose another folder")


@contextmanager
def reading_whole(folder: str | Path) -> Iterator[None]:
    """For the block, no writer of ours renames `folder` (a published output: statistics) in or
    out: a shared lock on its parent, which publishing takes exclusively (`_renaming`). Why:
    `recommend stats/` while `trace aggregate --out stats/` published read one version's
    manifest and another's tables, and wrote a design of tpcdi-trade's SPs named move-micro
    (exit 0), or said a table was not a readable Parquet file."""
    with _renaming(Path(folder), shared=True):
        yield


@contextmanager
def _renaming(target: Path, shared: bool = False) -> Iterator[None]:
    """An exclusive lock, for the block, on the directory `target` lies in: writers of the same
    output (two terminals, a cron job) check and rename one at a time, so the last one wins
    whole. Without it one moved the target aside while another listed it
    (FileNotFoundError: an internal error), renamed onto the other's new output (ENOTEMPTY)
    or over nothing (ENOENT), read a record half-written, and left `.old` folders behind.
    A flock on the directory itself leaves nothing behind and ends with the process; where the
    filesystem takes no lock (some network ones), the block runs unlocked."""
    try:
        fd = os.open(target.absolute().parent, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        yield  # (a parent that cannot be opened: the rename there reports why)
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        except OSError:  # a filesystem that takes no lock (some network ones): run unlocked
            pass
        yield
    finally:
        os.close(fd)


def discard_dir(staged: str | Path) -> None:
    """Remove a staging directory after a failed job."""
    shutil.rmtree(staged, ignore_errors=True)


# -- helpers -----------------------------------------------------------------------------------

def _sibling(path: Path, kind: str) -> Path:
    """A hidden name next to `path` that no other writer (thread or process) picks."""
    return path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.{kind}")


def _sweep_siblings(path: Path) -> None:
    """Remove what writers of `path` that were killed (SIGKILL: no clean-up) left beside it:
    the hidden `_sibling` names whose process is gone."""
    prefix = f".{path.name}."
    for entry in path.parent.iterdir():
        if not entry.name.startswith(prefix):
            continue
        parts = entry.name[len(prefix):].split(".")
        if len(parts) != 3 or not parts[0].isdigit() or parts[2] not in ("tmp", "old"):
            continue
        if pid_alive(int(parts[0])):
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


def _new_file(path: Path) -> tuple[Path, int]:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    while True:
        tmp = _sibling(path, "tmp")
        try:
            return tmp, os.open(tmp, flags, 0o666)
        except FileExistsError:
            continue


def _new_dir(path: Path, kind: str) -> Path:
    while True:
        tmp = _sibling(path, kind)
        try:
            tmp.mkdir(0o777)
            return tmp
        except FileExistsError:
            continue


def _fsync_dir(folder: Path) -> None:
    """Make a rename in `folder` durable (where the filesystem lets a directory be synced)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
