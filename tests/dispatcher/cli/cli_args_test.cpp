// The subcommands' option reader: "--name value" and "--name=value" alike.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "dispatcher/cli/cli_args.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace cli_args_test {

using outbox::cli::arg_reader;

TEST_CASE("cli options: --reason=x reads as --reason x; a missing value is reported, a longer name is not taken") {
  const std::vector<std::string> args{"--reason=gdpr request", "--reason", "typo fixed", "--reasons=x", "--reason"};
  arg_reader r{args};
  CHECK(r.option("--reason") == "gdpr request");
  CHECK(r.option("--reason") == "typo fixed");
  CHECK_FALSE(r.option("--reason").has_value());  // --reasons=x is another option
  CHECK(r.current() == "--reasons=x");
  (void)r.positional();
  CHECK_FALSE(r.option("--reason").has_value());
  CHECK(r.missing_value());
  const std::vector<std::string> empty_value{"--reason="};
  arg_reader e{empty_value};
  CHECK(e.option("--reason") == "");  // given, and empty: the command decides
}

}  // namespace cli_args_test
