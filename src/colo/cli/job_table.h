#pragma once
// The job table `colo run`, `colo replay` and `colo queue` print (like
// squeue: state, GPU, tries, run time, peak memory, exit, and the reason a
// job waits or ended), and the one way every table of colo shows a job name.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "colo/sched/store.h"

namespace colo::cli {

// Prints one row a job: its state, GPU, tries, run time, peak memory, the
// SM share it settled at ("-" when declared, predicted or not measured),
// its GPU's SM activity while it trained there alone ("-" if it never did),
// its training throughput, slowdown and data wait, its exit and reason.
void print_jobs(const std::vector<sched::JobRecord>& jobs);

// A job name as one table cell. Names come from job files and
// `colo submit --name` as they were written: a newline or tab in one would
// break the table's rows, an escape sequence would restyle the terminal.
// Control characters (C0, DEL, C1) and bytes that are not UTF-8 are shown
// escaped as C writes them (\n, \t, \r, \x1b, \u0085, \xff) and a backslash
// doubled, so the cell reads back unambiguously; every other character,
// UTF-8 included, is kept. Cut to at most `max_chars` characters (an escape
// counts its own), never inside a character or an escape.
std::string name_cell(const std::string& name, size_t max_chars = std::string::npos);

// The fields of a record the table shows, from colod's JSON (sched::to_json).
sched::JobRecord record_from_json(const nlohmann::json& j);

}  // namespace colo::cli
