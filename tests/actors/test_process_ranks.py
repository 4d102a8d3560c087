"""Ranks as processes (parallel.transport: mpi): `mpirun -np N hive run`
must print exactly what the same launch file prints with its ranks as
threads (transport: in_process), for expert parallelism on 2 and 4
processes (the bundled MoE model and a DeepSeek-V3 fixture) and tensor
parallelism on 2, greedy and seeded sampling. A rank that cannot start is a
clear error at start; a worker process killed by SIGKILL ends the job within
10 s with the cause, never a hang, and under `hive serve` every stream in
flight ends with an error event and /health says 503 before the exit.
parallel.transport: nccl is a clear error at start where a process has no
GPU (or the build no CUDA), and prints what the threads print where each of
2 processes has one."""
import http.client
import json
import os
import pathlib
import re
import signal
import subprocess
import tempfile
import threading
import time
import unittest

HIVE = os.environ["HIVE_BINARY"]
MPIEXEC = os.environ["HIVE_MPIEXEC"]
SOURCE = pathlib.Path(os.environ["HIVE_SOURCE_DIR"])
BUNDLED = SOURCE / "models" / "hive-moe-target"
DEEPSEEK = SOURCE / "tests" / "data" / "models" / "deepseek_v3"

TEXT_PROMPTS = """\
{"id": "a", "prompt": "Once upon a time", "max_tokens": 24, "temperature": 0}
{"id": "b", "prompt": "The LORD said", "max_tokens": 20, "temperature": 0.8, "seed": 7}
{"id": "c", "prompt_ids": [5, 100, 200, 7], "max_tokens": 16, "temperature": 0}
{"id": "d", "prompt": "A fortune:", "max_tokens": 12, "temperature": 0}
{"id": "e", "prompt": "Once upon a time there was", "max_tokens": 9, "temperature": 1, "seed": 3}
"""
ID_PROMPTS = """\
{"id": "a", "prompt_ids": [5, 17, 30, 2, 9], "max_tokens": 12, "temperature": 0, "ignore_eos": true}
{"id": "b", "prompt_ids": [7, 7, 1], "max_tokens": 8, "temperature": 0.9, "seed": 11, "ignore_eos": true}
{"id": "c", "prompt_ids": [3, 4, 5, 6, 7, 8, 9, 10], "max_tokens": 10, "temperature": 0, "ignore_eos": true}
"""


def launch_file(model, transport, world, tensor_parallel=False, extra=""):
    ep, tp = (1, world) if tensor_parallel else (world, 1)
    return f"""model: {model}
device: cpu
parallel:
  world_size: {world}
  transport: {transport}
  expert_parallel_size: {ep}
  tensor_parallel_size: {tp}
{extra}kv_cache:
  block_size: 16
  memory_budget: 64MiB
  enable_prefix_caching: true
scheduler:
  max_num_seqs: 16
  max_num_batched_tokens: 64
"""


