// A bad GGUF file gets one clear error naming the file, the key or tensor and
// the problem, never a crash: each case of the reader's validation, built
// byte by byte from a small valid file.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "kernels/quant/dequantize.hpp"
#include "runtime/loader/gguf_file.hpp"
#include "tests/common/gguf_bytes.hpp"

namespace hive {
namespace {

namespace fs = std::filesystem;
using test::gguf_string;
using test::GgufBytes;
using test::le32;
using test::le64;

// One f32 tensor of 4 elements and one Q8_0 block, default alignment.
GgufBytes valid_file() {
  GgufBytes file;
  file.version = 2;
  file.metadata.push_back(gguf_string("general.name") + le32(8) + gguf_string("tiny"));
  file.add_tensor("w", {4}, 0, 0);
  file.add_tensor("q", {32}, 8, 32);
  file.data = std::string(16, '\x01') + std::string(16, '\0') + std::string(34, '\x02');
  return file;
}

// Passes when `message` starts with `prefix`; prints the message otherwise.
::testing::AssertionResult starts_with(const std::string& message, const std::string& prefix) {
  if (message.rfind(prefix, 0) == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "the error \"" << message << "\" does not start with \"" << prefix << "\"";
}

class GgufErrorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path = fs::temp_directory_path() /
           ("hive_gguf_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "_" +
            std::to_string(::getpid()) + ".gguf");
  }
  void TearDown() override { fs::remove(path); }

