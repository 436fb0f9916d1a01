#include "tests/support/engine_harness.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>

#include "tests/support/engine_settings.hpp"

namespace outbox::test {

bool eventually(const std::function<bool()>& probe, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (probe()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

environment base_environment(const scratch_database& db, const test_https_server& server, const test_ca& ca) {
  environment env;
  env["DATABASE_URL"] = db.conninfo();
  fast_engine_settings(env);
  env["OUTBOX_EXTRA_CA_FILE"] = ca.cert_pem_file().string();
  env["OUTBOX_DEST__WEBHOOK__DEFAULT__URL"] = server.url("/hook", "localhost");
  env["OUTBOX_DEST__WEBHOOK__DEFAULT__SECRET"] = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
  // PGHOST and friends come from the process environment set by with_postgres.sh.
  for (const char* name : {"PGHOST", "PGPORT", "PGUSER"}) {
    if (const char* v = std::getenv(name)) env[name] = v;
  }
  return env;
}

namespace {

test_server_options tls_options(const test_pki& pki) {
  test_server_options o;
  o.certificate = pki.trusted.issue();
  return o;
}

}  // namespace

engine_harness::engine_harness(std::function<void(environment&)> tweak) : server(tls_options(pki)) {
  auto env = base_environment(db, server, pki.trusted);
  if (tweak) tweak(env);
  // load_config rejects variables it does not know; keep only ours.
  environment ours;
  for (auto& [k, v] : env) {
    if (k.starts_with("OUTBOX_") || k == "DATABASE_URL") ours[k] = v;
  }
  cfg = load_config(ours);
  log_ = std::make_unique<logger>(cfg.min_log_level, &log_stream_);
}

engine_harness::~engine_harness() {
  if (running_) stop();
}

void engine_harness::start() {
  db::pg_store_options options{cfg.database_url};
  options.after_statement = [this] { signal_.raise(); };
  store_ = std::make_unique<db::pg_store>(io_.get_executor(), std::move(options));
  engine_ports ports;
  ports.store = store_.get();
  engine_ = std::make_unique<engine>(io_.get_executor(), cfg, *log_, ports);
  boost::asio::co_spawn(io_, engine_->async_run(), [this](std::exception_ptr) { io_.stop(); });
  thread_ = std::thread([this] { io_.run(); });
  running_ = true;
}

void engine_harness::stop() {
  boost::asio::post(io_, [this] { engine_->request_stop(); });
  thread_.join();
  running_ = false;
}

std::int64_t engine_harness::enqueue(std::int64_t lead, const std::string& event, const std::string& payload,
                                     const std::string& provider, const std::string& destination) {
  db.query("SELECT enqueue_event_delivery($1, $2, $3, $4::jsonb, $5)",
           {std::to_string(lead), provider, event, payload, destination});
  return db.scalar("SELECT id FROM event_delivery WHERE lead_project_id = $1 AND provider = $2 AND event_name = $3",
                   {std::to_string(lead), provider, event});
}

std::string engine_harness::state_of(std::int64_t id) const {
  return std::string(db.query("SELECT state FROM event_delivery WHERE id = $1", {std::to_string(id)}).text(0, 0));
}

std::string engine_harness::column_of(std::int64_t id, const std::string& column) const {
  // `column` is a name the test wrote, never input.
  return std::string(
      db.query("SELECT coalesce(" + column + "::text, '') FROM event_delivery WHERE id = $1", {std::to_string(id)})
          .text(0, 0));
}

long long engine_harness::attempts_of(std::int64_t id) const {
  return db.scalar("SELECT attempts FROM event_delivery WHERE id = $1", {std::to_string(id)});
}

bool engine_harness::wait_state(std::int64_t id, const std::string& state, std::chrono::milliseconds timeout) const {
  return wait_for([&] { return state_of(id) == state; }, timeout);
}

std::string engine_harness::logs() const { return log_stream_.text(); }

std::size_t engine_harness::skipped_claims() const {
  const std::string text = logs();
  constexpr std::string_view line = "claim skipped paused destinations";
  std::size_t n = 0;
  for (auto at = text.find(line); at != std::string::npos; at = text.find(line, at + 1)) ++n;
  return n;
}

bool engine_harness::claims_skipped_paused_since(std::size_t count_before) const {
  return wait_for([&] { return skipped_claims() >= count_before + 2; }, std::chrono::seconds(10));
}

std::uint64_t engine_harness::claim_statements() const { return engine_->metrics_snapshot().claim_seconds.count(); }

std::string engine_harness::metrics_text() const { return engine_->metrics_snapshot().render(); }

}  // namespace outbox::test
