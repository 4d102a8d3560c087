// GgufWriter (runtime/loader/gguf_writer.hpp) against GgufFile, the reader:
// every metadata type the reader takes reads back equal, tensors land on
// 32-byte offsets with their bytes, and a write that fails part way leaves
// neither the file nor its .tmp behind.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "base/error.hpp"
#include "runtime/loader/gguf_file.hpp"
#include "runtime/loader/gguf_writer.hpp"

namespace hive {
namespace {

namespace fs = std::filesystem;

fs::path temp_file(const std::string& name) {
  return fs::temp_directory_path() / ("hive_writer_" + std::to_string(getpid()) + "_" + name);
}

std::vector<std::byte> bytes_of(size_t n, int seed) {
  std::vector<std::byte> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<std::byte>((i * 31 + seed) & 0xff);
  return out;
}

TEST(GgufWriter, EveryValueTypeReadsBack) {
  GgufWriter w;
  w.add("a.u8", uint8_t{200});
  w.add("a.i8", int8_t{-5});
  w.add("a.u16", uint16_t{60000});
  w.add("a.i16", int16_t{-30000});
  w.add("a.u32", uint32_t{4000000000u});
  w.add("a.i32", int32_t{-2000000000});
  w.add("a.f32", 1.5f);
  w.add("a.bool", true);
  w.add("a.string", std::string("héllo"));
  w.add("a.u64", uint64_t{1} << 40);
  w.add("a.i64", -(int64_t{1} << 40));
  w.add("a.f64", 0.1);
  w.add_array("a.ints", std::vector<int32_t>{1, -2, 3});
  w.add_array("a.floats", std::vector<float>{0.5f, -0.25f});
  w.add_array("a.strings", std::vector<std::string>{"x y", "", "z"});
  w.add_tensor("t.f32", GgmlType::f32, {3, 2});
  w.add_tensor("t.q8", GgmlType::q8_0, {64, 3});
  const fs::path path = temp_file("types.gguf");
  w.write(path, [&](size_t i) { return bytes_of(w.tensor_bytes(i), static_cast<int>(i)); });
  const GgufFile f(path);
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(f.get<uint8_t>("a.u8"), 200);
  EXPECT_EQ(f.get<int8_t>("a.i8"), -5);
  EXPECT_EQ(f.get<uint16_t>("a.u16"), 60000);
  EXPECT_EQ(f.get<int16_t>("a.i16"), -30000);
  EXPECT_EQ(f.get<uint32_t>("a.u32"), 4000000000u);
  EXPECT_EQ(f.get<int32_t>("a.i32"), -2000000000);
  EXPECT_EQ(f.get<float>("a.f32"), 1.5f);
  EXPECT_EQ(f.get<bool>("a.bool"), true);
  EXPECT_EQ(f.get<std::string>("a.string"), "héllo");
  EXPECT_EQ(f.get<uint64_t>("a.u64"), uint64_t{1} << 40);
  EXPECT_EQ(f.get<int64_t>("a.i64"), -(int64_t{1} << 40));
  EXPECT_EQ(f.get<double>("a.f64"), 0.1);
  EXPECT_EQ(f.get_array<int32_t>("a.ints"), (std::vector<int32_t>{1, -2, 3}));
  EXPECT_EQ(f.get_array<float>("a.floats"), (std::vector<float>{0.5f, -0.25f}));
  EXPECT_EQ(f.get_array<std::string>("a.strings"), (std::vector<std::string>{"x y", "", "z"}));
  ASSERT_EQ(f.tensors().size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const GgufTensor& t = f.tensors()[i];
    EXPECT_EQ(t.offset % 32, 0u) << t.name;
    const std::vector<std::byte> expected = bytes_of(t.nbytes, static_cast<int>(i));
    EXPECT_EQ(std::memcmp(t.data, expected.data(), t.nbytes), 0) << t.name;
  }
  EXPECT_EQ(f.tensors()[0].dims, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(f.tensors()[1].type, GgmlType::q8_0);
  EXPECT_EQ(f.tensors()[1].nbytes, 2u * 3 * 34);
  fs::remove(path);
}

TEST(GgufWriter, RefusesRowsThatAreNotWholeBlocksAndRepeatedNames) {
  GgufWriter w;
  EXPECT_THROW(w.add_tensor("t", GgmlType::q4_k, {128, 2}), Error);
  w.add_tensor("t", GgmlType::f32, {4});
  EXPECT_THROW(w.add_tensor("t", GgmlType::f32, {4}), Error);
  w.add("k", uint32_t{1});
  EXPECT_THROW(w.add("k", uint32_t{2}), Error);
}

TEST(GgufWriter, AFailedWriteLeavesNoFile) {
  GgufWriter w;
  w.add("general.architecture", "llama");
  w.add_tensor("a", GgmlType::f32, {8});
  w.add_tensor("b", GgmlType::f32, {8});
  const fs::path path = temp_file("failed.gguf");
  std::ofstream(path) << "old";  // an earlier file stays as it was
  EXPECT_THROW(w.write(path,
                       [&](size_t i) -> std::vector<std::byte> {
                         if (i == 1) throw std::runtime_error("source failed");
                         return bytes_of(w.tensor_bytes(i), 0);
                       }),
               std::runtime_error);
  EXPECT_EQ(fs::file_size(path), 3u);
  EXPECT_FALSE(fs::exists(fs::path(path.string() + ".tmp")));
  // Too few bytes from the source: an error naming the tensor, no file.
  fs::remove(path);
  try {
    w.write(path, [](size_t) { return std::vector<std::byte>(4); });
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'a'"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(path));
  EXPECT_FALSE(fs::exists(fs::path(path.string() + ".tmp")));
}

}  // namespace
}  // namespace hive
