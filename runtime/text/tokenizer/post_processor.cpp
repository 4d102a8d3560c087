#include "runtime/text/tokenizer/post_processor.hpp"

#include "base/error.hpp"

namespace hive::tokenizer {
namespace {

// One element of a template: the input sequence, or fixed special-token ids.
struct TemplateItem {
  bool is_sequence = false;
  std::vector<int32_t> special_ids;
};

class TemplateProcessing final : public PostProcessor {
 public:
  explicit TemplateProcessing(std::vector<TemplateItem> items) : items_(std::move(items)) {}
  void process(std::vector<int32_t>& ids, bool add_special_tokens) const override {
    std::vector<int32_t> out;
    out.reserve(ids.size() + 4);
    for (const TemplateItem& item : items_) {
      if (item.is_sequence)
        out.insert(out.end(), ids.begin(), ids.end());
      else if (add_special_tokens)
        out.insert(out.end(), item.special_ids.begin(), item.special_ids.end());
    }
    ids = std::move(out);
  }

 private:
  std::vector<TemplateItem> items_;
};

class IdentityProcessor final : public PostProcessor {
 public:
  void process(std::vector<int32_t>&, bool) const override {}
};

class SequenceProcessor final : public PostProcessor {
 public:
  explicit SequenceProcessor(std::vector<std::unique_ptr<PostProcessor>> steps)
      : steps_(std::move(steps)) {}
  void process(std::vector<int32_t>& ids, bool add_special_tokens) const override {
    for (const auto& step : steps_) step->process(ids, add_special_tokens);
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> steps_;
};

std::vector<int32_t> special_token_ids(const Json& special_tokens, const std::string& name,
                                       const std::string& path) {
  const std::string entry_path = child_path(path, name);
  check(special_tokens.is_object() && special_tokens.contains(name), path, ": the template uses \"",
        name, "\", which special_tokens does not define");
  const Json& ids = required(special_tokens[name], "ids", entry_path);
  expect_array(ids, child_path(entry_path, "ids"));
  std::vector<int32_t> out;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (!(ids[i].is_number_integer() && ids[i].get<int64_t>() >= 0))
      fail(index_path(child_path(entry_path, "ids"), i), ": expected a token id (got ",
           describe(ids[i]), ")");
    out.push_back(static_cast<int32_t>(ids[i].get<int64_t>()));
  }
  return out;
}

std::unique_ptr<PostProcessor> make_template(const Json& spec, const std::string& path) {
  const std::string single_path = child_path(path, "single");
  const Json& single = required(spec, "single", path);
  expect_array(single, single_path);
  const Json empty = Json::object();
  const Json& special_tokens = spec.contains("special_tokens") ? spec["special_tokens"] : empty;
  std::vector<TemplateItem> items;
  for (std::size_t i = 0; i < single.size(); ++i) {
    const std::string item_path = index_path(single_path, i);
    const Json& item = single[i];
    if (item.is_object() && item.contains("Sequence")) {
      const std::string id =
          string_field(item["Sequence"], "id", child_path(item_path, "Sequence"));
      check(id == "A", item_path, ": a single-sequence template can only use sequence A (got \"",
            id, "\")");
      items.push_back(TemplateItem{true, {}});
    } else if (item.is_object() && item.contains("SpecialToken")) {
      const std::string id =
          string_field(item["SpecialToken"], "id", child_path(item_path, "SpecialToken"));
      items.push_back(TemplateItem{
          false, special_token_ids(special_tokens, id, child_path(path, "special_tokens"))});
    } else {
      fail(item_path, ": expected {\"Sequence\": ...} or {\"SpecialToken\": ...} (got ",
           describe(item), ")");
    }
  }
  return std::make_unique<TemplateProcessing>(std::move(items));
}

std::unique_ptr<PostProcessor> make_sequence(const Json& spec, const std::string& path) {
  const std::string list_path = child_path(path, "processors");
  const Json& list = required(spec, "processors", path);
  expect_array(list, list_path);
  std::vector<std::unique_ptr<PostProcessor>> steps;
  for (std::size_t i = 0; i < list.size(); ++i) {
    auto step = make_post_processor(list[i], index_path(list_path, i));
    if (step) steps.push_back(std::move(step));
  }
  return std::make_unique<SequenceProcessor>(std::move(steps));
}

}  // namespace

std::unique_ptr<PostProcessor> make_post_processor(const Json& spec, const std::string& path) {
  if (spec.is_null()) return nullptr;
  const std::string type = component_type(spec, path);
  if (type == "TemplateProcessing") return make_template(spec, path);
  if (type == "ByteLevel") return std::make_unique<IdentityProcessor>();
  if (type == "Sequence") return make_sequence(spec, path);
  unsupported_component("post-processor", type, path, "TemplateProcessing, ByteLevel, Sequence");
}

}  // namespace hive::tokenizer
