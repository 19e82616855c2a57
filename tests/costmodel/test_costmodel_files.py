"""The bottom layer: one module publishes files and directories, one base class of user
errors, and nothing in the project renames into place around them."""
from __future__ import annotations

import ast
import importlib
import os
import stat
import sys
from pathlib import Path

import pytest

from costmodel import files, user_files
from costmodel.errors import UserError
from costmodel.files import (WRITTEN, atomic_write_bytes, atomic_write_text, check_replaceable, check_writable,
                          discard_dir, publish_dir, staging_dir)
from costmodel.user_files import read_user_text

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("costmodel", "traces", "advisor", "engine_sim", "reports", "bench")


def sources(*packages: str):
    for package in packages:
        for path in sorted((ROOT / package).rglob("*.py")):
            yield path, ast.parse(path.read_text(), str(path))


# -- files ---------------------------------------------------------------------------------

def test_a_file_appears_whole_with_the_mode_open_would_give(tmp_path):
    old = os.umask(0o027)
    try:
        path = atomic_write_text(tmp_path / "deep" / "x.json", "{\"a\": \"é\"}\n")
    finally:
        os.umask(old)
    assert path.read_text(encoding="utf-8") == "{\"a\": \"é\"}\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert os.listdir(path.parent) == ["x.json"]


def test_a_failed_write_leaves_the_previous_file_and_no_temporary(tmp_path, monkeypatch):
    path = atomic_write_text(tmp_path / "x.json", "old")

    def disk_full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "fsync", disk_full)
    with pytest.raises(UserError) as info:
        atomic_write_bytes(path, b"new" * 100_000)
    assert str(info.value) == f"{path}: cannot write: No space left on device (ENOSPC)"
    assert info.value.exit_code == 1  # a full disk: the input was fine
    assert path.read_text() == "old" and os.listdir(tmp_path) == ["x.json"]


