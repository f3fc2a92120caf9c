// vnni_test.cc's VNNI path on the processor's own vpdpbusd: the kernels compiled with AVX-512 VNNI
// (CMakeLists.txt), as the zen4 variant compiles them. Called only where the processor has it.
#include "kernel_run.h"

std::vector<float> arbitra::testing::hardware_vnni_products(const KernelCase& c, int nr) { return products(c, nr); }

bool arbitra::testing::has_avx512_vnni() { return __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vl"); }
