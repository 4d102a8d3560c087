"""Raw HTTP against hive serve: every error status with OpenAI's error body,
the API key, the bounded queue (429), and draining on SIGTERM (503)."""
import json
import os
import signal
import socket
import subprocess
import tempfile
import threading
import unittest

from server import HIVE, MODEL, Server, wait_until


def error_of(body):
    """The error object, after checking the shape every error has."""
    error = body["error"]
    for key in ("message", "type", "param", "code"):
        assert key in error, body
    return error


class HttpErrors(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server()

    @classmethod
    def tearDownClass(cls):
        if cls.server.stop() != 0:
            raise AssertionError("hive serve failed: " + "".join(cls.server.log))

    def expect(self, status, body, message, param=None, path="/v1/completions"):
        got, _, answer = self.server.post_json(path, body)
        self.assertEqual(got, status, answer)
        error = error_of(answer)
        self.assertIn(message, error["message"])
        self.assertEqual(error["param"], param)
        return error

    def test_the_start_names_the_matmul_mode_and_the_cpu_path(self):
        # The bundled model is bf16: the default mode computes in bf16
        # (the f32 matmul where the CPU has no vdpbf16ps, said so).
        start = "".join(self.server.log)
        self.assertRegex(start, r"hive serve: matmul precision bf16, CPU kernel path [a-z0-9_]+")

    def test_bad_requests_name_what_is_wrong(self):
        self.expect(400, "{not json", "the body: not valid JSON")
        # A key given twice: which one would a client mean? Neither is guessed.
        self.expect(400, '{"prompt": "x", "max_tokens": 2, "max_tokens": 9000}',
                    'the body: key "max_tokens" given twice in the object at the top level')
        self.expect(400, '{"messages": [{"role": "user", "content": "a", "role": "system"}]}',
                    'key "role" given twice in the object at /messages/0',
                    path="/v1/chat/completions")
        self.expect(400, "[1, 2]", "the body must be a JSON object")
        self.expect(400, {"prompt": 5}, "'prompt' must be a string", "prompt")
        self.expect(400, {"prompt": "x", "max_tokens": "ten"}, "'max_tokens' must be an integer",
                    "max_tokens")
        self.expect(400, {"prompt": "x", "temperature": -1}, "temperature must be >= 0",
                    "temperature")
        self.expect(400, {"prompt": "x", "max_tokens": 100000},
                    "exceed the model's context length of 512 tokens", "max_tokens")
        self.expect(400, {"prompt": "word " * 600}, "leaves no room in the model's context",
                    "prompt")
        self.expect(400, {"prompt": "x", "n": 1000}, "n must be in [1, 64] (got 1000)", "n")
        self.expect(400, {"prompt": [1, 99999]}, "prompt token id 99999 is out of range",
                    "prompt")
        self.expect(400, {"prompt": "x", "stop": ["a", "b", "c", "d", "e"]},
                    "'stop' takes at most 4 strings", "stop")
        self.expect(400, {"messages": "hi"}, "'messages' must be an array", "messages",
                    path="/v1/chat/completions")
        self.expect(400, {"prompt": "x", "stream_options": {"include_usage": True}},
                    "'stream_options' needs 'stream': true", "stream_options")
        error = self.expect(404, {"prompt": "x", "model": "gpt-4"}, "the model 'gpt-4' does not exist",
                            "model")
        self.assertEqual(error["code"], "model_not_found")

    def test_routes_methods_and_sizes(self):
        status, _, text = self.server.request("GET", "/nope")
        self.assertEqual(status, 404)
        self.assertEqual(error_of(json.loads(text))["code"], "not_found")
        status, headers, text = self.server.request("DELETE", "/v1/models")
        self.assertEqual(status, 405)
        self.assertEqual(headers["Allow"], "GET")
        status, _, text = self.server.request("POST", "/v1/completions", body=b"x" * (9 << 20),
                                              headers={"Content-Type": "application/json"})
        self.assertEqual(status, 413)
        self.assertIn("exceeds 8388608 bytes", error_of(json.loads(text))["message"])
        status, _, text = self.server.request("GET", "/health", headers={"X-Big": "y" * 20000})
        self.assertEqual(status, 431)

    def test_expect_100_continue_is_answered_before_the_body(self):
        body = json.dumps({"prompt": "Once", "max_tokens": 2}).encode()
        sock = socket.create_connection(("127.0.0.1", self.server.port), timeout=10)
        sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                     b"\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n" % len(body))
        self.assertTrue(sock.recv(1024).startswith(b"HTTP/1.1 100 Continue\r\n"))
        sock.sendall(body)
        answer = b""
        while b"\r\n\r\n" not in answer:
            answer += sock.recv(4096)
        sock.close()
        self.assertTrue(answer.startswith(b"HTTP/1.1 200 OK\r\n"), answer)

    def test_keep_alive_serves_several_requests_on_one_connection(self):
        conn = self.server.connection()
        for _ in range(3):
            conn.request("POST", "/v1/completions",
                         body=json.dumps({"prompt": "Once", "max_tokens": 2}),
                         headers={"Content-Type": "application/json"})
            response = conn.getresponse()
            self.assertEqual(response.status, 200)
            self.assertEqual(len(json.loads(response.read())["choices"]), 1)
        conn.close()

    def test_keep_alive_serves_streams_one_after_another(self):
        # The last events and the chunk that ends the response go out in one
        # write: each response must still end exactly there, or the next
        # request on the connection would read the rest of the previous one.
        conn = self.server.connection()
        for max_tokens in (1, 3, 5):
            conn.request("POST", "/v1/completions",
                         body=json.dumps({"prompt": "Once", "max_tokens": max_tokens,
                                          "ignore_eos": True, "stream": True,
                                          "stream_options": {"include_usage": True}}),
                         headers={"Content-Type": "application/json"})
            response = conn.getresponse()
            self.assertEqual(response.status, 200)
            self.assertEqual(response.getheader("Transfer-Encoding"), "chunked")
            events = [line[len("data: "):] for line in response.read().decode().split("\n\n")
                      if line]
            self.assertEqual(events[-1], "[DONE]")
            self.assertEqual(json.loads(events[-2])["usage"]["completion_tokens"], max_tokens)
        conn.close()


