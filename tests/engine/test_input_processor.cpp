// Every request rule in one place (runtime/engine/input_processor.hpp): the
// prompt as transformers tokenizes it, generation_config.json's defaults,
// max_tokens against the context and the KV pool, and errors that name the
// field. On the bundled target (context 512, max_new_tokens 128, greedy,
// end-of-sequence ids 0 and 2) and a fixture without a tokenizer.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "runtime/engine/input_processor.hpp"
#include "tests/common/model_dirs.hpp"

namespace hive {
namespace {

const std::filesystem::path kTarget = test::model_dir("bundled/hive-moe-target");

InputProcessor target(InputLimits limits = {}) {
  return InputProcessor(kTarget, load_model_config(kTarget), limits);
}

RequestInput ids_request(std::vector<int32_t> ids) {
  RequestInput input;
  input.id = "r";
  input.prompt = std::move(ids);
  return input;
}

// The field an input's error names, and that its message contains `text`.
std::string error_field(InputProcessor& processor, const RequestInput& input,
                        const std::string& text) {
  try {
    processor.process(input);
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    return e.field();
  }
  ADD_FAILURE() << "no error; expected one saying " << text;
  return "";
}

TEST(InputProcessor, TokenizesTextAndChatAsTransformersDoes) {
  std::ifstream in(std::string(HIVE_SOURCE_DIR) + "/tests/models/data/expected.json");
  const nlohmann::json want = nlohmann::json::parse(in);
  InputProcessor processor = target();
  RequestInput plain;
  plain.id = "plain";
  plain.prompt = want["plain_prompt"]["text"].get<std::string>();
  const ProcessedRequest p = processor.process(plain);
  EXPECT_EQ(p.request.prompt_token_ids, want["plain_prompt"]["ids"].get<std::vector<int32_t>>());
  EXPECT_TRUE(p.text_output);
  RequestInput chat;
  chat.id = "chat";
  chat.prompt = std::vector<ChatMessage>{{"user", want["chat_prompt"]["text"]}};
  const ProcessedRequest c = processor.process(chat);
  EXPECT_EQ(c.request.prompt_token_ids, want["chat_prompt"]["ids"].get<std::vector<int32_t>>());
  EXPECT_FALSE(processor.process(ids_request({5, 6})).text_output);
}

TEST(InputProcessor, FillsWhatTheRequestLeavesOutFromGenerationConfig) {
  InputProcessor processor = target({0, 16, 64, 64, 4});
  RequestInput input = ids_request({5, 6, 7});
  ProcessedRequest r = processor.process(input);
  EXPECT_EQ(r.request.stop.max_tokens, 128);  // max_new_tokens, not the caller's 16
  EXPECT_TRUE(r.max_tokens_is_default);
  EXPECT_EQ(r.request.sampling.temperature, 0.0f);  // do_sample: false
  EXPECT_EQ(r.text.stop_token_ids, (std::vector<int32_t>{0, 2}));  // end-of-sequence ids
  input.max_tokens = 7;
  input.temperature = 0.5;
  input.top_k = 3;
  input.top_p = 0.9;
  input.seed = 11;
  input.ignore_eos = true;
  input.stop_token_ids = {9};
  r = processor.process(input);
  EXPECT_EQ(r.request.stop.max_tokens, 7);
  EXPECT_FALSE(r.max_tokens_is_default);
  EXPECT_EQ(r.request.sampling.temperature, 0.5f);
  EXPECT_EQ(r.request.sampling.top_k, 3);
  EXPECT_EQ(r.request.sampling.top_p, 0.9f);
  EXPECT_EQ(r.request.sampling.seed, 11u);
  EXPECT_EQ(r.text.stop_token_ids, (std::vector<int32_t>{9}));  // the end-of-sequence ids ignored
}

// Penalties, min-p and logprobs: off when left out (the bundled
// generation_config.json sets none of them), taken as given otherwise;
// a config's min_p and repetition_penalty fill in what a request leaves out.
TEST(InputProcessor, PenaltiesMinPAndLogprobs) {
  InputProcessor processor = target();
  RequestInput input = ids_request({5, 6, 7});
  SamplingParams p = processor.process(input).request.sampling;
  EXPECT_EQ(p.min_p, 0.0f);
  EXPECT_EQ(p.presence_penalty, 0.0f);
  EXPECT_EQ(p.frequency_penalty, 0.0f);
  EXPECT_EQ(p.repetition_penalty, 1.0f);
  EXPECT_FALSE(p.logprobs);
  input.min_p = 0.25;
  input.presence_penalty = -1.5;
  input.frequency_penalty = 2;
  input.repetition_penalty = 1.25;
  input.logprobs = 0;
  p = processor.process(input).request.sampling;
  EXPECT_EQ(p.min_p, 0.25f);
  EXPECT_EQ(p.presence_penalty, -1.5f);
  EXPECT_EQ(p.frequency_penalty, 2.0f);
  EXPECT_EQ(p.repetition_penalty, 1.25f);
  EXPECT_EQ(p.logprobs, 0);

  ModelConfig config = load_model_config(kTarget);
  config.generation.min_p = 0.1f;
  config.generation.repetition_penalty = 1.1f;
  InputProcessor with_defaults(kTarget, config, {});
  p = with_defaults.process(ids_request({5})).request.sampling;
  EXPECT_EQ(p.min_p, 0.1f);
  EXPECT_EQ(p.repetition_penalty, 1.1f);
  p = with_defaults.process(input).request.sampling;  // the request's own win
  EXPECT_EQ(p.min_p, 0.25f);
  EXPECT_EQ(p.repetition_penalty, 1.25f);
}

TEST(InputProcessor, CutsADefaultMaxTokensToTheContextAndTheKVPool) {
  InputProcessor processor = target();
  std::vector<int32_t> long_prompt(500, 5);
  EXPECT_EQ(processor.process(ids_request(long_prompt)).request.stop.max_tokens, 12);  // 512 - 500
  processor.set_limits({100, 16, 16, 16, 1});  // a sequence's share of the KV pool: 100 tokens
  EXPECT_EQ(processor.process(ids_request({5, 6, 7})).request.stop.max_tokens, 97);
  RequestInput asked = ids_request({5, 6, 7});
  asked.max_tokens = 98;
  EXPECT_EQ(error_field(processor, asked, "prompt (3 tokens) + max_tokens (98) exceed the 100 "
                                          "tokens a sequence's share of the KV pool holds"),
            "max_tokens");
  asked.max_tokens = 97;
  EXPECT_EQ(processor.process(asked).request.stop.max_tokens, 97);
  EXPECT_EQ(error_field(processor, ids_request(std::vector<int32_t>(100, 5)),
                        "the prompt (100 tokens) leaves no room in a sequence's KV pool of 100"),
            "prompt");
}

TEST(InputProcessor, ErrorsNameTheField) {
  InputProcessor processor = target();
  RequestInput input = ids_request({5});
  EXPECT_EQ(error_field(processor, ids_request({5, 4096}), "prompt token id 4096 is out of range"),
            "prompt");
  EXPECT_EQ(error_field(processor, ids_request({}), "the prompt has no tokens"), "prompt");
  EXPECT_EQ(error_field(processor, ids_request(std::vector<int32_t>(512, 5)),
                        "the prompt (512 tokens) leaves no room in the model's context of 512"),
            "prompt");
  input.max_tokens = 0;
  EXPECT_EQ(error_field(processor, input, "max_tokens must be >= 1 (got 0)"), "max_tokens");
  input.max_tokens = 600;
  EXPECT_EQ(error_field(processor, input, "prompt (1 tokens) + max_tokens (600) exceed the "
                                          "model's context length of 512 tokens"),
            "max_tokens");
  input.max_tokens.reset();
  input.temperature = 1e308;  // said as it was given, not as the float it overflows
  EXPECT_EQ(error_field(processor, input, "(got 1e+308)"), "temperature");
  input.temperature = -1;
  EXPECT_EQ(error_field(processor, input, "temperature must be >= 0"), "temperature");
  input.temperature.reset();
  input.top_p = 0;
  EXPECT_EQ(error_field(processor, input, "top_p must be in (0, 1] (got 0)"), "top_p");
  input.top_p.reset();
  input.top_k = -1;
  EXPECT_EQ(error_field(processor, input, "top_k must be in [0, "), "top_k");
  input.top_k.reset();
  input.min_p = 1.5;
  EXPECT_EQ(error_field(processor, input, "min_p must be in [0, 1] (got 1.5)"), "min_p");
  input.min_p.reset();
  input.presence_penalty = 2.5;
  EXPECT_EQ(error_field(processor, input, "presence_penalty must be in [-2, 2] (got 2.5)"),
            "presence_penalty");
  input.presence_penalty.reset();
  input.frequency_penalty = -2.5;
  EXPECT_EQ(error_field(processor, input, "frequency_penalty must be in [-2, 2] (got -2.5)"),
            "frequency_penalty");
  input.frequency_penalty.reset();
  input.repetition_penalty = 0;
  EXPECT_EQ(error_field(processor, input, "repetition_penalty must be > 0"), "repetition_penalty");
  input.repetition_penalty = 1e300;
  EXPECT_EQ(error_field(processor, input, "(got 1e+300)"), "repetition_penalty");
  input.repetition_penalty.reset();
  input.logprobs = 21;
  EXPECT_EQ(error_field(processor, input, "logprobs must be in [0, 20] (got 21)"), "logprobs");
  input.logprobs = -1;
  EXPECT_EQ(error_field(processor, input, "logprobs must be in [0, 20] (got -1)"), "logprobs");
  input.logprobs.reset();
  input.n = 2;  // max_n is 1 by default
  EXPECT_EQ(error_field(processor, input, "n must be in [1, 1] (got 2)"), "n");
  input.n = 1;
  input.stop = {"x"};
  EXPECT_EQ(error_field(processor, input, "stop strings need text output"), "stop");
  input.text_output = true;  // an id prompt whose output is text takes them
  EXPECT_EQ(processor.process(input).text.stop, (std::vector<std::string>{"x"}));
  input.text_output = false;
  input.prompt = std::string("hello");
  input.stop = {""};
  EXPECT_EQ(error_field(processor, input, "stop strings must not be empty"), "stop");
  input.stop = {};
  input.prompt = std::vector<ChatMessage>{};
  EXPECT_EQ(error_field(processor, input, "a chat needs at least one message"), "messages");
  input.id = "";
  EXPECT_EQ(error_field(processor, input, "a request needs an id"), "id");
}

// The roles are OpenAI's: developer is its newer name for system, and
// renders as system does; any other role is refused by its index.
TEST(InputProcessor, ChatRolesAreSystemDeveloperUserAndAssistant) {
  InputProcessor processor = target();
  RequestInput chat;
  chat.id = "chat";
  chat.prompt = std::vector<ChatMessage>{{"system", "Be brief."}, {"user", "hi"}};
  const std::vector<int32_t> system = processor.process(chat).request.prompt_token_ids;
  chat.prompt = std::vector<ChatMessage>{{"developer", "Be brief."}, {"user", "hi"}};
  EXPECT_EQ(processor.process(chat).request.prompt_token_ids, system);
  chat.prompt = std::vector<ChatMessage>{{"user", "hi"}, {"tool", "42"}};
  EXPECT_EQ(error_field(processor, chat, "messages[1] has the role 'tool'"), "messages");
}

// A template that refuses a conversation (raise_exception) is the client's
// to mend: an InputError on messages, with the template's words.
TEST(InputProcessor, AChatTemplatesRefusalIsAnInputError) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("hive_refusing_template_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  for (const char* file : {"config.json", "tokenizer.json"})
    std::filesystem::copy_file(kTarget / file, dir / file,
                               std::filesystem::copy_options::overwrite_existing);
  nlohmann::json tokenizer_config;
  std::ifstream(kTarget / "tokenizer_config.json") >> tokenizer_config;
  tokenizer_config["chat_template"] =
      "{% if messages[0]['role'] == 'assistant' %}{{ raise_exception('Conversations start "
      "with the user') }}{% endif %}{% for m in messages %}{{ m['content'] }}{% endfor %}";
  std::ofstream(dir / "tokenizer_config.json") << tokenizer_config.dump();
  InputProcessor processor(dir, load_model_config(dir), {});
  RequestInput chat;
  chat.id = "chat";
  chat.prompt = std::vector<ChatMessage>{{"assistant", "Hello"}};
  EXPECT_EQ(error_field(processor, chat,
                        "the model's chat template refuses these messages: Conversations start "
                        "with the user"),
            "messages");
  chat.prompt = std::vector<ChatMessage>{{"user", "Hello"}};
  EXPECT_NO_THROW(processor.process(chat));
  std::filesystem::remove_all(dir);
}

// A checkpoint with no tokenizer files still takes id prompts; a chat there
// says what is missing.
TEST(InputProcessor, AChatNeedsTheModelsTemplate) {
  const std::filesystem::path fixture = test::model_dir("qwen3_moe");
  InputProcessor processor(fixture, load_model_config(fixture), {});
  EXPECT_EQ(processor.process(ids_request({1, 2})).request.prompt_token_ids,
            (std::vector<int32_t>{1, 2}));
  RequestInput chat = ids_request({});
  chat.prompt = std::vector<ChatMessage>{{"user", "hi"}};
  EXPECT_EQ(error_field(processor, chat, "tokenizer_config.json does not exist"), "messages");
}

}  // namespace
}  // namespace hive
