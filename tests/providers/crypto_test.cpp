#include "providers/crypto.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace crypto_test {

using namespace outbox::providers;

TEST_CASE("sha256_hex matches standard and provider test vectors") {
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // providers.md: SHA-256 of already-normalized user data.
  CHECK(sha256_hex("john_smith@gmail.com") == "62a14e44f765419d10fea99367361a727c12365e2520f32218d505ed9aa0f62f");
  CHECK(sha256_hex("16505551212") == "e323ec626319ca94ee8bff2e4c87cf613be6ea19919ed1364124e16807ab3176");
  CHECK(sha256_hex("mary") == "6915771be1c5aa0c886870b6951b03d7eafc121fea0e80a5ea83beb7c449f4ec");
  CHECK(sha256_hex("us") == "79adb2a2fce5c6ba215fe5f27f532d4e7edbac4b6a5e09e1ef3a08084a904621");
  CHECK(sha256_hex("alice_abc@gmail.com") == "848a771458438fc2ec420560d769fb9b9b86851ee338ec56517baabd79d3bb4f");
  CHECK(sha256_hex("+12133734253") == "9f7ec22d72092cd3c0b58726ed9c2d91b92e51a3f29837508fb2948bb22dd2fd");
  CHECK(sha256_hex("user_123") == "80fba0ae1c48e3978e43e4efc365e14e12ea0c830ba8ba5b9a2dafc7e3f2ab8b");
  CHECK(sha256_hex("cloudysanfrancisco@gmail.com") ==
        "223ebda6f6889b1494551ba902d9d381daf2f642bae055888e96343d53e9f9c4");
}

TEST_CASE("sha256 returns 32 raw bytes") {
  const std::string digest = sha256("abc");
  CHECK(digest.size() == 32);
  CHECK(hex_encode(digest) == sha256_hex("abc"));
}

TEST_CASE("hmac_sha256_signer gives the same MAC as hmac_sha256, message after message") {
  const std::string long_key(131, '\xaa');
  hmac_sha256_signer jefe("Jefe");
  hmac_sha256_signer big(long_key);
  for (int round = 0; round < 3; ++round) {  // signing must not disturb the keyed state
    CHECK(hex_encode(jefe.sign({"what do ya want ", "for nothing?"})) ==
          "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    CHECK(jefe.sign({"a", "", "b"}) == hmac_sha256("Jefe", "ab"));
    CHECK(big.sign({"Test Using Larger Than Block-Size Key - Hash Key First"}) ==
          hmac_sha256(long_key, "Test Using Larger Than Block-Size Key - Hash Key First"));
  }
  hmac_sha256_signer moved(std::move(jefe));
  CHECK(moved.sign({}) == hmac_sha256("Jefe", ""));
}

TEST_CASE("one hmac_sha256_signer signs correctly from several threads at once") {
  const hmac_sha256_signer signer("Jefe");
  const std::string expected = hex_encode(hmac_sha256("Jefe", "what do ya want for nothing?"));
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) {
        if (hex_encode(signer.sign({"what do ya want ", "for nothing?"})) != expected) ++wrong;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(wrong.load() == 0);
}

TEST_CASE("hmac_sha256 matches RFC 4231") {
  // Test case 1
  CHECK(hex_encode(hmac_sha256(std::string(20, '\x0b'), "Hi There")) ==
        "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  // Test case 2: a key shorter than the block
  CHECK(hex_encode(hmac_sha256("Jefe", "what do ya want for nothing?")) ==
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  // Test case 6: a key longer than the block is hashed first
  CHECK(hex_encode(hmac_sha256(std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First")) ==
        "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  // An empty key and message are legal HMAC inputs.
  CHECK(hex_encode(hmac_sha256("", "")) == "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad");
  // Binary keys with NUL bytes are not truncated.
  CHECK(hmac_sha256(std::string("a\0b", 3), "x") != hmac_sha256("a", "x"));
}

TEST_CASE("hex_encode is lower-case and covers every byte value") {
  CHECK(hex_encode("") == "");
  CHECK(hex_encode(std::string("\x00\x01\x7f\x80\xff", 5)) == "00017f80ff");
  std::string all;
  for (int i = 0; i < 256; ++i) all.push_back(static_cast<char>(i));
  const std::string hex = hex_encode(all);
  CHECK(hex.size() == 512);
  CHECK(hex.substr(0, 6) == "000102");
  CHECK(hex.substr(506) == "fdfeff");
}

TEST_CASE("base64_encode matches RFC 4648 vectors and decodes back") {
  const std::pair<std::string, std::string> vectors[] = {
      {"", ""},
      {"f", "Zg=="},
      {"fo", "Zm8="},
      {"foo", "Zm9v"},
      {"foob", "Zm9vYg=="},
      {"fooba", "Zm9vYmE="},
      {"foobar", "Zm9vYmFy"},
  };
  for (const auto& [plain, encoded] : vectors) {
    CAPTURE(plain);
    CHECK(base64_encode(plain) == encoded);
    const auto decoded = base64_decode(encoded);
    REQUIRE(decoded.has_value());
    CHECK(*decoded == plain);
  }
  CHECK(base64_encode("\xfb\xff") == "+/8=");  // the two non-alphanumeric symbols
}

TEST_CASE("base64_decode round-trips arbitrary bytes") {
  std::string all;
  for (int i = 0; i < 256; ++i) all.push_back(static_cast<char>(255 - i));
  for (std::size_t n = 0; n <= all.size(); n += 37) {
    const std::string part = all.substr(0, n);
    CHECK(base64_decode(base64_encode(part)) == part);
  }
}

TEST_CASE("base64_decode accepts missing padding") {
  CHECK(base64_decode("Zg") == std::optional<std::string>{"f"});
  CHECK(base64_decode("Zm8") == std::optional<std::string>{"fo"});
  CHECK(base64_decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").has_value());
}

TEST_CASE("base64_decode rejects malformed input") {
  CHECK_FALSE(base64_decode("Z").has_value());      // impossible length
  CHECK_FALSE(base64_decode("Zg=").has_value());    // partial padding
  CHECK_FALSE(base64_decode("Zg===").has_value());  // too much padding
  CHECK_FALSE(base64_decode("====").has_value());
  CHECK_FALSE(base64_decode("Zg==Zg==").has_value());  // padding in the middle
  CHECK_FALSE(base64_decode("Zm9v!").has_value());
  CHECK_FALSE(base64_decode("Zm 9v").has_value());  // whitespace (OpenSSL would skip it)
  CHECK_FALSE(base64_decode(" Zm9v").has_value());
  CHECK_FALSE(base64_decode("Zm9v-_").has_value());  // URL-safe alphabet
}

}  // namespace crypto_test
