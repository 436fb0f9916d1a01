// The Django app as a CRM developer installs it: `pip install
// --no-build-isolation examples/django` into a fresh virtualenv (Debian's
// Django through --system-site-packages), a fresh project from `python -m
// django startproject` (django-admin) with only "outbox_events" added and a PostgreSQL database, and
// that project's own `manage.py test`, whose test enqueues a row and reads it
// back. No SCHEMA_DIR anywhere: the migrations come from inside the package,
// and they are byte for byte the repository's sql/NNNN_*.sql.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "tests/support/child_process.hpp"
#include "tests/support/external_tool.hpp"
#include "tests/support/pg_fixture.hpp"
#include "tests/support/python_process.hpp"

#ifndef OUTBOX_SOURCE_DIR
#error "OUTBOX_SOURCE_DIR must name the source tree"
#endif

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace django_package_e2e {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using outbox::test::run_tool;
using outbox::test::tool_result;

namespace {

const fs::path source_dir{OUTBOX_SOURCE_DIR};
const fs::path package_dir = source_dir / "examples" / "django";

// What the fresh project adds to the settings startproject wrote: the app and
// a PostgreSQL database (the libpq environment's server), nothing else.
std::string settings_addition(const std::string& database) {
  return "\n# Added by the test: the dispatcher's app and a PostgreSQL database.\n"
         "import os\n"
         "INSTALLED_APPS.append('outbox_events')\n"
         "DATABASES = {'default': {'ENGINE': 'django.db.backends.postgresql', 'NAME': '" +
         database +
         "',\n"
         "    'HOST': os.environ.get('PGHOST', ''), 'PORT': os.environ.get('PGPORT', ''),\n"
         "    'USER': os.environ.get('PGUSER', ''), 'PASSWORD': os.environ.get('PGPASSWORD', '')}}\n";
}

// The project's own test, as a CRM developer would write it.
constexpr const char* project_test = R"py(import sys
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.test import TestCase

import outbox_events
from outbox_events import enqueue_event
from outbox_events.models import EventDelivery


class OutboxEventsPackageTest(TestCase):
    def test_the_app_is_the_installed_package(self):
        installed = Path(outbox_events.__file__).resolve()
        self.assertTrue(installed.is_relative_to(Path(sys.prefix).resolve()), installed)
        self.assertFalse(hasattr(settings, "OUTBOX_EVENTS"))

    def test_an_enqueued_row_reads_back(self):
        with transaction.atomic():
            self.assertTrue(enqueue_event(42, "webhook", "Lead", {"value": "12.50", "currency": "EUR"}))
        row = EventDelivery.objects.get(lead_project_id=42, provider="webhook", event_name="Lead")
        self.assertEqual(row.state, "pending")
        self.assertEqual(row.destination, "default")
        self.assertEqual(row.payload["value"], "12.50")
        self.assertTrue(row.idempotency_key)
        self.assertFalse(enqueue_event(42, "webhook", "Lead", {"value": "99"}))
        self.assertEqual(EventDelivery.objects.filter(lead_project_id=42).count(), 1)
)py";

void write_file(const fs::path& path, const std::string& text, std::ios::openmode mode = std::ios::trunc) {
  std::ofstream out(path, std::ios::binary | mode);
  out << text;
  REQUIRE_MESSAGE(out.good(), "cannot write " << path);
}

void require_success(const tool_result& r) {
  INFO(r.command << "\nstdout:\n" << r.out << "\nstderr:\n" << r.err);
  REQUIRE(r.exit_code == 0);
}

// The fresh virtualenv's pip. --no-index: these machines reach no package
// index, and Debian's Django already satisfies the package's one dependency.
std::vector<std::string> pip(const fs::path& venv, std::vector<std::string> args) {
  std::vector<std::string> argv{(venv / "bin" / "pip").string()};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {"--no-build-isolation", "--no-index", "--no-input", "--disable-pip-version-check"});
  return argv;
}

std::string last_line(const std::string& text) {
  const auto end = text.find_last_not_of('\n');
  if (end == std::string::npos) return {};
  const auto start = text.rfind('\n', end);
  return text.substr(start == std::string::npos ? 0 : start + 1,
                     end + 1 - (start == std::string::npos ? 0 : start + 1));
}

std::vector<fs::path> migration_files(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (std::regex_match(e.path().filename().string(), std::regex(R"([0-9].*\.sql)"))) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

// Where the virtualenv's Python installed outbox_events.
fs::path installed_package(const fs::path& venv) {
  const auto r = run_tool({(venv / "bin" / "python").string(), "-c",
                           "import outbox_events, os; print(os.path.dirname(outbox_events.__file__))"},
                          60s, fs::temp_directory_path());
  require_success(r);
  return fs::path(r.out.substr(0, r.out.find('\n')));
}

std::string dispatcher_version() {
  const auto r = run_tool({OUTBOX_DISPATCHER_EXE, "--version"}, 10s);
  require_success(r);
  std::smatch m;
  REQUIRE(std::regex_search(r.out, m, std::regex(R"(^dispatcher (\d+\.\d+\.\d+) )")));
  return m[1];
}

}  // namespace