class ApiKeyAndLimits(unittest.TestCase):
    def test_the_api_key_guards_v1_only(self):
        server = Server("--api-key", "sesame")
        try:
            status, headers, body = server.post_json("/v1/completions", {"prompt": "x"})
            self.assertEqual(status, 401)
            self.assertEqual(error_of(body)["code"], "invalid_api_key")
            self.assertEqual(headers["WWW-Authenticate"], "Bearer")
            status, _, body = server.post_json("/v1/completions", {"prompt": "x", "max_tokens": 2},
                                               headers={"Authorization": "Bearer wrong"})
            self.assertEqual(status, 401)
            status, _, body = server.post_json("/v1/completions", {"prompt": "x", "max_tokens": 2},
                                               headers={"Authorization": "Bearer sesame"})
            self.assertEqual(status, 200, body)
            self.assertEqual(server.get("/health")[0], 200)  # not under /v1/
        finally:
            self.assertEqual(server.stop(), 0, "".join(server.log))

    def test_a_full_queue_answers_429_and_shutdown_drains_with_503(self):
        server = Server("--max-queued-requests", "1")
        try:
            # A long stream (16 samples of 500 tokens: seconds) holds the one place.
            long_conn = server.connection()
            long_conn.request("POST", "/v1/completions", body=json.dumps(
                {"prompt": "Once upon a time", "max_tokens": 500, "n": 16, "stream": True,
                 "ignore_eos": True}), headers={"Content-Type": "application/json"})
            stream = long_conn.getresponse()
            self.assertEqual(stream.status, 200)
            self.assertTrue(stream.readline().startswith(b"data: "))
            status, headers, body = server.post_json("/v1/completions", {"prompt": "x"})
            self.assertEqual(status, 429, body)
            self.assertEqual(headers["Retry-After"], "1")
            self.assertEqual(server.metric("hive:request_rejected_total"), 1)
            # A connection opened before the signal gets 503 for a new request.
            waiting = server.connection()
            waiting.request("GET", "/health")
            self.assertEqual(waiting.getresponse().read(), b'{"status":"ok"}')
            server.process.send_signal(signal.SIGTERM)
            # The drain has begun once the listening socket is closed.
            wait_until(server.refuses_connections, "no drain: hive serve kept listening after SIGTERM")
            waiting.request("POST", "/v1/completions", body=json.dumps({"prompt": "x"}),
                            headers={"Content-Type": "application/json"})
            refused = waiting.getresponse()
            self.assertEqual(refused.status, 503)
            self.assertIn("shutting down", json.loads(refused.read())["error"]["message"])
            # The stream in flight still finishes.
            rest = stream.read().decode()
            self.assertTrue(rest.rstrip().endswith("data: [DONE]"), rest[-200:])
            self.assertIn('"finish_reason":"length"', rest)
        finally:
            self.assertEqual(server.stop(), 0, "".join(server.log))



class Startup(unittest.TestCase):
    def test_dequantize_widens_a_gguf_at_load(self):
        # The bundled model as a Q8_0 GGUF (hive quantize keeps its
        # tokenizer): --dequantize serves its bf16 copies, whose logprobs
        # are not those of the blocks multiplied as stored.
        with tempfile.TemporaryDirectory() as tmp:
            gguf = os.path.join(tmp, "q8_0.gguf")
            subprocess.run([HIVE, "quantize", "--model", MODEL, "--type", "q8_0", "--out", gguf],
                           check=True, capture_output=True)
            logprobs = {}
            for flags in ((), ("--dequantize",)):
                server = Server(*flags, model=gguf)
                try:
                    status, _, body = server.post_json("/v1/completions", {
                        "prompt": "Once upon a time", "max_tokens": 4, "temperature": 0,
                        "logprobs": 1, "ignore_eos": True})
                    self.assertEqual(status, 200, body)
                    logprobs[flags] = body["choices"][0]["logprobs"]["token_logprobs"]
                finally:
                    self.assertEqual(server.stop(), 0, "".join(server.log))
            self.assertEqual(len(logprobs[()]), 4)
            self.assertEqual(len(logprobs[("--dequantize",)]), 4)
            self.assertNotEqual(logprobs[()], logprobs[("--dequantize",)])

    def test_a_device_found_or_asked_for_but_not_used_is_said(self):
        # --device auto on a machine whose CUDA device is absent (or lacks
        # the model's ops) runs the CPU and says why, before the URL line.
        server = Server(device="auto")
        try:
            start = "".join(server.log)
            self.assertIn("using the CPU backend", start)
            self.assertRegex(start, r"hive serve: matmul precision (bf16|f32)")
        finally:
            self.assertEqual(server.stop(), 0, "".join(server.log))


if __name__ == "__main__":
    unittest.main(verbosity=2)
