"""Output files are written whole or not at all (`kold_span.data.atomic`), by every writer of the package."""
import json
import os
import stat

import pytest

from kold_span.data.atomic import atomic_write, error_notes, partial_path, write_text_atomic
from kold_span.data.example import Example
from kold_span.data.jsonl import write_jsonl
from kold_span.errors import DataError


def listing(folder):
    return sorted(p.name for p in folder.iterdir())


def test_success_replaces_the_target_and_leaves_no_temporary_file(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old\n", encoding="utf-8")
    with atomic_write(target) as f:
        f.write("new\n")
        assert target.read_text(encoding="utf-8") == "old\n"  # untouched until the block ends
    assert target.read_text(encoding="utf-8") == "new\n"
    assert listing(tmp_path) == ["out.txt"]


def test_an_error_leaves_the_previous_file_and_says_so(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old\n", encoding="utf-8")
    with pytest.raises(DataError) as caught:
        with atomic_write(target) as f:
            f.write("half")
            raise DataError("in.jsonl:401: invalid JSON")
    assert str(caught.value) == "in.jsonl:401: invalid JSON"
    assert error_notes(caught.value) == [f"{target} left as it was"]
    assert target.read_text(encoding="utf-8") == "old\n"
    assert listing(tmp_path) == ["out.txt"]


def test_an_interrupt_also_leaves_the_previous_file(tmp_path):
    target = tmp_path / "out.txt"
    with pytest.raises(KeyboardInterrupt):
        with atomic_write(target) as f:
            f.write("half")
            raise KeyboardInterrupt
    assert listing(tmp_path) == []


def test_a_named_partial_file_is_kept_on_error_and_appended_to(tmp_path):
    target = tmp_path / "p.jsonl"
    partial = partial_path(target)
    assert partial == tmp_path / "p.jsonl.partial"
    with pytest.raises(DataError) as caught:
        with atomic_write(target, partial=partial) as f:
            f.write("row 1\n")
            raise DataError("boom")
    assert error_notes(caught.value) == [f"{target} not written; what was written so far is kept in {partial}"]
    assert partial.read_text(encoding="utf-8") == "row 1\n" and not target.exists()
    with atomic_write(target, "a", partial=partial) as f:
        f.write("row 2\n")
    assert target.read_text(encoding="utf-8") == "row 1\nrow 2\n"
    assert listing(tmp_path) == ["p.jsonl"]


def test_an_empty_partial_file_is_not_kept(tmp_path):
    target = tmp_path / "p.jsonl"
    target.write_text("old\n", encoding="utf-8")
    with pytest.raises(DataError) as caught:
        with atomic_write(target, partial=partial_path(target)):
            raise DataError("no such column")
    assert error_notes(caught.value) == [f"{target} left as it was"]
    assert listing(tmp_path) == ["p.jsonl"]


def test_parent_directories_are_created_and_bytes_can_be_written(tmp_path):
    target = tmp_path / "a" / "b" / "x.png"
    with atomic_write(target, "wb") as f:
        f.write(b"\x89PNG")
    assert target.read_bytes() == b"\x89PNG"


def test_the_file_gets_the_permissions_of_any_new_file(tmp_path):
    plain = tmp_path / "plain.txt"
    plain.write_text("x", encoding="utf-8")
    written = write_text_atomic(tmp_path / "atomic.txt", "x")
    assert stat.S_IMODE(os.stat(written).st_mode) == stat.S_IMODE(os.stat(plain).st_mode)


def test_a_directory_as_target_is_refused_before_anything_is_written(tmp_path):
    (tmp_path / "out").mkdir()
    with pytest.raises(IsADirectoryError) as caught:
        with atomic_write(tmp_path / "out", partial=partial_path(tmp_path / "out")):
            raise AssertionError("the block must not run")
    assert caught.value.filename == str(tmp_path / "out")
    assert listing(tmp_path) == ["out"]


def test_appending_needs_a_named_partial_file(tmp_path):
    with pytest.raises(ValueError, match="pass partial="):
        with atomic_write(tmp_path / "x", "a"):
            pass


def test_write_jsonl_keeps_the_previous_file_when_an_example_fails(tmp_path):
    target = tmp_path / "gold.jsonl"
    write_jsonl([Example(id="1", text="좋은 기사")], target)
    before = target.read_bytes()

    def examples():
        yield Example(id="2", text="새 기사")
        raise DataError("corpus.json: record 1: field 'comment': expected a non-empty string")

    with pytest.raises(DataError, match="record 1"):
        write_jsonl(examples(), target)
    assert target.read_bytes() == before
    assert listing(tmp_path) == ["gold.jsonl"]
    assert [json.loads(line)["id"] for line in before.decode().splitlines()] == ["1"]


# -- one run writes a target at a time (`output_lock`) ------------------------------------------------------------

HOLDER = """
import sys
from kold_span.data.atomic import output_lock
with output_lock(sys.argv[1]):
    print("locked", flush=True)
    sys.stdin.readline()
"""


@pytest.fixture
def lock_holder(tmp_path):
    """Start another process that holds the lock on a target until its standard input is closed."""
    import subprocess
    import sys

    from conftest import child_env

    children = []

    def hold(target):
        child = subprocess.Popen([sys.executable, "-c", HOLDER, str(target)], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True, env=child_env())
        children.append(child)
        assert child.stdout.readline() == "locked\n"
        return child

    yield hold
    for child in children:
        if child.poll() is None:
            child.kill()
        child.wait()


def test_a_target_another_process_writes_is_refused_and_left_alone(tmp_path, lock_holder):
    from kold_span.errors import KoldSpanError, OutputInUseError

    target = tmp_path / "out.jsonl"
    target.write_text("old\n")
    child = lock_holder(target)
    with pytest.raises(OutputInUseError) as caught:
        with atomic_write(target) as f:
            f.write("new\n")
    assert isinstance(caught.value, KoldSpanError)
    assert str(caught.value).startswith(f"{target} is being written by another run (process {child.pid}); ")
    assert target.read_text() == "old\n" and listing(tmp_path) == [".out.jsonl.lock", "out.jsonl"]
    child.kill()  # a holder killed outright: the kernel frees its lock, the stale lock file blocks nothing
    child.wait()
    write_text_atomic(target, "new\n")
    assert target.read_text() == "new\n" and listing(tmp_path) == ["out.jsonl"]


def test_a_link_to_a_locked_target_is_locked_too(tmp_path, lock_holder):
    from kold_span.errors import OutputInUseError

    target = tmp_path / "out.jsonl"
    target.write_text("old\n")
    (tmp_path / "link.jsonl").symlink_to(target)
    lock_holder(target)
    with pytest.raises(OutputInUseError):
        write_text_atomic(tmp_path / "link.jsonl", "new\n")
    assert target.read_text() == "old\n"


def test_another_thread_is_refused_and_the_same_thread_takes_its_lock_again(tmp_path):
    import threading

    from kold_span.data.atomic import lock_path, output_lock
    from kold_span.errors import OutputInUseError

    target = tmp_path / "out.jsonl"
    errors = []

    def other_thread():
        try:
            write_text_atomic(target, "other\n")
        except OutputInUseError as err:
            errors.append(err)

    with output_lock(target):
        with atomic_write(target) as f:  # predict's own writes inside its lock
            f.write("mine\n")
        thread = threading.Thread(target=other_thread)
        thread.start()
        thread.join()
        assert lock_path(target).exists()
    assert len(errors) == 1 and target.read_text() == "mine\n"
    assert not lock_path(target).exists()
    write_text_atomic(target, "later\n")  # released: anyone may write now
    assert target.read_text() == "later\n"


def test_an_output_that_is_an_input_is_refused_by_path_link_or_hard_link(tmp_path):
    from kold_span.data.atomic import check_outputs_apart
    from kold_span.errors import ArgumentError

    source = tmp_path / "in.jsonl"
    source.write_text("{}\n")
    (tmp_path / "soft.jsonl").symlink_to(source)
    os.link(source, tmp_path / "hard.jsonl")
    for output in (source, tmp_path / "sub" / ".." / "in.jsonl", tmp_path / "soft.jsonl", tmp_path / "hard.jsonl"):
        with pytest.raises(ArgumentError, match=r"is the input \(--input .*in.jsonl\): writing it would destroy"):
            check_outputs_apart({"--output": output}, {"--input": source})
    with pytest.raises(ArgumentError, match="--html .*out.jsonl is also --output"):
        check_outputs_apart({"--output": tmp_path / "out.jsonl", "--html": tmp_path / "out.jsonl"}, {"--input": source})
    check_outputs_apart({"--output": tmp_path / "out.jsonl", "--html": None}, {"--input": source})


def test_the_temporary_files_of_a_killed_run_are_removed_by_the_next_writer(tmp_path):
    target = tmp_path / "out.jsonl"
    for name in (".out.jsonl.deadbeef.tmp", ".out.jsonl.notmine.tmp", ".other.jsonl.deadbeef.tmp"):
        (tmp_path / name).write_text("half")
    write_text_atomic(target, "whole\n")
    assert listing(tmp_path) == [".other.jsonl.deadbeef.tmp", ".out.jsonl.notmine.tmp", "out.jsonl"]


# -- what a target may be (`output_target`, issue 54) --------------------------------------------------------------

def _device(path):
    """A character device node like /dev/null at `path` (root only), or skip."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except (PermissionError, AttributeError):
        pytest.skip("making a device node needs root")
    return path


def _socket(path):
    import socket

    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.close()
    return path


@pytest.mark.parametrize("make, kind", [(_device, "a character device"), (os.mkfifo, "a named pipe"),
                                        (_socket, "a socket")])
def test_a_target_that_is_no_regular_file_is_refused_and_left_as_it_is(tmp_path, make, kind):
    from kold_span.errors import OutputTargetError

    target = tmp_path / "out.jsonl"
    make(target)
    before = os.lstat(target)
    with pytest.raises(OutputTargetError, match=f"^{target}: not a regular file but {kind}; .*name a regular file$"):
        with atomic_write(target) as f:
            f.write("rows\n")
    after = os.lstat(target)
    assert stat.S_IFMT(after.st_mode) == stat.S_IFMT(before.st_mode) and after.st_ino == before.st_ino
    assert listing(tmp_path) == ["out.jsonl"]


def test_a_write_protected_file_is_not_replaced_even_by_root(tmp_path):
    from kold_span.errors import OutputTargetError

    target = tmp_path / "out.jsonl"
    target.write_text("mine\n")
    target.chmod(0o444)
    with pytest.raises(OutputTargetError, match=r"out.jsonl: write-protected \(mode 0444\)"):
        write_text_atomic(target, "new\n")
    assert target.read_text() == "mine\n" and stat.S_IMODE(target.stat().st_mode) == 0o444


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o664])
def test_a_replaced_file_keeps_its_mode(tmp_path, mode):
    target = tmp_path / "out.jsonl"
    target.write_text("old\n")
    target.chmod(mode)
    write_text_atomic(target, "new\n")
    assert target.read_text() == "new\n" and stat.S_IMODE(target.stat().st_mode) == mode


def test_a_link_is_written_through_to_its_target_and_stays_a_link(tmp_path):
    real, link = tmp_path / "real.jsonl", tmp_path / "link.jsonl"
    real.write_text("old\n")
    real.chmod(0o600)
    link.symlink_to(real.name)
    write_text_atomic(link, "new\n")
    assert link.is_symlink() and os.readlink(link) == "real.jsonl"
    assert real.read_text() == "new\n" and stat.S_IMODE(real.stat().st_mode) == 0o600
    assert listing(tmp_path) == ["link.jsonl", "real.jsonl"]


def test_a_lock_file_that_is_a_link_is_never_followed(tmp_path):
    from kold_span.errors import OutputTargetError

    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (tmp_path / ".out.jsonl.lock").symlink_to(victim)
    with pytest.raises(OutputTargetError, match="a symbolic link where the lock file of .*out.jsonl belongs"):
        write_text_atomic(tmp_path / "out.jsonl", "new\n")
    assert victim.read_text() == "precious\n" and not (tmp_path / "out.jsonl").exists()


def test_a_kept_partial_file_that_is_a_link_is_refused(tmp_path):
    from kold_span.errors import OutputTargetError

    victim, target = tmp_path / "victim.txt", tmp_path / "p.jsonl"
    victim.write_text("precious\n")
    partial_path(target).symlink_to(victim)
    with pytest.raises(OutputTargetError, match="p.jsonl.partial: a symbolic link, where writing p.jsonl keeps"):
        with atomic_write(target, partial=partial_path(target)) as f:
            f.write("row\n")
    assert victim.read_text() == "precious\n" and not target.exists()


# -- a directory replaced whole (`replace_directory`) ------------------------------------------------------------

def test_a_directory_is_built_beside_and_swapped_in_keeping_its_mode(tmp_path):
    from kold_span.data.atomic import replace_directory

    target = tmp_path / "model"
    target.mkdir()
    (target / "old.txt").write_text("old")
    target.chmod(0o750)
    with replace_directory(target, lambda p: True, "a model") as folder:
        assert folder.parent == tmp_path and folder.name.startswith(".model.new-")
        (folder / "new.txt").write_text("new")
        assert (target / "old.txt").exists()  # untouched until the block ends
    assert sorted(p.name for p in target.iterdir()) == ["new.txt"] and listing(tmp_path) == ["model"]
    assert stat.S_IMODE(target.stat().st_mode) == 0o750


def test_a_failed_replacement_leaves_the_directory_and_removes_its_folder(tmp_path):
    from kold_span.data.atomic import replace_directory

    target = tmp_path / "model"
    target.mkdir()
    (target / "old.txt").write_text("old")
    with pytest.raises(DataError) as caught:
        with replace_directory(target, lambda p: True, "a model") as folder:
            (folder / "new.txt").write_text("half")
            raise DataError("train.jsonl:3: bad row")
    assert error_notes(caught.value) == [f"{target} left as it was"]
    assert listing(target) == ["old.txt"] and listing(tmp_path) == ["model"]


def test_what_a_killed_replacement_left_is_cleared_or_put_back(tmp_path):
    from kold_span.data.atomic import replace_directory

    target = tmp_path / "model"
    (tmp_path / ".model.new-0123abcd").mkdir()  # killed while building
    aside = tmp_path / ".model.old-89abcdef"  # killed between the two renames: the model is aside, none in place
    aside.mkdir()
    (aside / "config.json").write_text("{}")
    with replace_directory(target, lambda p: True, "a model") as folder:
        assert listing(target) == ["config.json"]  # put back before anything else
        (folder / "config.json").write_text('{"new": 1}')
    assert listing(tmp_path) == ["model"] and (target / "config.json").read_text() == '{"new": 1}'


def test_ctrl_c_between_the_renames_is_held_back_until_both_are_done():
    import signal

    from kold_span.data.atomic import _signals_held

    steps = []
    # Python's own handler, whatever this process inherited (a shell's background job ignores SIGINT)
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            with _signals_held():
                os.kill(os.getpid(), signal.SIGINT)
                steps.append("first rename")
                steps.append("second rename")
        assert steps == ["first rename", "second rename"]
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, inherited)


# Writes that do not go through data.atomic, and why. Anything else writing a file is a test failure.
DIRECT_WRITES = {
    "data/atomic.py": "the one place files are opened for writing",
    "service/feedback.py": "an append-only JSONL, one whole line a call (os.write on O_APPEND)",
    "service/requests.py": "an uploaded body spooled to a temporary input file",
    "cli/predict.py": "standard input spooled to a temporary input file",
    "models/split_zip.py:join_parts": "the parts joined into a temporary zip, read and removed",
    "inference/outputs.py": "its options file; routed through data.atomic by the inference pass (issue 55)",
    "inference/export.py": "its config.json; routed through data.atomic by the inference pass (issue 55)",
}


def direct_writes(path):
    """The functions of a module that call `open(..., "w"/"a"/"x")`, `X.open(...)` for writing, `write_text` or
    `write_bytes` (each call named by its innermost function)."""
    import ast

    found = []

    def visit(node, function):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            function = node.name
        if isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            modes = [a.value for a in [*node.args, *(k.value for k in node.keywords if k.arg == "mode")]
                     if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            if name in ("write_text", "write_bytes") or (name == "open" and any(set(m) & set("wax") for m in modes)):
                found.append(function)
        for child in ast.iter_child_nodes(node):
            visit(child, function)

    visit(ast.parse(path.read_text(encoding="utf-8")), "<module>")
    return found


def test_every_file_the_package_writes_goes_through_data_atomic():
    from conftest import PACKAGE

    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE).as_posix()
        for function in direct_writes(path):
            if where not in DIRECT_WRITES and f"{where}:{function}" not in DIRECT_WRITES:
                found.setdefault(where, set()).add(function)
    assert found == {}
