// Loading a BPE model from tokenizer.json. The merge loop and the word cache
// are in bpe_merge.cpp.
#include "runtime/text/tokenizer/bpe_model.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <limits>

#include "base/error.hpp"

namespace hive::tokenizer {
namespace {

constexpr std::string_view kMergeShape = R"(expected "a b" or ["a","b"])";

std::atomic<uint64_t> next_cache_owner{1};

// A merge as its two tokens, from either file format. Paths are built only
// for errors: a vocabulary has 150k merges.
std::pair<std::string, std::string> merge_pair(const Json& item, const std::string& path,
                                               std::size_t index) {
  if (item.is_string()) {
    const std::string& line = item.get_ref<const std::string&>();
    const std::size_t space = line.find(' ');
    if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos)
      fail(index_path(path, index), ": ", kMergeShape, " (got ", describe(item), ")");
    return {line.substr(0, space), line.substr(space + 1)};
  }
  if (!(item.is_array() && item.size() == 2 && item[0].is_string() && item[1].is_string()))
    fail(index_path(path, index), ": ", kMergeShape, " (got ", describe(item), ")");
  return {item[0].get<std::string>(), item[1].get<std::string>()};
}

}  // namespace

std::unique_ptr<BpeModel> BpeModel::from_json(const Json& spec, const std::string& path) {
  const std::string type = component_type(spec, path);
  if (type != "BPE") unsupported_component("model", type, path, "BPE");
  std::unique_ptr<BpeModel> model(new BpeModel());

  const auto dropout = spec.find("dropout");
  if (dropout != spec.end() && !dropout->is_null())
    if (!(dropout->is_number() && dropout->get<double>() == 0.0))
      fail(child_path(path, "dropout"),
           ": BPE dropout samples random merges; Hive encodes deterministically and needs null "
           "or 0 (got ",
           describe(*dropout), ")");

  const std::string vocab_path = child_path(path, "vocab");
  const Json& vocab = required(spec, "vocab", path);
  expect_object(vocab, vocab_path);
  model->vocab_.reserve(vocab.size());
  for (const auto& [token, id] : vocab.items()) {
    if (!(id.is_number_integer() && id.get<int64_t>() >= 0 &&
          id.get<int64_t>() < std::numeric_limits<int32_t>::max()))
      fail(vocab_path, "[\"", token, "\"]: expected a non-negative integer id (got ", describe(id),
           ")");
    model->vocab_.insert_or_assign(token, static_cast<int32_t>(id.get<int64_t>()));
  }
  for (const auto& [token, id] : model->vocab_) {
    if (static_cast<std::size_t>(id) >= model->id_to_token_.size())
      model->id_to_token_.resize(static_cast<std::size_t>(id) + 1, nullptr);
    const std::string*& owner = model->id_to_token_[static_cast<std::size_t>(id)];
    // Two tokens with one id would decode as whichever came last.
    if (owner != nullptr)
      fail(vocab_path, ": id ", id, " is given twice, to \"", std::min(*owner, token), "\" and \"",
           std::max(*owner, token), "\"");
    owner = &token;
  }

  model->unk_token_ = optional_string(spec, "unk_token", path);
  model->continuing_subword_prefix_ =
      optional_string(spec, "continuing_subword_prefix", path).value_or("");
  model->end_of_word_suffix_ = optional_string(spec, "end_of_word_suffix", path).value_or("");
  model->fuse_unk_ = bool_field(spec, "fuse_unk", path, false);
  model->byte_fallback_ = bool_field(spec, "byte_fallback", path, false);
  model->ignore_merges_ = bool_field(spec, "ignore_merges", path, false);
  model->read_merges(required(spec, "merges", path), child_path(path, "merges"));
  if (model->byte_fallback_) {
    model->byte_tokens_.resize(256);
    for (int byte = 0; byte < 256; ++byte) {
      char name[8];
      std::snprintf(name, sizeof(name), "<0x%02X>", byte);
      model->byte_tokens_[static_cast<std::size_t>(byte)] = model->token_to_id(name);
    }
  }
  model->cache_owner_ = next_cache_owner.fetch_add(1);
  return model;
}

void BpeModel::read_merges(const Json& merges, const std::string& path) {
  expect_array(merges, path);
  merges_.reserve(merges.size());
  const std::size_t prefix_length = continuing_subword_prefix_.size();
  int32_t rank = 0;
  for (std::size_t i = 0; i < merges.size(); ++i) {
    if (merges[i].is_string() && merges[i].get_ref<const std::string&>().starts_with("#version"))
      continue;
    const auto [left, right] = merge_pair(merges[i], path, i);
    const auto left_id = token_to_id(left), right_id = token_to_id(right);
    if (!left_id) fail(index_path(path, i), ": token \"", left, "\" is not in model.vocab");
    if (!right_id) fail(index_path(path, i), ": token \"", right, "\" is not in model.vocab");
    if (right.size() < prefix_length)
      fail(index_path(path, i), ": token \"", right,
           "\" is shorter than continuing_subword_prefix");
    const std::string merged = left + right.substr(prefix_length);
    const auto merged_id = token_to_id(merged);
    if (!merged_id)
      fail(index_path(path, i), ": merged token \"", merged, "\" is not in model.vocab");
    const uint64_t key = (static_cast<uint64_t>(*left_id) << 32) | static_cast<uint32_t>(*right_id);
    // A repeated pair keeps its last rank, as Hugging Face's map does.
    merges_.insert_or_assign(key, Merge{rank++, *merged_id});
  }
}

std::optional<int32_t> BpeModel::token_to_id(std::string_view token) const {
  const auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string* BpeModel::id_to_token(int32_t id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= id_to_token_.size()) return nullptr;
  return id_to_token_[static_cast<std::size_t>(id)];
}

const BpeModel::Merge* BpeModel::find_merge(int32_t left, int32_t right) const {
  const auto it = merges_.find((static_cast<uint64_t>(left) << 32) | static_cast<uint32_t>(right));
  return it == merges_.end() ? nullptr : &it->second;
}

}  // namespace hive::tokenizer
