#include "runtime/rope.hpp"

#include <cmath>
#include <numbers>

namespace hive {

std::vector<float> rope_inv_freq(const RopeConfig& rope, int64_t head_dim) {
  std::vector<float> inv_freq(static_cast<size_t>(head_dim / 2));
  for (size_t i = 0; i < inv_freq.size(); ++i) {
    // transformers: 1 / base ** (arange(0, dim, 2).float() / dim), in f32.
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(head_dim);
    inv_freq[i] = static_cast<float>(1.0 / std::pow(rope.theta, static_cast<double>(exponent)));
  }
  if (rope.type == "linear") {
    for (float& f : inv_freq) f = static_cast<float>(f / rope.factor);
  } else if (rope.type == "llama3") {
    // Long wavelengths are slowed by `factor`, short ones kept, and the band
    // between is interpolated smoothly (Llama 3.1's scheme).
    const double old_len = static_cast<double>(rope.original_max_position_embeddings);
    const double low_freq_wavelen = old_len / rope.low_freq_factor;
    const double high_freq_wavelen = old_len / rope.high_freq_factor;
    for (float& f : inv_freq) {
      const double wavelen = 2.0 * std::numbers::pi / f;
      if (wavelen > low_freq_wavelen) {
        f = static_cast<float>(f / rope.factor);
      } else if (wavelen >= high_freq_wavelen) {
        const double smooth = (old_len / wavelen - rope.low_freq_factor) /
                              (rope.high_freq_factor - rope.low_freq_factor);
        f = static_cast<float>((1.0 - smooth) * f / rope.factor + smooth * f);
      }
    }
  }
  return inv_freq;
}

}  // namespace hive
