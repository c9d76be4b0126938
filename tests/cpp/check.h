// The checks of the C++ unit tests and the registry that runs them.
//
// Each part's tests live beside it (csrc/monoprop/<part>.test.cpp) and
// register their functions with TEST; tests/cpp/main.cpp runs every one,
// file by file in name order and within a file in the order written, and
// prints "N passed, N failed". CHECK counts one check; a failed one prints
// its file, line and condition and the run goes on.
#pragma once

namespace monoprop_test {

// Counts one check, printing where it failed.
void record(bool ok, const char* file, int line, const char* condition);
// How many checks have failed so far (a test may stop early after one).
int failures();

using TestFunction = void (*)();
// Registers a test for main() (a static object of each test file, one a test).
struct Registration {
  Registration(const char* file, const char* name, TestFunction test);
};

}  // namespace monoprop_test

#define CHECK(cond) ::monoprop_test::record(static_cast<bool>(cond), __FILE__, __LINE__, #cond)

// TEST(name) { ... } defines a test function and registers it.
#define TEST(name)                                                                        \
  static void name();                                                                     \
  static const ::monoprop_test::Registration name##_registration(__FILE__, #name, &name); \
  static void name()
