// vnni_test.cc's VNNI path: the kernels compiled with ARBITRA_EMULATE_VNNI (CMakeLists.txt), which
// takes their VNNI code with vpdpbusd emulated exactly in AVX2.
#include "kernel_run.h"

std::vector<float> arbitra::testing::vnni_products(const KernelCase& c, int nr) { return products(c, nr); }
