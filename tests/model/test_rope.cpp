// Rotary inverse frequencies against transformers' (tests/data/rope_inv_freq.json,
// from tools/make_rope_fixture.py): default, linear and llama3 scaling.
// transformers rounds every step to f32, and so must Hive: computing in
// double and rounding once differed by an ulp in about a third of the
// entries, which grows into an angle error of milliradians at long context.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "runtime/model/rope.hpp"

namespace hive {
namespace {

// Distance in representable floats (both positive).
int64_t ulps(float a, float b) {
  return std::llabs(static_cast<int64_t>(std::bit_cast<int32_t>(a)) -
                    static_cast<int64_t>(std::bit_cast<int32_t>(b)));
}

TEST(Rope, InverseFrequenciesMatchTransformers) {
  const auto path = std::filesystem::path(HIVE_TEST_DATA) / "rope_inv_freq.json";
  const auto fixture = nlohmann::json::parse(std::ifstream(path));
  ASSERT_GE(fixture["cases"].size(), 7u);
  for (const auto& c : fixture["cases"]) {
    RopeConfig rope;
    rope.type = c["type"].get<std::string>();
    rope.theta = c["theta"].get<double>();
    rope.factor = c.value("factor", 1.0);
    rope.low_freq_factor = c.value("low_freq_factor", 1.0);
    rope.high_freq_factor = c.value("high_freq_factor", 4.0);
    rope.original_max_position_embeddings = c.value("original_max_position_embeddings", 8192);
    const auto head_dim = c["head_dim"].get<int64_t>();
    SCOPED_TRACE(testing::Message()
                 << rope.type << " theta " << rope.theta << " head_dim " << head_dim);
    const std::vector<float> got = rope_inv_freq(rope, head_dim);
    const auto want = c["inv_freq"].get<std::vector<double>>();
    ASSERT_EQ(got.size(), want.size());
    size_t exact = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      const auto expected = static_cast<float>(want[i]);
      // torch's vectorised pow is not always correctly rounded: an ulp apart
      // is allowed, rarely.
      EXPECT_LE(ulps(got[i], expected), 1) << "entry " << i;
      exact += got[i] == expected;
    }
    EXPECT_GE(exact + 2, got.size()) << exact << " of " << got.size() << " equal";
  }
}

}  // namespace
}  // namespace hive
