#include "runtime/model/rope.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace hive {

namespace {

// base^(2i / head_dim) in f32, as torch computes it: the exponent rounded to
// f32, the power correctly rounded (glibc's powf may differ in the last bit).
float rope_power(double theta, size_t i, int64_t head_dim) {
  const float exponent = static_cast<float>(2 * i) / static_cast<float>(head_dim);
  return static_cast<float>(std::pow(double{static_cast<float>(theta)}, double{exponent}));
}

// YaRN: frequencies that turn fewer than beta_slow times over the original
// context are interpolated (divided by factor), those that turn more than
// beta_fast times kept, with a linear ramp between (transformers'
// _compute_yarn_parameters, truncate=True). `inv_freq` holds the plain
// frequencies on entry.
void yarn_blend(const RopeConfig& rope, int64_t head_dim, std::vector<float>& inv_freq) {
  const double dim = static_cast<double>(head_dim);
  const double base = rope.theta;
  const auto correction_dim = [&](double rotations) {
    return dim *
           std::log(static_cast<double>(rope.original_max_position_embeddings) /
                    (rotations * 2 * std::numbers::pi)) /
           (2 * std::log(base));
  };
  const double low = std::max(std::floor(correction_dim(rope.beta_fast)), 0.0);
  double high = std::min(std::ceil(correction_dim(rope.beta_slow)), dim - 1);
  if (low == high) high += 0.001;  // as transformers: no division by zero
  const auto factor = static_cast<float>(rope.factor);
  for (size_t i = 0; i < inv_freq.size(); ++i) {
    const float extrapolation = inv_freq[i];
    const float interpolation = 1.0f / (factor * rope_power(rope.theta, i, head_dim));
    const float ramp = std::clamp(
        (static_cast<float>(i) - static_cast<float>(low)) / static_cast<float>(high - low), 0.0f,
        1.0f);
    const float keep = 1.0f - ramp;
    inv_freq[i] = interpolation * (1.0f - keep) + extrapolation * keep;
  }
}

}  // namespace

std::vector<float> rope_inv_freq(const RopeConfig& rope, int64_t head_dim) {
  // transformers works in f32: inv_freq = 1 / base ** (arange(0, dim, 2) /
  // dim), then the scaling below, each step rounded to f32 as torch rounds
  // it (its Python scalars become f32 operands). Computing in double and
  // rounding once differed from it by an ulp in about a third of the entries.
  std::vector<float> inv_freq(static_cast<size_t>(head_dim / 2));
  for (size_t i = 0; i < inv_freq.size(); ++i)
    inv_freq[i] = 1.0f / rope_power(rope.theta, i, head_dim);
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
  if (rope.type == "yarn") yarn_blend(rope, head_dim, inv_freq);
  // ggml divides each frequency by its factor, rounded to f32 like the rest.
  for (size_t i = 0; i < rope.freq_factors.size() && i < inv_freq.size(); ++i)
    inv_freq[i] /= rope.freq_factors[i];
  return inv_freq;
}

double yarn_mscale(double factor, double mscale) {
  return factor <= 1 ? 1.0 : 0.1 * mscale * std::log(factor) + 1.0;
}

double rope_attention_factor(const RopeConfig& rope) {
  if (rope.type != "yarn") return 1.0;
  if (rope.mscale != 0 && rope.mscale_all_dim != 0)
    return yarn_mscale(rope.factor, rope.mscale) / yarn_mscale(rope.factor, rope.mscale_all_dim);
  return yarn_mscale(rope.factor, 1.0);
}

}  // namespace hive
