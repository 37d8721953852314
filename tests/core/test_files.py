"""``core``: strict, size-limited reading of the files a user names, writing that never follows a
link, and text from files fit to print."""

import os

import pytest

from pbbflow.core.files import MAX_FILE_BYTES, FileRefused, create_file, loads_json, open_append, read_bytes
from pbbflow.core.text import printable, shorten


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('{"a": 1, "a": 2}', "a"),
        ('{"x": [0, {"b": 1, "c": 2, "b": 3}]}', "b"),
        ('{"x": {"y": {"z": 1, "z": 1}}}', "z"),  # the same value twice too
    ],
)
def test_a_key_given_twice_is_refused_at_any_depth(text, key):
    with pytest.raises(FileRefused, match=f"^duplicate key '{key}'$"):
        loads_json(text)


def test_strict_json_refuses_nan_and_keeps_unique_keys():
    assert loads_json('{"a": {"b": [1, {"c": null}]}, "b": 2}') == {"a": {"b": [1, {"c": None}]}, "b": 2}
    with pytest.raises(FileRefused, match="NaN is not a number"):
        loads_json('{"a": NaN}')
    with pytest.raises(FileRefused, match="duplicate key 'a\\\\x1b\\[2J'"):  # the key printable
        loads_json('{"a\\u001b[2J": 1, "a\\u001b[2J": 2}')


def test_reading_refuses_devices_fifos_folders_and_large_files_without_blocking(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # opened for reading, it would wait for a writer
    big = tmp_path / "big"
    with open(big, "wb") as handle:  # sparse: costs no disk
        handle.truncate(MAX_FILE_BYTES + 1)
    cases = [
        ("/dev/zero", "not a regular file"),
        (fifo, "not a regular file"),
        (tmp_path, "is a directory"),
        (tmp_path / "none", "no such file"),
        (big, f"more than the limit of {MAX_FILE_BYTES}"),
    ]
    for path, reason in cases:
        with pytest.raises(FileRefused, match=reason):
            read_bytes(path)
    small = tmp_path / "small"
    small.write_bytes(b"12345")
    assert read_bytes(small) == b"12345"
    with pytest.raises(FileRefused, match="more than the limit of 4"):
        read_bytes(small, limit=4)


def test_writing_never_follows_a_link_nor_blocks_on_a_fifo(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (tmp_path / "link").symlink_to(victim)
    (tmp_path / "dangling").symlink_to(tmp_path / "created")
    os.mkfifo(tmp_path / "fifo")
    for opener in (open_append, create_file):
        for name, reason in [("link", "symbolic link"), ("dangling", "symbolic link"), ("fifo", "regular file")]:
            with pytest.raises(OSError, match=reason):
                opener(tmp_path / name)
    assert victim.read_text() == "precious" and not (tmp_path / "created").exists()
    for _ in range(2):
        with open_append(tmp_path / "log") as log:
            log.write("line\n")
    assert (tmp_path / "log").read_text() == "line\nline\n" and (tmp_path / "log").stat().st_mode & 0o777 == 0o600
    with create_file(tmp_path / "log") as file:
        file.write(b"new")
    assert (tmp_path / "log").read_bytes() == b"new"


def test_printable_escapes_what_a_terminal_would_obey():
    hostile = "a\x1b[31mRED\nline2\r\t\x7f\x85\u202e\ud800 é ok \\x1b"
    assert printable(hostile) == "a\\x1b[31mRED\\nline2\\r\\t\\x7f\\x85\\u202e\\ud800 é ok \\x1b"
    assert printable(printable(hostile)) == printable(hostile)  # printable text stays as it is
    assert shorten("x\x1b\n y" * 40, 12) == "x\\x1b yx\\..."  # one line, escaped, then cut
