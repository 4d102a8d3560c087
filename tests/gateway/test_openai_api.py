"""hive serve through the official openai client: completions and chat,
streamed and not, n, stop, seed, usage; then /v1/models, /health,
/version and /metrics."""
import math
import unittest

import openai

from server import Server, expected


class OpenAIApi(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server()
        cls.client = openai.OpenAI(base_url=cls.server.url + "/v1", api_key="unused",
                                   max_retries=0, timeout=120)
        cls.expected = expected()
        cls.model = "hive-moe-target"

    @classmethod
    def tearDownClass(cls):
        if cls.server.stop() != 0:
            raise AssertionError("hive serve failed: " + "".join(cls.server.log))

    def greedy(self, **extra):
        return self.client.completions.create(
            model=self.model, prompt="Once upon a time", max_tokens=24, temperature=0,
            extra_body={"ignore_eos": True}, **extra)

    def test_completion_is_the_greedy_text_transformers_gives(self):
        response = self.greedy()
        want = self.expected["plain_prompt"]
        self.assertEqual(response.object, "text_completion")
        self.assertTrue(response.id.startswith("cmpl-"))
        self.assertEqual(response.model, self.model)
        self.assertEqual(len(response.choices), 1)
        self.assertEqual(response.choices[0].text, want["greedy_text"])
        self.assertEqual(response.choices[0].finish_reason, "length")
        self.assertEqual(response.usage.prompt_tokens, len(want["ids"]))
        self.assertEqual(response.usage.completion_tokens, 24)
        self.assertEqual(response.usage.total_tokens, len(want["ids"]) + 24)

    def test_token_id_prompts_and_several_prompts(self):
        ids = self.expected["plain_prompt"]["ids"]
        response = self.client.completions.create(
            model=self.model, prompt=[ids, "Once upon a time"], max_tokens=24, temperature=0,
            extra_body={"ignore_eos": True})
        self.assertEqual([c.index for c in response.choices], [0, 1])
        for choice in response.choices:
            self.assertEqual(choice.text, self.expected["plain_prompt"]["greedy_text"])
        self.assertEqual(response.usage.prompt_tokens, 2 * len(ids))

    def test_streamed_completion_adds_up_to_the_whole_text(self):
        stream = self.greedy(stream=True, stream_options={"include_usage": True})
        text, reasons, usage = "", [], None
        for chunk in stream:
            self.assertEqual(chunk.object, "text_completion")
            if chunk.usage:
                usage = chunk.usage
                self.assertEqual(chunk.choices, [])
                continue
            text += chunk.choices[0].text
            if chunk.choices[0].finish_reason:
                reasons.append(chunk.choices[0].finish_reason)
        self.assertEqual(text, self.expected["plain_prompt"]["greedy_text"])
        self.assertEqual(reasons, ["length"])
        self.assertEqual(usage.completion_tokens, 24)

    def test_chat_through_the_models_template(self):
        want = self.expected["chat_prompt"]
        messages = [{"role": "user", "content": want["text"]}]
        response = self.client.chat.completions.create(
            model=self.model, messages=messages, max_completion_tokens=12, temperature=0)
        self.assertEqual(response.object, "chat.completion")
        self.assertEqual(response.choices[0].message.role, "assistant")
        self.assertEqual(response.usage.prompt_tokens, len(want["ids"]))
        self.assertGreater(len(response.choices[0].message.content), 0)
        streamed, roles = "", []
        for chunk in self.client.chat.completions.create(
                model=self.model, messages=messages, max_completion_tokens=12, temperature=0,
                stream=True):
            self.assertEqual(chunk.object, "chat.completion.chunk")
            delta = chunk.choices[0].delta
            if delta.role:
                roles.append(delta.role)
            streamed += delta.content or ""
        self.assertEqual(roles, ["assistant"])
        self.assertEqual(streamed, response.choices[0].message.content)

    def test_multi_turn_chat_with_a_system_message(self):
        messages = [{"role": "system", "content": "You speak like a fortune cookie."},
                    {"role": "user", "content": "Hello."},
                    {"role": "assistant", "content": "Good fortune comes."},
                    {"role": "user", "content": "Tell me more."}]
        one = self.client.chat.completions.create(model=self.model, messages=messages,
                                                  max_tokens=8, temperature=0)
        short = self.client.chat.completions.create(model=self.model, messages=messages[1:2],
                                                    max_tokens=8, temperature=0)
        self.assertGreater(one.usage.prompt_tokens, short.usage.prompt_tokens + 10)

    def test_n_samples_and_seeds(self):
        def sample(seed, n=2):
            return self.client.completions.create(
                model=self.model, prompt="The wise man", max_tokens=16, temperature=1.0,
                n=n, seed=seed, extra_body={"ignore_eos": True})
        first, again, other = sample(7), sample(7), sample(8)
        self.assertEqual([c.index for c in first.choices], [0, 1])
        self.assertEqual([c.text for c in first.choices], [c.text for c in again.choices])
        self.assertNotEqual(first.choices[0].text, first.choices[1].text)
        self.assertNotEqual([c.text for c in first.choices], [c.text for c in other.choices])
        self.assertEqual(first.usage.completion_tokens, 32)

    def test_stop_strings_end_the_text(self):
        greedy = self.expected["plain_prompt"]["greedy_text"]
        response = self.greedy(stop=["LORD", "not in it"])
        self.assertEqual(response.choices[0].text, greedy[:greedy.find("LORD")])
        self.assertEqual(response.choices[0].finish_reason, "stop")
        self.assertLess(response.usage.completion_tokens, 24)
        streamed = "".join(c.choices[0].text for c in self.greedy(stop="LORD", stream=True))
        self.assertEqual(streamed, response.choices[0].text)

    def test_logprobs_are_the_models_raw_ones(self):
        response = self.greedy(logprobs=3)
        lp = response.choices[0].logprobs
        self.assertEqual(len(lp.tokens), 24)
        self.assertEqual("".join(lp.tokens), self.expected["plain_prompt"]["greedy_text"])
        for token, logprob, top in zip(lp.tokens, lp.token_logprobs, lp.top_logprobs):
            self.assertEqual(len(top), 3)
            self.assertLessEqual(logprob, 0.0)
            # Greedy: the pick is the most likely token.
            self.assertAlmostEqual(max(top.values()), logprob, places=5)
            self.assertLessEqual(sum(math.exp(v) for v in top.values()), 1.0 + 1e-5)
        self.assertEqual(lp.text_offset[0], 0)
        streamed = []
        for chunk in self.greedy(logprobs=3, stream=True):
            if chunk.choices and chunk.choices[0].logprobs:
                streamed += chunk.choices[0].logprobs.token_logprobs
        self.assertEqual(len(streamed), 24)
        for a, b in zip(streamed, lp.token_logprobs):
            self.assertAlmostEqual(a, b, places=5)
        chat = self.client.chat.completions.create(
            model=self.model, messages=[{"role": "user", "content": "Hi"}], max_tokens=5,
            temperature=0, logprobs=True, top_logprobs=2)
        content = chat.choices[0].logprobs.content
        self.assertEqual(len(content), chat.usage.completion_tokens)
        self.assertEqual(len(content[0].top_logprobs), 2)
        self.assertAlmostEqual(content[0].top_logprobs[0].logprob, content[0].logprob, places=5)

    def test_penalties_and_min_p_reach_the_sampler(self):
        plain = self.greedy().choices[0].text
        penalised = self.greedy(frequency_penalty=2.0, presence_penalty=1.0).choices[0].text
        self.assertNotEqual(plain, penalised)  # the greedy text repeats "the LORD"
        self.assertEqual(penalised, self.greedy(frequency_penalty=2.0, presence_penalty=1.0)
                         .choices[0].text)
        repetition = self.client.completions.create(
            model=self.model, prompt="Once upon a time", max_tokens=24, temperature=0,
            extra_body={"ignore_eos": True, "repetition_penalty": 1.5})
        self.assertNotEqual(repetition.choices[0].text, plain)
        # min_p 1 keeps only the most likely token: a hot sample becomes greedy.
        hot = self.client.completions.create(
            model=self.model, prompt="Once upon a time", max_tokens=24, temperature=2.0,
            seed=3, extra_body={"ignore_eos": True, "min_p": 1.0})
        self.assertEqual(hot.choices[0].text, plain)
        with self.assertRaises(openai.BadRequestError) as caught:
            self.greedy(frequency_penalty=3.0)
        self.assertIn("frequency_penalty", str(caught.exception))

    def test_unsupported_fields_are_a_clear_error(self):
        with self.assertRaises(openai.BadRequestError) as caught:
            self.client.completions.create(model=self.model, prompt="x", max_tokens=2, echo=True)
        self.assertIn("'echo' is not supported", str(caught.exception))

    def test_models_health_version_metrics(self):
        models = self.client.models.list()
        self.assertEqual([m.id for m in models.data], [self.model])
        self.assertEqual(self.server.get("/health"), (200, '{"status":"ok"}'))
        status, text = self.server.get("/version")
        self.assertEqual(status, 200)
        self.assertIn('"version"', text)
        before = self.server.metric("hive:generation_tokens_total")
        self.greedy()
        metrics = self.server.metrics()
        label = '{model_name="hive-moe-target"}'
        self.assertEqual(metrics["hive:generation_tokens_total" + label], before + 24)
        self.assertGreater(metrics["hive:time_to_first_token_seconds_count" + label], 0)
        self.assertGreater(metrics["hive:inter_token_latency_seconds_count" + label], 0)
        self.assertIn("hive:kv_cache_usage_perc" + label, metrics)
        self.assertIn("hive:prefix_cache_queries_total" + label, metrics)
        self.assertIn('hive:expert_tokens_total{model_name="hive-moe-target",layer="0",expert="0"}',
                      metrics)


if __name__ == "__main__":
    unittest.main(verbosity=2)
