// The container and Kubernetes files keep their promises (issue 12, stumble 7):
// the Dockerfile's USER is numeric and is the Kubernetes example's runAsUser,
// the build stage installs only build dependencies and the runtime stage the
// runtime libraries, the health check's start period fits a long `run
// --migrate`, and the Deployment runs as non-root on a read-only root file
// system, probes /readyz and /healthz on their own port, reads its secrets
// from a Secret and leaves the shutdown grace period time to finish. The
// example's environment is parsed by the dispatcher's own configuration loader.
// The Docker engine does not run here: the Dockerfile is checked as text.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "dispatcher/config/config.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/dockerfile.hpp"
#include "tests/support/python_process.hpp"

#ifndef OUTBOX_SOURCE_DIR
#error "OUTBOX_SOURCE_DIR must name the source tree"
#endif

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace deployment_files_test {

using namespace std::chrono_literals;
using nlohmann::json;
using outbox::test::parse_dockerfile;
using outbox::test::run_python;
using outbox::test::stage;

namespace {

const std::string source_dir = OUTBOX_SOURCE_DIR;

// What `run --migrate` may wait before /healthz answers: the connect (10 s,
// dispatcher/cli/cli_run.cpp), another replica's migration lock (60 s) and one
// migration statement at its limit (60 s; db/migrations.cpp).
constexpr auto longest_start = 10s + 60s + 60s;
// After the grace period: up to 6 s to record outcomes and up to 10 s for the
// last background tasks (dispatcher/engine/engine.cpp, async_drain), plus a margin.
constexpr auto shutdown_beyond_grace = 20s;

std::set<std::string> words(const std::string& text) {
  std::set<std::string> out;
  std::istringstream in(text);
  for (std::string w; in >> w;) out.insert(w);
  return out;
}

// A Docker duration ("300s", "5m", "1m30s") in seconds; nullopt when unreadable.
std::optional<std::chrono::seconds> docker_duration(const std::string& text) {
  std::chrono::seconds total{0};
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t used = 0;
    long long n = 0;
    try {
      n = std::stoll(text.substr(at), &used);
    } catch (const std::exception&) {
      return std::nullopt;
    }
    at += used;
    if (at >= text.size()) return std::nullopt;
    const char unit = text[at++];
    if (unit == 's') total += std::chrono::seconds(n);
    else if (unit == 'm') total += std::chrono::minutes(n);
    else if (unit == 'h') total += std::chrono::hours(n);
    else return std::nullopt;
  }
  return total;
}

// The value of `--name=value` among HEALTHCHECK's options.
std::string option(const std::string& args, const std::string& name) {
  const auto at = args.find("--" + name + "=");
  if (at == std::string::npos) return "";
  const auto from = at + name.size() + 3;
  return args.substr(from, args.find_first_of(" \t", from) - from);
}

std::string run_checked_python(const std::vector<std::string>& args) {
  const auto r = run_python(args, {}, 60s);
  INFO(r.command << "\n" << r.err);
  REQUIRE_MESSAGE(r.exit_code == 0, "python3 with python3-yaml is needed (scripts/setup.sh installs it)");
  return r.out;
}

// `scripts/setup.sh --list build|test`: that part's packages.
std::set<std::string> setup_packages(const std::string& part) {
  return words(run_checked_python({"-c",
                                   "import subprocess, sys; sys.stdout.write(subprocess.run(['bash', sys.argv[1], "
                                   "'--list', sys.argv[2]], check=True, capture_output=True, text=True).stdout)",
                                   source_dir + "/scripts/setup.sh", part}));
}

// Every YAML document of examples/kubernetes, as JSON, by kind.
std::map<std::string, json> kubernetes_example() {
  const auto out = run_checked_python(
      {"-c",
       "import glob, json, sys, yaml\n"
       "docs = [d for f in sorted(glob.glob(sys.argv[1] + '/*.yaml')) for d in yaml.safe_load_all(open(f)) if d]\n"
       "print(json.dumps(docs))",
       source_dir + "/examples/kubernetes"});
  std::map<std::string, json> by_kind;
  for (const auto& d : json::parse(out)) by_kind[d.at("kind").get<std::string>()] = d;
  return by_kind;
}

const stage& runtime_stage(const std::vector<stage>& stages) { return stages.back(); }

std::string final_user(const std::vector<stage>& stages) {
  const auto users = runtime_stage(stages).all("USER");
  return users.empty() ? "" : users.back();
}

}  // namespace

