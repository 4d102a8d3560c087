#!/usr/bin/env python3
"""Two hosts on one machine, for MPI jobs whose ranks must talk TCP between
nodes: two network namespaces joined by a veth pair, addresses of TEST-NET-1
(192.0.2.1 and 192.0.2.2). Open MPI starts its daemon in the other
namespace through plm_rsh_agent (a script that runs it with `ip netns exec`
where ssh would log in), so each namespace is a node. Needs root and
iproute2.

    tools/two_hosts.py [--mpirun mpirun] -- COMMAND...

runs COMMAND as a 2-rank job, one rank per host, TCP only between them
(btl tcp,self), each rank with HIVE_RANK_ADDRESS set to its host's address,
and removes the namespaces afterwards. tests/actors/test_two_hosts.py and
the TCP rows of bench_alltoall use it."""
import argparse
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile


class TwoHosts:
    """The namespaces (made on enter, removed on exit) and the scripts
    Open MPI needs to use them as hosts, in a scratch directory."""

    def __init__(self, mpiexec="mpirun"):
        self.mpiexec = mpiexec
        suffix = str(os.getpid())
        self.hosts = {f"192.0.2.{i + 1}": f"hive{suffix}{end}" for i, end in enumerate("ab")}
        self.links = [f"hv{suffix}{end}" for end in "ab"]

    def __enter__(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = pathlib.Path(self.dir.name)
        try:
            self._make_namespaces()
        except subprocess.CalledProcessError as e:
            self._remove_namespaces()
            self.dir.cleanup()
            raise OSError(f"cannot make network namespaces here: {e.stderr.strip()}") from e
        cases = "".join(f"  {a}) ns={n};;\n" for a, n in self.hosts.items())
        self.agent = self._script("agent.sh", f"""#!/bin/sh
host=$1; shift
case "$host" in
{cases}  *) echo "no such host: $host" >&2; exit 1;;
esac
exec ip netns exec "$ns" sh -c "$*"
""")
        # Each rank listens for the actors on its own host's address and
        # writes down which namespace it ran in.
        self.ranks_file = self.path / "ranks.txt"
        self.rank = self._script("rank.sh", f"""#!/bin/sh
echo "$OMPI_COMM_WORLD_RANK $(ip netns identify $$)" >> {self.ranks_file}
HIVE_RANK_ADDRESS=192.0.2.$((OMPI_COMM_WORLD_RANK + 1)) exec "$@"
""")
        self.hostfile = self.path / "hosts"
        self.hostfile.write_text("".join(f"{a} slots=1\n" for a in self.hosts))
        return self

    def __exit__(self, *exc):
        self._remove_namespaces()
        self.dir.cleanup()

    def mpirun(self, *command):
        """COMMAND as a 2-rank job, one rank per host, TCP between them."""
        first = next(iter(self.hosts.values()))
        return ["ip", "netns", "exec", first, self.mpiexec, "-np", "2", "--hostfile",
                str(self.hostfile), "--mca", "plm_rsh_agent", self.agent,
                "--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", "192.0.2.0/24",
                "--mca", "oob_tcp_if_include", "192.0.2.0/24", "--bind-to", "none",
                self.rank, *command]

    def ranks_seen(self):
        """{rank: namespace} of the processes the last jobs started."""
        return dict(line.split() for line in self.ranks_file.read_text().splitlines())

    def _script(self, name, text):
        path = self.path / name
        path.write_text(text)
        path.chmod(0o755)
        return str(path)

    def _make_namespaces(self):
        def ip(*args):
            subprocess.run(["ip", *args], check=True, capture_output=True, text=True)
        for namespace in self.hosts.values():
            ip("netns", "add", namespace)
        ip("link", "add", self.links[0], "type", "veth", "peer", "name", self.links[1])
        for (address, namespace), link in zip(self.hosts.items(), self.links):
            ip("link", "set", link, "netns", namespace)
            ip("-n", namespace, "addr", "add", f"{address}/24", "dev", link)
            ip("-n", namespace, "link", "set", "lo", "up")
            ip("-n", namespace, "link", "set", link, "up")

    def _remove_namespaces(self):
        for namespace in self.hosts.values():
            subprocess.run(["ip", "netns", "del", namespace], capture_output=True)


def unavailable():
    """Why two hosts cannot be made here, or None."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "iproute2's ip is not installed"
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mpirun", default="mpirun")
    parser.add_argument("command", nargs="+")
    args = parser.parse_args()
    reason = unavailable()
    if reason:
        sys.exit(f"two_hosts: {reason}")
    with TwoHosts(args.mpirun) as hosts:
        return subprocess.run(hosts.mpirun(*args.command)).returncode


if __name__ == "__main__":
    sys.exit(main())
