#pragma once
// `dispatcher destination`: the registry of destinations kept in the database
// (docs/destinations.md). The subcommands share this change description.
#include <map>
#include <optional>
#include <string>

namespace outbox::cli {

struct destination_change {
  std::string provider;
  std::string name;
  std::map<std::string, std::string> settings;  // key -> value; "" removes the key
  std::map<std::string, std::string> secrets;   // key -> plaintext, sealed before it is stored
  std::optional<bool> enabled;                  // --enable / --disable
  bool dry_run = false;                         // validate only
};

// cli_destination_set.cpp
[[nodiscard]] int set_destination(destination_change change);
// A secret's text from `source`: a file, or "-" for standard input (once); one
// trailing newline dropped. nullopt when it cannot be read.
[[nodiscard]] std::optional<std::string> read_secret_source(const std::string& source, bool& stdin_used);

}  // namespace outbox::cli
