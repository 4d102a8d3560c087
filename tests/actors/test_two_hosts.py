"""Two hosts on one machine: two network namespaces joined by a veth pair
(made here, addresses of TEST-NET-1, 192.0.2.0/24), each a "node" of the MPI
job, so ranks talk over TCP between nodes, not through shared memory.
Open MPI starts its daemon in the other namespace through plm_rsh_agent (a
script that runs it with `ip netns exec` where ssh would log in). The MPI
communicator must agree bit for bit with in-process ranks, and `hive run`
with expert parallelism across the two hosts must print what in-process
ranks print. Needs root and `ip netns`; exits 77 (ctest: skipped) with the
reason where namespaces cannot be made."""
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from test_process_ranks import BUNDLED, HIVE, MPIEXEC, TEXT_PROMPTS, launch_file  # noqa: E402

COMMUNICATOR_TESTS = os.environ["HIVE_MPI_COMMUNICATOR_TESTS"]
SUFFIX = str(os.getpid())
HOSTS = {f"192.0.2.{i + 1}": f"hive{SUFFIX}{'ab'[i]}" for i in range(2)}


def ip(*args):
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


def make_hosts():
    """The two namespaces, one end of the veth pair in each."""
    (a_addr, a), (b_addr, b) = HOSTS.items()
    ip("netns", "add", a)
    ip("netns", "add", b)
    ip("link", "add", f"hv{SUFFIX}a", "type", "veth", "peer", "name", f"hv{SUFFIX}b")
    for (address, namespace), end in zip(HOSTS.items(), "ab"):
        ip("link", "set", f"hv{SUFFIX}{end}", "netns", namespace)
        ip("-n", namespace, "addr", "add", f"{address}/24", "dev", f"hv{SUFFIX}{end}")
        ip("-n", namespace, "link", "set", "lo", "up")
        ip("-n", namespace, "link", "set", f"hv{SUFFIX}{end}", "up")


def remove_hosts():
    for namespace in HOSTS.values():
        subprocess.run(["ip", "netns", "del", namespace], capture_output=True)


class TwoHosts(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = pathlib.Path(self.dir.name)
        # Open MPI's "ssh": the host's namespace runs the daemon.
        cases = "".join(f"  {a}) ns={n};;\n" for a, n in HOSTS.items())
        self.agent = self.script("agent.sh", f"""#!/bin/sh
host=$1; shift
case "$host" in
{cases}  *) echo "no such host: $host" >&2; exit 1;;
esac
exec ip netns exec "$ns" sh -c "$*"
""")
        # Each rank listens for the actors on its own host's address and
        # writes down which namespace it ran in.
        self.rank = self.script("rank.sh", f"""#!/bin/sh
echo "$OMPI_COMM_WORLD_RANK $(ip netns identify $$)" >> {self.path}/ranks.txt
HIVE_RANK_ADDRESS=192.0.2.$((OMPI_COMM_WORLD_RANK + 1)) exec "$@"
""")
        self.hostfile = self.path / "hosts"
        self.hostfile.write_text("".join(f"{a} slots=1\n" for a in HOSTS))

    def tearDown(self):
        self.dir.cleanup()

    def script(self, name, text):
        path = self.path / name
        path.write_text(text)
        path.chmod(0o755)
        return str(path)

    def mpirun(self, *command):
        """The command on two ranks, one per host, TCP only between them."""
        first = next(iter(HOSTS.values()))
        return ["ip", "netns", "exec", first, MPIEXEC, "-np", "2", "--hostfile",
                str(self.hostfile), "--mca", "plm_rsh_agent", self.agent,
                "--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", "192.0.2.0/24",
                "--mca", "oob_tcp_if_include", "192.0.2.0/24", "--bind-to", "none",
                self.rank, *command]

    def ranks_ran_on_both_hosts(self):
        seen = dict(line.split() for line in (self.path / "ranks.txt").read_text().splitlines())
        self.assertEqual(seen, {str(r): n for r, n in enumerate(HOSTS.values())})

    def test_the_communicator_between_hosts_equals_in_process_ranks(self):
        done = subprocess.run(self.mpirun(COMMUNICATOR_TESTS), capture_output=True, text=True,
                              timeout=600)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertIn("PASSED", done.stdout)
        self.ranks_ran_on_both_hosts()

    def test_expert_parallel_between_hosts_prints_what_threads_print(self):
        prompts = self.path / "prompts.jsonl"
        prompts.write_text(TEXT_PROMPTS)
        outputs = {}
        for transport in ("in_process", "mpi"):
            config = self.path / f"{transport}.yaml"
            config.write_text(launch_file(BUNDLED, transport, 2))
            command = [HIVE, "run", "--config", str(config), "--prompts", str(prompts)]
            if transport == "mpi":
                command = self.mpirun(*command)
            done = subprocess.run(command, capture_output=True, text=True, timeout=300)
            self.assertEqual(done.returncode, 0, done.stderr)
            outputs[transport] = done.stdout
        self.assertTrue(outputs["in_process"].strip())
        self.assertEqual(outputs["mpi"], outputs["in_process"])
        self.ranks_ran_on_both_hosts()


def main():
    if os.geteuid() != 0 or shutil.which("ip") is None:
        print("skipped: network namespaces need root and iproute2's ip")
        return 77
    try:
        make_hosts()
    except subprocess.CalledProcessError as e:
        remove_hosts()
        print(f"skipped: cannot make network namespaces here: {e.stderr.strip()}")
        return 77
    try:
        result = unittest.main(verbosity=2, exit=False).result
    finally:
        remove_hosts()
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