TEST_CASE("Dockerfile: the runtime stage's environment, as the benchmarks and the image smoke test apply it") {
  const auto env = outbox::test::image_environment(outbox::test::read_whole_file(source_dir + "/Dockerfile"));
  const std::map<std::string, std::string> by_name(env.begin(), env.end());
  CHECK(by_name.at("OUTBOX_METRICS_ADDRESS") == "0.0.0.0:9464");
  // GnuTLS, which libpq loads through libldap and nothing uses, skips its initialization.
  CHECK(by_name.at("GNUTLS_NO_IMPLICIT_INIT") == "1");
  // Both forms of ENV, only the last stage's.
  const auto parsed =
      outbox::test::image_environment("FROM a AS build\nENV BUILD_ONLY=1\nFROM b\nENV A=1 B=two\nENV C three words\n");
  CHECK(parsed == std::vector<std::pair<std::string, std::string>>{{"A", "1"}, {"B", "two"}, {"C", "three words"}});
}

TEST_CASE("Dockerfile: numeric USER 10001:10001 in the runtime stage") {
  const auto stages = parse_dockerfile(outbox::test::read_whole_file(source_dir + "/Dockerfile"));
  REQUIRE(stages.size() == 2);
  // Kubernetes refuses runAsNonRoot for a user name: it cannot verify the uid.
  CHECK(final_user(stages) == "10001:10001");
  CHECK(runtime_stage(stages).runs().find("--uid 10001") != std::string::npos);  // /etc/passwd agrees
  CHECK(runtime_stage(stages).runs().find("--gid 10001") != std::string::npos);
}

TEST_CASE("Dockerfile: the image carries the user data module where the dispatcher looks for it") {
  const auto stages = parse_dockerfile(outbox::test::read_whole_file(source_dir + "/Dockerfile"));
  REQUIRE(stages.size() == 2);
  // Building the executable builds the module (add_dependencies); both are stripped.
  CHECK(stages[0].runs().find("--target dispatcher") != std::string::npos);
  CHECK(stages[0].runs().find("strip /build/dispatcher /build/dispatcher-user-data.so") != std::string::npos);
  const auto copies = runtime_stage(stages).all("COPY");
  const auto copied = [&](const std::string& args) {
    return std::find(copies.begin(), copies.end(), args) != copies.end();
  };
  CHECK(copied("--from=build /build/dispatcher /usr/local/bin/dispatcher"));
  // providers/user_data/user_data_loader.cpp: ../lib/dispatcher/ beside the executable's directory.
  CHECK(copied("--from=build /build/dispatcher-user-data.so /usr/local/lib/dispatcher/dispatcher-user-data.so"));
}

TEST_CASE("Dockerfile: the build stage installs build dependencies only, the runtime stage the runtime libraries") {
  const auto stages = parse_dockerfile(outbox::test::read_whole_file(source_dir + "/Dockerfile"));
  REQUIRE(stages.size() == 2);
  CHECK(stages[0].runs().find("scripts/setup.sh --build-only") != std::string::npos);
  const auto build = setup_packages("build");
  const auto test = setup_packages("test");
  for (const auto& needed : {"build-essential", "cmake", "ninja-build", "libpq-dev", "libboost1.81-dev", "libssl-dev",
                             "libicu-dev", "iso-codes", "libphonenumber8", "python3"}) {
    CHECK_MESSAGE(build.contains(needed), needed);
  }
  for (const auto& p : build) {
    INFO("build package " << p);
    CHECK(!p.starts_with("postgresql"));
    CHECK(p.find("django") == std::string::npos);
    CHECK(!test.contains(p));
  }
  for (const auto& tested : {"postgresql-15", "python3-django", "python3-psycopg2", "python3-yaml", "doctest-dev"}) {
    CHECK_MESSAGE(test.contains(tested), tested);
  }

  const auto runtime = words(runtime_stage(stages).runs());
  for (const auto& lib :
       {"libpq5", "libssl3", "libicu72", "libphonenumber8", "libprotobuf32", "ca-certificates", "curl"}) {
    CHECK_MESSAGE(runtime.contains(lib), lib);
  }
  for (const auto& w : runtime) {
    INFO("runtime stage installs " << w);
    CHECK(!w.ends_with("-dev"));
    CHECK(!w.starts_with("postgresql"));
  }
}

TEST_CASE("Dockerfile: the health check probes /healthz on the metrics port after a start period that fits --migrate") {
  const auto stages = parse_dockerfile(outbox::test::read_whole_file(source_dir + "/Dockerfile"));
  REQUIRE(!stages.empty());
  const auto checks = runtime_stage(stages).all("HEALTHCHECK");
  REQUIRE(checks.size() == 1);
  const auto start_period = docker_duration(option(checks[0], "start-period"));
  REQUIRE(start_period.has_value());
  MESSAGE("HEALTHCHECK start period " << start_period->count() << " s; longest start " << longest_start.count()
                                      << " s");
  CHECK(*start_period >= 2 * longest_start);
  CHECK(checks[0].find("http://127.0.0.1:9464/healthz") != std::string::npos);
  const auto env = runtime_stage(stages).all("ENV");
  CHECK(std::find(env.begin(), env.end(), "OUTBOX_METRICS_ADDRESS=0.0.0.0:9464") != env.end());
  CHECK(words(runtime_stage(stages).all("EXPOSE").at(0)).contains("9464"));
}

