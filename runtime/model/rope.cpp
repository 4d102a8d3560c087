#include "runtime/model/rope.hpp"

#include <cmath>
#include <numbers>

namespace hive {

std::vector<float> rope_inv_freq(const RopeConfig& rope, int64_t head_dim) {
  // transformers works in f32: inv_freq = 1 / base ** (arange(0, dim, 2) /
  // dim), then the scaling below, each step rounded to f32 as torch rounds
  // it (its Python scalars become f32 operands). Computing in double and
  // rounding once differed from it by an ulp in about a third of the entries.
  std::vector<float> inv_freq(static_cast<size_t>(head_dim / 2));
  const auto base = static_cast<float>(rope.theta);
  for (size_t i = 0; i < inv_freq.size(); ++i) {
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(head_dim);
    // pow correctly rounded to f32 (glibc's powf may differ in the last bit).
    const auto power = static_cast<float>(std::pow(double{base}, double{exponent}));
    inv_freq[i] = 1.0f / power;
  }
  const auto factor = static_cast<float>(rope.factor);
  if (rope.type == "linear") {
    for (float& f : inv_freq) f /= factor;
  } else if (rope.type == "llama3") {
    // Long wavelengths are slowed by `factor`, short ones kept, and the band
    // between is interpolated smoothly (Llama 3.1's scheme).
    const auto old_len = static_cast<float>(rope.original_max_position_embeddings);
    const auto low = static_cast<float>(rope.low_freq_factor);
    const auto low_freq_wavelen = static_cast<float>(
        static_cast<double>(rope.original_max_position_embeddings) / rope.low_freq_factor);
    const auto high_freq_wavelen = static_cast<float>(
        static_cast<double>(rope.original_max_position_embeddings) / rope.high_freq_factor);
    const auto two_pi = static_cast<float>(2 * std::numbers::pi);
    const auto band = static_cast<float>(rope.high_freq_factor - rope.low_freq_factor);
    for (float& f : inv_freq) {
      const float wavelen = two_pi / f;
      const float scaled = wavelen > low_freq_wavelen ? f / factor : f;
      if (!(wavelen < high_freq_wavelen) && !(wavelen > low_freq_wavelen)) {
        const float smooth = (old_len / wavelen - low) / band;
        f = (1.0f - smooth) * scaled / factor + smooth * scaled;
      } else {
        f = scaled;
      }
    }
  }
  return inv_freq;
}

}  // namespace hive
