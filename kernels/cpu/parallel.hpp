#pragma once
// for_each_task: the one way the CPU ops split work across threads.
#include <omp.h>

#include <cstdint>

#include "kernels/cpu/ops.hpp"

namespace hive::cpu {

// Runs task(t, scratch) for t in [0, num_tasks), each thread with its own
// scratch from make_scratch(). Tasks are independent outputs, so results do
// not depend on the split. The tasks run on an OpenMP team only when `work`
// (multiply-adds) reaches kMinParallelWork and more than one thread is
// allowed; otherwise inline, outside any OpenMP region: entering one costs
// even with a team of one (libgomp ends each with a futex wake, about 0.4 us
// on the development VM), and a decode step of the bundled model has a few
// hundred small ops.
template <class MakeScratch, class Task>
void for_each_task(int64_t num_tasks, int64_t work, const MakeScratch& make_scratch,
                   const Task& task) {
  if (work >= kMinParallelWork && omp_get_max_threads() > 1) {
#pragma omp parallel
    {
      auto scratch = make_scratch();
#pragma omp for schedule(static)
      for (int64_t t = 0; t < num_tasks; ++t) task(t, scratch);
    }
    return;
  }
  auto scratch = make_scratch();
  for (int64_t t = 0; t < num_tasks; ++t) task(t, scratch);
}

}  // namespace hive::cpu