namespace {

// The one container of the example's Deployment, and its pod spec.
struct pod_view {
  json pod;
  json container;

  // A securityContext field: the container's, else the pod's.
  [[nodiscard]] json security(const std::string& field) const {
    const auto own = container.value("securityContext", json::object());
    if (own.contains(field)) return own[field];
    return pod.value("securityContext", json::object()).value(field, json());
  }
  // The containerPort a probe's `port` (a name or a number) means.
  [[nodiscard]] int port_number(const json& port) const {
    if (port.is_number()) return port.get<int>();
    for (const auto& p : container.value("ports", json::array())) {
      if (p.value("name", "") == port.get<std::string>()) return p.at("containerPort").get<int>();
    }
    return -1;
  }
};

pod_view deployment_pod(const std::map<std::string, json>& k) {
  REQUIRE(k.contains("Deployment"));
  const auto& pod = k.at("Deployment").at("spec").at("template").at("spec");
  REQUIRE(pod.at("containers").size() == 1);
  return {pod, pod.at("containers").at(0)};
}

int port_of(const std::string& address) { return std::stoi(address.substr(address.rfind(':') + 1)); }

// The container's environment: the ConfigMap's data and the Secret's keys (envFrom).
outbox::environment example_environment(const std::map<std::string, json>& k) {
  REQUIRE(k.contains("ConfigMap"));
  REQUIRE(k.contains("Secret"));
  outbox::environment env;
  for (const auto& [key, value] : k.at("ConfigMap").at("data").items()) env[key] = value.get<std::string>();
  for (const auto& [key, value] : k.at("Secret").at("stringData").items()) {
    CHECK_MESSAGE(!env.contains(key), key << " is both in the ConfigMap and in the Secret");
    env[key] = value.get<std::string>();
  }
  return env;
}

}  // namespace

TEST_CASE("Kubernetes example: runs as the image's numeric user, non-root, on a read-only root file system") {
  const auto stages = parse_dockerfile(outbox::test::read_whole_file(source_dir + "/Dockerfile"));
  REQUIRE(!stages.empty());
  const auto user = final_user(stages);
  const auto colon = user.find(':');
  REQUIRE(colon != std::string::npos);
  const auto v = deployment_pod(kubernetes_example());
  CHECK(v.security("runAsNonRoot") == true);
  CHECK(v.security("runAsUser") == std::stoi(user.substr(0, colon)));
  CHECK(v.security("runAsGroup") == std::stoi(user.substr(colon + 1)));
  CHECK(v.container.at("securityContext").value("readOnlyRootFilesystem", false));
  CHECK(v.container.at("securityContext").value("allowPrivilegeEscalation", true) == false);
  CHECK(v.container.at("securityContext").at("capabilities").at("drop") == json::array({"ALL"}));
}

TEST_CASE("Kubernetes example: readiness on /readyz, liveness on /healthz, on the probe listener of their own") {
  const auto k = kubernetes_example();
  const auto v = deployment_pod(k);
  const auto cfg = outbox::load_config(example_environment(k));
  REQUIRE(cfg.metrics_address.has_value());
  REQUIRE(cfg.probe_address.has_value());
  const int metrics_port = port_of(*cfg.metrics_address);
  const int probe_port = port_of(*cfg.probe_address);
  CHECK(probe_port != metrics_port);
  CHECK(cfg.probe_address->starts_with("0.0.0.0:"));  // the kubelet probes the pod's IP
  const auto check_probe = [&](const char* probe, const char* path) {
    INFO(probe);
    REQUIRE(v.container.contains(probe));
    const auto& get = v.container.at(probe).at("httpGet");
    CHECK(get.at("path") == path);
    // Not the metrics port: a flood there must not fail the probes (OUTBOX_PROBE_ADDRESS).
    CHECK(v.port_number(get.at("port")) == probe_port);
  };
  check_probe("readinessProbe", "/readyz");
  check_probe("livenessProbe", "/healthz");
  // Liveness must not kill a replica that is still migrating: the start-up probe covers the longest start.
  check_probe("startupProbe", "/healthz");
  const auto& startup = v.container.at("startupProbe");
  const auto budget = std::chrono::seconds(startup.value("periodSeconds", 10) * startup.value("failureThreshold", 3));
  CHECK(budget >= 2 * longest_start);
  REQUIRE(k.contains("Service"));
  CHECK(v.port_number(k.at("Service").at("spec").at("ports").at(0).at("targetPort")) == metrics_port);
}

