"""Network partitions for the cluster tests: each server and each group of application processes in a network
namespace of its own, joined by veth pairs to a bridge that lives in a namespace of its own too.

Addresses are taken from SUBNET, which exists only inside the namespaces made here: nothing leaves them, and
nothing outside can reach them (the test process talks to the servers through their Unix sockets, which the
file system shares). A link is cut with iptables rules that drop every packet between two namespaces, in both
directions, so the peers meet silence, not errors; a flaky link drops a share of the packets (iptables'
statistic match) and delays what passes through a relay (tests/support/delay_relay.py), since the kernels the
tests run on may lack tc's netem.

Every namespace is named NAME_PREFIX + the test process's pid + a node name. `Network.stop()` kills the processes
left in each namespace and deletes it; a reaper process started with the network does the same when the test
process dies without its finalizers (SIGKILL); and `clean_stale()` removes, at the start of a run, what any
earlier run of a process no longer alive left behind.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field

NAME_PREFIX = "segseq-pt"
# A private range that exists only inside the namespaces made here.
SUBNET = "10.231.0"
BRIDGE = "br0"
COMMAND_TIMEOUT = 20


def missing() -> str | None:
    """Why this machine cannot make namespaces (not root, no ip or iptables, a kernel that refuses), or None."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    for binary in ("ip", "iptables", "ping"):
        if not shutil.which(binary):
            return f"{binary} is not installed (Debian: apt-get install iproute2 iptables iputils-ping)"
    probe = f"{NAME_PREFIX}{os.getpid()}-probe"
    try:
        run("ip", "netns", "add", probe)
        run("ip", "netns", "exec", probe, "iptables", "-A", "INPUT", "-s", f"{SUBNET}.1", "-j", "DROP")
    except (OSError, subprocess.SubprocessError) as exc:
        return f"cannot make a network namespace with an iptables rule: {exc}"
    finally:
        subprocess.run(["ip", "netns", "del", probe], capture_output=True, timeout=COMMAND_TIMEOUT)
    return None


def run(*command: str) -> str:
    """A command that must succeed, within COMMAND_TIMEOUT; its output."""
    done = subprocess.run(command, capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
    if done.returncode != 0:
        raise subprocess.CalledProcessError(done.returncode, command, done.stdout, done.stderr)
    return done.stdout


def namespaces(prefix: str = NAME_PREFIX) -> list[str]:
    """The namespaces whose name starts with `prefix`."""
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=COMMAND_TIMEOUT).stdout
    return [line.split()[0] for line in listed.splitlines() if line.startswith(prefix)]


def remove(name: str) -> None:
    """SIGKILL every process in namespace `name`, then delete it (its interfaces go with it)."""
    for _ in range(50):
        pids = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
        alive = [int(pid) for pid in pids.stdout.split()]
        if not alive:
            break
        for pid in alive:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)
    subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=COMMAND_TIMEOUT)


def owner_of(name: str) -> int | None:
    """The pid of the test process that made namespace `name`."""
    digits = name[len(NAME_PREFIX) :].split("-", 1)[0]
    return int(digits) if digits.isdigit() else None


def clean_stale() -> list[str]:
    """Remove the namespaces of earlier runs whose test process is gone; the names removed."""
    removed = []
    for name in namespaces():
        owner = owner_of(name)
        if owner is not None and owner != os.getpid() and not os.path.exists(f"/proc/{owner}"):
            remove(name)
            removed.append(name)
    return removed


def reap_when_gone(owner: int) -> None:
    """Run apart from the test process: once it is gone, remove every namespace it made."""
    while os.path.exists(f"/proc/{owner}"):
        time.sleep(0.5)
    for name in namespaces(f"{NAME_PREFIX}{owner}-"):
        remove(name)


