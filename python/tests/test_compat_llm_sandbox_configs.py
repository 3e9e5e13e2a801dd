# SPDX-License-Identifier: Apache-2.0
"""runtime_configs: each key honoured (as hutch.Sandbox options) or refused
with ValidationError naming it."""

import pytest

from hutch.compat.llm_sandbox import ValidationError
from hutch.compat.llm_sandbox._runtime_configs import sandbox_options


def opts(**configs):
    return sandbox_options(configs)[0]


def test_no_configs_is_the_proxy_network():
    assert sandbox_options(None) == ({"net": "proxy"}, None)


@pytest.mark.parametrize("user", ["root", "0", "0:0", "root:root", ""])
def test_user_root_is_what_runs(user):
    assert opts(user=user) == {"net": "proxy"}


@pytest.mark.parametrize("user,given", [("1000:1000", "1000:1000"), ("nobody", "nobody"), (1000, "1000")])
def test_user_other_runs_as_it(user, given):
    assert opts(user=user) == {"net": "proxy", "user": given}


@pytest.mark.parametrize("user", ["user; malicious", "a:b:c", True, "1000:"])
def test_user_nonsense_refused(user):
    with pytest.raises(ValidationError, match=r"runtime_configs\['user'\]"):
        opts(user=user)


@pytest.mark.parametrize("v,n", [("512m", 512 << 20), ("1g", 1 << 30), ("1GB", 1 << 30), (2048, 2048), ("2GiB", 2 << 30)])
def test_mem_limit(v, n):
    assert opts(mem_limit=v)["memory"] == n


def test_mem_limit_nonsense_refused():
    with pytest.raises(ValidationError, match="mem_limit"):
        opts(mem_limit="lots")


def test_cpus():
    assert opts(cpu_count=2)["cpus"] == 2
    assert opts(nano_cpus=1_500_000_000)["cpus"] == 1.5
    assert opts(cpu_period=100000, cpu_quota=50000)["cpus"] == 0.5
    with pytest.raises(ValidationError, match="cpu_quota"):
        opts(cpu_quota=50000)


def test_read_only():
    assert opts(read_only=False) == {"net": "proxy"}
    assert opts(read_only=True) == {"net": "proxy", "read_only": True}
    with pytest.raises(ValidationError, match="read_only"):
        opts(read_only="yes")


def test_network_mode():
    assert opts(network_mode="none")["net"] == "none"
    assert opts(network_mode="bridge")["net"] == "proxy"
    assert opts(network_disabled=True)["net"] == "none"
    with pytest.raises(ValidationError, match="network_mode"):
        opts(network_mode="host")


def test_capabilities_and_security_opt():
    assert opts(cap_drop=["ALL"], security_opt=["no-new-privileges"]) == {"net": "proxy"}
    assert opts(security_opt=["no-new-privileges:true"]) == {"net": "proxy"}
    with pytest.raises(ValidationError, match="cap_add"):
        opts(cap_add=["SYS_ADMIN"])
    with pytest.raises(ValidationError, match="security_opt"):
        opts(security_opt=["seccomp=unconfined"])
    with pytest.raises(ValidationError, match="privileged"):
        opts(privileged=True)


def test_timeout_environment_volumes():
    assert sandbox_options({"timeout": 7})[1] == 7
    assert opts(environment={"A": 1})["env"] == {"A": "1"}
    assert opts(environment=["A=1", "B=x=y"])["env"] == {"A": "1", "B": "x=y"}
    with pytest.raises(ValidationError, match="environment"):
        opts(environment=["JUSTKEY"])
    assert opts(volumes={"/data": {"bind": "/in", "mode": "ro"}})["binds"] == [("/data", "/in", True)]
    assert opts(volumes=["/data:/in"])["binds"] == [("/data", "/in", False)]
    with pytest.raises(ValidationError, match="volumes"):
        opts(volumes=["named:/in"])
    assert opts(mounts=[{"Type": "bind", "Source": "/s", "Target": "/t", "ReadOnly": True}])["binds"] == [("/s", "/t", True)]


def test_unknown_key_refused_by_name():
    with pytest.raises(ValidationError, match=r"runtime_configs\['shm_size'\]"):
        opts(shm_size="1g")


def test_session_refuses_before_making_anything():
    from hutch.compat.llm_sandbox import SandboxSession

    with pytest.raises(ValidationError, match="user"):
        SandboxSession(lang="python", runtime_configs={"user": "1000; rm -rf /"})
    with pytest.raises(ValidationError, match="read_only"):
        SandboxSession(lang="python", runtime_configs={"read_only": "no"})
    with pytest.raises(ValidationError, match="no_such_argument"):
        SandboxSession(lang="python", no_such_argument=1)


def test_pod_manifest_identity():
    from hutch.compat.llm_sandbox._runtime_configs import pod_identity

    pod = {"spec": {"securityContext": {"runAsUser": 1000, "runAsGroup": 2000}, "containers": [{"name": "c"}]}}
    assert pod_identity(pod) == "1000:2000"
    pod["spec"]["containers"][0]["securityContext"] = {"runAsUser": 1001}
    assert pod_identity(pod) == "1001:2000"  # the container's over the pod's
    assert pod_identity({"spec": {"containers": [{"securityContext": {"runAsGroup": 5}}]}}) == "0:5"
    assert pod_identity({"spec": {"securityContext": {"runAsUser": 0}}}) is None
    assert pod_identity({"spec": {}}) is None and pod_identity(None) is None
    with pytest.raises(ValidationError, match="runAsUser"):
        pod_identity({"spec": {"securityContext": {"runAsUser": "x"}}})
