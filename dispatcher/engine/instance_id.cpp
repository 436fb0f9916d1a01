#include "dispatcher/engine/instance_id.hpp"

#include <unistd.h>

#include <array>
#include <cstdio>
#include <random>

#include <openssl/rand.h>

namespace outbox {
namespace {

std::array<unsigned char, 16> random_bytes() {
  std::array<unsigned char, 16> b{};
  if (RAND_bytes(b.data(), static_cast<int>(b.size())) != 1) {
    // OpenSSL's CSPRNG failing is near impossible; fall back rather than crash.
    std::random_device rd;
    for (auto& c : b) c = static_cast<unsigned char>(rd());
  }
  return b;
}

}  // namespace

std::string random_uuid() {
  auto b = random_bytes();
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);  // version 4
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);  // RFC 4122 variant
  char out[37];
  std::snprintf(out, sizeof out, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return out;
}

std::string make_instance_id(const std::string& name) {
  std::string base = name;
  if (base.empty()) {
    char host[256] = {};
    base = gethostname(host, sizeof host - 1) == 0 && host[0] ? host : "dispatcher";
  }
  return base + ":" + std::to_string(getpid()) + ":" + random_uuid().substr(0, 8);
}

}  // namespace outbox
