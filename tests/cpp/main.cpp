// Runs every registered test (check.h) and prints "N passed, N failed".
// Arguments, where given, keep the tests whose file or name contains one of
// them (core_tests replay_layout clifford).
#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "check.h"

namespace monoprop_test {
namespace {

struct Test {
  std::string file, name;
  TestFunction run;
  std::size_t order;  // registration order: within a file, the order written
};

std::vector<Test>& registry() {
  static std::vector<Test> tests;  // filled during static initialisation, in any order across files
  return tests;
}

int passed = 0, failed = 0;

}  // namespace

void record(bool ok, const char* file, int line, const char* condition) {
  if (ok) {
    ++passed;
    return;
  }
  ++failed;
  std::printf("FAILED %s:%d: %s\n", file, line, condition);
}

int failures() { return failed; }

Registration::Registration(const char* file, const char* name, TestFunction test) {
  registry().push_back({file, name, test, registry().size()});
}

}  // namespace monoprop_test

int main(int argc, char** argv) {
  using monoprop_test::Test;
  std::vector<Test> tests = monoprop_test::registry();
  std::sort(tests.begin(), tests.end(),
            [](const Test& x, const Test& y) { return x.file != y.file ? x.file < y.file : x.order < y.order; });
  for (const Test& test : tests) {
    bool wanted = argc < 2;
    for (int i = 1; i < argc; ++i)
      wanted = wanted || test.file.find(argv[i]) != std::string::npos || test.name.find(argv[i]) != std::string::npos;
    if (!wanted) continue;
    // A test that throws fails once and the others still run.
    try {
      test.run();
    } catch (const std::exception& e) {
      monoprop_test::record(false, test.file.c_str(), 0, (test.name + " threw: " + e.what()).c_str());
    } catch (...) {
      monoprop_test::record(false, test.file.c_str(), 0, (test.name + " threw").c_str());
    }
  }
  std::printf("%d passed, %d failed\n", monoprop_test::passed, monoprop_test::failed);
  return monoprop_test::failed == 0 ? 0 : 1;
}
