# SPDX-License-Identifier: Apache-2.0
"""hutch.Error as a Python caller reads it: str(e) says the hint, and the
runtime's hints name this package's arguments, not the hutch command's
options."""

import pytest

import hutch
from hutch._errors import pythonize


def test_str_holds_the_hint(image, monkeypatch):
    # No policy anywhere: a package built without a checkout or an
    # installed data directory, no $HUTCH_POLICY, and no installed hutch
    # where the runtime was configured to look.
    monkeypatch.delenv("HUTCH_POLICY", raising=False)
    monkeypatch.setattr(hutch._paths, "_config", None)
    try:
        installed = hutch._hutch.default_policy_path()
    except hutch.NotFoundError:
        installed = None
    if installed:
        pytest.skip(f"hutch is installed here ({installed})")
    with pytest.raises(hutch.NotFoundError) as e:
        hutch.Sandbox(image)
    err = e.value
    assert err.errno == 2 and err.hint and err.message.startswith("policy /")
    assert str(err) == f"{err.args[0]}\nhint: {err.hint}"
    assert err.args[0] == f"{err.message}: No such file or directory"
    # The runtime's "--policy FILE" is this package's argument.
    assert "policy=FILE" in err.hint and "--policy" not in str(err), str(err)


def test_an_error_made_in_python_says_its_hint_too():
    e = hutch.Error("interpreter: it died")
    assert str(e) == "interpreter: it died" and e.hint is None and e.message is None
    e.hint = "the next call starts a new interpreter"
    assert str(e) == "interpreter: it died\nhint: the next call starts a new interpreter"


def test_the_runtimes_network_error_names_arguments(image):
    # net_policy without net="proxy" is refused by the runtime, whose
    # message and hint name the command's options.
    with pytest.raises(hutch.InvalidArgument) as e:
        hutch.Sandbox(image, net_policy="/nonexistent.policy")
    assert e.value.message.startswith('network: allow=..., resolve=..., net_policy=... and an audit log need net="proxy"')
    assert e.value.hint == 'a sandbox without net="proxy" has loopback only'
    assert "--" not in str(e.value), str(e.value)


@pytest.mark.parametrize(
    "runtime, python",
    [
        # cgroup.c: a limit asked for where there is no cgroup
        (
            "resource limits: --memory, --pids cannot be applied without a cgroup, and hutch does not drop them",
            "resource limits: memory=..., pids=... cannot be applied without a cgroup, and hutch does not drop them",
        ),
        ("or pass --no-cgroups to use rlimits", "or pass no_cgroups=True to use rlimits"),
        ("--no-cgroups: rlimits per process instead of a cgroup", "no_cgroups=True: rlimits per process instead of a cgroup"),
        ("RLIMIT_CPU only bounds CPU time, and only with --timeout)", "RLIMIT_CPU only bounds CPU time, and only with timeout=...)"),
        # placeholders and quoted values become the argument's value
        (
            "install hutch's policies, or name a policy with --policy FILE or $HUTCH_POLICY",
            "install hutch's policies, or name a policy with policy=FILE or $HUTCH_POLICY",
        ),
        ("use a private directory with --state-dir DIR or HUTCH_STATE_DIR", "use a private directory with state_dir=DIR or HUTCH_STATE_DIR"),
        ("allow the host: --allow HOST[:PORT] (the download", "allow the host: allow=[HOST[:PORT]] (the download"),
        ('--allow "a b": not a host', 'allow=["a b"]: not a host'),
        ("only with `--net proxy`", 'only with `net="proxy"`'),
        ("to share a directory, bind it (--bind)", "to share a directory, bind it (binds=...)"),
        # what this package has no argument for, and command lines, stay
        ("--memory-swap needs --memory", "--memory-swap needs memory=..."),
        ("--overlay fuse: resolve the layers", "--overlay fuse: resolve the layers"),
        (
            "build it with `hutch rootfs build --from ubuntu:24.04 --recipe R --name default` or --store DIR",
            "build it with `hutch rootfs build --from ubuntu:24.04 --recipe R --name default` or store=DIR",
        ),
        ("docker/podman --cgroupns=private, podman --cgroups=split", "docker/podman --cgroupns=private, podman --cgroups=split"),
        ("no option here", "no option here"),
    ],
)
def test_pythonize(runtime, python):
    assert pythonize(runtime) == python


def test_limits_reason_is_pythonized(image):
    # rlimits asked for (no_cgroups=True) say so in Python's words on any host.
    with hutch.Sandbox(image, no_cgroups=True, memory="256M") as s:
        limits = s.limits()
    assert limits["mode"] == "rlimits" and limits["reason"].startswith("no_cgroups=True: rlimits per process"), limits
