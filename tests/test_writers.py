"""Every writer against every hostile target (issue 19 items 1, 2, 15, 17; docs/architecture.md#writing-files).

The writers: `compress --write`, `report -o`, `replay --payloads` and `snapshot --update`.
The targets: links (to a file, to stdout, dangling), FIFOs, sockets, devices,
folders, names too long, a file where a folder should be, a read-only folder. Each
combination must end in exit 2 with one `error:` line, the thing in the way
untouched and no file written anywhere, `--force` or not.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import FIXTURES, ctxkit

PLAIN = str(FIXTURES / "plain_chat.yaml")
DUE = str(FIXTURES / "compress_just_above.yaml")
ROOT = os.geteuid() == 0 if hasattr(os, "geteuid") else False


@dataclass(frozen=True)
class Writer:
    """A command that writes: `args` for a target; folder writers name a folder and write `name` in it."""

    args: Callable[[str], list[str]]
    name: str | None = None  # the file a folder writer writes in its folder; None: the target is the file

    def target(self, folder: Path, file_name: str = "out.json") -> tuple[str, Path]:
        """(what the command is given, the file it would write)."""
        if self.name is None:
            return os.path.relpath(folder / file_name), folder / file_name
        return os.path.relpath(folder), folder / self.name


WRITERS = {
    "compress --write": Writer(lambda t: ["compress", DUE, "--summary", "S.", "--write", t, "--force"]),
    "report -o": Writer(lambda t: ["report", PLAIN, "-o", t, "--force"]),
    "replay --payloads": Writer(lambda t: ["replay", PLAIN, "--payloads", t], name="0001.json"),
    "snapshot --update": Writer(lambda t: ["snapshot", PLAIN, "--snapshots", t, "--update"], name="plain_chat.json"),
}


def tree(root: Path) -> dict[str, tuple[str, str]]:
    """Every entry below `root` (hidden ones too), with its kind and content or link target."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            info = os.lstat(path)
            if stat.S_ISLNK(info.st_mode):
                out[str(path.relative_to(root))] = ("link", os.readlink(path))
            elif stat.S_ISREG(info.st_mode):
                out[str(path.relative_to(root))] = ("file", path.read_text(encoding="utf-8", errors="replace"))
            else:
                out[str(path.relative_to(root))] = (stat.filemode(info.st_mode)[0], "")
    return out


# --- the hostile targets: each makes the thing in the way and returns what the writer is given --------


def symlink_to_file(writer: Writer, tmp: Path) -> str:
    (tmp / "precious.txt").write_text("precious\n", encoding="utf-8")
    given, target = writer.target(tmp / "d")
    target.parent.mkdir(exist_ok=True)
    target.symlink_to(tmp / "precious.txt")
    return given


def symlink_to_stdout(writer: Writer, tmp: Path) -> str:
    given, target = writer.target(tmp / "d")
    target.parent.mkdir(exist_ok=True)
    target.symlink_to("/proc/self/fd/1")
    return given


def dangling_symlink(writer: Writer, tmp: Path) -> str:
    given, target = writer.target(tmp / "d")
    target.parent.mkdir(exist_ok=True)
    target.symlink_to(tmp / "nowhere" / "x")
    return given


def fifo(writer: Writer, tmp: Path) -> str:
    given, target = writer.target(tmp / "d")
    target.parent.mkdir(exist_ok=True)
    os.mkfifo(target)
    return given


def unix_socket(writer: Writer, tmp: Path) -> str:
    given, target = writer.target(tmp / "d")
    target.parent.mkdir(exist_ok=True)
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(os.path.relpath(target))  # relative: socket paths are short
    sock.close()
    return given


def device(writer: Writer, tmp: Path) -> str:
    given, target = writer.target(tmp / "d")
    target.parent.mkdir(exist_ok=True)
    try:
        os.mknod(target, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # what /dev/null is
    except PermissionError:
        pytest.skip("making a device needs root")
    return given


def folder(writer: Writer, tmp: Path) -> str:
    given, target = writer.target(tmp / "d")
    target.mkdir(parents=True)
    (target / "inside.txt").write_text("mine\n", encoding="utf-8")
    return given


def long_name(writer: Writer, tmp: Path) -> str:
    if writer.name is None:
        return writer.target(tmp, "n" * 300 + ".yaml")[0]
    return writer.target(tmp / ("d" * 300))[0]


def file_as_folder(writer: Writer, tmp: Path) -> str:
    (tmp / "afile").write_text("mine\n", encoding="utf-8")
    return writer.target(tmp / "afile" / "sub")[0]


HOSTILE = [
    symlink_to_file,
    symlink_to_stdout,
    dangling_symlink,
    fifo,
    unix_socket,
    device,
    folder,
    long_name,
    file_as_folder,
]


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, deadline: None) -> Iterator[Path]:
    monkeypatch.chdir(tmp_path)
    yield tmp_path


