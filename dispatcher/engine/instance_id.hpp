#pragma once
#include <string>

namespace outbox {

// A per-boot identity stored in lease_owner: "<name or host>:<pid>:<random>",
// so on-call can tell which process holds a lease and a restarted process never
// mistakes its predecessor's leases for its own.
[[nodiscard]] std::string make_instance_id(const std::string& name);

// 128 random bits as a UUID string (lease tokens).
[[nodiscard]] std::string random_uuid();

}  // namespace outbox
