#include "colo/sched/store.h"

#include <sqlite3.h>

#include <chrono>
#include <functional>
#include <cstdlib>
#include <stdexcept>
#include <thread>

#include "colo/core/error.h"
#include "colo/core/files.h"
#include "colo/core/stopwatch.h"
#include "colo/sched/job_progress.h"

namespace colo::sched {
namespace {

const char* kSchema = R"(
CREATE TABLE IF NOT EXISTS jobs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  spec TEXT NOT NULL,
  state TEXT NOT NULL,
  priority INTEGER NOT NULL DEFAULT 0,
  submit_s REAL NOT NULL,
  start_s REAL,
  end_s REAL,
  gpu INTEGER NOT NULL DEFAULT -1,
  pid INTEGER NOT NULL DEFAULT 0,
  exit_code INTEGER,
  reason TEXT NOT NULL DEFAULT '',
  attempts INTEGER NOT NULL DEFAULT 0,
  oom_deaths INTEGER NOT NULL DEFAULT 0,
  peak_mem_bytes INTEGER,
  energy_j REAL NOT NULL DEFAULT 0,
  log_path TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS jobs_state ON jobs(state);
CREATE TABLE IF NOT EXISTS submitted_from (
  source TEXT NOT NULL,
  job_id INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS submitted_from_source ON submitted_from(source);
CREATE TABLE IF NOT EXISTS runs (
  job_id INTEGER NOT NULL,
  start_s REAL NOT NULL,
  end_s REAL,
  state TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_job ON runs(job_id);
CREATE TABLE IF NOT EXISTS gpu_energy (
  gpu INTEGER PRIMARY KEY,
  uuid TEXT NOT NULL,
  counter_j REAL NOT NULL,
  unix_s REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS model_estimates (
  key TEXT PRIMARY KEY,
  bytes INTEGER,
  reason TEXT NOT NULL DEFAULT '',
  seconds REAL NOT NULL DEFAULT 0,
  made_s REAL NOT NULL
);
)";

// A prepared statement, finalised on scope exit.
class Statement {
 public:
  Statement(sqlite3* db, const std::string& sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt_, nullptr) != SQLITE_OK) {
      throw std::runtime_error(std::string("job store: ") + sqlite3_errmsg(db));
    }
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement& bind(int i, int64_t v) { sqlite3_bind_int64(stmt_, i, v); return *this; }
  Statement& bind(int i, double v) { sqlite3_bind_double(stmt_, i, v); return *this; }
  Statement& bind(int i, const std::string& v) {
    sqlite3_bind_text(stmt_, i, v.c_str(), -1, SQLITE_TRANSIENT);
    return *this;
  }
  Statement& bind_null(int i) { sqlite3_bind_null(stmt_, i); return *this; }
  // Makes it ready to run again with new bindings.
  void reset() { sqlite3_reset(stmt_); }
  bool step() {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw std::runtime_error(std::string("job store: ") + sqlite3_errmsg(db_));
  }
  int64_t integer(int col) const { return sqlite3_column_int64(stmt_, col); }
  double real(int col) const { return sqlite3_column_double(stmt_, col); }
  bool null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  std::string text(int col) const {
    const unsigned char* t = sqlite3_column_text(stmt_, col);
    return t ? reinterpret_cast<const char*>(t) : "";
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

// Columns added after the first release, created in older stores on open.
const char* kAddedColumns[][2] = {
    {"gpus", "TEXT NOT NULL DEFAULT ''"},  // every GPU of the running attempt, "0,1"
    {"sm_share", "REAL"},                  // SM share measured when it settled
    {"false_ooms", "INTEGER NOT NULL DEFAULT 0"},
    {"samples_per_s", "REAL"},             // training throughput it reported (job_progress.h)
    {"alone_samples_per_s", "REAL"},       // ... alone: its own, or learned from history
    {"alone_measured", "INTEGER NOT NULL DEFAULT 0"},  // 1: alone_samples_per_s is its own
    {"data_wait_pct", "REAL"},             // percent of its training time waiting for data
    {"energy_while_down_j", "REAL NOT NULL DEFAULT 0"},  // of energy_j, split while no scheduler watched
    {"alone_sm_activity", "REAL"},         // its GPU's mean SM activity while it trained alone there
};

const char* kColumns =
    "id, spec, state, submit_s, start_s, end_s, gpu, pid, exit_code, reason, attempts, oom_deaths, "
    "peak_mem_bytes, energy_j, log_path, gpus, sm_share, false_ooms, samples_per_s, alone_samples_per_s, "
    "alone_measured, data_wait_pct, energy_while_down_j, alone_sm_activity";

std::vector<int> parse_gpu_list(const std::string& text) {
  std::vector<int> gpus;
  size_t start = 0;
  while (start < text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    if (comma > start) gpus.push_back(std::stoi(text.substr(start, comma - start)));
    start = comma + 1;
  }
  return gpus;
}

std::string gpu_list(const std::vector<int>& gpus) {
  std::string text;
  for (int g : gpus) text += (text.empty() ? "" : ",") + std::to_string(g);
  return text;
}

JobRecord read_row(const Statement& s) {
  JobRecord r;
  r.id = s.integer(0);
  r.spec = job_spec_from_json(nlohmann::json::parse(s.text(1)));
  r.state = job_state_from_string(s.text(2)).value_or(JobState::kFailed);
  r.submit_s = s.real(3);
  if (!s.null(4)) r.start_s = s.real(4);
  if (!s.null(5)) r.end_s = s.real(5);
  r.gpu = static_cast<int>(s.integer(6));
  r.pid = static_cast<int>(s.integer(7));
  if (!s.null(8)) r.exit_code = static_cast<int>(s.integer(8));
  r.reason = s.text(9);
  r.attempts = static_cast<int>(s.integer(10));
  r.oom_deaths = static_cast<int>(s.integer(11));
  if (!s.null(12)) r.peak_mem_bytes = s.integer(12);
  r.energy_j = s.real(13);
  r.log_path = s.text(14);
  r.gpus = parse_gpu_list(s.text(15));
  if (r.gpus.empty() && r.gpu >= 0) r.gpus = {r.gpu};
  if (!s.null(16)) r.sm_share = s.real(16);
  r.false_ooms = static_cast<int>(s.integer(17));
  if (!s.null(18)) r.samples_per_s = s.real(18);
  if (!s.null(19)) r.alone_samples_per_s = s.real(19);
  r.alone_measured = s.integer(20) != 0;
  if (!s.null(21)) r.data_wait_pct = s.real(21);
  if (!s.null(23)) r.alone_sm_activity = s.real(23);
  r.energy_while_down_j = s.real(22);
  return r;
}

}  // namespace

std::optional<double> JobRecord::slowdown() const { return sched::slowdown(alone_samples_per_s, samples_per_s); }

nlohmann::json to_json(const JobRecord& r) {
  nlohmann::json j = {{"id", r.id}, {"spec", to_json(r.spec)}, {"state", to_string(r.state)},
                      {"submit_s", r.submit_s}, {"gpu", r.gpu}, {"attempts", r.attempts},
                      {"oom_deaths", r.oom_deaths}, {"reason", r.reason}, {"energy_j", r.energy_j},
                      {"log", r.log_path}};
  if (r.start_s) j["start_s"] = *r.start_s;
  if (r.end_s) j["end_s"] = *r.end_s;
  if (r.exit_code) j["exit_code"] = *r.exit_code;
  if (r.peak_mem_bytes) j["peak_mem_bytes"] = *r.peak_mem_bytes;
  if (!r.gpus.empty()) j["gpus"] = r.gpus;
  if (r.sm_share) j["sm_share"] = *r.sm_share;
  if (r.false_ooms) j["false_ooms"] = r.false_ooms;
  if (r.samples_per_s) j["samples_per_s"] = *r.samples_per_s;
  if (r.alone_samples_per_s) j["alone_samples_per_s"] = *r.alone_samples_per_s;
  if (auto factor = r.slowdown()) j["slowdown"] = *factor;
  if (r.data_wait_pct) j["data_wait_pct"] = *r.data_wait_pct;
  if (r.alone_sm_activity) j["alone_sm_activity"] = *r.alone_sm_activity;
  if (r.energy_while_down_j > 0) j["energy_while_down_j"] = r.energy_while_down_j;
  return j;
}

std::string state_directory() {
  const char* state = std::getenv("XDG_STATE_HOME");
  const char* home = std::getenv("HOME");
  std::string base = state && *state ? state : std::string(home ? home : "/tmp") + "/.local/state";
  return base + "/colo";
}

std::string default_store_path() { return state_directory() + "/jobs.db"; }

JobStore::JobStore(const std::string& path) : path_(path) {
  size_t slash = path.find_last_of('/');
  if (slash != std::string::npos && slash > 0) {
    std::string error = make_directories(path.substr(0, slash));
    if (!error.empty()) throw InputError(path, "", "cannot create the store's directory: " + error);
  }
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK) {
    std::string message = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw InputError(path, "", "cannot open job store: " + message);
  }
  sqlite3_busy_timeout(db_, 10000);
  try {
    // Processes that open a new store at once (the daemon starting, a
    // submit) take turns: SQLite answers "locked" without waiting while
    // another switches the file to WAL, and the schema and its added
    // columns are checked and made in one transaction.
    exec_when_free("PRAGMA journal_mode=WAL;");
    exec("PRAGMA synchronous=NORMAL;");
    exec_when_free("BEGIN IMMEDIATE;");
    try {
      exec(kSchema);
      for (const auto& [name, declaration] : kAddedColumns) {
        Statement columns(db_, "SELECT 1 FROM pragma_table_info('jobs') WHERE name = ?");
        columns.bind(1, std::string(name));
        if (!columns.step()) exec(std::string("ALTER TABLE jobs ADD COLUMN ") + name + " " + declaration + ";");
      }
      exec("COMMIT;");
    } catch (const std::runtime_error&) {
      sqlite3_exec(db_, "ROLLBACK;", nullptr, nullptr, nullptr);
      throw;
    }
  } catch (const std::runtime_error& e) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw InputError(path, "", std::string("not a usable colo job store: ") + e.what());
  }
}

JobStore::~JobStore() {
  if (db_) sqlite3_close(db_);
}

void JobStore::exec_when_free(const std::string& sql) const { exec(sql, 10); }

void JobStore::exec(const std::string& sql, double retry_locked_s) const {
  Stopwatch waited;
  for (;;) {
    char* error = nullptr;
    const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error);
    if (rc == SQLITE_OK) return;
    std::string message = error ? error : sqlite3_errstr(rc);
    sqlite3_free(error);
    const int primary = rc & 0xff;
    if ((primary != SQLITE_BUSY && primary != SQLITE_LOCKED) || waited.elapsed_s() >= retry_locked_s) {
      throw std::runtime_error("job store: " + message);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::vector<int64_t> JobStore::submitted_from(const std::string& source) const {
  std::vector<int64_t> ids;
  Statement s(db_, "SELECT job_id FROM submitted_from WHERE source = ? ORDER BY job_id");
  s.bind(1, source);
  while (s.step()) ids.push_back(s.integer(0));
  return ids;
}

std::vector<int64_t> JobStore::submit(const std::vector<JobSpec>& specs, const std::string& source) {
  std::vector<int64_t> ids;
  exec("BEGIN IMMEDIATE;");
  try {
    double now = unix_time_s();
    for (const auto& spec : specs) {
      for (const auto& one : expand_array(spec)) {
        Statement s(db_, "INSERT INTO jobs (spec, state, priority, submit_s) VALUES (?, 'PENDING', ?, ?)");
        s.bind(1, to_json(one).dump()).bind(2, int64_t{one.priority}).bind(3, now).step();
        ids.push_back(sqlite3_last_insert_rowid(db_));
        if (!source.empty()) {
          Statement from(db_, "INSERT INTO submitted_from (source, job_id) VALUES (?, ?)");
          from.bind(1, source).bind(2, ids.back()).step();
        }
      }
    }
    exec("COMMIT;");
  } catch (...) {
    exec("ROLLBACK;");
    throw;
  }
  return ids;
}

std::optional<JobRecord> JobStore::get(int64_t id) const {
  Statement s(db_, std::string("SELECT ") + kColumns + " FROM jobs WHERE id = ?");
  s.bind(1, id);
  if (!s.step()) return std::nullopt;
  return read_row(s);
}

std::vector<JobRecord> JobStore::list(const std::vector<JobState>& states) const {
  std::string sql = std::string("SELECT ") + kColumns + " FROM jobs";
  if (!states.empty()) {
    sql += " WHERE state IN (";
    for (size_t i = 0; i < states.size(); ++i) sql += (i ? ",'" : "'") + to_string(states[i]) + "'";
    sql += ")";
  }
  Statement s(db_, sql + " ORDER BY id");
  std::vector<JobRecord> out;
  while (s.step()) out.push_back(read_row(s));
  return out;
}

void JobStore::transaction(const std::function<void()>& body) {
  exec("BEGIN IMMEDIATE;");
  try {
    body();
    exec("COMMIT;");
  } catch (...) {
    exec("ROLLBACK;");
    throw;
  }
}

void JobStore::close_run(int64_t id, JobState state, double end_s) {
  Statement s(db_, "UPDATE runs SET end_s = ?, state = ? WHERE job_id = ? AND end_s IS NULL");
  s.bind(1, end_s).bind(2, to_string(state)).bind(3, id).step();
}

bool JobStore::mark_running(int64_t id, const std::vector<int>& gpus, int pid, const std::string& log_path) {
  bool started = false;
  transaction([&] {
    double now = unix_time_s();
    Statement s(db_,
                "UPDATE jobs SET state = 'RUNNING', start_s = ?, end_s = NULL, gpu = ?, pid = ?, log_path = ?, "
                "attempts = attempts + 1, reason = '', gpus = ? "
                "WHERE id = ? AND state IN ('PENDING', 'REQUEUED', 'OUT_OF_MEMORY')");
    s.bind(1, now).bind(2, int64_t{gpus.empty() ? -1 : gpus.front()}).bind(3, int64_t{pid});
    s.bind(4, log_path).bind(5, gpu_list(gpus)).bind(6, id).step();
    started = sqlite3_changes(db_) == 1;
    if (!started) return;
    Statement run(db_, "INSERT INTO runs (job_id, start_s, state) VALUES (?, ?, 'RUNNING')");
    run.bind(1, id).bind(2, now).step();
  });
  return started;
}

std::vector<JobRun> JobStore::runs(int64_t id) const {
  Statement s(db_, "SELECT start_s, end_s, state FROM runs WHERE job_id = ? ORDER BY rowid");
  s.bind(1, id);
  std::vector<JobRun> out;
  while (s.step()) {
    JobRun run;
    run.start_s = s.real(0);
    if (!s.null(1)) run.end_s = s.real(1);
    run.state = job_state_from_string(s.text(2)).value_or(JobState::kFailed);
    out.push_back(run);
  }
  return out;
}

void JobStore::set_waiting_reason(int64_t id, const std::string& reason) {
  Statement s(db_, "UPDATE jobs SET reason = ? WHERE id = ? AND state IN ('PENDING', 'REQUEUED', 'OUT_OF_MEMORY')");
  s.bind(1, reason).bind(2, id).step();
}

void JobStore::count_false_oom(int64_t id) {
  Statement s(db_, "UPDATE jobs SET false_ooms = false_ooms + 1 WHERE id = ?");
  s.bind(1, id).step();
}

void JobStore::record_sm_share(int64_t id, double share) {
  Statement s(db_, "UPDATE jobs SET sm_share = ? WHERE id = ?");
  s.bind(1, share).bind(2, id).step();
}

void JobStore::record_alone_sm_activity(int64_t id, double activity) {
  Statement(db_, "UPDATE jobs SET alone_sm_activity = ?1 WHERE id = ?2").bind(1, activity).bind(2, id).step();
}

void JobStore::record_data_wait(int64_t id, double percent) {
  Statement(db_, "UPDATE jobs SET data_wait_pct = ?1 WHERE id = ?2").bind(1, percent).bind(2, id).step();
}

void JobStore::record_throughput(int64_t id, std::optional<double> samples_per_s,
                                 std::optional<double> alone_samples_per_s, bool alone_measured) {
  Statement s(db_, "UPDATE jobs SET samples_per_s = ?1, alone_samples_per_s = ?2, alone_measured = ?3 WHERE id = ?4");
  if (samples_per_s) {
    s.bind(1, *samples_per_s);
  } else {
    s.bind_null(1);
  }
  if (alone_samples_per_s) {
    s.bind(2, *alone_samples_per_s);
  } else {
    s.bind_null(2);
  }
  s.bind(3, static_cast<int64_t>(alone_measured)).bind(4, id).step();
}

void JobStore::mark_finished(int64_t id, JobState state, std::optional<int> exit_code, const std::string& reason,
                             std::optional<int64_t> peak_mem_bytes, double energy_j, bool died_of_oom) {
  transaction([&] {
    double now = unix_time_s();
    Statement s(db_,
                "UPDATE jobs SET state = ?1, end_s = ?2, exit_code = ?3, reason = ?4, "
                "oom_deaths = oom_deaths + ?5, "
                "peak_mem_bytes = CASE WHEN ?6 IS NULL THEN peak_mem_bytes ELSE MAX(COALESCE(peak_mem_bytes, 0), ?6) END, "
                "energy_j = energy_j + ?7 WHERE id = ?8 AND state = 'RUNNING'");
    s.bind(1, to_string(state)).bind(2, now);
    if (exit_code) s.bind(3, int64_t{*exit_code}); else s.bind_null(3);
    s.bind(4, reason).bind(5, int64_t{state == JobState::kOutOfMemory || died_of_oom ? 1 : 0});
    if (peak_mem_bytes) s.bind(6, *peak_mem_bytes); else s.bind_null(6);
    s.bind(7, energy_j).bind(8, id).step();
    if (sqlite3_changes(db_) == 1) close_run(id, state, now);
  });
}

void JobStore::add_energy(const std::map<int64_t, double>& energy_j, const std::vector<GpuEnergyReading>& readings,
                          bool while_down) {
  transaction([&] {
    Statement job(db_, "UPDATE jobs SET energy_j = energy_j + ?1, energy_while_down_j = energy_while_down_j + ?2 "
                       "WHERE id = ?3");
    for (const auto& [id, joules] : energy_j) {
      job.reset();
      job.bind(1, joules).bind(2, while_down ? joules : 0.0).bind(3, id).step();
    }
    Statement gpu(db_, "INSERT OR REPLACE INTO gpu_energy (gpu, uuid, counter_j, unix_s) VALUES (?, ?, ?, ?)");
    for (const auto& r : readings) {
      gpu.reset();
      gpu.bind(1, int64_t{r.gpu}).bind(2, r.uuid).bind(3, r.counter_j).bind(4, r.unix_s).step();
    }
  });
}

std::vector<GpuEnergyReading> JobStore::gpu_energy_readings() const {
  Statement s(db_, "SELECT gpu, uuid, counter_j, unix_s FROM gpu_energy ORDER BY gpu");
  std::vector<GpuEnergyReading> readings;
  while (s.step()) readings.push_back({static_cast<int>(s.integer(0)), s.text(1), s.real(2), s.real(3)});
  return readings;
}

void JobStore::fail_waiting(int64_t id, const std::string& reason) {
  Statement s(db_,
              "UPDATE jobs SET state = 'FAILED', end_s = ?1, reason = ?2 "
              "WHERE id = ?3 AND state IN ('PENDING', 'REQUEUED', 'OUT_OF_MEMORY')");
  s.bind(1, unix_time_s()).bind(2, reason).bind(3, id).step();
}

void JobStore::correct_end_time(int64_t id, double end_s) {
  transaction([&] {
    Statement s(db_,
                "UPDATE jobs SET end_s = ?1 WHERE id = ?2 AND end_s > ?1 AND start_s <= ?1 "
                "AND state IN ('COMPLETED', 'FAILED', 'OUT_OF_MEMORY', 'CANCELLED')");
    s.bind(1, end_s).bind(2, id).step();
    if (sqlite3_changes(db_) != 1) return;
    Statement run(db_, "UPDATE runs SET end_s = ?1 WHERE rowid = (SELECT MAX(rowid) FROM runs WHERE job_id = ?2) "
                       "AND end_s > ?1 AND start_s <= ?1");
    run.bind(1, end_s).bind(2, id).step();
  });
}

void JobStore::mark_requeued(int64_t id, const std::string& reason) {
  transaction([&] {
    Statement s(db_, "UPDATE jobs SET state = 'REQUEUED', reason = ?, pid = 0 WHERE id = ? AND state = 'RUNNING'");
    s.bind(1, reason).bind(2, id).step();
    if (sqlite3_changes(db_) == 1) close_run(id, JobState::kRequeued, unix_time_s());
  });
}

std::optional<JobState> JobStore::cancel(int64_t id) {
  exec("BEGIN IMMEDIATE;");
  try {
    auto job = get(id);
    if (job && !is_final(job->state)) {
      double now = unix_time_s();
      Statement s(db_, "UPDATE jobs SET state = 'CANCELLED', end_s = ?, reason = 'cancelled by user' WHERE id = ?");
      s.bind(1, now).bind(2, id).step();
      close_run(id, JobState::kCancelled, now);
    }
    exec("COMMIT;");
    return job ? std::optional<JobState>(job->state) : std::nullopt;
  } catch (...) {
    exec("ROLLBACK;");
    throw;
  }
}

std::optional<ModelEstimate> JobStore::model_estimate(const std::string& key) const {
  Statement s(db_, "SELECT bytes, reason FROM model_estimates WHERE key = ?");
  s.bind(1, key);
  if (!s.step()) return std::nullopt;
  ModelEstimate e;
  if (!s.null(0)) e.bytes = s.integer(0);
  e.reason = s.text(1);
  return e;
}

void JobStore::record_model_estimate(const std::string& key, const ModelEstimate& estimate, double seconds) {
  Statement s(db_, "INSERT OR REPLACE INTO model_estimates (key, bytes, reason, seconds, made_s) VALUES (?, ?, ?, ?, ?)");
  s.bind(1, key);
  if (estimate.bytes) {
    s.bind(2, *estimate.bytes);
  } else {
    s.bind_null(2);
  }
  s.bind(3, estimate.reason).bind(4, seconds).bind(5, unix_time_s()).step();
}

bool JobStore::set_memory_estimate(int64_t id, int64_t mem_bytes) {
  exec("BEGIN IMMEDIATE;");
  try {
    Statement read(db_, "SELECT spec FROM jobs WHERE id = ? AND state IN ('PENDING', 'REQUEUED', 'OUT_OF_MEMORY', 'RUNNING')");
    read.bind(1, id);
    bool waiting = read.step();
    if (waiting) {
      JobSpec spec = job_spec_from_json(nlohmann::json::parse(read.text(0)));
      if (!spec.mem_bytes) {
        spec.mem_bytes = mem_bytes;
        Statement write(db_, "UPDATE jobs SET spec = ? WHERE id = ?");
        write.bind(1, to_json(spec).dump()).bind(2, id).step();
      } else {
        waiting = false;
      }
    }
    exec("COMMIT;");
    return waiting;
  } catch (...) {
    exec("ROLLBACK;");
    throw;
  }
}

}  // namespace colo::sched
