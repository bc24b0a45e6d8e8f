"""Private redis-server processes on free loopback ports (never the one on 6379): plain, replica, Sentinel, Cluster."""

from __future__ import annotations

import contextlib
import random
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path

import redis

from tests.support.servers import free_port

START_TIMEOUT = 20


def missing() -> str | None:
    """Why this machine cannot start a Redis, or None."""
    return None if shutil.which("redis-server") else "redis-server is not installed (apt-get install redis-server)"


class RedisServer:
    """One redis-server in its own directory, without persistence unless told; kill() is a kill -9."""

    def __init__(self, workdir: Path, *args: str, port: int | None = None) -> None:
        self.dir = workdir
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port = port or free_port()
        self.args = list(args)
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, *extra: str) -> RedisServer:
        command = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.dir)]
        command += ["--save", "", "--appendonly", "no", "--dbfilename", "dump.rdb", *self.args, *extra]
        self.proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.wait_until_up()
        return self

    def wait_until_up(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                if self.client().ping():
                    return
            except redis.RedisError:
                if time.monotonic() > deadline or (self.proc is not None and self.proc.poll() is not None):
                    raise RuntimeError(f"redis-server on port {self.port} did not start") from None
                time.sleep(0.02)

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, socket_timeout=5)

    def run_id(self) -> str:
        return str(self.client().info("server")["run_id"])

    def kill(self) -> None:
        """kill -9: whatever was not saved is gone."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.proc = None

    def restart(self, *extra: str) -> RedisServer:
        self.kill()
        return self.start(*extra)


class Sentinel:
    """One Sentinel (redis-server --sentinel) watching `master` as service "seg"."""

    def __init__(self, workdir: Path, master: RedisServer) -> None:
        self.port = free_port()
        self.conf = workdir / f"sentinel{self.port}.conf"
        self.conf.write_text(
            f"port {self.port}\nbind 127.0.0.1\ndir {workdir}\n"
            f"sentinel monitor seg 127.0.0.1 {master.port} 1\n"
            "sentinel down-after-milliseconds seg 1000\nsentinel failover-timeout seg 5000\n"
        )
        self.proc = subprocess.Popen(
            ["redis-server", str(self.conf), "--sentinel"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                redis.Redis(port=self.port).ping()
                return
            except redis.RedisError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.02)

    def master_port(self) -> int:
        _host, port = redis.Redis(port=self.port).execute_command("SENTINEL", "get-master-addr-by-name", "seg")
        return int(port)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


class Forwarder:
    """A TCP forwarder on a fixed port, whose target can change: an address that moves to a promoted replica."""

    def __init__(self, target: int) -> None:
        self.port = free_port()
        self.target = target
        self.server = socket.create_server(("127.0.0.1", self.port))
        self.open: list[socket.socket] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def switch(self, target: int) -> None:
        """Send new connections to `target` and cut the old ones."""
        with self.lock:
            self.target = target
            for sock in self.open:
                with contextlib.suppress(OSError):
                    sock.close()
            self.open.clear()

    def close(self) -> None:
        self.server.close()
        self.switch(self.target)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target), timeout=2)
            except OSError:
                client.close()
                continue
            with self.lock:
                self.open += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.close()


def cluster_port() -> int:
    """A free port whose cluster bus port (10000 above) is free too, and below 65536."""
    for _ in range(200):
        port = random.randint(20000, 50000)
        try:
            for candidate in (port, port + 10000):
                with socket.socket() as sock:
                    sock.bind(("127.0.0.1", candidate))
        except OSError:
            continue
        return port
    raise RuntimeError("no free pair of ports for a cluster node")


def start_cluster(workdir: Path, masters: int = 3) -> list[RedisServer]:
    """A Redis Cluster of `masters` nodes without replicas, every slot covered."""
    nodes = [
        RedisServer(
            workdir / f"node{i}", "--cluster-enabled", "yes", "--cluster-node-timeout", "2000", port=cluster_port()
        ).start()
        for i in range(masters)
    ]
    addresses = [f"127.0.0.1:{node.port}" for node in nodes]
    subprocess.run(
        ["redis-cli", "--cluster", "create", *addresses, "--cluster-yes"],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=30,
    )
    deadline = time.monotonic() + START_TIMEOUT
    while any(node.client().cluster("info")["cluster_state"] != "ok" for node in nodes):
        if time.monotonic() > deadline:
            raise RuntimeError("the Redis Cluster did not reach state ok")
        time.sleep(0.05)
    return nodes
