// The native tests' one assertion: a failure is counted and printed under the test in progress, in
// the lines test/engine/native-binary.ts reads ("  FAIL <test>: <what>", then "ok"/"not ok <test>").
#pragma once

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace arbitra::testing {

inline int failures = 0;
inline std::string current;

inline void check(bool ok, const std::string& what) {
  if (ok) return;
  ++failures;
  std::printf("  FAIL %s: %s\n", current.c_str(), what.c_str());
}

using Tests = std::vector<std::pair<const char*, void (*)()>>;

// Runs each test under its name, one "ok"/"not ok" line each, then the count; the exit status.
inline int run_all(const Tests& tests) {
  for (const auto& [name, fn] : tests) {
    current = name;
    const int before = failures;
    fn();
    std::printf("%s %s\n", failures == before ? "ok" : "not ok", name);
  }
  std::printf("%d failure(s)\n", failures);
  return failures == 0 ? 0 : 1;
}

}  // namespace arbitra::testing