def test_an_interrupted_write_leaves_no_temporary(tmp_path, monkeypatch):
    def interrupt(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(files.os, "fsync", interrupt)
    with pytest.raises(KeyboardInterrupt):
        atomic_write_text(tmp_path / "x.json", "new")
    assert os.listdir(tmp_path) == []


def test_without_fsync_nothing_is_forced_to_disk(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(files.os, "fsync", calls.append)
    atomic_write_bytes(tmp_path / "snap.pkl", b"x", fsync=False)
    assert calls == [] and (tmp_path / "snap.pkl").read_bytes() == b"x"
    atomic_write_bytes(tmp_path / "snap.pkl", b"y")
    assert len(calls) == 2  # the file, then the directory entry


def test_a_directory_in_the_way_is_one_line(tmp_path):
    (tmp_path / "d").mkdir()
    with pytest.raises(UserError, match=r"d: is a directory; name a file to write") as info:
        atomic_write_text(tmp_path / "d", "x")
    assert "\n" not in str(info.value) and os.listdir(tmp_path) == ["d"]


def test_a_pipe_in_the_way_is_refused_not_replaced(tmp_path):
    # a device (/dev/null), a pipe or a socket named as the output: renaming over it would
    # leave a plain file there (as root, /dev/null itself)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(UserError, match=r"pipe: exists and is not a regular file .* not replaced") as info:
        atomic_write_text(fifo, "x")
    assert "\n" not in str(info.value)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and os.listdir(tmp_path) == ["pipe"]


def test_an_anonymous_pipe_named_through_proc_is_refused_in_the_same_line():
    # `--out /dev/stdout | cat`: a link to "pipe:[N]", which no path reaches; followed, the
    # write said "/proc/PID/fd/pipe:[N]: cannot write: No such file or directory"
    read_end, write_end = os.pipe()
    try:
        with pytest.raises(UserError, match=r"exists and is not a regular file .* not replaced"):
            atomic_write_text(f"/proc/self/fd/{write_end}", "x")
    finally:
        os.close(read_end)
        os.close(write_end)


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs a /proc, where no file can be created")
@pytest.mark.parametrize("out", ["/proc/advisor-test.json", "/proc/advisor-test/out.json"])
def test_a_directory_that_takes_no_new_file_is_said_so_not_missing(out):
    # /proc is there, but creating a file (or a directory) in it is ENOENT: the write said
    # "No such file or directory", as if /proc were missing
    with pytest.raises(UserError) as info:
        atomic_write_text(out, "x")
    assert str(info.value) == f"{out}: cannot write: /proc exists but takes no new files or directories (ENOENT)"


def test_a_link_is_written_through_and_stays_a_link(tmp_path):
    (tmp_path / "real.json").write_text("old")
    (tmp_path / "link.json").symlink_to("real.json")
    atomic_write_text(tmp_path / "link.json", "new")
    assert (tmp_path / "link.json").is_symlink() and (tmp_path / "real.json").read_text() == "new"
    assert sorted(os.listdir(tmp_path)) == ["link.json", "real.json"]


def test_reading_a_user_file_says_what_is_wrong(tmp_path):
    class Mine(UserError):
        pass

    with pytest.raises(Mine, match="no such file"):
        read_user_text(tmp_path / "none.toml", Mine)
    with pytest.raises(UserError, match="is a directory"):
        read_user_text(tmp_path)
    (tmp_path / "bad").write_bytes(b"\xff\xfe")
    with pytest.raises(UserError, match="cannot read"):
        read_user_text(tmp_path / "bad")


# -- directories ---------------------------------------------------------------------------

def test_only_missing_empty_or_our_own_directories_are_replaceable(tmp_path):
    check_replaceable(tmp_path / "missing", "_ours.json")
    (tmp_path / "empty").mkdir()
    check_replaceable(tmp_path / "empty", "_ours.json")
    (tmp_path / "ours").mkdir()
    (tmp_path / "ours" / "_ours.json").write_text("{}")
    check_replaceable(tmp_path / "ours", {"_other.json", "_ours.json"})
    (tmp_path / "file").write_text("x")
    with pytest.raises(UserError, match="exists and is not a directory"):
        check_replaceable(tmp_path / "file", "_ours.json")
    (tmp_path / "thesis").mkdir()
    (tmp_path / "thesis" / "thesis.tex").write_text("precious")
    with pytest.raises(UserError) as info:
        check_replaceable(tmp_path / "thesis", "_ours.json", "a trace directory")
    assert "is not a trace directory; refusing to replace it" in str(info.value)


def _build(target: Path, marker: str, text: str) -> Path:
    staged = staging_dir(target, marker)
    lands = files.dir_target(target)  # (`out/../out` is `out`; a link, the folder it names)
    assert staged.parent == lands.parent and staged.name.startswith(f".{lands.name}.")
    (staged / marker).write_text(text)
    return staged


def test_a_directory_is_published_and_replaced_in_one_step(tmp_path):
    target = tmp_path / "out"
    first = _build(target, "_m.json", "1")
    (first / "extra").write_text("from the first run")
    publish_dir(first, target, "_m.json")
    publish_dir(_build(target, "_m.json", "2"), target, "_m.json")
    assert sorted(os.listdir(target)) == [WRITTEN, "_m.json"] and (target / "_m.json").read_text() == "2"
    assert os.listdir(tmp_path) == ["out"]  # no staging or old directory left behind


def test_a_folder_named_through_its_own_dot_dot_is_replaced_not_lost(tmp_path):
    """`--out out/../out`: the previous output was set aside and the new one renamed in
    through `out/..`, which no longer existed once `out` had moved: both ended hidden, and
    the next write swept them away."""
    target = tmp_path / "out"
    publish_dir(_build(target, "_m.json", "1"), target, "_m.json")
    odd = tmp_path / "out" / ".." / "out"
    publish_dir(_build(odd, "_m.json", "2"), odd, "_m.json")
    assert (target / "_m.json").read_text() == "2" and os.listdir(tmp_path) == ["out"]
    with files.rebuilding_dir(odd, "_m.json") as built:
        (built / "_m.json").write_text("3")
    assert (target / "_m.json").read_text() == "3" and os.listdir(tmp_path) == ["out"]


def test_a_folder_output_that_is_a_link_is_written_through_and_stays_a_link(tmp_path):
    (tmp_path / "disk").mkdir()
    (tmp_path / "link").symlink_to("disk")
    publish_dir(_build(tmp_path / "link", "_m.json", "1"), tmp_path / "link", "_m.json")
    assert (tmp_path / "link").is_symlink() and (tmp_path / "disk" / "_m.json").read_text() == "1"
    assert sorted(os.listdir(tmp_path)) == ["disk", "link"]


def test_a_link_that_loops_is_refused_as_a_file_or_a_folder_output(tmp_path):
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    for write in (lambda: atomic_write_text(tmp_path / "a", "x"),
                  lambda: staging_dir(tmp_path / "b", "_m.json")):
        with pytest.raises(UserError, match="a symbolic link that loops"):
            write()
    assert (tmp_path / "a").is_symlink() and (tmp_path / "b").is_symlink()


@pytest.mark.parametrize("added", ["NOTES.md", "sub/notes.txt", "stats/_stats.json"])
def test_a_file_added_to_our_directory_since_makes_it_the_users(tmp_path, added):
    """Re-running into a folder of ours deleted what the user had put there since."""
    target = tmp_path / "out"
    first = _build(target, "_m.json", "1")
    (first / "sub").mkdir()
    publish_dir(first, target, "_m.json")
    (target / added).parent.mkdir(exist_ok=True)
    (target / added).write_text("the user's")
    before = sorted(str(p.relative_to(target)) for p in target.rglob("*"))
    for attempt in (lambda: staging_dir(target, "_m.json"), lambda: check_writable(target, "_m.json")):
        with pytest.raises(UserError) as info:
            attempt()
        assert f"holds {added.split('/')[0] if added.startswith('stats') else added}" in str(info.value)
        assert "\n" not in str(info.value)
    assert sorted(str(p.relative_to(target)) for p in target.rglob("*")) == before
    assert (target / added).read_text() == "the user's"


def test_a_directory_of_ours_from_before_the_record_is_replaced_on_its_marker(tmp_path):
    target = tmp_path / "out"
    target.mkdir()
    (target / "_m.json").write_text("old")
    (target / "part.parquet").write_text("old")
    publish_dir(_build(target, "_m.json", "new"), target, "_m.json")
    assert sorted(os.listdir(target)) == [WRITTEN, "_m.json"]


def test_a_record_that_is_not_ours_keeps_the_directory(tmp_path):
    target = tmp_path / "out"
    publish_dir(_build(target, "_m.json", "1"), target, "_m.json")
    (target / WRITTEN).write_text("{not json")
    with pytest.raises(UserError, match="not a record this tool wrote"):
        staging_dir(target, "_m.json")
    assert (target / "_m.json").read_text() == "1"


def test_a_foreign_directory_is_never_replaced(tmp_path):
    target = tmp_path / "mine"
    staged = _build(target, "_m.json", "1")
    target.mkdir()
    (target / "notes.txt").write_text("keep me")
    with pytest.raises(UserError, match="refusing to replace"):
        publish_dir(staged, target, "_m.json")
    with pytest.raises(UserError, match="refusing to replace"):
        staging_dir(target, "_m.json")
    discard_dir(staged)
    assert os.listdir(target) == ["notes.txt"] and os.listdir(tmp_path) == ["mine"]


def test_a_failed_publish_puts_the_previous_output_back(tmp_path):
    target = tmp_path / "out"
    publish_dir(_build(target, "_m.json", "1"), target, "_m.json")
    with pytest.raises(UserError, match="cannot write"):
        publish_dir(tmp_path / "never-staged", target, "_m.json")
    assert (target / "_m.json").read_text() == "1" and os.listdir(tmp_path) == ["out"]


# -- errors --------------------------------------------------------------------------------

USER_ERRORS = {
    "costmodel.files": ["DiskFullError"],
    "costmodel.temp_dirs": ["TempDirError"],
    "costmodel.errors": ["SpecError", "DesignError"],
    "advisor.errors": ["AdvisorError"],
    "traces.errors": ["TraceError", "JavaError"],
    "engine_sim.engine.errors": ["EngineError", "EngineFailure"],
    "engine_sim.sim.errors": ["SimError"],
    "costmodel.calibration": ["CalibrationError"],
    "reports.validation": ["ValidationError"],
    "reports.transforms": ["ChangeError"],
    "reports.validation_view": ["ValidationFormatError"],
}
# the engine's own consistency check and its 2PC abort signal: never a user's doing
# SealError: turned into a refusal or an EngineFailure; _Fallback: the streamed history check
# handing a history it cannot decide to the in-memory checker (caught where it is raised);
# _RepeatedKey: a JSON key given twice, turned into the reader's one-line error
INTERNAL_ERRORS = {"SerialError", "Abort", "SealError", "_Fallback", "_RepeatedKey"}
BUILTIN_BASES = {"Exception", "ValueError", "RuntimeError", "TypeError", "KeyError", "OSError"}


def test_every_user_facing_error_is_a_user_error():
    for module, names in USER_ERRORS.items():
        loaded = importlib.import_module(module)
        for name in names:
            cls = getattr(loaded, name)
            assert issubclass(cls, UserError) and issubclass(cls, ValueError), name
            assert cls.exit_code in (1, 2), name
    from engine_sim.engine.errors import EngineFailure

    assert UserError.exit_code == 2 and EngineFailure.exit_code == 1


def test_no_error_class_is_left_outside_the_hierarchy():
    """A new exception class must be one of the user errors above (or be listed as internal)."""
    listed = {name for names in USER_ERRORS.values() for name in names} | {"UserError"}
    found = set()
    for path, tree in sources("costmodel", "traces", "advisor", "engine_sim", "reports"):
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            bases = {b.id for b in node.bases if isinstance(b, ast.Name)}
            if node.name.endswith(("Error", "Failure")) or bases & (BUILTIN_BASES | listed):
                found.add(node.name)
    assert found - INTERNAL_ERRORS == listed


# -- one module renames into place ---------------------------------------------------------

def _renames(tree: ast.AST) -> list[int]:
    """Lines that rename or move a file: os.replace/os.rename/os.renames, shutil.move, a
    Path's .rename(x)/.replace(x) (one argument; str.replace takes two), or importing them."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in ("os", "shutil"):
            if any(a.name in ("replace", "rename", "renames", "move") for a in node.names):
                lines.append(node.lineno)
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        f = node.func
        owner = f.value.id if isinstance(f.value, ast.Name) else None
        if (owner == "os" and f.attr in ("replace", "rename", "renames")) or \
                (owner == "shutil" and f.attr == "move"):
            lines.append(node.lineno)
        elif f.attr in ("rename", "replace") and len(node.args) == 1 and not node.keywords:
            lines.append(node.lineno)
    return lines


def test_the_rename_finder_finds_each_way_to_rename():
    code = ("import os, shutil\nfrom os import replace\nos.replace(a, b)\nos.rename(a, b)\n"
            "shutil.move(a, b)\nPath(a).rename(b)\ntmp.replace(target)\n"
            "s.replace('a', 'b')\ndf.rename(columns={'a': 'b'})\n")
    assert _renames(ast.parse(code)) == [2, 3, 4, 5, 6, 7]


def test_only_costmodel_files_renames_into_place():
    offenders = [f"{path.relative_to(ROOT)}:{line}" for path, tree in sources(*PACKAGES)
                 for line in _renames(tree) if path != ROOT / "costmodel" / "files.py"]
    assert offenders == []
    assert _renames(ast.parse((ROOT / "costmodel" / "files.py").read_text()))


def test_files_and_errors_import_only_the_standard_library_and_each_other():
    """Publishing a file and raising a user error load nothing heavy (no numpy, no Arrow)."""
    ours = ("costmodel.errors", "costmodel.files", "costmodel.temp_dirs")
    for name in ("files.py", "errors.py", "temp_dirs.py"):
        tree = ast.parse((ROOT / "costmodel" / name).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                roots = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                roots = [node.module or ""]
            else:
                continue
            for root in roots:
                assert root in ours or root.split(".")[0] in sys.stdlib_module_names, \
                    f"{name}: {root}"


def _dead_pid() -> int:
    for pid in range(3_999_999, 3_000_000, -7):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return pid
        except PermissionError:
            continue
    pytest.fail("no free pid in 3,000,000-3,999,999: cannot stand in for a dead writer")


def test_what_a_killed_writer_left_beside_its_output_is_removed_by_the_next(tmp_path):
    """A writer killed with SIGKILL leaves its hidden staging directory (a trace synth: a
    big one); the next writer of the same output removes it, never a live writer's."""
    dead = tmp_path / f".out.{_dead_pid()}.abcd1234.tmp"
    live = tmp_path / f".out.{os.getpid()}.ffff0000.tmp"
    other = tmp_path / ".out.notes"
    for d in (dead, live):
        d.mkdir()
        (d / "part-0.parquet").write_bytes(b"x" * 1000)
    other.write_text("keep")
    staged = files.staging_dir(tmp_path / "out", "_trace.json")
    assert not dead.exists() and live.is_dir() and other.is_file() and staged.is_dir()


def test_a_place_that_cannot_be_written_is_said_before_the_work_and_nothing_is_left(tmp_path, monkeypatch):
    """`check_writable` creates and removes a file where the output will go: a long command
    calls it first, so a place it cannot write fails in one line before its work."""
    (tmp_path / "a.json").write_text("{}")
    assert check_writable(tmp_path / "new" / "deeper" / "out.json") == tmp_path / "new" / "deeper" / "out.json"
    assert check_writable(tmp_path / "out-dir", "_ours.json") == tmp_path / "out-dir"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json"]  # no directory made, no probe left
    with pytest.raises(UserError, match="is a directory; name a file"):
        check_writable(tmp_path)
    with pytest.raises(UserError, match="exists and is not a directory"):
        check_writable(tmp_path / "a.json", "_ours.json")
    with pytest.raises(UserError, match="a.json is a file, not a directory"):
        check_writable(tmp_path / "a.json" / "out.json")

    def refused(path, flags, mode=0o777):  # a read-only filesystem, whoever runs the test (root too)
        raise OSError(30, "Read-only file system", str(path))

    monkeypatch.setattr(files.os, "open", refused)
    for markers in (None, "_ours.json"):
        with pytest.raises(UserError, match=r"cannot write: Read-only file system \(EROFS\)"):
            check_writable(tmp_path / "out", markers)


def test_an_endless_or_oversized_input_is_refused_not_read_into_memory(tmp_path, monkeypatch):
    monkeypatch.setattr(user_files, "MAX_INPUT_BYTES", 1000)
    big = tmp_path / "big.json"
    big.write_text("[" + "0," * 600 + "0]")
    with pytest.raises(UserError, match=r"big.json: over 0 MB, not a file this tool reads"):
        user_files.read_user_json(big)
    if Path("/dev/zero").exists():  # /dev/zero as a design was read until the kernel killed the process
        with pytest.raises(UserError, match="/dev/zero: over"):
            user_files.read_user_text("/dev/zero")
    small = tmp_path / "small.toml"
    small.write_bytes(b"a = 1\r\nb = 2\r\n")  # universal newlines, as read_text gave
    assert user_files.read_user_text(small) == "a = 1\nb = 2\n"


def test_json_with_an_integer_python_will_not_convert_is_one_line(tmp_path):
    # an integer of 5,000 digits raised ValueError, not JSONDecodeError: an internal error
    path = tmp_path / "d.json"
    path.write_text('{"machines": 1' + "0" * 5000 + "}")
    with pytest.raises(UserError, match=r"d.json: not valid JSON: Exceeds the limit") as exc:
        user_files.read_user_json(path)
    assert "\n" not in str(exc.value)


def test_an_output_is_refused_where_it_is_an_input_even_through_a_link(tmp_path):
    from costmodel.files import check_not_an_input

    design = tmp_path / "d.json"
    design.write_text("{}")
    os.link(design, tmp_path / "same.json")
    for out in (design, tmp_path / "same.json"):
        with pytest.raises(UserError, match="is also this command's input"):
            check_not_an_input(out, (None, design))
    check_not_an_input(tmp_path / "other.json", (design,))  # a new file: fine
    (tmp_path / "other.json").write_text("{}")
    check_not_an_input(tmp_path / "other.json", (design, None))  # another file: fine


def test_an_output_inside_an_input_directory_is_refused(tmp_path):
    # `recommend S --out S/_stats.json` replaced the statistics' manifest with a design
    from costmodel.files import check_not_an_input

    stats = tmp_path / "stats"
    stats.mkdir()
    (stats / "_stats.json").write_text("{}")
    for out in (stats / "_stats.json", stats / "new.json"):
        with pytest.raises(UserError, match="is inside this command's input"):
            check_not_an_input(out, ("bank-transfer", stats))
    check_not_an_input(tmp_path / "design.json", (stats,))  # beside it: fine


def test_an_empty_input_name_is_the_current_directory_it_is_read_as(tmp_path, monkeypatch):
    # `report -d d.json --spec "" -o x.html` with x.html there: FileNotFoundError from samefile,
    # an internal error; without x.html the line named the input as nothing ("input ;")
    from costmodel.files import check_not_an_input

    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.html").write_text("kept")
    for out in ("x.html", "new.html"):
        with pytest.raises(UserError, match=r"is inside this command's input \.; ") as exc:
            check_not_an_input(out, ("", None))
        assert "\n" not in str(exc.value)


def test_a_path_argument_that_is_no_path_is_one_line():
    for value in (None, 5, {}, b"x"):
        with pytest.raises(UserError, match="expected a file path, got"):
            user_files.read_user_text(value)
        with pytest.raises(UserError, match="expected a file path, got"):
            files.atomic_write_text(value, "x")


def test_a_folder_name_that_is_not_utf8_is_one_line_and_nothing_is_made(tmp_path):
    """Parquet's writer (and Spark) take UTF-8 paths only: such a name was an internal
    UnicodeEncodeError after an empty folder was made."""
    odd = tmp_path / os.fsdecode(b"ok\xff") / "trace"
    with pytest.raises(UserError, match=r"ok\\xff/trace: a folder name that is not UTF-8 text"):
        staging_dir(odd, "_m.json")
    assert os.listdir(tmp_path) == []


def test_a_folder_another_live_process_builds_in_place_is_refused_and_kept(tmp_path):
    """Two `advisor demo --out same` at once: the second set the first's build aside as "the
    previous demo" and built its own there; the first wrote on into the second's folder, and
    both failed (the Spark job's files gone) leaving a half-built folder. Now the second is one
    line, and the first's build is untouched."""
    target = tmp_path / "demo"
    target.mkdir()
    (target / "_m.json").write_text("being built")
    (target / files.BUILDING).write_text(f"{os.getppid()}\n")  # a process that runs (pytest's parent)
    with pytest.raises(UserError, match=rf"another advisor process \(pid {os.getppid()}\) is writing there"):
        with files.rebuilding_dir(target, "_m.json"):
            pytest.fail("built over another process's build")
    assert sorted(os.listdir(target)) == [files.BUILDING, "_m.json"] and os.listdir(tmp_path) == ["demo"]


def test_a_folder_a_killed_build_left_is_rebuilt_and_names_its_builder_meanwhile(tmp_path):
    target = tmp_path / "demo"
    target.mkdir()
    (target / files.BUILDING).write_text("999999999\n")  # no such process: killed outright
    with files.rebuilding_dir(target, "_m.json") as built:
        assert (built / files.BUILDING).read_text() == f"{os.getpid()}\n"
        (built / "_m.json").write_text("new")
    assert sorted(os.listdir(target)) == [WRITTEN, "_m.json"] and os.listdir(tmp_path) == ["demo"]


def test_a_folder_is_checked_and_renamed_under_a_lock_other_writers_wait_for(tmp_path, monkeypatch):
    """Two writers publishing the same folder at once (`trace aggregate`, `tune`, `run
    --trace-out` from two terminals): one moved it aside while the other listed it or renamed
    onto it (FileNotFoundError, ENOTEMPTY, ENOENT, `.old` folders left). While a publish
    renames, the folder's parent is locked, so another writer's check and rename wait."""
    from folder_locks import parent_is_locked

    target = tmp_path / "out"
    publish_dir(_build(target, "_m.json", "1"), target, "_m.json")
    staged = _build(target, "_m.json", "2")
    held = []
    rename = os.rename

    def renaming(src, dst):
        held.append(parent_is_locked(target))
        rename(src, dst)

    monkeypatch.setattr(files.os, "rename", renaming)
    publish_dir(staged, target, "_m.json")
    assert held and all(held)
    assert (target / "_m.json").read_text() == "2" and os.listdir(tmp_path) == ["out"]
