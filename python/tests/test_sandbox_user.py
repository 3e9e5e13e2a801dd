# SPDX-License-Identifier: Apache-2.0
"""hutch.Sandbox(user=...): every process runs as that user of the sandbox,
without a way back to root, and the files hutch writes for it are its own;
hutch.Sandbox(read_only=True): only /tmp, /dev/shm and binds take writes."""

import errno
import os
import subprocess

import pytest

import hutch


def _has_range() -> bool:
    if os.geteuid() == 0:
        return True
    me = subprocess.run(["id", "-un"], capture_output=True, text=True).stdout.strip()
    try:
        with open("/etc/subuid") as f:
            return any(line.split(":")[0] in (me, str(os.geteuid())) for line in f)
    except OSError:
        return False


needs_range = pytest.mark.skipif(not _has_range(), reason="this user has no subordinate id range")


@needs_range
def test_user_runs_every_process(image):
    with hutch.Sandbox(image, user="1000:1000") as sb:
        r = sb.exec("id -u; id -g; id -G")
        assert r.stdout.split() == [b"1000", b"1000", b"1000"]
        status = sb.exec("cat /proc/self/status").stdout.decode()
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        assert fields["CapEff"].strip() == "0000000000000000"
        assert fields["CapPrm"].strip() == "0000000000000000"
        assert fields["NoNewPrivs"].strip() == "1"
        # Its own writes, and what hutch writes for it, are its own.
        sb.exec("echo x > /tmp/mine")
        sb.write_file("/work/given.txt", "given")
        sb.mkdir("/work/sub")
        r = sb.exec("stat -c %u:%g /tmp/mine /work /work/given.txt /work/sub; echo more >> /work/given.txt")
        assert r.exit_code == 0, r.stderr
        assert r.stdout.split() == [b"1000:1000"] * 4
        assert sb.read_file("/work/given.txt") == b"givenmore\n"
        # Private to it, and hutch reads it all the same.
        sb.exec("echo secret > /tmp/p; chmod 600 /tmp/p")
        assert sb.read_file("/tmp/p") == b"secret\n"
        # The image's tree is root's.
        assert sb.exec("touch /etc/x").exit_code != 0
        sb.reset()
        assert sb.exec("id -u").stdout == b"1000\n"


@needs_range
def test_user_cannot_turn_hutch_s_file_calls_on_what_it_cannot_reach(image, tmp_path):
    """hutch's file calls act with the sandbox root's access: a symlink the
    user plants must not lead them to a file of a bind the user may only
    read, or to one only root may read.  No symlink is followed there."""
    share = tmp_path / "share"
    share.mkdir()
    (share / "existing").write_text("the caller's\n")
    with hutch.Sandbox(image, user="nobody", binds=[f"{share}:/data"]) as sb:
        setup = ("mkdir /tmp/w && ln -s /data/existing /tmp/w/out.txt && ln -s /data /tmp/w/d && "
                 "echo secret >/tmp/root-only && ln -s /tmp/root-only /tmp/w/peek; echo x >/data/x")
        r = sb.exec(["sh", "-c", setup])
        assert b"Permission denied" in r.stderr  # the user may not write the bind itself
        with pytest.raises(hutch.Error, match="not a regular file"):
            sb.write_file("/tmp/w/out.txt", "planted")
        with pytest.raises(hutch.Error):
            sb.write_file("/tmp/w/d/planted.sh", "planted")
        with pytest.raises(hutch.Error):
            sb.mkdir("/tmp/w/d/newdir")
        assert (share / "existing").read_text() == "the caller's\n"
        assert sorted(os.listdir(share)) == ["existing"]
        with pytest.raises(hutch.Error, match="is a symlink"):
            sb.read_file("/tmp/w/peek")
        # A path without a link works as before, and the file is the user's.
        sb.write_file("/tmp/w/plain.txt", "given")
        assert sb.exec("stat -c %u /tmp/w/plain.txt; cat /tmp/w/plain.txt").stdout.split() == [b"65534", b"given"]


@needs_range
def test_user_by_name_and_uid(image):
    with hutch.Sandbox(image, user="nobody") as sb:
        assert sb.exec("id -u; id -g").stdout.split() == [b"65534", b"65534"]
    with hutch.Sandbox(image, user=4242) as sb:
        assert sb.exec("id -u; id -g; echo $HOME").stdout.split() == [b"4242", b"0", b"/"]


def test_user_refused(image):
    with pytest.raises(hutch.Error) as e:
        hutch.Sandbox(image, user="a b")
    assert e.value.errno == errno.EINVAL and "USER[:GROUP]" in str(e.value)
    with pytest.raises(hutch.Error) as e:
        hutch.Sandbox(image, user="ghost")
    assert e.value.errno == errno.ENOENT and "no such user" in str(e.value)
    with pytest.raises(hutch.Error) as e:
        hutch.Sandbox(image, user="70000")
    assert "not mapped" in str(e.value)


def test_user_root_is_no_switch(image):
    with hutch.Sandbox(image, user="root") as sb:
        assert sb.exec("id -u").stdout == b"0\n"


def test_read_only(image):
    with hutch.Sandbox(image, read_only=True) as sb:
        r = sb.exec("touch /etc/x")
        assert r.exit_code != 0 and b"Read-only" in r.stderr
        assert sb.exec("echo ok > /tmp/w && cat /tmp/w").stdout == b"ok\n"
        sb.reset()
        assert sb.exec("touch /x").exit_code != 0
    with hutch.Sandbox(image) as sb:
        assert sb.exec("touch /etc/x").exit_code == 0
