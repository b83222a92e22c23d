// How fast a core computes when it is busy only part of the time: threads
// pinned one per core each run bursts of fixed work, sleeping between
// bursts to hold a duty cycle, and report the CPU time one step took. Two
// kinds of work: a dependent integer chain (the core's clock alone), and
// passes over a 256 KiB buffer of its own (its caches too, which whatever
// the host runs on the core while it sleeps may evict). On a host whose cores clock down while partly
// idle, the CPU time per step grows as the duty cycle falls: a shared
// producer that leaves the cores partly idle then pays more CPU for the
// same decoding than jobs that keep them saturated (issue 19, the CPU ratio).
//
//   g++ -O2 -pthread bench/data/duty_cycle_probe.cpp -o /tmp/duty_cycle_probe
//   /tmp/duty_cycle_probe --cores 0-3 --seconds 3 --burst-ms 10 > duty.json
//
// Prints one JSON object: per kind of work and duty cycle, the median over
// threads of CPU nanoseconds per 1000 steps, and that relative to the
// saturated run.
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

double now_s(clockid_t clock) {
  timespec t{};
  clock_gettime(clock, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// A dependent chain the compiler cannot shorten: each step needs the last.
uint64_t chain(uint64_t x, int64_t steps) {
  for (int64_t i = 0; i < steps; ++i) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
  return x;
}

// `steps` passes' worth of a read-modify-write walk over `buffer` (64-byte
// strides), each step dependent on the last.
uint64_t walk(std::vector<uint64_t>& buffer, uint64_t x, int64_t steps) {
  const size_t n = buffer.size();
  for (int64_t i = 0; i < steps; ++i) {
    uint64_t& cell = buffer[(static_cast<size_t>(i) * 8 + (x & 7)) % n];
    cell += x;
    x = x * 6364136223846793005ULL + cell;
  }
  return x;
}

struct Result {
  double cpu_s = 0;
  int64_t steps = 0;
  uint64_t sink = 0;
};

// Runs on `core` for `seconds`: bursts of `steps_per_burst` steps of the
// chain, each followed by a sleep that makes the thread busy `duty` of the time.
void run(int core, bool touch_memory, double duty, double seconds, int64_t steps_per_burst, Result* out) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
  uint64_t x = static_cast<uint64_t>(core) + 1;
  std::vector<uint64_t> buffer(256 * 1024 / sizeof(uint64_t), 1);
  const double end = now_s(CLOCK_MONOTONIC) + seconds;
  while (now_s(CLOCK_MONOTONIC) < end) {
    const double cpu0 = now_s(CLOCK_THREAD_CPUTIME_ID), wall0 = now_s(CLOCK_MONOTONIC);
    x = touch_memory ? walk(buffer, x, steps_per_burst) : chain(x, steps_per_burst);
    out->cpu_s += now_s(CLOCK_THREAD_CPUTIME_ID) - cpu0;
    out->steps += steps_per_burst;
    if (duty < 1) {
      const double worked = now_s(CLOCK_MONOTONIC) - wall0;
      const double rest = worked * (1 - duty) / duty;
      timespec nap{static_cast<time_t>(rest), static_cast<long>((rest - static_cast<double>(static_cast<time_t>(rest))) * 1e9)};
      nanosleep(&nap, nullptr);
    }
  }
  out->sink = x;
}

std::vector<int> parse_cores(const std::string& text) {
  std::vector<int> cores;
  size_t at = 0;
  while (at < text.size()) {
    size_t comma = text.find(',', at);
    std::string part = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    size_t dash = part.find('-');
    int lo = std::atoi(part.c_str()), hi = dash == std::string::npos ? lo : std::atoi(part.c_str() + dash + 1);
    for (int c = lo; c <= hi; ++c) cores.push_back(c);
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return cores;
}

}  // namespace

int main(int argc, char** argv) {
  std::string cores_text = "0-3";
  double seconds = 3, burst_ms = 10;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--cores")) cores_text = argv[i + 1];
    if (!std::strcmp(argv[i], "--seconds")) seconds = std::atof(argv[i + 1]);
    if (!std::strcmp(argv[i], "--burst-ms")) burst_ms = std::atof(argv[i + 1]);
  }
  const std::vector<int> cores = parse_cores(cores_text);
  std::printf("{\"cores\": \"%s\", \"seconds\": %g, \"burst_ms\": %g, \"kernels\": {", cores_text.c_str(), seconds,
              burst_ms);
  for (bool touch_memory : {false, true}) {
    // Calibrate the steps of one burst on a saturated core.
    int64_t steps = 1 << 16;
    std::vector<uint64_t> buffer(256 * 1024 / sizeof(uint64_t), 1);
    for (;;) {
      const double t0 = now_s(CLOCK_THREAD_CPUTIME_ID);
      volatile uint64_t keep = touch_memory ? walk(buffer, 1, steps) : chain(1, steps);
      (void)keep;
      if (now_s(CLOCK_THREAD_CPUTIME_ID) - t0 >= burst_ms / 1000 || steps > (int64_t{1} << 40)) break;
      steps *= 2;
    }
    std::printf("%s\"%s\": {\"steps_per_burst\": %lld, \"duty\": [", touch_memory ? ", " : "",
                touch_memory ? "buffer_256k" : "chain", static_cast<long long>(steps));
    double saturated = 0;
    // Saturated first and last: the host's own drift over the run shows.
    const std::vector<double> duties = {1.0, 0.75, 0.5, 0.25, 1.0};
    for (size_t d = 0; d < duties.size(); ++d) {
      std::vector<Result> results(cores.size());
      std::vector<std::thread> threads;
      for (size_t i = 0; i < cores.size(); ++i) {
        threads.emplace_back(run, cores[i], touch_memory, duties[d], seconds, steps, &results[i]);
      }
      for (auto& t : threads) t.join();
      std::vector<double> per_k;
      for (const Result& r : results) per_k.push_back(r.cpu_s * 1e9 / static_cast<double>(r.steps) * 1000);
      std::sort(per_k.begin(), per_k.end());
      const double median = per_k[per_k.size() / 2];
      if (d == 0) saturated = median;
      std::printf("%s{\"duty\": %.2f, \"cpu_ns_per_1000_steps_median\": %.1f, \"relative_to_saturated\": %.3f, "
                  "\"threads\": [",
                  d ? ", " : "", duties[d], median, median / saturated);
      for (size_t i = 0; i < per_k.size(); ++i) std::printf("%s%.1f", i ? ", " : "", per_k[i]);
      std::printf("]}");
      std::fflush(stdout);
    }
    std::printf("]}");
  }
  std::printf("}}\n");
  return 0;
}
