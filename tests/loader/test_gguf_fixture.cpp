// The GGUF reader and the reference dequantization against gguf-py, bit for
// bit: tests/data/gguf/fixture.gguf and gguf-py's dequantization of each of
// its tensors (tools/make_gguf_fixture.py writes both).
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <vector>

#include "base/error.hpp"
#include "kernels/quant/dequantize.hpp"
#include "runtime/loader/gguf_file.hpp"

namespace hive {
namespace {

namespace fs = std::filesystem;

const fs::path kFixtureDir = fs::path(HIVE_TEST_DATA) / "gguf";

std::vector<float> read_f32_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  check(in.good(), path.string(), ": cannot open");
  std::vector<float> values(static_cast<size_t>(in.tellg()) / sizeof(float));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(values.data()),
          static_cast<std::streamsize>(values.size() * sizeof(float)));
  return values;
}

class GgufFixtureTest : public ::testing::Test {
 protected:
  GgufFile file{kFixtureDir / "fixture.gguf"};
};

TEST_F(GgufFixtureTest, HeaderAndTensorInfos) {
  EXPECT_EQ(file.version(), 3u);
  EXPECT_EQ(file.alignment(), 64u);
  struct Expected {
    const char* name;
    GgmlType type;
    std::vector<int64_t> dims;
  };
  const std::vector<Expected> expected = {
      {"q8_0", GgmlType::q8_0, {64, 3}},  {"q4_0", GgmlType::q4_0, {64, 2}},
      {"q4_k", GgmlType::q4_k, {512, 2}}, {"q5_k", GgmlType::q5_k, {256, 3}},
      {"q6_k", GgmlType::q6_k, {256, 2}}, {"f32", GgmlType::f32, {4, 3, 2}},
      {"f16", GgmlType::f16, {8, 4}},     {"bf16", GgmlType::bf16, {8, 2}},
      {"q5_0", GgmlType::q5_0, {64, 3}},  {"q5_1", GgmlType::q5_1, {96, 2}},
  };
  ASSERT_EQ(file.tensors().size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    const GgufTensor& tensor = file.tensors()[i];
    SCOPED_TRACE(tensor.name);
    EXPECT_EQ(tensor.name, expected[i].name);
    EXPECT_EQ(tensor.type, expected[i].type);
    EXPECT_EQ(tensor.dims, expected[i].dims);
    EXPECT_EQ(tensor.offset % 64, 0u);
    const GgmlTypeInfo info = ggml_type_info(tensor.type);
    EXPECT_EQ(tensor.nbytes, tensor.numel / info.block_size * info.block_bytes);
    EXPECT_EQ(file.find_tensor(expected[i].name), &tensor);
  }
  EXPECT_EQ(file.find_tensor("missing"), nullptr);
}

// Every tensor, dequantized by kernels/quant, equals gguf-py's output bit for
// bit (memcmp: NaN payloads, signs of zero and subnormals included).
TEST_F(GgufFixtureTest, DequantizationEqualsGgufPyBitForBit) {
  for (const GgufTensor& tensor : file.tensors()) {
    SCOPED_TRACE(tensor.name);
    const std::vector<float> expected = read_f32_file(kFixtureDir / (tensor.name + ".f32"));
    ASSERT_EQ(static_cast<int64_t>(expected.size()), tensor.numel);
    std::vector<float> actual(expected.size(), std::numeric_limits<float>::quiet_NaN());
    dequantize_to_f32(tensor.type, tensor.data, tensor.numel, actual.data());
    EXPECT_EQ(std::memcmp(actual.data(), expected.data(), expected.size() * sizeof(float)), 0);
    for (size_t i = 0; i < expected.size(); ++i)
      if (std::bit_cast<uint32_t>(actual[i]) != std::bit_cast<uint32_t>(expected[i])) {
        ADD_FAILURE() << "first difference at element " << i << ": bits 0x" << std::hex
                      << std::bit_cast<uint32_t>(actual[i]) << " (" << actual[i] << "), gguf-py 0x"
                      << std::bit_cast<uint32_t>(expected[i]) << " (" << expected[i] << ")";
        break;
      }
  }
}

