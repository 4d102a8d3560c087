// model.safetensors.index.json of arbitrary bytes, read by the weight store
// as a sharded checkpoint is: the weight map, shard names, and each mapped
// tensor looked up in a real shard next to it.
#include <map>

#include "base/error.hpp"
#include "runtime/loader/safetensors.hpp"
#include "runtime/loader/weight_store.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {

// A directory with one small shard, model-00001.safetensors, holding "a"
// and "b"; the index under test is written next to it.
const hive::fuzz::ScratchDir& model_dir() {
  static const hive::fuzz::ScratchDir dir = [] {
    hive::fuzz::ScratchDir d;
    static float values[6] = {1, 2, 3, 4, 5, 6};
    std::map<std::string, hive::Tensor> tensors;
    tensors["a"] = hive::Tensor::view(values, hive::DType::f32, {2, 2});
    tensors["b"] = hive::Tensor::view(values + 4, hive::DType::f32, {2});
    hive::write_safetensors(d.path() / "model-00001.safetensors", tensors);
    return d;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto& dir = model_dir();
  dir.write("model.safetensors.index.json", hive::fuzz::text(data, size));
  try {
    const hive::WeightStore store(dir.path());
    volatile size_t bytes = store.total_bytes();
    (void)bytes;
  } catch (const hive::Error&) {
    // A clear error naming the index is the expected answer to a bad one.
  }
  return 0;
}
