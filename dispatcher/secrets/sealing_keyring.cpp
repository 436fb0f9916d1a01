#include "dispatcher/secrets/sealing_keyring.hpp"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace outbox::secrets {

const sealing_key* sealing_keyring::find(std::string_view id) const {
  for (const auto& k : keys_) {
    if (k.id() == id) return &k;
  }
  return nullptr;
}

sealing_key::opened sealing_keyring::open(std::string_view sealed, std::string_view context) const {
  const auto id = sealed_key_id(sealed);
  if (!id) return {std::nullopt, "not a sealed value (sealed:v1:...)"};
  if (const auto* key = find(*id)) return key->open(sealed, context);
  std::string held;
  for (const auto& k : keys_) held += (held.empty() ? "" : ", ") + k.id();
  return {std::nullopt, "sealed for key " + *id + ", which this dispatcher does not hold (" +
                            (held.empty() ? std::string{"no sealing key is configured"} : "it holds " + held) + ")"};
}

sealing_keyring load_keyring(const std::vector<std::filesystem::path>& files) {
  std::vector<sealing_key> keys;
  for (const auto& file : files) {
    if (file.empty()) continue;
    std::ifstream in(file, std::ios::binary);
    if (!in) throw std::runtime_error("sealing key file " + file.string() + ": cannot be read");
    std::ostringstream text;
    text << in.rdbuf();
    try {
      keys.push_back(sealing_key::from_private_pem(text.str()));
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error("sealing key file " + file.string() + ": " + e.what());
    }
  }
  return sealing_keyring(std::move(keys));
}

std::string secret_context(std::string_view provider, std::string_view name, std::string_view key) {
  std::string out;
  out.append(provider).append("/").append(name).append("/").append(key);
  return out;
}

}  // namespace outbox::secrets