TEST_F(GgufFixtureTest, ScalarMetadata) {
  EXPECT_EQ(file.get<std::string>("general.architecture"), "hive-test");
  EXPECT_EQ(file.get<uint32_t>("general.alignment"), 64u);
  EXPECT_EQ(file.get<uint8_t>("test.u8"), 200);
  EXPECT_EQ(file.get<int8_t>("test.i8"), -100);
  EXPECT_EQ(file.get<uint16_t>("test.u16"), 60000);
  EXPECT_EQ(file.get<int16_t>("test.i16"), -30000);
  EXPECT_EQ(file.get<uint32_t>("test.u32"), 4000000000u);
  EXPECT_EQ(file.get<int32_t>("test.i32"), -2000000000);
  EXPECT_EQ(file.get<float>("test.f32"), 0.1f);
  EXPECT_EQ(file.get<bool>("test.bool"), true);
  EXPECT_EQ(file.get<std::string>("test.string"), "h\xc3\xa9llo, GGUF");
  EXPECT_EQ(file.get<uint64_t>("test.u64"), (uint64_t{1} << 63) + 5);
  EXPECT_EQ(file.get<int64_t>("test.i64"), -(int64_t{1} << 62) - 7);
  EXPECT_EQ(file.get<double>("test.f64"), 0.1);
  EXPECT_EQ(file.metadata().size(), 2u + 12u + 13u);
}

TEST_F(GgufFixtureTest, ArrayMetadata) {
  EXPECT_EQ(file.get_array<uint8_t>("test.array.u8"), (std::vector<uint8_t>{0, 1, 255}));
  EXPECT_EQ(file.get_array<int8_t>("test.array.i8"), (std::vector<int8_t>{-128, 0, 127}));
  EXPECT_EQ(file.get_array<uint16_t>("test.array.u16"), (std::vector<uint16_t>{65535, 7}));
  EXPECT_EQ(file.get_array<int16_t>("test.array.i16"), (std::vector<int16_t>{-32768, 32767}));
  EXPECT_EQ(file.get_array<uint32_t>("test.array.u32"), (std::vector<uint32_t>{4294967295u, 0}));
  EXPECT_EQ(file.get_array<int32_t>("test.array.i32"), (std::vector<int32_t>{-1, 0, 7}));
  EXPECT_EQ(file.get_array<float>("test.array.f32"), (std::vector<float>{0.5f, -1.25f, 3.0e38f}));
  EXPECT_EQ(file.get_array<bool>("test.array.bool"), (std::vector<bool>{true, false, true}));
  EXPECT_EQ(file.get_array<std::string>("test.array.string"),
            (std::vector<std::string>{"a", "", "\xc3\xbcn\xc3\xaf"}));
  EXPECT_EQ(file.get_array<uint64_t>("test.array.u64"),
            (std::vector<uint64_t>{std::numeric_limits<uint64_t>::max()}));
  EXPECT_EQ(file.get_array<int64_t>("test.array.i64"),
            (std::vector<int64_t>{std::numeric_limits<int64_t>::min(),
                                  std::numeric_limits<int64_t>::max()}));
  EXPECT_EQ(file.get_array<double>("test.array.f64"), (std::vector<double>{1e300, -2.5}));

  const GgufValue* nested = file.find("test.array.nested");
  ASSERT_NE(nested, nullptr);
  ASSERT_EQ(nested->element_type, GgufValueType::array);
  ASSERT_EQ(nested->arrays.size(), 2u);
  EXPECT_EQ(nested->arrays[0].element_type, GgufValueType::i32);
  EXPECT_EQ(nested->arrays[0].count, 2u);
  EXPECT_EQ(gguf_decode<int32_t>(nested->arrays[0].packed + 4), 2);
  EXPECT_EQ(nested->arrays[1].count, 1u);
  EXPECT_EQ(gguf_decode<int32_t>(nested->arrays[1].packed), 3);
}

TEST_F(GgufFixtureTest, TypedGettersNameTheKeyAndTheTypes) {
  const std::string where = (kFixtureDir / "fixture.gguf").string();
  auto message = [](const auto& fn) {
    try {
      fn();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message([&] { file.get<float>("test.u32"); }),
            where + ": metadata key 'test.u32' has type u32, expected f32");
  EXPECT_EQ(message([&] { file.get<uint32_t>("no.such.key"); }),
            where + ": metadata key 'no.such.key' is missing");
  EXPECT_EQ(message([&] { file.get<std::string>("test.array.string"); }),
            where + ": metadata key 'test.array.string' has type array, expected string");
  EXPECT_EQ(message([&] { file.get_array<int64_t>("test.array.i32"); }),
            where + ": metadata key 'test.array.i32' is an array of i32, expected an array of i64");
  EXPECT_EQ(message([&] { file.get_array<int32_t>("test.i32"); }),
            where + ": metadata key 'test.i32' has type i32, expected array");
}

}  // namespace
}  // namespace hive
