"""Starts `hive serve` on a free loopback port for the gateway tests, and
stops it (SIGTERM, then the exit status is checked)."""
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import time

HIVE = os.environ["HIVE_BINARY"]
SOURCE = os.environ["HIVE_SOURCE_DIR"]
MODEL = os.path.join(SOURCE, "models", "hive-moe-target")


def expected():
    """What transformers makes of the bundled model's prompts."""
    with open(os.path.join(SOURCE, "tests", "models", "data", "expected.json")) as f:
        return json.load(f)


def wait_until(condition, what, timeout=60):
    """Polls `condition` every 20 ms until it holds; fails saying `what` did
    not happen after `timeout` s (generous: 2 loaded cores, or a sanitizer)."""
    deadline = time.time() + timeout
    while not condition():
        if time.time() > deadline:
            raise AssertionError(f"{what} within {timeout} s")
        time.sleep(0.02)


class Server:
    def __init__(self, *flags, device="cpu", model=MODEL):
        self.process = subprocess.Popen(
            [HIVE, "serve", "--model", model, "--device", device, "--port", "0", *flags],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.log = []
        deadline = time.time() + 120
        while True:
            line = self.process.stderr.readline()
            if not line:
                raise RuntimeError("hive serve exited: " + "".join(self.log))
            self.log.append(line)
            match = re.search(r"hive serve: http://127\.0\.0\.1:(\d+)", line)
            if match:
                self.port = int(match.group(1))
                break
            if time.time() > deadline:
                raise RuntimeError("hive serve did not start: " + "".join(self.log))
        self.url = "http://127.0.0.1:%d" % self.port
        while self.get("/health")[0] != 200:
            if time.time() > deadline:
                raise RuntimeError("hive serve never became healthy")
            time.sleep(0.05)

    def connection(self):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)

    def request(self, method, path, body=None, headers=None):
        """(status, headers, body text) of one request on a new connection."""
        conn = self.connection()
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        text = response.read().decode()
        conn.close()
        return response.status, dict(response.getheaders()), text

    def get(self, path, headers=None):
        status, _, text = self.request("GET", path, headers=headers)
        return status, text

    def post_json(self, path, body, headers=None):
        all_headers = {"Content-Type": "application/json", **(headers or {})}
        status, response_headers, text = self.request(
            "POST", path, body=body if isinstance(body, (str, bytes)) else json.dumps(body),
            headers=all_headers)
        return status, response_headers, json.loads(text) if text else None

    def refuses_connections(self):
        """Whether the listening socket is closed: a drain (SIGTERM) has begun."""
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=10).close()
            return False
        except ConnectionRefusedError:
            return True

    def metrics(self):
        """The unlabelled-by-bucket samples of /metrics, by name."""
        status, text = self.get("/metrics")
        assert status == 200, text
        values = {}
        for line in text.splitlines():
            if line.startswith("#") or "_bucket{" in line:
                continue
            name_labels, value = line.rsplit(" ", 1)
            values[name_labels] = float(value)
        return values

    def metric(self, name, labels=""):
        key = '%s{model_name="hive-moe-target"%s}' % (name, labels)
        return self.metrics()[key]

    def stop(self):
        """SIGTERM drains the requests in flight; returns the exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            rest = self.process.communicate(timeout=120)[1]
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise
        self.log.append(rest)
        return self.process.returncode
