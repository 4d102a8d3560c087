"""hive serve against careless and hostile clients over real sockets: bytes
that are not UTF-8 in every place a string goes, nesting, numbers out of
range, fields Hive does not apply, broken HTTP framing, pipelining,
half-open and abruptly closed connections, too many connections. Whatever
they send ends their own request or connection with an error; afterwards
the server answers a reference request byte for byte as before, with no
request running, every KV block free and its file descriptors back to where
they started."""
import asyncio
import json
import os
import socket
import struct
import time
import unittest

import websockets

from server import Server

REFERENCE = {"prompt": "Once upon a time", "max_tokens": 12, "temperature": 0,
             "ignore_eos": True, "logprobs": 2}


def raw_post(port, path, body, timeout=60):
    """POST raw body bytes; (status, parsed JSON body)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    sock.sendall(b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Connection: close\r\nContent-Length: %d\r\n\r\n%s"
                 % (path.encode(), len(body), body))
    answer = read_all(sock)
    sock.close()
    head, _, rest = answer.partition(b"\r\n\r\n")
    status = int(head.split(b" ")[1])
    return status, json.loads(rest) if rest else None


def read_all(sock):
    answer = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        answer += chunk
    return answer


def open_fds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def without_ids(body):
    """A response with its id and creation time left out."""
    return {k: v for k, v in body.items() if k not in ("id", "created")}


class HostileClients(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server("--max-connections", "40")
        cls.reference = cls.answer_reference()
        cls.fds = open_fds(cls.server.process.pid)

    @classmethod
    def answer_reference(cls):
        status, _, body = cls.server.post_json("/v1/completions", REFERENCE)
        assert status == 200, body
        return json.dumps(without_ids(body), sort_keys=True)

    @classmethod
    def tearDownClass(cls):
        try:
            # The whole class's abuse left nothing behind.
            deadline = time.time() + 60
            while True:
                running = cls.server.metric("hive:num_requests_running")
                waiting = cls.server.metric("hive:num_requests_waiting")
                usage = cls.server.metric("hive:kv_cache_usage_perc")
                fds = open_fds(cls.server.process.pid)
                if running == 0 and waiting == 0 and usage == 0 and fds <= cls.fds:
                    break
                if time.time() > deadline:
                    raise AssertionError("after the hostile clients: %d running, %d waiting, KV "
                                         "usage %g, %d fds (%d at the start)"
                                         % (running, waiting, usage, fds, cls.fds))
                time.sleep(0.1)
            again = cls.answer_reference()
            if again != cls.reference:
                raise AssertionError("the reference answer changed:\n%s\n%s"
                                     % (cls.reference, again))
        finally:
            if cls.server.stop() != 0:
                raise AssertionError("hive serve failed: " + "".join(cls.server.log))

    def expect_error(self, body, status, message, param=None, path="/v1/completions"):
        got, answer = raw_post(self.server.port, path, body)
        self.assertEqual(got, status, answer)
        self.assertIn(message, answer["error"]["message"])
        self.assertEqual(answer["error"]["param"], param)
        return answer["error"]

    def test_bytes_that_are_not_utf8_are_a_400_naming_the_offset(self):
        chat = "/v1/chat/completions"
        cases = [
            (b'{"prompt": "a\x80b", "max_tokens": 2}', "/v1/completions"),
            (b'{"messages": [{"role": "user", "content": "a\xc3("}]}', chat),
            (b'{"prompt": "x", "stop": ["\xff"]}', "/v1/completions"),
            (b'{"prompt": "x", "\xe2\x82": 1}', "/v1/completions"),
            (b'{"prompt": "x", "model": "gpt\xed\xa0\x80"}', "/v1/completions"),  # a surrogate
            (b'{"prompt": "x", "stop": "\xf4\x90\x80\x80"}', "/v1/completions"),  # past U+10FFFF
        ]
        for body, path in cases:
            offset = next(i for i in range(len(body))
                          if not is_valid_at(body, i))
            error = self.expect_error(body, 400, "is not valid UTF-8", path=path)
            self.assertIn("at offset %d" % offset, error["message"], body)

    def test_nesting_is_limited_before_anything_walks_it(self):
        deep = b'{"prompt": ' + b"[" * 200000 + b"]" * 200000 + b"}"
        self.expect_error(deep, 400, "nesting deeper than 128 levels at byte 138")
        # 128 levels is still JSON the server reads (and refuses by type).
        ok_depth = b'{"prompt": "x", "stop": ' + b"[" * 127 + b"]" * 127 + b"}"
        self.expect_error(ok_depth, 400, "'stop' must be a string or an array of strings", "stop")

    def test_numbers_out_of_range_are_a_400(self):
        self.expect_error(b'{"prompt": "x", "max_tokens": 1e999}', 400, "number overflow")
        self.expect_error(b'{"prompt": "x", "max_tokens": 18446744073709551616}', 400,
                          "'max_tokens' must be an integer", "max_tokens")
        self.expect_error(b'{"prompt": "x", "seed": -1}', 400, "'seed' must be >= 0", "seed")
        self.expect_error(b'{"prompt": "x", "temperature": 1e300}', 400,
                          "temperature must be", "temperature")
        self.expect_error(b'{"prompt": "x", "logprobs": 21}', 400, "logprobs must be in",
                          "logprobs")

    def test_lists_a_client_controls_are_bounded(self):
        self.expect_error(json.dumps({"prompt": ["a"] * 257}).encode(), 400,
                          "'prompt' takes at most 256 prompts", "prompt")
        self.expect_error(json.dumps({"prompt": "x", "stop": "s" * 1025}).encode(), 400,
                          "a stop string takes at most 1024 bytes", "stop")
        self.expect_error(json.dumps({"messages": [{"role": "user", "content": "x"}] * 4097})
                          .encode(), 400, "'messages' takes at most 4096 messages", "messages",
                          path="/v1/chat/completions")

    def test_every_field_is_applied_refused_or_listed_as_ignored(self):
        chat = "/v1/chat/completions"
        hello = [{"role": "user", "content": "Hello"}]
        for field, value in (("response_format", {"type": "json_object"}),
                             ("tools", [{"type": "function", "function": {"name": "f"}}]),
                             ("tool_choice", "required"), ("functions", [{"name": "f"}]),
                             ("logit_bias", {"5": 10})):
            body = json.dumps({"messages": hello, field: value}).encode()
            self.expect_error(body, 400, "'%s'" % field, field, path=chat)
        self.expect_error(json.dumps({"prompt": "x", "frobnicate": 1}).encode(), 400,
                          "unknown field 'frobnicate'", "frobnicate")
        self.expect_error(json.dumps({"messages": hello, "echo": True}).encode(), 400,
                          "unknown field 'echo'", "echo", path=chat)
        self.expect_error(json.dumps({"prompt": "x", "echo": True}).encode(), 400,
                          "'echo' is not supported", "echo")
        self.expect_error(json.dumps({"messages": [{"role": "user", "content": "x", "mood": 1}]})
                          .encode(), 400, "unknown message field 'mood'", "messages", path=chat)
        # Listed as accepted and ignored: they change nothing.
        plain = {"messages": hello, "max_tokens": 6, "temperature": 0}
        status, _, base = self.server.post_json(chat, plain)
        self.assertEqual(status, 200, base)
        status, _, ignored = self.server.post_json(
            chat, {**plain, "user": "u1", "metadata": {"k": "v"}, "store": False,
                   "service_tier": "auto", "response_format": {"type": "text"},
                   "tool_choice": "none", "parallel_tool_calls": False,
                   "messages": [{"role": "user", "content": "Hello", "name": "ann"}]})
        self.assertEqual(status, 200, ignored)
        self.assertEqual(ignored["choices"], base["choices"])

    def test_roles_developer_is_system_and_unknown_ones_are_refused(self):
        chat = "/v1/chat/completions"
        turns = lambda role: {"messages": [{"role": role, "content": "Be brief."},
                                           {"role": "user", "content": "Hello"}],
                              "max_tokens": 6, "temperature": 0}
        status, _, system = self.server.post_json(chat, turns("system"))
        self.assertEqual(status, 200, system)
        status, _, developer = self.server.post_json(chat, turns("developer"))
        self.assertEqual(status, 200, developer)
        self.assertEqual(developer["choices"], system["choices"])
        self.expect_error(json.dumps(turns("wizard")).encode(), 400,
                          "messages[0] has the role 'wizard'", "messages", path=chat)

    def test_tokens_that_end_inside_a_character_are_written_as_u_fffd(self):
        # '“quoted” 日本 é' in the bundled tokenizer's ids, cut inside the
        # last character: the first generated token completes it, and the
        # logprobs' alternatives hold single bytes of other characters.
        ids = [683, 253, 495, 4019, 1041, 223, 165, 248, 101, 165, 253, 108, 223, 130]
        for stream in (False, True):
            status, _, body = self.server.request(
                "POST", "/v1/completions",
                body=json.dumps({"prompt": ids, "max_tokens": 24, "temperature": 0,
                                 "logprobs": 20, "stream": stream}),
                headers={"Content-Type": "application/json"})
            self.assertEqual(status, 200, body)
            if stream:
                events = [json.loads(line[len("data: "):]) for line in body.split("\n\n")
                          if line.startswith("data: {")]
                logprobs = [e["choices"][0]["logprobs"] for e in events
                            if e["choices"] and e["choices"][0]["logprobs"]]
            else:
                logprobs = [json.loads(body)["choices"][0]["logprobs"]]
            alternatives = [k for lp in logprobs for d in lp["top_logprobs"] for k in d]
            self.assertTrue(any("\ufffd" in k for k in alternatives), alternatives[:40])

    def test_broken_framing_ends_only_that_connection(self):
        for garbage in (b"\x00\xff\xfe garbage\r\n\r\n",
                        b"GET / HTTP/9.9\r\n\r\n",
                        b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
                        b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked"
                        b"\r\n\r\nzz\r\nabc\r\n",
                        b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n"
                        b'{"prompt"',  # then the client closes: a truncated body
                        b"GET /\xff\xfe HTTP/1.1\r\nHost: x\r\n\r\n",
                        b"\xc3\x28 /health HTTP/1.1\r\nHost: x\r\n\r\n"):
            sock = socket.create_connection(("127.0.0.1", self.server.port), timeout=30)
            sock.sendall(garbage)
            sock.shutdown(socket.SHUT_WR)
            answer = read_all(sock)
            sock.close()
            if answer:  # an answer, if any, is HTTP with a JSON error
                self.assertTrue(answer.startswith(b"HTTP/1.1 4"), answer[:200])
        self.assertEqual(self.server.get("/health")[0], 200)

    def test_pipelined_requests_are_answered_in_order(self):
        bodies = [json.dumps({"prompt": "Once", "max_tokens": k, "ignore_eos": True}).encode()
                  for k in (1, 2, 3)]
        wire = b"".join(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
                        b"application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(b), b)
                        for b in bodies)
        wire += b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        sock = socket.create_connection(("127.0.0.1", self.server.port), timeout=60)
        sock.sendall(wire)
        answer = read_all(sock)
        sock.close()
        tokens = [json.loads(part.split(b"\r\n\r\n", 1)[1].split(b"HTTP/1.1")[0])
                  ["usage"]["completion_tokens"]
                  for part in answer.split(b"HTTP/1.1 200 OK")[1:4]]
        self.assertEqual(tokens, [1, 2, 3])
        self.assertIn(b'{"status":"ok"}', answer)

    def test_half_open_and_abrupt_closes_mid_stream_free_their_requests(self):
        body = json.dumps({"prompt": "Once upon a time", "max_tokens": 300, "stream": True,
                           "ignore_eos": True}).encode()
        request = (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                   b"\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        for how in ("reset", "half-open", "close"):
            for _ in range(4):
                sock = socket.create_connection(("127.0.0.1", self.server.port), timeout=60)
                sock.sendall(request)
                received = b""
                while b"data: " not in received:
                    chunk = sock.recv(4096)
                    self.assertTrue(chunk, "closed before the first event: %r" % received)
                    received += chunk
                if how == "reset":  # RST instead of FIN
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                elif how == "half-open":
                    sock.shutdown(socket.SHUT_WR)
                    continue  # left open, never read: the server must not wait on it
                sock.close()
        self.wait_idle()

    def test_too_many_connections_are_refused_with_503(self):
        idle = [socket.create_connection(("127.0.0.1", self.server.port), timeout=30)
                for _ in range(60)]
        try:
            # The refusals are written as the connections are accepted: poll
            # for them (a loaded machine accepts late), never wait a fixed time.
            for sock in idle:
                sock.setblocking(False)
            refused = set()
            deadline = time.time() + 30
            while len(refused) < 20 and time.time() < deadline:
                for i, sock in enumerate(idle):
                    if i in refused:
                        continue
                    try:
                        if sock.recv(4096).startswith(b"HTTP/1.1 503"):
                            refused.add(i)
                    except BlockingIOError:
                        pass
                time.sleep(0.05)
            self.assertGreaterEqual(len(refused), 20)
        finally:
            for sock in idle:
                sock.close()
        deadline = time.time() + 30
        while self.server.get("/health")[0] != 200:
            self.assertLess(time.time(), deadline)
            time.sleep(0.1)
        self.assertGreaterEqual(self.server.metric("hive:connection_rejected_total"), 20)

    def test_websocket_messages_follow_the_same_rules(self):
        url = "ws://127.0.0.1:%d/v1/stream" % self.server.port

        async def session():
            async with websockets.connect(url, max_size=None) as ws:
                # A binary frame is not checked by the WebSocket layer.
                await ws.send(b'{"type": "start", "id": "a", "prompt": "a\x80"}')
                error = json.loads(await ws.recv())
                self.assertEqual(error["type"], "error")
                self.assertIn("not valid UTF-8", error["message"])
                await ws.send(b'{"type": "start", "id": "b", "prompt": ' + b"[" * 500 +
                              b"]" * 500 + b"}")
                error = json.loads(await ws.recv())
                self.assertIn("nesting deeper than 128", error["message"])
                await ws.send(json.dumps({"type": "start", "id": "c", "prompt": "x",
                                          "tools": [{"type": "function"}]}))
                error = json.loads(await ws.recv())
                self.assertIn("unknown field 'tools'", error["message"])
                # The connection still serves.
                await ws.send(json.dumps({"type": "start", "id": "d", "prompt": "Once",
                                          "max_tokens": 3, "ignore_eos": True}))
                while True:
                    message = json.loads(await ws.recv())
                    if message["type"] == "done":
                        break
                self.assertEqual(message["usage"]["completion_tokens"], 3)

        asyncio.run(asyncio.wait_for(session(), 120))

    def wait_idle(self):
        deadline = time.time() + 60
        while (self.server.metric("hive:num_requests_running") or
               self.server.metric("hive:num_requests_waiting") or
               self.server.metric("hive:kv_cache_usage_perc")):
            self.assertLess(time.time(), deadline, "requests of closed connections still run")
            time.sleep(0.1)


def is_valid_at(data, i):
    """Whether a valid UTF-8 sequence covers byte i (scanning from the start)."""
    pos = 0
    while pos < len(data):
        for length in (1, 2, 3, 4):
            try:
                data[pos:pos + length].decode("utf-8")
                break
            except UnicodeDecodeError:
                continue
        else:
            if pos == i:
                return False
            pos += 1
            continue
        if pos <= i < pos + length:
            return True
        pos += length
    return True


if __name__ == "__main__":
    unittest.main(verbosity=2)
