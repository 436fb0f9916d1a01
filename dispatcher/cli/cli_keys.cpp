// `dispatcher keys`: the key pair that seals destination secrets in the
// registry (dispatcher/secrets/sealed_secret.hpp, docs/destinations.md#secrets).
#include <sys/stat.h>

#include <fcntl.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>
#include <iostream>

#include "db/destination_registry_store.hpp"
#include "dispatcher/cli/cli.hpp"
#include "dispatcher/cli/cli_args.hpp"
#include "dispatcher/cli/cli_keys.hpp"
#include "dispatcher/ops/terminal_text.hpp"
#include "dispatcher/secrets/sealing_keyring.hpp"

namespace outbox::cli {
namespace {

constexpr const char* keys_help = R"(usage: dispatcher keys generate FILE
       dispatcher keys publish [--key-file FILE]
       dispatcher keys list
       dispatcher keys reseal [--dry-run]

Destination secrets kept in the database are sealed for the dispatcher's
X25519 key: the database holds only the public half, so a dump, a backup or a
replica reveals no token.

  generate FILE  writes a new private key to FILE (mode 0600; an existing file
                 is never overwritten). Mount it into every dispatcher and name
                 it in OUTBOX_SEALING_KEY_FILE.
  publish        records the public half of OUTBOX_SEALING_KEY_FILE (or
                 --key-file) in the database as the current key: `destination
                 set` and the Django app seal new secrets for it.
  list           the published keys, the current one first.
  reseal         seals every stored secret again for the current key, opening
                 it with OUTBOX_SEALING_KEY_FILE or OUTBOX_SEALING_KEY_FILE_PREVIOUS;
                 --dry-run counts only. Exit 1 names each secret neither key
                 opens (left as it is: set it again).

Rotation: generate a new key; give the dispatchers the new file as
OUTBOX_SEALING_KEY_FILE and the old one as OUTBOX_SEALING_KEY_FILE_PREVIOUS;
publish the new key; run `dispatcher keys reseal` with both files; then drop
the previous file (and the old key's secrets can no longer be opened from any
backup once that file is destroyed).
)";

int generate_key(const std::string& file) {
  const auto key = secrets::sealing_key::generate();
  const std::string pem = key.private_pem();
  // O_EXCL: a key in use is never replaced by accident (its secrets would not open any more).
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    std::cerr << "dispatcher keys generate: cannot create " << terminal_text(file) << ": " << std::strerror(errno)
              << (errno == EEXIST ? " (an existing key file is never overwritten)" : "") << "\n";
    return exit_failure;
  }
  const bool written = ::write(fd, pem.data(), pem.size()) == static_cast<ssize_t>(pem.size());
  const bool closed = ::close(fd) == 0;
  if (!written || !closed) {
    std::cerr << "dispatcher keys generate: cannot write " << terminal_text(file) << "\n";
    return exit_failure;
  }
  std::cout << "key " << key.id() << " written to " << terminal_text(file)
            << "; name it in OUTBOX_SEALING_KEY_FILE, then run `dispatcher keys publish`\n";
  return exit_ok;
}

boost::asio::awaitable<int> async_publish_key(db::connection& conn, std::string file) {
  const auto ring = secrets::load_keyring({file});
  const auto& key = *ring.current();
  co_await db::async_publish_sealing_key(conn, key.id(), key.public_raw());
  std::cout << "key " << key.id() << " published as the current sealing key\n";
  co_return exit_ok;
}

boost::asio::awaitable<int> async_list_keys(db::connection& conn) {
  const auto keys = co_await db::async_sealing_keys(conn);
  for (const auto& k : keys) {
    std::cout << k.key_id << "  published " << terminal_text(k.published_at) << (k.is_current ? "  current" : "")
              << "\n";
  }
  if (keys.empty()) std::cout << "no sealing key is published: run `dispatcher keys publish`\n";
  co_return exit_ok;
}

}  // namespace

int keys_command(std::span<const std::string> args) {
  arg_reader r(args);
  std::vector<std::string> words;
  std::string key_file;
  bool dry_run = false;
  while (!r.done()) {
    if (r.flag("--help") || r.flag("-h")) {
      std::cout << keys_help;
      return exit_ok;
    }
    if (r.flag("--dry-run")) {
      dry_run = true;
    } else if (auto v = r.option("--key-file")) {
      key_file = *v;
    } else if (!r.current().starts_with("--")) {
      words.push_back(r.positional());
    } else {
      std::cerr << "dispatcher keys: unknown or incomplete option '" << r.current() << "'\n" << keys_help;
      return exit_usage;
    }
  }
  if (words.size() == 2 && words[0] == "generate") return generate_key(words[1]);
  if (words.size() == 1 && words[0] == "reseal") return reseal_secrets(dry_run);
  if (words.size() == 1 && words[0] == "list") return with_database(database_conninfo(), async_list_keys);
  if (words.size() == 1 && words[0] == "publish") {
    if (key_file.empty()) {
      const auto env = cli_environment();
      const auto it = env.find("OUTBOX_SEALING_KEY_FILE");
      if (it != env.end()) key_file = it->second;
    }
    if (key_file.empty()) {
      std::cerr << "dispatcher keys publish: no key file: set OUTBOX_SEALING_KEY_FILE or pass --key-file FILE\n";
      return exit_usage;
    }
    try {
      (void)secrets::load_keyring({key_file});
    } catch (const std::runtime_error& e) {
      std::cerr << "dispatcher keys publish: " << e.what() << "\n";
      return exit_usage;
    }
    return with_database(database_conninfo(),
                         [key_file](db::connection& conn) { return async_publish_key(conn, key_file); });
  }
  std::cerr << keys_help;
  return exit_usage;
}

}  // namespace outbox::cli
