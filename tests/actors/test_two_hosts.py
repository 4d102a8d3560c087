"""Two hosts on one machine (tools/two_hosts.py: two network namespaces
joined by a veth pair, each a node of the MPI job), so ranks talk TCP
between nodes, not through shared memory. The MPI communicator must agree
bit for bit with in-process ranks, and `hive run` with expert parallelism
across the two hosts must print what in-process ranks print. Needs root and
`ip netns`; exits 77 (ctest: skipped) with the reason elsewhere."""
import os
import pathlib
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from test_process_ranks import BUNDLED, HIVE, MPIEXEC, SOURCE, TEXT_PROMPTS, launch_file  # noqa: E402

sys.path.insert(0, str(SOURCE / "tools"))
from two_hosts import TwoHosts, unavailable  # noqa: E402

COMMUNICATOR_TESTS = os.environ["HIVE_MPI_COMMUNICATOR_TESTS"]
HOSTS = None  # made once for the tests (main)


class TwoHostsTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = pathlib.Path(self.dir.name)
        HOSTS.ranks_file.write_text("")

    def tearDown(self):
        self.dir.cleanup()

    def ranks_ran_on_both_hosts(self):
        self.assertEqual(HOSTS.ranks_seen(),
                         {str(r): n for r, n in enumerate(HOSTS.hosts.values())})

    def test_the_communicator_between_hosts_equals_in_process_ranks(self):
        done = subprocess.run(HOSTS.mpirun(COMMUNICATOR_TESTS), capture_output=True, text=True,
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
                command = HOSTS.mpirun(*command)
            done = subprocess.run(command, capture_output=True, text=True, timeout=300)
            self.assertEqual(done.returncode, 0, done.stderr)
            outputs[transport] = done.stdout
        self.assertTrue(outputs["in_process"].strip())
        self.assertEqual(outputs["mpi"], outputs["in_process"])
        self.ranks_ran_on_both_hosts()


def main():
    global HOSTS
    reason = unavailable()
    if reason:
        print(f"skipped: {reason}")
        return 77
    try:
        with TwoHosts(MPIEXEC) as HOSTS:
            result = unittest.main(verbosity=2, exit=False).result
    except OSError as e:
        print(f"skipped: {e}")
        return 77
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