@pytest.mark.parametrize("make", HOSTILE, ids=lambda f: f.__name__)
@pytest.mark.parametrize("writer", WRITERS.values(), ids=list(WRITERS))
def test_writers_refuse_every_target_that_is_not_a_regular_file(writer: Writer, make, in_tmp: Path) -> None:
    """Issue 19 items 1, 2, 15: exit 2, one line, nothing replaced or written through, nothing written."""
    given = make(writer, in_tmp)
    before = tree(in_tmp)
    run = ctxkit(*writer.args(given), expect=2)
    errors = [line for line in run.err.splitlines() if not line.startswith("warning: ")]
    assert len(errors) == 1 and errors[0].startswith("error: "), run.err
    assert tree(in_tmp) == before


@pytest.mark.parametrize("writer", WRITERS.values(), ids=list(WRITERS))
def test_writers_refuse_a_read_only_folder_before_writing(
    writer: Writer, in_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Permission bits do not stop root, so as root the folder is made unwritable by
    `os.access`'s answer (what ctxkit asks); otherwise by its mode."""
    ro = in_tmp / "ro"
    ro.mkdir()
    given, _ = writer.target(ro)
    if ROOT:
        real = os.access
        monkeypatch.setattr(
            os,
            "access",
            lambda p, m, **kw: False if m & os.W_OK and Path(p).resolve() == ro.resolve() else real(p, m, **kw),
        )
    else:
        ro.chmod(0o555)
    try:
        before = tree(in_tmp)
        run = ctxkit(*writer.args(given), expect=2)
        last = run.err.splitlines()[-1]
        assert last.startswith("error: ro/") and last.endswith(": cannot write in the folder 'ro': permission denied")
        assert tree(in_tmp) == before
    finally:
        ro.chmod(0o755)


@pytest.mark.parametrize("writer", WRITERS.values(), ids=list(WRITERS))
def test_writers_make_missing_folders(writer: Writer, in_tmp: Path) -> None:
    """Issue 19 item 17: `report -o out/x.html` makes `out/`, as `--payloads` and the snapshot store do."""
    given, target = writer.target(in_tmp / "out" / "deeper")
    ctxkit(*writer.args(given))
    assert target.is_file() and not [p for p in target.parent.iterdir() if p.name.startswith(".")]


def test_force_never_turns_dev_null_into_a_file(in_tmp: Path) -> None:
    """Issue 19 item 1: `--write /dev/null --force` as root replaced the device by a regular file."""
    for writer in (WRITERS["compress --write"], WRITERS["report -o"]):
        run = ctxkit(*writer.args("/dev/null"), expect=2)
        assert run.err.splitlines()[-1] == (
            "error: /dev/null: is a device, not a regular file: ctxkit writes only regular files"
        )
        assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_symlink_to_a_file_is_refused_in_one_named_line(in_tmp: Path) -> None:
    given = symlink_to_file(WRITERS["report -o"], in_tmp)
    run = ctxkit(*WRITERS["report -o"].args(given), expect=2)
    assert run.err == "error: d/out.json: is a symbolic link, not a regular file: ctxkit writes only regular files\n"
    assert (in_tmp / "precious.txt").read_text(encoding="utf-8") == "precious\n"


def test_file_name_too_long_is_exit_2_in_one_line(in_tmp: Path) -> None:
    """Issue 19 item 15: "File name too long" was an internal error (exit 3)."""
    name = "n" * 300 + ".html"
    run = ctxkit("report", PLAIN, "-o", name, expect=2)
    assert run.err == f"error: {name}: file name too long (305 bytes; this file system allows 255)\n"


@pytest.mark.parametrize("spelled", ["-", "/dev/stdout"])
def test_compress_write_dash_means_stdout(spelled: str, in_tmp: Path) -> None:
    """Issue 19 item 17: `--write -` wrote a file named `-`; it prints the new fixture instead of the report."""
    run = ctxkit("compress", DUE, "--summary", "The user shared Q1 sales.", "--write", spelled)
    assert "role: summary" in run.out and "compression due: yes" not in run.out
    assert "wrote the fixture to stdout: summary node 'summary-1'" in run.err
    assert list(in_tmp.iterdir()) == []


def test_report_o_dev_stdout_means_stdout(in_tmp: Path) -> None:
    run = ctxkit("report", PLAIN, "-o", "/dev/stdout")
    assert run.out.startswith("<!DOCTYPE html>") and run.err == ""
    assert list(in_tmp.iterdir()) == []


def test_payloads_dash_is_not_a_folder(in_tmp: Path) -> None:
    run = ctxkit("replay", PLAIN, "--payloads", "-", expect=2)
    assert run.err == "error: --payloads '-': needs a folder (each call is its own file)\n"


# --- item 3: an earlier report is recognised by its parsed head, and looking never blocks ----------

MENTIONS = {
    "body text": "<!DOCTYPE html><html><head><title>n</title></head><body><p>{tag}</p></body></html>",
    "escaped in a pre": '<html><body><pre>&lt;meta name="generator" content="ctxkit 1"&gt;</pre></body></html>',
    "a comment": "<!DOCTYPE html><html><head><!-- {tag} --><title>n</title></head><body></body></html>",
    "a script": "<html><head><script>var s = '{tag}';</script></head><body></body></html>",
    "the title": "<html><head><title>{tag}</title></head><body></body></html>",
    "an attribute": "<html><head><meta name=\"description\" content='{tag}'></head></html>",
    "after the head": "<html><head><title>n</title></head><body>x</body></html>{tag}",
    "in the body": "<html><head></head><body><div>notes</div>{tag}</body></html>",
    "after body text": "<p>my notes</p>\n{tag}",
    "another generator": '<html><head><meta name="generator" content="ctxkitten 2"></head></html>',
}
TAG = '<meta name="generator" content="ctxkit 0.1.0">'


@pytest.mark.parametrize("text", MENTIONS.values(), ids=list(MENTIONS))
def test_report_refuses_a_file_that_only_mentions_the_generator_tag(text: str, in_tmp: Path) -> None:
    """Issue 19 item 3: a mention within the first 4 KB used to be enough to overwrite the file."""
    Path("notes.html").write_text(text.replace("{tag}", TAG), encoding="utf-8")
    run = ctxkit("report", PLAIN, "-o", "notes.html", expect=2)
    assert run.err == "error: notes.html: exists and is not a ctxkit report; pass --force to overwrite it\n"
    assert Path("notes.html").read_text(encoding="utf-8") == text.replace("{tag}", TAG)


@pytest.mark.parametrize(
    "head",
    [
        f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n{TAG}\n',
        '<html><head><META NAME="Generator" CONTENT="ctxkit 9.9"></head><body>x</body></html>',
        f"<!-- an old page -->\n{TAG}<title>t</title><body>",
    ],
)
def test_report_recognises_an_earlier_report_by_its_head(head: str) -> None:
    from ctxkit.reports.html import is_report

    assert is_report(head.encode("utf-8"))


def test_report_replaces_its_own_earlier_page_without_force(in_tmp: Path) -> None:
    ctxkit("report", PLAIN, "-o", "r.html")
    ctxkit("report", PLAIN, "-o", "r.html", "--max-input-tokens", "5000")
    assert "5,000" in Path("r.html").read_text(encoding="utf-8")


def test_report_does_not_open_a_fifo_to_look_for_the_marker(in_tmp: Path) -> None:
    """Without --force the old code opened the target to read its head: a FIFO hung it."""
    os.mkfifo("r.html")
    run = ctxkit("report", PLAIN, "-o", "r.html", expect=2)
    assert run.err == "error: r.html: is a FIFO, not a regular file: ctxkit writes only regular files\n"


def test_report_to_dev_stdout_in_a_pipe_prints_the_page(tmp_path: Path) -> None:
    """`-o /dev/stdout` with stdout a pipe used to hang reading the pipe for the marker."""
    result = subprocess.run(
        [sys.executable, "-c", "from ctxkit.cli import main; main()", "report", PLAIN, "-o", "/dev/stdout"],
        capture_output=True,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0 and result.stdout.startswith(b"<!DOCTYPE html>") and result.stderr == b""


# --- item 2: replay --payloads ---------------------------------------------------------------------


def test_payloads_check_every_target_before_writing_any(in_tmp: Path) -> None:
    """A folder named like the third call's file used to stop the run after two files (exit 3)."""
    (in_tmp / "d" / "0001.json").mkdir(parents=True)
    run = ctxkit("replay", PLAIN, "--payloads", "d", expect=2)
    assert run.err == "error: d/0001.json: is a folder, not a regular file: ctxkit writes only regular files\n"
    assert sorted(p.name for p in (in_tmp / "d").iterdir()) == ["0001.json"]


def test_payloads_replace_their_own_files_and_keep_their_mode(in_tmp: Path) -> None:
    ctxkit("replay", PLAIN, "--payloads", "d")
    (in_tmp / "d" / "0000.json").write_text("old\n", encoding="utf-8")
    (in_tmp / "d" / "0000.json").chmod(0o600)
    ctxkit("replay", PLAIN, "--payloads", "d")
    assert json.loads((in_tmp / "d" / "0000.json").read_text(encoding="utf-8"))["model"] == "gpt-4o-mini"
    assert stat.S_IMODE((in_tmp / "d" / "0000.json").stat().st_mode) == 0o600
    assert sorted(p.name for p in (in_tmp / "d").iterdir()) == ["0000.json", "0001.json"]


def test_payloads_are_streamed_not_kept_in_memory(tmp_path: Path) -> None:
    """1,000 calls used to hold every body until the end (282 MB against 115 MB). The peak with
    --payloads must stay far below the bodies' total: at most a few bodies at a time."""
    from tests.conftest import peak_bytes

    lines = ["ctxkit: 1", 'now: "2026-03-14T09:30:00Z"', "model: {provider: openai, name: gpt-4o}", "messages:"]
    for n in range(30):
        lines.append(f"  - {{id: u{n}, role: user, text: '{'question ' * 300}{n}'}}")
        lines.append(f"  - {{id: a{n}, role: assistant, text: '{'answer ' * 300}{n}'}}")
    lines.append("  - {id: last, role: user, text: 'and now?'}")
    fixture = tmp_path / "long.yaml"
    fixture.write_text("\n".join(lines) + "\n", encoding="utf-8")
    ctxkit("replay", str(fixture), "--format", "json")  # tokenizer data loaded: not part of either peak
    without = peak_bytes(lambda: ctxkit("replay", str(fixture), "--format", "json"))
    peak = peak_bytes(lambda: ctxkit("replay", str(fixture), "--format", "json", "--payloads", str(tmp_path / "d")))
    written = sum(p.stat().st_size for p in (tmp_path / "d").iterdir())
    assert len(list((tmp_path / "d").iterdir())) == 31 and written > 2_000_000
    assert peak - without < written / 4, (peak, without, written)


# --- leftovers and the batch -----------------------------------------------------------------------


def dead_pid() -> int:
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, check=True)
    return int(child.stdout)


def test_leftover_temporary_files_of_a_killed_run_are_removed(in_tmp: Path) -> None:
    """Issue 19 item 17: `.NAME.tmp` files of a killed run stayed forever. ctxkit's temporary
    files carry their process id; the next write into the folder removes those whose process is gone."""
    old = time.time() - 3600
    leftover = in_tmp / f".ctxkit-{dead_pid()}-0123abcd.tmp"
    alive = in_tmp / f".ctxkit-{os.getppid()}-0123abcd.tmp"  # a running process's file stays
    fresh = in_tmp / f".ctxkit-{dead_pid()}-4567abcd.tmp"  # too new to be judged
    mine = in_tmp / ".notes.0123abcd.tmp"  # not ctxkit's name: never touched
    for path in (leftover, alive, fresh, mine):
        path.write_text("half\n", encoding="utf-8")
    for path in (leftover, alive, mine):
        os.utime(path, (old, old))
    ctxkit("report", PLAIN, "-o", "r.html")
    assert sorted(p.name for p in in_tmp.iterdir()) == sorted(["r.html", alive.name, fresh.name, mine.name])


def test_a_batch_that_fails_leaves_no_file_behind(tmp_path: Path) -> None:
    from ctxkit import writing

    targets = [writing.check(tmp_path / f"{n}.json", make_folder=True) for n in range(3)]
    with pytest.raises(RuntimeError), writing.Batch() as batch:
        batch.add(targets[0], b"one")
        batch.add(targets[1], iter([b"t", b"wo"]))
        raise RuntimeError("the replay failed")
    assert list(tmp_path.iterdir()) == []


# --- item 15: an error must keep its exit code when stderr cannot be written ---------------------


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize(("args", "code"), [(["validate", "missing.yaml"], 2), (["validate", PLAIN], 0)])
def test_error_with_stderr_on_dev_full_keeps_its_exit_code(args: list[str], code: int, tmp_path: Path) -> None:
    """`2>/dev/full` turned exit 2 into exit 1 (the error line itself failed to print)."""
    with open("/dev/full", "w") as full:
        result = subprocess.run(
            [sys.executable, "-c", "from ctxkit.cli import main; main()", *args],
            stdout=subprocess.DEVNULL,
            stderr=full,
            cwd=tmp_path,
            check=False,
        )
    assert result.returncode == code


# --- fuzz: any name a user may type ---------------------------------------------------------------

NAME_PARTS = st.one_of(
    st.text(st.characters(blacklist_characters="\x00/", blacklist_categories=["Cs"]), min_size=1, max_size=12),
    st.sampled_from(["..", ".", "-", "n" * 256, "é" * 130, "\udcff", ".ctxkit-1-0123abcd.tmp", "0001.json"]),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(NAME_PARTS, min_size=1, max_size=3), writer=st.sampled_from([*WRITERS, "snapshot"]))
def test_any_output_name_is_written_or_refused_in_one_line(parts: list[str], writer: str, tmp_path: Path) -> None:
    """Whatever the name (long parts, `..`, bytes that are not UTF-8, ctxkit's own temporary
    names), a writer exits 0 or 2 with one line, never 3, and writes nothing outside its folder
    (`snapshot` without --update only compares)."""
    root = tmp_path / f"run{len(list(tmp_path.iterdir()))}"
    (root / "w").mkdir(parents=True)
    cwd = os.getcwd()
    os.chdir(root / "w")
    try:
        given = "/".join(parts)
        args = ["snapshot", PLAIN, "--snapshots", given] if writer == "snapshot" else WRITERS[writer].args(given)
        run = ctxkit(*args, expect=None)
    finally:
        os.chdir(cwd)
    assert run.code in ((0, 1, 2) if writer == "snapshot" else (0, 2)), str(run)  # (1: a snapshot is missing)
    if run.code == 2:
        assert len([line for line in run.err.splitlines() if line.startswith("error: ")]) == 1, run.err
    outside = [p for p in root.rglob("*") if not p.is_relative_to(root / "w")]
    assert outside == [] or ".." in parts, outside  # (a name with `..` may leave the folder: asked for)


# --- the tokenizer cache is a writer too ---------------------------------------------------------


@pytest.mark.parametrize("kind", ["link", "fifo"])
def test_tokenizer_cache_never_writes_through_a_link_or_reads_a_fifo(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, deadline: None
) -> None:
    """The parsed-ranks cache goes through the same writer: a link where it goes is left alone
    (the file it points to untouched), and a FIFO there neither hangs counting nor is replaced."""
    from ctxkit.counting import tokens

    monkeypatch.setattr(tokens, "_COUNTERS", {})
    monkeypatch.setenv("CTXKIT_CACHE_DIR", str(tmp_path))
    path = tokens._cache_path("cl100k_base")
    assert path is not None
    if kind == "link":
        (tmp_path / "precious.txt").write_text("precious\n", encoding="utf-8")
        path.symlink_to(tmp_path / "precious.txt")
    else:
        os.mkfifo(path)
    assert tokens.get_counter("cl100k_base").count("hello world") == 2
    assert (path.is_symlink() and (tmp_path / "precious.txt").read_text(encoding="utf-8") == "precious\n") or (
        stat.S_ISFIFO(os.lstat(path).st_mode)
    )
