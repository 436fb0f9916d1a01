// rss_floor: what the dispatcher's libraries alone cost in RSS, step by step,
// with none of our code (docs/benchmarks.md, issue 13's RSS targets):
// loaded; connected to PostgreSQL; with one TLS client context and its trust
// store; after ICU's case mapping; after libphonenumber's instance.
//   scripts/with_postgres.sh build-bench/rss_floor [--bundle]
// --bundle loads the whole CA bundle (SSL_CTX_set_default_verify_paths)
// instead of the hashed directory the dispatcher reads lazily.
#include <libpq-fe.h>
#include <openssl/ssl.h>
#include <phonenumbers/phonenumberutil.h>
#include <unicode/ustring.h>

#include <cstring>
#include <fstream>
#include <iostream>
#include <string>

namespace {

void report(const char* step) {
  std::ifstream status("/proc/self/status");
  std::string line;
  std::cout << step << ":";
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0 || line.rfind("RssAnon:", 0) == 0 || line.rfind("RssFile:", 0) == 0) {
      std::cout << "  " << line.substr(0, line.find(':')) << " " << std::stol(line.substr(line.find(':') + 1)) / 1024.0
                << " MB";
    }
  }
  std::cout << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  const bool bundle = argc > 1 && std::strcmp(argv[1], "--bundle") == 0;
  report("libraries loaded");
  PGconn* conn = PQconnectdb("dbname=postgres");  // PGHOST, PGPORT from the environment
  if (PQstatus(conn) != CONNECTION_OK) std::cerr << "rss_floor: " << PQerrorMessage(conn);
  report("connected to PostgreSQL");
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (bundle) SSL_CTX_set_default_verify_paths(ctx);
  else SSL_CTX_load_verify_locations(ctx, nullptr, X509_get_default_cert_dir());
  report(bundle ? "+ TLS context, whole CA bundle" : "+ TLS context, hashed CA directory");
  UChar in[] = u"\u00c9COLE";
  UChar out[16];
  UErrorCode error = U_ZERO_ERROR;
  u_strToLower(out, 16, in, -1, "", &error);
  report("+ ICU case mapping");
  i18n::phonenumbers::PhoneNumber number;
  i18n::phonenumbers::PhoneNumberUtil::GetInstance()->Parse("+1 650 555 1212", "US", &number);
  report("+ libphonenumber instance");
  SSL_CTX_free(ctx);
  PQfinish(conn);
  return 0;
}
