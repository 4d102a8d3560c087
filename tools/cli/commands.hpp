#pragma once
#include <string>
#include <vector>

namespace hive::cli {

int run_agree(const std::vector<std::string>& argv);
int run_eval_ppl(const std::vector<std::string>& argv);
int run_generate(const std::vector<std::string>& argv);
int run_inspect(const std::vector<std::string>& argv);
int run_quantize(const std::vector<std::string>& argv);
int run_run(const std::vector<std::string>& argv);
int run_serve(const std::vector<std::string>& argv);
int run_bench_serve(const std::vector<std::string>& argv);
int run_tokenize(const std::vector<std::string>& argv);
int run_detokenize(const std::vector<std::string>& argv);

}  // namespace hive::cli