  void write(const std::string& bytes) const {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  // The error reading `bytes` gives, without the "<path>: " it starts with.
  std::string error(const std::string& bytes) const {
    write(bytes);
    try {
      GgufFile file(path);
    } catch (const Error& e) {
      const std::string message = e.what();
      const std::string prefix = path.string() + ": ";
      if (message.rfind(prefix, 0) != 0) return "error without the file's path: " + message;
      return message.substr(prefix.size());
    }
    return "no error";
  }

  fs::path path;
};

TEST_F(GgufErrorTest, ValidVersion2FileWithDefaultAlignment) {
  write(valid_file().bytes());
  const GgufFile file(path);
  EXPECT_EQ(file.version(), 2u);
  EXPECT_EQ(file.alignment(), 32u);
  EXPECT_EQ(file.get<std::string>("general.name"), "tiny");
  ASSERT_EQ(file.tensors().size(), 2u);
  const GgufTensor& q = file.tensors()[1];
  EXPECT_EQ(q.type, GgmlType::q8_0);
  EXPECT_EQ(q.nbytes, 34u);
  EXPECT_EQ(static_cast<const char*>(q.data)[0], '\x02');
  EXPECT_EQ(static_cast<const char*>(file.tensors()[0].data)[15], '\x01');
}

// A tensor with a zero dimension is legal: no bytes, and dequantizing it
// writes nothing (the fuzzer found memcpy called with its null pointers).
TEST_F(GgufErrorTest, EmptyTensor) {
  GgufBytes file = valid_file();
  file.add_tensor("empty", {0, 4}, 8, 64);
  write(file.bytes());
  const GgufFile read(path);
  const GgufTensor* empty = read.find_tensor("empty");
  ASSERT_NE(empty, nullptr);
  EXPECT_EQ(empty->numel, 0);
  EXPECT_EQ(empty->nbytes, 0u);
  dequantize_to_f32(empty->type, empty->data, 0, nullptr);
  dequantize_to_f32(GgmlType::f32, nullptr, 0, nullptr);
}

TEST_F(GgufErrorTest, HeaderProblems) {
  GgufBytes file = valid_file();
  file.magic = "GGUX";
  EXPECT_EQ(error(file.bytes()),
            "not a GGUF file: magic is 0x58554747, expected 0x46554747 (\"GGUF\")");
  file = valid_file();
  file.version = 1;
  EXPECT_EQ(error(file.bytes()), "GGUF version 1 is not supported (only versions 2 and 3)");
  file.version = 0x03000000;  // 3, written big-endian
  EXPECT_EQ(error(file.bytes()),
            "big-endian GGUF (version field 0x3000000) is not supported; only little-endian "
            "files are");
  EXPECT_EQ(error(""),
            "header: magic of 4 bytes at offset 0 runs past the end of the file (0 "
            "bytes)");
}

TEST_F(GgufErrorTest, EveryTruncationIsAnError) {
  const std::string bytes = valid_file().bytes();
  for (size_t size = 0; size < bytes.size(); ++size)
    EXPECT_NE(error(bytes.substr(0, size)), "no error") << "truncated to " << size << " bytes";
  EXPECT_EQ(error(bytes.substr(0, bytes.size() - 1)),
            "tensor 'q': its 34 bytes at offset 32 run past the end of the data section (65 "
            "bytes): the file is truncated or corrupt");
}

TEST_F(GgufErrorTest, DuplicateKeyAndDuplicateTensor) {
  GgufBytes file = valid_file();
  file.add_u32("a", 1);
  file.add_u32("a", 2);
  EXPECT_EQ(error(file.bytes()), "metadata key 'a' is given twice");
  file = valid_file();
  file.add_tensor("w", {4}, 0, 64);
  EXPECT_EQ(error(file.bytes()), "tensor 'w' is named twice");
}

TEST_F(GgufErrorTest, Alignment) {
  GgufBytes file = valid_file();
  file.add_tensor("late", {4}, 0, 16);
  EXPECT_EQ(error(file.bytes()), "tensor 'late': offset 16 is not a multiple of the alignment 32");
  file = valid_file();
  file.add_u32("general.alignment", 48);
  EXPECT_EQ(error(file.bytes()),
            "metadata key 'general.alignment' must be a power of two (got 48)");
  file = valid_file();
  file.metadata.push_back(gguf_string("general.alignment") + le32(10) + le64(64));
  EXPECT_EQ(error(file.bytes()), "metadata key 'general.alignment' has type u64, expected u32");
}

TEST_F(GgufErrorTest, TensorTypeAndShape) {
  GgufBytes file = valid_file();
  file.add_tensor("t", {32}, 3, 0);  // Q4_1: a ggml type Hive does not read
  EXPECT_EQ(error(file.bytes()),
            "tensor 't': unsupported ggml type 3 (supported: F32 (0), F16 (1), Q4_0 (2), Q5_0 "
            "(6), Q5_1 (7), Q8_0 (8), Q4_K (12), Q5_K (13), Q6_K (14), BF16 (30))");
  file = valid_file();
  file.add_tensor("t", {33, 2}, 8, 0);
  EXPECT_EQ(error(file.bytes()),
            "tensor 't': row length 33 is not a multiple of the Q8_0 block "
            "size 32");
  file = valid_file();
  file.add_tensor("t", {uint64_t{1} << 40, uint64_t{1} << 40}, 0, 0);
  EXPECT_EQ(error(file.bytes()), "tensor 't': the element count of its 2 dimensions overflows");
  file = valid_file();
  file.add_tensor("t", {1, 1, 1, 1, 1}, 0, 0);
  EXPECT_EQ(error(file.bytes()), "tensor 't': 5 dimensions, at most 4");
}

TEST_F(GgufErrorTest, StringsAndArraysPastTheEnd) {
  GgufBytes file = valid_file();
  file.metadata.insert(file.metadata.begin(), le64(1000) + "key");
  EXPECT_EQ(error(file.bytes()),
            "metadata entry 0 key: string of 1000 bytes at offset 32 runs "
            "past the end of the file (" +
                std::to_string(file.bytes().size()) + " bytes)");
  file = valid_file();
  file.metadata.push_back(gguf_string("s") + le32(8) + le64(uint64_t{1} << 62));
  EXPECT_TRUE(starts_with(error(file.bytes()),
                          "metadata key 's': string of 4611686018427387904 bytes at offset"));
  file = valid_file();
  file.metadata.push_back(gguf_string("a") + le32(9) + le32(4) + le64(uint64_t{1} << 60));
  EXPECT_TRUE(
      starts_with(error(file.bytes()),
                  "metadata key 'a': 1152921504606846976 array elements cannot fit in the"));
  file = valid_file();
  file.metadata.push_back(gguf_string("a") + le32(9) + le32(8) + le64(3) + gguf_string("x") +
                          le64(1000));
  EXPECT_TRUE(starts_with(error(file.bytes()), "metadata key 'a': string of 1000 bytes at offset"));
}

TEST_F(GgufErrorTest, AbsurdCountsAndBadValues) {
  GgufBytes file = valid_file();
  std::string bytes = file.bytes();
  const std::string count = le64(uint64_t{1} << 60);
  bytes.replace(8, 8, count);  // the tensor count
  EXPECT_EQ(error(bytes), "header: 1152921504606846976 tensor infos cannot fit in the " +
                              std::to_string(bytes.size() - 24) + " bytes left in the file");
  file.metadata.push_back(gguf_string("k") + le32(13) + le32(0));
  EXPECT_EQ(error(file.bytes()), "metadata key 'k': unknown value type 13");
  file = valid_file();
  file.metadata.push_back(gguf_string("b") + le32(7) + std::string(1, '\x02'));
  EXPECT_TRUE(
      starts_with(error(file.bytes()), "metadata key 'b': bool must be 0 or 1 (got 2) at offset"));
  file = valid_file();
  std::string nested = gguf_string("n") + le32(9);
  for (int depth = 0; depth < 9; ++depth) nested += le32(9) + le64(1);
  file.metadata.push_back(nested + le32(0) + le64(0));
  EXPECT_EQ(error(file.bytes()), "metadata key 'n': arrays nested deeper than 8");
}

}  // namespace
}  // namespace hive
