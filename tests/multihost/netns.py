"""Hosts as Linux network namespaces on one private bridge, made and removed by the test.

The bridge lives in a namespace of its own (the "switch"), so the machine's own namespace gains one veth pair and
one route to a private /24, nothing else: no bridge, no firewall rule, no forwarding. Each host is a namespace with
loopback and one veth on the switch, and no default route, so nothing it sends can leave the machine. The test
process reaches the hosts through the root namespace's veth (``.1``).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True, timeout=30)


def unavailable() -> str | None:
    """Why namespaces cannot be made here (None: they can): not root, no ``ip``, or the kernel refuses."""
    if os.geteuid() != 0:
        return "the multi-host test makes network namespaces, which needs root"
    if shutil.which("ip") is None:
        return "the multi-host test needs iproute2's `ip` (apt-get install iproute2; .ci/run installs it)"
    probe = f"mhprobe{os.getpid()}"
    try:
        _ip("netns", "add", probe)
    except subprocess.CalledProcessError as exc:
        return f"`ip netns add` failed here: {exc.stderr.strip()}"
    _ip("netns", "del", probe)
    return None


class Network:
    """A private /24 (``10.231.N.0/24``) with one namespace per host; :meth:`down` removes all of it."""

    def __init__(self, tag: str, subnet: str) -> None:
        self.tag = tag  # short: interface names are at most 15 characters
        self.subnet = subnet  # "10.231.57"
        self.switch = f"{tag}-sw"
        self.hosts: dict[str, str] = {}  # host name -> namespace
        self.operator_link = f"{tag}-op"

    def address(self, octet: int) -> str:
        return f"{self.subnet}.{octet}"

    def up(self, operator_octet: int) -> None:
        _ip("netns", "add", self.switch)
        _ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
        _ip("-n", self.switch, "link", "set", "br0", "up")
        _ip("link", "add", self.operator_link, "type", "veth", "peer", "name", "op", "netns", self.switch)
        _ip("-n", self.switch, "link", "set", "op", "master", "br0", "up")
        _ip("addr", "add", f"{self.address(operator_octet)}/24", "dev", self.operator_link)
        _ip("link", "set", self.operator_link, "up")

    def add_host(self, name: str, octet: int) -> str:
        namespace = f"{self.tag}-{name}"
        port = f"{self.tag}-{octet}"
        _ip("netns", "add", namespace)
        self.hosts[name] = namespace
        _ip("link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", namespace)
        _ip("link", "set", port, "netns", self.switch)
        _ip("-n", self.switch, "link", "set", port, "master", "br0", "up")
        _ip("-n", namespace, "addr", "add", f"{self.address(octet)}/24", "dev", "eth0")
        _ip("-n", namespace, "link", "set", "eth0", "up")
        _ip("-n", namespace, "link", "set", "lo", "up")
        return namespace

    def start(self, host: str, argv: list[str], env: dict[str, str], log: Path, cwd: Path) -> subprocess.Popen[bytes]:
        """Start ``argv`` on ``host`` (`ip netns exec` replaces itself with it: the Popen's pid is the program's)."""
        with open(log, "ab") as out:
            return subprocess.Popen(["ip", "netns", "exec", self.hosts[host], *argv], env=env, cwd=cwd, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True)

    def pids(self, host: str) -> list[int]:
        """Every process in the host's namespace (its own and their children, whatever user they run as)."""
        done = subprocess.run(["ip", "netns", "pids", self.hosts[host]], capture_output=True, text=True, timeout=30)
        return [int(pid) for pid in done.stdout.split()]

    def leaks(self, host: str) -> list[str]:
        """What of ``host`` could reach beyond the private network: a route other than the /24's (a default route),
        or a TCP socket whose peer is neither on the /24 nor loopback. Empty: nothing leaves the machine."""
        routes = subprocess.run(["ip", "-n", self.hosts[host], "-4", "route"], capture_output=True, text=True,
                                timeout=30).stdout.splitlines()
        found = [f"route {line}" for line in routes if not line.startswith(f"{self.subnet}.0/24 ")]
        sockets = subprocess.run(["ip", "netns", "exec", self.hosts[host], "ss", "-Htna"], capture_output=True,
                                 text=True, timeout=30).stdout.splitlines()
        for line in sockets:
            peer = line.split()[4].rsplit(":", 1)[0].strip("[]")
            if not (peer.startswith(f"{self.subnet}.") or peer in ("*", "0.0.0.0", "::", "127.0.0.1", "::1")):
                found.append(f"socket {line}")
        return found

    def kill_host(self, host: str, timeout_s: float = 20.0) -> int:
        """SIGKILL every process of ``host``, as a machine losing power; how many there were."""
        killed: set[int] = set()
        deadline = time.monotonic() + timeout_s
        while pids := self.pids(host):
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                    killed.add(pid)
                except ProcessLookupError:
                    pass
            _reap(pids)
            if time.monotonic() > deadline:
                raise RuntimeError(f"processes {pids} of host {host} outlived SIGKILL for {timeout_s} s")
            time.sleep(0.05)
        return len(killed)

    def down(self) -> None:
        """Kill every host's processes and remove the namespaces and the operator's veth (each step tried)."""
        for host in list(self.hosts):
            try:
                self.kill_host(host)
            except (RuntimeError, KeyError, subprocess.SubprocessError):
                pass
        for namespace in [*self.hosts.values(), self.switch]:
            subprocess.run(["ip", "netns", "del", namespace], capture_output=True, timeout=30)
        subprocess.run(["ip", "link", "del", self.operator_link], capture_output=True, timeout=30)
        self.hosts.clear()


def free_subnet(first: int) -> str:
    """A ``10.231.N`` /24 no interface of this machine has an address in, trying N from ``first`` (20..219)."""
    taken = subprocess.run(["ip", "-o", "-4", "addr"], capture_output=True, text=True, timeout=30).stdout
    for step in range(200):
        subnet = f"10.231.{20 + (first + step) % 200}"
        if f" {subnet}." not in taken:
            return subnet
    raise RuntimeError("no free 10.231.N.0/24 on this machine")


def remove_stale(prefix: str = "mh") -> list[str]:
    """Remove what a test process killed before its clean-up left (namespaces and veths named ``mh<pid>-*``
    whose pid is gone); the names removed."""
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=30).stdout
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, timeout=30).stdout
    names = {line.split()[0] for line in listed.splitlines() if line.strip()}
    names |= {part.strip().split("@")[0] for line in links.splitlines() for part in line.split(":")[1:2]}
    removed = []
    for name in sorted(names):
        owner = name[len(prefix):].split("-")[0]
        if not (name.startswith(prefix) and "-" in name and owner.isdigit()) or _alive(int(owner)):
            continue
        if name in listed.split():
            done = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True, timeout=30)
            for pid in done.stdout.split():
                _kill(int(pid))
            subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=30)
        else:
            subprocess.run(["ip", "link", "del", name], capture_output=True, timeout=30)
        removed.append(name)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _reap(pids: list[int]) -> None:
    """Collect the killed children of this process, so that they do not linger as zombies in the namespace."""
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