@dataclass
class Node:
    """One namespace on the bridge: a server, or a group of application processes; `address` is its only address."""

    name: str
    namespace: str
    address: str
    # The peers whose packets this node drops, and the share it drops of each (1.0: all).
    dropping: dict[str, float] = field(default_factory=dict)

    def command(self, argv: list[str]) -> list[str]:
        """`argv` run inside this node's namespace."""
        return ["ip", "netns", "exec", self.namespace, *argv]

    def iptables(self, *args: str) -> None:
        run("ip", "netns", "exec", self.namespace, "iptables", *args)

    def drop_from(self, peer: Node, share: float) -> None:
        """Drop `share` of the packets arriving from `peer` (replacing any earlier rule for it)."""
        self.accept_from(peer)
        rule = ["-s", peer.address]
        if share < 1.0:
            rule += ["-m", "statistic", "--mode", "random", "--probability", f"{share:.4f}"]
        self.iptables("-I", "INPUT", *rule, "-j", "DROP")
        self.dropping[peer.address] = share

    def accept_from(self, peer: Node) -> None:
        share = self.dropping.pop(peer.address, None)
        if share is None:
            return
        rule = ["-s", peer.address]
        if share < 1.0:
            rule += ["-m", "statistic", "--mode", "random", "--probability", f"{share:.4f}"]
        self.iptables("-D", "INPUT", *rule, "-j", "DROP")


class Network:
    """A bridge in a namespace of its own, and nodes joined to it; `stop()` removes every namespace made."""

    def __init__(self) -> None:
        self.prefix = f"{NAME_PREFIX}{os.getpid()}-"
        self.nodes: dict[str, Node] = {}
        self.bridge = self.prefix + "bridge"
        self.reaper = subprocess.Popen(
            [sys.executable, __file__, str(os.getpid())], start_new_session=True, stdin=subprocess.DEVNULL
        )
        run("ip", "netns", "add", self.bridge)
        run("ip", "-n", self.bridge, "link", "add", BRIDGE, "type", "bridge")
        run("ip", "-n", self.bridge, "link", "set", BRIDGE, "up")

    def node(self, name: str) -> Node:
        """A new namespace joined to the bridge, with the next address of SUBNET and its loopback up."""
        index = len(self.nodes) + 1
        node = Node(name, self.prefix + name, f"{SUBNET}.{index}")
        run("ip", "netns", "add", node.namespace)
        self.nodes[name] = node
        port = f"v{index}"
        run("ip", "link", "add", "eth0", "netns", node.namespace, "type", "veth", "peer", "name", port,
            "netns", self.bridge)  # fmt: skip
        run("ip", "-n", self.bridge, "link", "set", port, "master", BRIDGE)
        run("ip", "-n", self.bridge, "link", "set", port, "up")
        run("ip", "-n", node.namespace, "addr", "add", f"{node.address}/24", "dev", "eth0")
        run("ip", "-n", node.namespace, "link", "set", "eth0", "up")
        run("ip", "-n", node.namespace, "link", "set", "lo", "up")
        return node

    def cut(self, one: Node, other: Node) -> None:
        """Silence between two nodes: each drops every packet from the other."""
        one.drop_from(other, 1.0)
        other.drop_from(one, 1.0)

    def lose(self, one: Node, other: Node, share: float) -> None:
        """A lossy link: each drops `share` of the packets from the other."""
        one.drop_from(other, share)
        other.drop_from(one, share)

    def heal(self, one: Node, other: Node) -> None:
        one.accept_from(other)
        other.accept_from(one)

    def reachable(self, one: Node, other: Node) -> bool:
        """Whether `one` reaches `other` (a ping, one second at most): proof that a cut or a heal took effect."""
        ping = subprocess.run(
            one.command(["ping", "-c", "1", "-W", "1", other.address]), capture_output=True, timeout=COMMAND_TIMEOUT
        )
        return ping.returncode == 0

    def stop(self) -> None:
        """Kill every process left in the namespaces and delete them, the bridge last."""
        for node in self.nodes.values():
            remove(node.namespace)
        remove(self.bridge)
        with contextlib.suppress(ProcessLookupError):
            self.reaper.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.reaper.wait(5)


if __name__ == "__main__":
    reap_when_gone(int(sys.argv[1]))
