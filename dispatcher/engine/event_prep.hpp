#pragma once
// Turns a claimed row into a provider event, or says why the row can never be
// sent (so it goes dead at once, before any request). Pure.
#include <cstddef>
#include <string>
#include <variant>

#include "db/delivery_store.hpp"
#include "providers/provider.hpp"

namespace outbox {

// The event, or a one-line reason the row is malformed.
using prepared_event = std::variant<providers::outbound_event, std::string>;

// How much of the payload the destination's provider reads (provider::reads_payload).
enum class payload_use { parsed, text_only };

// `text_only` keeps the row's jsonb text and skips the parse (8 % of a webhook
// request's dispatcher CPU in a perf profile): PostgreSQL already validated it.
[[nodiscard]] prepared_event prepare_event(const db::claimed_row& row, std::size_t max_payload_bytes,
                                           payload_use use = payload_use::parsed);

}  // namespace outbox
