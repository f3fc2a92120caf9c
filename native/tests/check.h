// The native tests' one assertion: a failure is counted and printed under the test in progress, in
// the lines test/engine/native-binary.ts reads ("  FAIL <test>: <what>", then "ok"/"not ok <test>").
#pragma once

#include <cstdio>
#include <string>

namespace arbitra::testing {

inline int failures = 0;
inline std::string current;

inline void check(bool ok, const std::string& what) {
  if (ok) return;
  ++failures;
  std::printf("  FAIL %s: %s\n", current.c_str(), what.c_str());
}

}  // namespace arbitra::testing