TEST_CASE("Kubernetes example: DATABASE_URL and tokens come from a Secret; the stop timeout exceeds the grace") {
  const auto k = kubernetes_example();
  const auto v = deployment_pod(k);
  const auto env = example_environment(k);
  const auto cfg = outbox::load_config(env);  // throws on an unknown or invalid setting
  CHECK(cfg.destinations.size() == 2);

  std::set<std::string> sources;
  for (const auto& from : v.container.at("envFrom")) {
    if (from.contains("configMapRef")) sources.insert("ConfigMap/" + from["configMapRef"]["name"].get<std::string>());
    if (from.contains("secretRef")) sources.insert("Secret/" + from["secretRef"]["name"].get<std::string>());
  }
  CHECK(sources.contains("ConfigMap/" + k.at("ConfigMap").at("metadata").at("name").get<std::string>()));
  CHECK(sources.contains("Secret/" + k.at("Secret").at("metadata").at("name").get<std::string>()));
  CHECK(!v.container.contains("env"));  // no literal value beside them, e.g. a DATABASE_URL with its password
  const auto& secret = k.at("Secret").at("stringData");
  CHECK(secret.contains("DATABASE_URL"));
  CHECK(secret.contains("OUTBOX_DEST__META__DEFAULT__ACCESS_TOKEN"));
  CHECK(secret.contains("OUTBOX_DEST__WEBHOOK__DEFAULT__SECRET"));
  for (const auto& [key, value] : k.at("ConfigMap").at("data").items()) {
    INFO("ConfigMap key " << key);
    CHECK(key.find("SECRET") == std::string::npos);
    CHECK(key.find("TOKEN") == std::string::npos);
    CHECK(key != "DATABASE_URL");
  }
  // The placeholder Secret is an example only: `kubectl apply -k` must not create it.
  REQUIRE(k.contains("Kustomization"));
  const auto resources = k.at("Kustomization").at("resources");
  CHECK(std::find(resources.begin(), resources.end(), "secret.example.yaml") == resources.end());
  CHECK(std::find(resources.begin(), resources.end(), "deployment.yaml") != resources.end());

  const auto stop_timeout = std::chrono::seconds(v.pod.at("terminationGracePeriodSeconds").get<int>());
  MESSAGE("terminationGracePeriodSeconds " << stop_timeout.count() << " s, shutdown grace "
                                           << cfg.shutdown_grace.count() << " s");
  CHECK(stop_timeout >= cfg.shutdown_grace + shutdown_beyond_grace);
}

TEST_CASE(
    "Kubernetes example: the ServiceMonitor and the scrape configuration label the series job=outbox-dispatcher") {
  const auto k = kubernetes_example();
  const auto& service = k.at("Service");
  const auto& monitor = k.at("ServiceMonitor").at("spec");
  // The operator takes the job label from the Service's label that jobLabel names: the one the alerts select.
  const std::string job_label = monitor.at("jobLabel");
  CHECK(service.at("metadata").at("labels").at(job_label) == "outbox-dispatcher");
  CHECK(monitor.at("selector").at("matchLabels") == service.at("metadata").at("labels"));
  CHECK(monitor.at("endpoints").at(0).at("port") == service.at("spec").at("ports").at(0).at("name"));
  // Prometheus without the operator: the same job, and the keep rule matches that Service's label and port.
  const auto prometheus = json::parse(
      run_checked_python({"-c", "import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))",
                          source_dir + "/examples/monitoring/prometheus-kubernetes.yml"}));
  const auto& job = prometheus.at("scrape_configs").at(0);
  CHECK(job.at("job_name") == "outbox-dispatcher");
  const auto& keep = job.at("relabel_configs").at(0);
  CHECK(keep.at("action") == "keep");
  CHECK(keep.at("regex") == service.at("metadata").at("labels").at("app.kubernetes.io/name").get<std::string>() + ";" +
                                service.at("spec").at("ports").at(0).at("name").get<std::string>());
  // And every alert selects that job (alerts_test.yml runs them on series labelled so).
  const auto rules = outbox::test::read_whole_file(source_dir + "/examples/monitoring/alerts.yml");
  std::size_t selects = 0;
  for (auto at = rules.find("job=\""); at != std::string::npos; at = rules.find("job=\"", at + 1)) {
    CHECK(rules.compare(at, 23, "job=\"outbox-dispatcher\"") == 0);
    ++selects;
  }
  CHECK(selects >= 10);
}

}  // namespace deployment_files_test
