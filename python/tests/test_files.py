# SPDX-License-Identifier: Apache-2.0
"""A sandbox's files from the host: no link leads out of it."""

import os

import pytest

import hutch


def test_write_read_replace(sb):
    sb.write_file("/work/sub/a.txt", "one")
    assert sb.read_file("/work/sub/a.txt") == b"one"
    sb.write_file("/work/sub/a.txt", b"\x00two")
    assert sb.read_file("/work/sub/a.txt") == b"\x00two"
    assert sb.exec("cat /work/sub/a.txt").stdout == b"\x00two"
    assert sb.file_kind("/work/sub") == "dir" and sb.exists("/work/sub/a.txt")
    assert sb.listdir("/work") == ["/work/sub"]


def test_missing_file(sb):
    with pytest.raises(hutch.NotFoundError) as e:
        sb.read_file("/no/such/file")
    assert isinstance(e.value, FileNotFoundError) and e.value.errno == 2 and e.value.message


def test_read_limit(sb):
    sb.exec("head -c 5000 /dev/zero > /tmp/big")
    with pytest.raises(hutch.TooLargeError):
        sb.read_file("/tmp/big", max=100)


def test_symlink_stays_inside(sb, tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("host secret")
    os.chmod(tmp_path, 0o755)
    # A link to the host's path resolves inside the sandbox's root.
    sb.exec(f"ln -s {secret} /tmp/link; ln -s ../../../../../../{secret} /tmp/rel")
    for link in ("/tmp/link", "/tmp/rel"):
        with pytest.raises(hutch.Error):
            sb.read_file(link)
    sb.exec(f"mkdir -p {tmp_path}; echo inside > {secret}")
    assert sb.read_file("/tmp/link") == b"inside\n"
    sb.write_file("/tmp/link", "written")
    assert secret.read_text() == "host secret"


def test_proc_refused(sb):
    with pytest.raises(hutch.Error):
        sb.read_file("/proc/self/environ")


def test_upload_download_file(sb, tmp_path):
    src = tmp_path / "in.bin"
    src.write_bytes(b"payload")
    sb.upload(src, "/data/in.bin")
    assert sb.exec("cat /data/in.bin").stdout == b"payload"
    dst = tmp_path / "out.bin"
    sb.download("/data/in.bin", dst)
    assert dst.read_bytes() == b"payload"


def test_download_refuses_a_link_at_the_target(sb, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep")
    link = tmp_path / "link"
    link.symlink_to(victim)
    sb.write_file("/x", "evil")
    with pytest.raises(OSError):
        sb.download("/x", link)
    assert victim.read_text() == "keep"


def test_upload_download_dir(sb, tmp_path):
    d = tmp_path / "tree"
    (d / "a" / "b").mkdir(parents=True)
    (d / "a" / "b" / "f").write_text("deep")
    (d / "top").write_text("top")
    sb.upload(d, "/in")
    assert sb.exec("cat /in/a/b/f /in/top").stdout == b"deeptop"
    sb.exec("ln -s /etc/passwd /in/a/link; ln -s / /in/rootlink")
    out = tmp_path / "back"
    rep = sb.download("/in", out)
    assert (out / "a" / "b" / "f").read_text() == "deep"
    assert not (out / "a" / "link").exists() and not (out / "rootlink").exists()
    assert rep["skipped"] == 2
