#pragma once
// `dispatcher keys`: the parts in files of their own.

namespace outbox::cli {

// cli_keys_reseal.cpp: `dispatcher keys reseal [--dry-run]`.
[[nodiscard]] int reseal_secrets(bool dry_run);

}  // namespace outbox::cli