TEST_CASE("Django package: pip installs it into a fresh virtualenv, and a fresh project's manage.py test enqueues") {
  const fs::path work = outbox::test::make_temp_dir("django-package");
  const fs::path venv = work / "venv";
  require_success(
      run_tool({outbox::test::python_interpreter(), "-m", "venv", "--system-site-packages", venv.string()}, 120s));

  // The install line of docs/django.md, from the repository's folder.
  const auto install = run_tool(pip(venv, {"install", package_dir.string()}), 300s, work);
  require_success(install);
  MESSAGE("$ pip install --no-build-isolation examples/django\n" << last_line(install.out));
  {
    const auto show =
        run_tool({(venv / "bin" / "pip").string(), "show", "--disable-pip-version-check", "outbox-events"}, 60s, work);
    INFO(show.command << "\n" << show.out << show.err);
    CHECK(show.out.find("Version: " + dispatcher_version() + "\n") != std::string::npos);
  }

  // The package's migrations are the repository's, byte for byte, and all of them.
  const auto repository = migration_files(source_dir / "sql");
  const auto packaged = migration_files(installed_package(venv) / "sql");
  REQUIRE(!repository.empty());
  REQUIRE(packaged.size() == repository.size());
  for (std::size_t i = 0; i < repository.size(); ++i) {
    INFO(packaged[i]);
    CHECK(packaged[i].filename() == repository[i].filename());
    CHECK(outbox::test::read_whole_file(packaged[i]) == outbox::test::read_whole_file(repository[i]));
  }

  // A fresh project with the app added, tested by its own manage.py.
  const fs::path project = work / "project";
  fs::create_directory(project);
  // `python -m django` is django-admin: Debian's Django, seen through --system-site-packages, has its script outside
  // the virtualenv.
  require_success(
      run_tool({(venv / "bin" / "python").string(), "-m", "django", "startproject", "crmsite", "."}, 60s, project));
  const outbox::test::scratch_database db(false);  // empty: Django's test database gets the schema from the app
  write_file(project / "crmsite" / "settings.py", settings_addition(db.name()), std::ios::app);
  write_file(project / "crmsite" / "tests.py", project_test);
  const auto test =
      run_tool({(venv / "bin" / "python").string(), "manage.py", "test", "--noinput", "-v", "2"}, 300s, project);
  MESSAGE("$ python manage.py test --noinput -v 2\n" << test.out << test.err);
  require_success(test);
  CHECK(test.err.find("test_an_enqueued_row_reads_back (crmsite.tests.OutboxEventsPackageTest") != std::string::npos);
  CHECK(test.out.find("Applying outbox_events.0002_dispatcher_schema... OK") != std::string::npos);  // on stdout
  CHECK(test.err.find("Ran 2 tests") != std::string::npos);
  CHECK(test.err.find("\nOK") != std::string::npos);
  fs::remove_all(work);
}

TEST_CASE("Django package: built from a copy of the folder without the repository's sql/, it refuses, naming why") {
  const fs::path work = outbox::test::make_temp_dir("django-package-copy");
  const fs::path copy = work / "a" / "django";  // its ../../sql does not exist
  fs::create_directories(copy);
  for (const char* name : {"pyproject.toml", "setup.py"}) fs::copy_file(package_dir / name, copy / name);
  fs::copy(package_dir / "outbox_events", copy / "outbox_events", fs::copy_options::recursive);
  const fs::path venv = work / "venv";
  require_success(run_tool(
      {outbox::test::python_interpreter(), "-m", "venv", "--without-pip", "--system-site-packages", venv.string()},
      120s));
  // Debian's pip (python3-pip), run by the virtualenv's Python: no need to install pip into it.
  const auto wheel =
      run_tool({(venv / "bin" / "python").string(), "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                "--no-index", "--no-input", "-w", (work / "dist").string(), copy.string()},
               300s, work);
  INFO(wheel.command << "\n" << wheel.out << wheel.err);
  CHECK(wheel.exit_code != 0);
  CHECK((wheel.out + wheel.err).find("no dispatcher migrations (sql/NNNN_*.sql) in " + (work / "sql").string()) !=
        std::string::npos);
  const bool wheel_built =
      fs::exists(work / "dist") && std::any_of(fs::directory_iterator(work / "dist"), fs::directory_iterator(),
                                               [](const auto& e) { return e.path().extension() == ".whl"; });
  CHECK(!wheel_built);
  fs::remove_all(work);
}

}  // namespace django_package_e2e