class ProcessRanks(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = pathlib.Path(self.dir.name)

    def tearDown(self):
        self.dir.cleanup()

    def write(self, name, text):
        (self.path / name).write_text(text)
        return str(self.path / name)

    def mpirun(self, world, *args, env=None):
        return [MPIEXEC, "-np", str(world), "--oversubscribe", "--bind-to", "none",
                *(env or []), HIVE, *args]

    def same_as_threads(self, model, world, prompts, tensor_parallel=False, extra=""):
        prompt_file = self.write("prompts.jsonl", prompts)
        outputs = {}
        for transport in ("in_process", "mpi"):
            config = self.write(f"{transport}.yaml",
                                launch_file(model, transport, world, tensor_parallel, extra))
            command = ["run", "--config", config, "--prompts", prompt_file]
            if transport == "mpi":
                command = self.mpirun(world, *command)
            else:
                command = [HIVE, *command]
            done = subprocess.run(command, capture_output=True, text=True, timeout=300)
            self.assertEqual(done.returncode, 0, done.stderr)
            outputs[transport] = done.stdout
        self.assertTrue(outputs["in_process"].strip())
        self.assertEqual(outputs["mpi"], outputs["in_process"])

    def test_expert_parallel_on_2_processes(self):
        self.same_as_threads(BUNDLED, 2, TEXT_PROMPTS)

    def test_expert_parallel_on_4_processes_round_robin(self):
        self.same_as_threads(BUNDLED, 4, TEXT_PROMPTS, extra="  expert_placement: round_robin\n")

    def test_deepseek_v3_expert_parallel_on_2_processes(self):
        self.same_as_threads(DEEPSEEK, 2, ID_PROMPTS)

    def test_tensor_parallel_on_2_processes(self):
        self.same_as_threads(BUNDLED, 2, TEXT_PROMPTS, tensor_parallel=True)

    def cuda_devices(self):
        """The CUDA devices this build sees, or None when built without CUDA."""
        done = subprocess.run([HIVE, "inspect", "--devices"], capture_output=True, text=True,
                              timeout=60)
        self.assertEqual(done.returncode, 0, done.stderr)
        found = re.search(r"(\d+) CUDA device\(s\)", done.stdout)
        return int(found.group(1)) if found else None

    def test_nccl_without_a_device_is_an_error_at_start(self):
        devices = self.cuda_devices()
        if devices:
            self.skipTest(f"{devices} CUDA device(s) here: the error is for machines without")
        config = self.write("nccl.yaml", launch_file(BUNDLED, "nccl", 2))
        prompts = self.write("prompts.jsonl", TEXT_PROMPTS)
        start = time.time()
        done = subprocess.run(self.mpirun(2, "run", "--config", config, "--prompts", prompts),
                              capture_output=True, text=True, timeout=120)
        output = done.stdout + done.stderr
        self.assertNotEqual(done.returncode, 0, output)
        if devices is None:
            self.assertIn("nccl: this Hive was built without CUDA", output)
        else:
            self.assertRegex(output, r"parallel\.transport nccl needs a CUDA device per "
                                     r"process; rank [01] sees none")
        self.assertNotIn("requests:", output)  # nothing ran
        self.assertLess(time.time() - start, 60, output)  # at start, not after a timeout

    def test_nccl_on_2_processes_prints_what_the_threads_print(self):
        devices = self.cuda_devices()
        if not devices or devices < 2:
            self.skipTest(f"needs 2 CUDA devices, one per process; this machine has {devices or 0}")
        prompt_file = self.write("prompts.jsonl", TEXT_PROMPTS)
        outputs = {}
        for transport in ("in_process", "nccl"):
            config = self.write(f"{transport}.yaml", launch_file(BUNDLED, transport, 2))
            command = ["run", "--config", config, "--prompts", prompt_file]
            command = self.mpirun(2, *command) if transport == "nccl" else [HIVE, *command]
            done = subprocess.run(command, capture_output=True, text=True, timeout=300)
            self.assertEqual(done.returncode, 0, done.stderr)
            outputs[transport] = done.stdout
        self.assertTrue(outputs["in_process"].strip())
        self.assertEqual(outputs["nccl"], outputs["in_process"])

    def test_a_world_size_other_than_the_jobs_is_an_error(self):
        config = self.write("mpi.yaml", launch_file(BUNDLED, "mpi", 4))
        prompts = self.write("prompts.jsonl", TEXT_PROMPTS)
        done = subprocess.run(self.mpirun(2, "run", "--config", config, "--prompts", prompts),
                              capture_output=True, text=True, timeout=120)
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("parallel.world_size is 4 but the MPI job has 2 processes: start it with "
                      "mpirun -np 4", done.stdout + done.stderr)

    def test_a_rank_that_cannot_start_is_an_error_at_start(self):
        # An address no interface here has (TEST-NET-3): the ranks cannot
        # listen on it, and say so instead of waiting for rank 0.
        config = self.write("mpi.yaml", launch_file(BUNDLED, "mpi", 2))
        prompts = self.write("prompts.jsonl", TEXT_PROMPTS)
        done = subprocess.run(
            self.mpirun(2, "run", "--config", config, "--prompts", prompts,
                        env=["-x", "HIVE_RANK_ADDRESS=203.0.113.1"]),
            capture_output=True, text=True, timeout=120)
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("rank 1: cannot listen on 203.0.113.1", done.stdout + done.stderr)

    def test_a_worker_process_killed_ends_the_job_with_the_cause(self):
        long_prompts = "".join(
            f'{{"id": "p{i}", "prompt_ids": [5, {10 + i}, 7], "max_tokens": 505, '
            f'"temperature": 0, "ignore_eos": true}}\n' for i in range(48))
        config = self.write("mpi.yaml", launch_file(BUNDLED, "mpi", 2).replace(
            "memory_budget: 64MiB", "memory_budget: 256MiB"))
        prompts = self.write("prompts.jsonl", long_prompts)
        job = subprocess.Popen(self.mpirun(2, "run", "--config", config, "--prompts", prompts),
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        log = []
        try:
            rank1 = self.wait_for_rank(job.pid, 1)
            # Every rank has loaded once rank 0 says what it computes with;
            # it submits the 48 requests right after (16 in flight,
            # max_num_seqs; seconds of work), so rank 1 dies mid-run.
            self.wait_for_line(job, log, r"^hive run: ")
            self.assertIsNone(job.poll(), "the job ended before its worker was killed")
            os.kill(rank1, signal.SIGKILL)
            # A job that hung instead of ending would time out here; how
            # fast it ends on 2 loaded cores is not what is tested.
            reader = threading.Thread(target=lambda: log.extend(job.stdout), daemon=True)
            reader.start()
            job.wait(timeout=240)
            reader.join(timeout=120)
            job.stdout.close()
            output = "".join(log)
        finally:
            if job.poll() is None:
                job.kill()
        self.assertNotEqual(job.returncode, 0)
        self.assertRegex(output, r"rank 1 with PID \d+ on node \S+ exited on signal 9")
        self.assertNotIn("error:", output)  # nothing else went wrong first
        self.assertNotIn("requests: 48 finished", output)

    def test_a_worker_process_killed_under_serve_ends_every_stream_with_an_error(self):
        config = self.write("mpi.yaml", launch_file(BUNDLED, "mpi", 2).replace(
            "memory_budget: 64MiB", "memory_budget: 256MiB"))
        job = subprocess.Popen(self.mpirun(2, "serve", "--config", config, "--port", "0"),
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        log = []
        try:
            port = self.serve_port(job, log)
            reader = threading.Thread(target=lambda: log.extend(job.stdout), daemon=True)
            reader.start()
            health = []  # (time, status or the connection error)
            streams = [Stream(port, i) for i in range(16)]
            deadline = time.time() + 60
            while not all(s.tokens >= 2 for s in streams):
                self.assertLess(time.time(), deadline, "the streams never started")
                self.assertTrue(all(s.error is None for s in streams), streams)
                time.sleep(0.05)
            poller = threading.Thread(target=poll_health, args=(port, health, job), daemon=True)
            poller.start()
            os.kill(self.wait_for_rank(job.pid, 1), signal.SIGKILL)
            killed = time.time()
            # Ended, not hung: the bounds are generous (2 loaded cores); the
            # order of events is what is checked below.
            job.wait(timeout=240)
            for s in streams:
                s.thread.join(timeout=120)
            reader.join(timeout=120)
            poller.join(timeout=120)
        finally:
            if job.poll() is None:
                job.kill()
        output = "".join(log)
        self.assertNotEqual(job.returncode, 0, output)
        for s in streams:
            self.assertFalse(s.thread.is_alive(), f"stream {s.index} never ended: {output}")
            self.assertIsNotNone(s.error, f"stream {s.index} ended without an error event: {output}")
            self.assertIn("worker rank 1 died", s.error)
            self.assertGreater(s.ended, killed)
        after = [status for t, status in health if t > killed]
        self.assertIn(503, after, f"/health never said 503 before the exit: {health}")
        # Once 503, it stays so until the server is gone.
        answered = [status for status in after if status is not None]
        self.assertNotIn(200, answered[answered.index(503):], health)

    def serve_port(self, job, log):
        return int(self.wait_for_line(job, log, r"hive serve: http://127\.0\.0\.1:(\d+)").group(1))

    def wait_for_line(self, job, log, pattern):
        """Reads the job's output into `log` until a line matches `pattern`;
        its match. Fails if the job ends first; a job that hangs silent
        meets the test's ctest timeout."""
        while True:
            line = job.stdout.readline()
            if not line:
                raise AssertionError(f"the job ended before printing {pattern!r}: " + "".join(log))
            log.append(line)
            match = re.search(pattern, line)
            if match:
                return match

    def wait_for_rank(self, mpirun_pid, rank):
        """The pid of the job's process of `rank` (Open MPI sets
        OMPI_COMM_WORLD_RANK in each process's environment)."""
        deadline = time.time() + 60
        wanted = f"OMPI_COMM_WORLD_RANK={rank}".encode()
        while time.time() < deadline:
            for entry in pathlib.Path("/proc").iterdir():
                if not entry.name.isdigit():
                    continue
                try:
                    if (entry / "cmdline").read_bytes().split(b"\0")[0] != HIVE.encode():
                        continue
                    if wanted in (entry / "environ").read_bytes().split(b"\0"):
                        return int(entry.name)
                except OSError:
                    continue
            time.sleep(0.1)
        raise AssertionError(f"rank {rank} of mpirun {mpirun_pid} never started")


class Stream:
    """One streamed completion on its own thread: the tokens it received,
    the error event that ended it, and whether [DONE] came."""

    def __init__(self, port, index):
        self.port, self.index = port, index
        self.tokens, self.error, self.done, self.ended = 0, None, False, None
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        body = json.dumps({"prompt": f"Once upon a time {self.index}", "max_tokens": 500,
                           "temperature": 0, "ignore_eos": True, "stream": True})
        try:
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
            conn.request("POST", "/v1/completions", body=body,
                         headers={"Content-Type": "application/json"})
            response = conn.getresponse()
            if response.status != 200:
                self.error = f"HTTP {response.status}: {response.read().decode()}"
            while response.status == 200:
                line = response.fp.readline()
                if not line:
                    break
                line = line.decode().strip()
                if not line.startswith("data: "):
                    continue
                data = line[len("data: "):]
                if data == "[DONE]":
                    self.done = True
                    break
                event = json.loads(data)
                if "error" in event:
                    self.error = event["error"]["message"]
                else:
                    self.tokens += 1
        except (OSError, http.client.HTTPException):
            pass  # a connection cut without an error event: self.error stays None
        self.ended = time.time()

    def __repr__(self):
        return f"Stream({self.index}, tokens={self.tokens}, error={self.error!r}, done={self.done})"


def poll_health(port, health, job):
    """GET /health every 20 ms until the job ends: (time, status), or
    (time, None) where the connection failed."""
    while job.poll() is None:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/health")
            status = conn.getresponse().status
            conn.close()
        except (OSError, http.client.HTTPException):
            status = None
        health.append((time.time(), status))
        time.sleep(0.02)


if __name__ == "__main__":
    unittest.main(verbosity=2)
