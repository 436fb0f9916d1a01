// One doctest main shared by every test program.
//
// ctest runs each test case as its own process, `<program> --test-case=<name>`
// (doctest_discover_tests in CMakeLists.txt). doctest exits 0 when a filter
// matches nothing, so a renamed case, or a name CMake split at a ';', would pass
// without running: here a run whose filters select no test case fails instead.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

namespace {

// Records how many test cases passed the filters; queries (--list-test-cases,
// --help...) never end a run, so `finished` stays false for them.
struct run_counter final : doctest::IReporter {
  static inline bool finished = false;
  static inline unsigned selected = 0;

  explicit run_counter(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats& stats) override {
    finished = true;
    selected = stats.numTestCasesPassingFilters;
  }
  void test_case_start(const doctest::TestCaseData&) override {}
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};

}  // namespace

DOCTEST_REGISTER_LISTENER("run_counter", 1, run_counter);

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int failures = context.run();
  if (failures != 0 || !run_counter::finished) return failures;
  if (run_counter::selected == 0) {
    std::fprintf(stderr, "no test case matches the filters: nothing ran\n");
    return 1;
  }
  return 0;
}
