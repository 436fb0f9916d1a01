#pragma once
// Masking for `dispatcher config` (describe() in config.hpp).
#include <string>
#include <string_view>

namespace outbox {

// A URL as it can be shown: scheme, host, port and the path's ordinary
// segments kept; masked as "***":
//   - the userinfo ("https://***@host/..."): a user name can be a token too;
//   - every query value ("?sig=***&token=***"), whatever its name: parameter
//     names do not reliably say which values are secrets (sig, code, s, k...),
//     so none is trusted; a query part without '=' is masked when it looks secret;
//   - the fragment ("#***"): it can carry an access_token;
//   - path segments that look like secrets (Slack-style hook paths carry the
//     secret in the path): a run of 16 or more [A-Za-z0-9_-] mixing letters
//     and digits (generated tokens, UUIDs), 32 or more letters and digits in
//     one run, or a segment that contains secret, token, passw, credential,
//     signature or apikey without being just that word (so "/oauth2/token"
//     stays readable). Ids made of digits only (Slack's T0123ABCD is short,
//     Discord's 18-digit hook id) are not secrets and stay.
// Text without "://" gets redact_url() (conninfo "password=..." masked).
[[nodiscard]] std::string mask_url_secrets(std::string_view url);

}  // namespace outbox
