#include "colo/data/loader_server.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include <sys/resource.h>
#include <unistd.h>
#include <zmq.hpp>

#include "colo/core/error.h"
#include "colo/core/files.h"
#include "colo/core/loader_start_group.h"
#include "colo/core/paths.h"
#include "colo/core/spec_table.h"
#include "colo/core/stopwatch.h"
#include "colo/core/this_thread.h"
#include "colo/data/loader_protocol.h"
#include "colo/data/loader_state.h"
#include "colo/data/shared_loader.h"
#include "colo/data/shared_ring.h"

namespace colo::data {
namespace {

double cpu_core_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6; };
  return s(usage.ru_utime) + s(usage.ru_stime);
}

// The longest a "hold" keeps a producer counted as read.
constexpr double kLongestHoldS = 600;

// How long a starting producer waits for one already at its address to answer.
constexpr double kOtherProducerAnswerS = 1.0;

// Whether a producer may be serving `address`: always for tcp://, for
// ipc:// only while its socket file exists.
bool may_be_served(const std::string& address) {
  const std::string ipc = "ipc://";
  if (address.compare(0, ipc.size(), ipc) != 0) return true;
  return std::filesystem::exists(address.substr(ipc.size()));
}

// Departed consumers whose last report `stats` still lists.
constexpr size_t kDepartedKept = 16;

// One consumer in `stats`: its figures from the heartbeat or bye that
// carried them (`reported`; none when it has not reported yet).
nlohmann::json consumer_report(int64_t id, int64_t skipped, const nlohmann::json& reported) {
  nlohmann::json one = {{"consumer", id}, {"chunks_skipped", skipped}};
  if (!reported.is_object() || !reported.contains("samples")) return one;
  double samples = reported.value("samples", 0.0), wait = reported.value("wait_s", 0.0);
  double elapsed = std::max(reported.value("elapsed_s", 0.0), 1e-9);
  one["samples"] = samples;
  one["samples_per_s"] = samples / elapsed;
  one["wait_pct"] = 100 * wait / elapsed;
  return one;
}

// `ahead` kept within the ring: at most all of it, and with pace fastest
// at most half (the other half is the slack of consumers behind the
// fastest).
int64_t ahead_within_ring(const LoaderServeSpec& spec, int64_t ahead) {
  const int64_t most = spec.pace == LoaderPace::fastest ? std::max<int64_t>(1, spec.buffer / 2) : spec.buffer;
  return std::clamp<int64_t>(ahead, 1, most);
}

// The ready file (LoaderServeSpec::ready_file), once the first ring-full is
// published. A file that cannot be written is reported on stderr and the
// producer serves on: its consumers need it; only a scheduler waiting for
// the file waits longer (it gives up waiting after a while).
void write_ready_file(const std::string& path, int64_t chunks, int64_t slots) {
  nlohmann::json ready = {{"chunks", chunks}, {"buffer_slots", slots}, {"unix_s", unix_time_s()}};
  try {
    write_file_atomically(path, ready.dump() + "\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "colo loader: cannot write the ready file %s (%s); serving anyway\n", path.c_str(), e.what());
  }
}

// Consumer c, new or left behind, starts at the oldest chunk held, up to
// the lag its pace allows (rejoin_at). Called with s.mutex held.
void start_as_late_joiner(LoaderState& s, Consumer& c, const LoaderServeSpec& spec) {
  const int64_t start = rejoin_at(s, spec, c.span);
  c.cursor = std::max(c.cursor, start);
  c.keep = std::max(c.keep, start);
  c.behind = false;
}

// Whether the slot of chunk `seq` is wanted within (or, by consumer c's
// overwrite_margin in loader_state.h, soon after) the producer's decode
// window, `ahead` past the newest chunk asked for. Called with s.mutex held.
bool slot_wanted_soon(const LoaderState& s, const LoaderServeSpec& spec, const Consumer& c, int64_t seq) {
  return seq + spec.buffer <= s.newest_asked + spec.ahead + overwrite_margin(spec, c.span, widest_span(s, c.span));
}

// Whether chunk c.cursor is one a consumer reading in place must not be
// given, with pace fastest: its slot is wanted soon. A slow job that read
// it in place would hold the faster ones to its own pace, chunk after
// chunk, without ever stalling long enough to be left behind. Called with
// s.mutex held.
bool about_to_be_overwritten(const LoaderState& s, const LoaderServeSpec& spec, const Consumer& c) {
  return spec.pace == LoaderPace::fastest && c.in_place && slot_wanted_soon(s, spec, c, c.cursor);
}

// Where such a consumer goes on instead: the newest chunk published that
// has been asked for (at least where a late joiner would start), but no
// further on than keeps the slots of the chunks its batch may still need
// (`span` from there) free of the chunks it holds, or it would wait for
// chunks the producer cannot make until it lets go of them. -1 when no
// such chunk is clear of the decode window: it reads on in order. Called
// with s.mutex held.
int64_t clear_of_overwriting(const LoaderState& s, const LoaderServeSpec& spec, const Consumer& c) {
  const int64_t newest = std::max(rejoin_at(s, spec, c.span), std::min(s.newest_asked, s.next_seq - 1));
  const int64_t target = std::min(newest, c.keep + spec.buffer - c.span);
  return target > c.cursor && !slot_wanted_soon(s, spec, c, target) ? target : -1;
}

// Consumer `id`, about to go (bye, or dropped), no longer counts as having
// asked in a start group not yet released, unless another consumer of its
// job is still there: the scheduler writes a smaller size for a job that
// ended, and counted too, it would let the group go one member early.
// Called with s.mutex held.
void leave_held_start_group(LoaderState& s, int64_t id) {
  const std::string& member = s.consumers.at(id).start_group_member;
  if (s.start_group.released || member.empty()) return;
  for (const auto& [other, c] : s.consumers) {
    if (other != id && c.start_group_member == member) return;
  }
  s.start_group.asked.erase(member);
}

// Forgets consumer `it` (it said bye, or was dropped); returns the next.
// Called with s.mutex held.
std::map<int64_t, Consumer>::iterator forget_consumer(LoaderState& s, std::map<int64_t, Consumer>::iterator it) {
  leave_held_start_group(s, it->first);
  auto next = s.consumers.erase(it);
  if (s.consumers.empty()) s.idle_since.restart();
  return next;
}

// The first field of a request (loader_protocol.h) whose value has the
// wrong type, said in words, or "" when all are right (or it is no object:
// that is answered as from an unknown consumer). A request read as it
// came would throw, and stop the producer for every consumer.
std::string malformed_field(const nlohmann::json& request) {
  if (!request.is_object()) return "";
  if (request.contains("op") && !request["op"].is_string()) return "\"op\" must be a string";
  for (const char* key : {"consumer", "seq", "keep", "span"}) {
    if (request.contains(key) && !request[key].is_number_integer()) {
      return "\"" + std::string(key) + "\" must be an integer";
    }
  }
  for (const char* key : {"samples", "wait_s", "elapsed_s", "seconds"}) {
    if (request.contains(key) && !request[key].is_number()) return "\"" + std::string(key) + "\" must be a number";
  }
  return "";
}

// How many of a start group's members have asked: of those the scheduler
// names as members now (a job that ended, even one that crashed before its
// consumers could say goodbye, is named no more), or all that asked when it
// names none.
size_t asked_members(const StartGroup& group) {
  if (group.members.empty()) return group.asked.size();
  size_t n = 0;
  for (const std::string& id : group.members) n += group.asked.count("job " + id);
  return n;
}

// Whether pending consumer c still waits for its start group
// (LoaderServeSpec::start_group_wait_s): until as many jobs have asked as
// the scheduler last wrote were launched (counting only the jobs it names,
// asked_members), or the wait is over; then the
// group is released (said on stderr when not all came) and each of its
// consumers starts as a late joiner would. Called with s.mutex held.
bool held_in_start_group(LoaderState& s, Consumer& c, const LoaderServeSpec& spec) {
  if (!c.in_start_group) return false;
  StartGroup& group = s.start_group;
  if (!group.released) {
    // The scheduler writes the size after its round, and again as members end.
    if (group.since_size_read.elapsed_s() >= 0.1) {
      group.size = read_start_group_size(start_group_size_file(spec.ready_file));
      group.members = read_start_group_members(start_group_size_file(spec.ready_file));
      group.since_size_read.restart();
    }
    const bool all_asked = group.size > 0 && asked_members(group) >= group.size;
    if (!all_asked && group.since_first_asked.elapsed_s() < spec.start_group_wait_s) return true;
    if (!all_asked) {
      std::fprintf(stderr, "colo loader: %zu of the %s consumers started together asked within %.0f s; serving them\n",
                   asked_members(group), group.size > 0 ? std::to_string(group.size).c_str() : "(count not written)",
                   spec.start_group_wait_s);
    }
    group.released = true;
  }
  if (c.behind && c.served == 0) start_as_late_joiner(s, c, spec);
  return false;
}

}  // namespace

LoaderServeSpec parse_loader_serve_spec(const std::string& path) {
  SpecTable table = SpecTable::root(path);
  LoaderServeSpec spec;
  spec.pipeline = parse_image_pipeline(table);
  // Every spelling of the file's path (./DATA.toml, a link to it) names one producer.
  const std::string absolute = resolved_path(path);
  spec.address = table.string_or("address", "ipc:///tmp/colo-loader-" +
                                                std::to_string(std::hash<std::string>{}(absolute) % 1000000007) + ".sock");
  spec.chunk = table.integer_or("chunk", spec.chunk, 1, 65536);
  spec.buffer = table.integer_or("buffer", spec.buffer, 2, 4096);
  const std::string pace = table.choice_or("pace", pace_name(LoaderPace::fastest),
                                           {pace_name(LoaderPace::fastest), pace_name(LoaderPace::slowest)});
  spec.pace = pace == pace_name(LoaderPace::slowest) ? LoaderPace::slowest : LoaderPace::fastest;
  spec.ahead = ahead_within_ring(spec, table.integer_or("ahead", spec.ahead, 1, 4096));
  spec.stall_s = table.number_or("stall_s", spec.stall_s, 0.1, 1e6);
  spec.heartbeat_timeout_s = table.number_or("heartbeat_timeout_s", spec.heartbeat_timeout_s, 0.5, 1e6);
  spec.idle_exit_s = table.number_or("idle_exit_s", spec.idle_exit_s, 0, 1e9);
  spec.device = table.string_or("device", "");
  const bool indexed_cuda = spec.device.size() > 5 && spec.device.rfind("cuda:", 0) == 0 &&
                            spec.device.find_first_not_of("0123456789", 5) == std::string::npos;
  if (!spec.device.empty() && spec.device != "cpu" && spec.device != "cuda" && !indexed_cuda) {
    throw InputError(path, "device", "expected \"cuda\", \"cuda:N\" or \"cpu\", got \"" + spec.device + "\"");
  }
  if (spec.device == "cpu") spec.device.clear();
  table.reject_unknown();
  if (spec.pipeline.root.rfind('/', 0) != 0) {
    spec.pipeline.root = (std::filesystem::path(path).parent_path() / spec.pipeline.root).lexically_normal().string();
  }
  return spec;
}


LoaderServer::LoaderServer(LoaderServeSpec spec, std::unique_ptr<RingMirror> mirror) : spec_(std::move(spec)) {
  // Binding an ipc:// address takes it over silently: the producer there
  // would go on serving its consumers, unreachable to new ones. Where no
  // socket file exists nobody serves it, and the second of asking is saved.
  if (auto other = may_be_served(spec_.address) ? query_loader_stats(spec_.address, kOtherProducerAnswerS)
                                                : std::nullopt) {
    throw std::runtime_error("colo loader: a producer already serves " + spec_.address + " (pid " +
                             std::to_string(other->value("pid", int64_t{-1})) + ", " + other->value("root", "") +
                             "); read from it, stop it first, or give this data file another `address`");
  }
  spec_.ahead = ahead_within_ring(spec_, spec_.ahead);
  state_ = std::make_unique<LoaderState>(spec_);
  state_->mirror = std::move(mirror);
  if (state_->mirror) state_->mirror->attach_host_ring(state_->ring.slot(0), spec_.buffer * state_->ring.slot_bytes());
  state_->router.set(zmq::sockopt::linger, 0);
  try {
    state_->router.bind(spec_.address);
    bound_ = true;
  } catch (const zmq::error_t& e) {
    throw std::runtime_error("colo loader: cannot listen on " + spec_.address + ": " + e.what() +
                             " (another loader there? choose `address` in the data file)");
  }
}

LoaderServer::~LoaderServer() {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->stopping = true;
  }
  state_->changed.notify_all();
  state_->mirror_wake.notify_all();
  if (state_->assembler.joinable()) state_->assembler.join();
  if (state_->mirror_thread.joinable()) state_->mirror_thread.join();
  // ZeroMQ leaves an ipc:// listener's file behind; a stopped producer removes its own.
  state_->router.close();
  const std::string ipc = "ipc://";
  if (bound_ && spec_.address.compare(0, ipc.size(), ipc) == 0) ::unlink(spec_.address.c_str() + ipc.size());
}

nlohmann::json LoaderServer::stats() const {
  LoaderState& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  int64_t slowest = s.next_seq;
  for (const auto& [id, c] : s.consumers) slowest = std::min(slowest, c.keep);
  double cpu = cpu_core_seconds();
  nlohmann::json consumers = nlohmann::json::array();
  for (const auto& report : s.departed) consumers.push_back(report);
  for (const auto& [id, c] : s.consumers) consumers.push_back(consumer_report(id, c.skipped, c.reported));
  return {{"op", "stats"},
          {"samples", s.samples},
          {"chunks", s.next_seq},
          {"uptime_s", s.started.elapsed_s()},
          {"cpu_core_s", cpu},
          {"cpu_core_s_per_sample", s.samples > 0 ? cpu / static_cast<double>(s.samples) : 0.0},
          {"buffer_depth", s.next_seq - std::max(slowest, s.oldest)},
          {"buffer_slots", spec_.buffer},
          {"ahead", spec_.ahead},
          {"pace", pace_name(spec_.pace)},
          {"consumers", s.consumers.size()},
          {"held_s", s.held_for_s()},
          {"consumers_seen", s.consumers_seen},
          {"consumers_dropped", s.dropped},
          {"consumers_left_behind", s.left_behind},
          // Consumers started together (LoaderServeSpec::start_group_wait_s): how many, how many asked.
          {"start_group", {{"size", s.start_group.size}, {"asked", asked_members(s.start_group)},
                           {"released", s.start_group.released}}},
          {"waited_for_slots_s", s.waited_for_slots_s},
          {"waited_for_demand_s", s.waited_for_demand_s},
          {"waited_for_decoding_s", s.waited_for_decoding_s},
          {"mirror_rounds", s.mirror_rounds},
          {"waited_for_copies_s", s.waited_for_copies_s},
          {"consumer_stats", consumers},
          {"device_ring", s.mirror ? s.mirror->describe() : nlohmann::json(nullptr)},
          {"corrupt_images", s.decoder.corrupt_images()},
          {"images", s.decoder.folder().size()},
          {"root", spec_.pipeline.root},
          {"pid", static_cast<int64_t>(getpid())}};
}

void LoaderServer::serve(double report_s) {
  LoaderState& s = *state_;
  const int64_t slots = spec_.buffer, chunk = spec_.chunk;
  const int64_t images = s.decoder.folder().size();

  if (s.mirror) {
    s.mirror_thread = std::thread([&] {
      name_this_thread("colo-mirror");
      mirror_chunks(s, spec_);
    });
  }
  s.assembler = std::thread([&] {
    name_this_thread("colo-assemble");
    assemble_chunks(s, spec_);
  });

  auto send = [&](const std::string& route, const nlohmann::json& body) {
    s.router.send(zmq::buffer(route), zmq::send_flags::sndmore);
    s.router.send(zmq::buffer(body.dump()), zmq::send_flags::none);
  };
  auto chunk_reply = [&](int64_t seq, const Published& p, int64_t skipped) {
    return nlohmann::json{{"op", "chunk"}, {"seq", seq},        {"slot", p.slot},
                          {"count", p.count}, {"epoch", p.epoch}, {"skipped", skipped}};
  };

  Stopwatch last_report;
  int64_t reported_samples = 0;
  bool ready_written = spec_.ready_file.empty();
  while (!stopping_) {
    zmq::pollitem_t items[] = {{s.router.handle(), 0, ZMQ_POLLIN, 0}, {nullptr, s.wake_fd, ZMQ_POLLIN, 0}};
    try {
      zmq::poll(items, s.wake_fd >= 0 ? 2 : 1, std::chrono::milliseconds(s.wake_fd >= 0 ? 20 : 2));
    } catch (const zmq::error_t& e) {
      if (e.num() != EINTR) throw;
      continue;  // a signal: stop() may have been asked
    }
    if (items[1].revents & ZMQ_POLLIN) {
      uint64_t published = 0;
      if (read(s.wake_fd, &published, sizeof(published)) < 0) {
        // Nothing to read after all: the loop answers what is there anyway.
      }
    }
    while (true) {
      zmq::message_t route, body;
      if (!s.router.recv(route, zmq::recv_flags::dontwait)) break;
      if (!route.more() || !s.router.recv(body, zmq::recv_flags::none)) continue;
      for (bool more = body.more(); more;) {  // a request is one frame: drop any extra
        zmq::message_t extra;
        more = s.router.recv(extra, zmq::recv_flags::none) && extra.more();
      }
      std::string who = route.to_string();
      nlohmann::json request = nlohmann::json::parse(body.to_string(), nullptr, false);
      if (const std::string wrong = malformed_field(request); !wrong.empty()) {
        send(who, {{"op", "error"}, {"message", "malformed request: " + wrong}});
        continue;
      }
      std::string op = request.is_object() ? request.value("op", "") : "";
      std::unique_lock<std::mutex> lock(s.mutex);
      if (op == "hello") {
        int64_t id = s.next_consumer++;
        Consumer c;
        c.route = who;
        c.cursor = s.oldest;
        c.keep = s.oldest;
        c.joined_at = s.oldest;
        c.behind = true;  // holds no chunk until it first asks for one
        s.consumers[id] = c;
        ++s.consumers_seen;
        lock.unlock();
        s.changed.notify_all();
        nlohmann::json welcome = {{"op", "welcome"},
                   {"consumer", id},
                   {"ring", s.ring.path()},
                   {"slots", slots},
                   {"slot_bytes", s.ring.slot_bytes()},
                   {"chunk", chunk},
                   {"shape", {3, spec_.pipeline.size, spec_.pipeline.size}},
                   {"mean", spec_.pipeline.mean},
                   {"std", spec_.pipeline.std},
                   {"classes", s.decoder.folder().classes.size()},
                   {"class_names", s.decoder.folder().classes},
                   {"epoch_samples", images},
                   {"heartbeat_timeout_s", spec_.heartbeat_timeout_s}};
        if (s.mirror) welcome["device_ring"] = s.mirror->describe();
        send(who, welcome);
        continue;
      }
      if (op == "stats") {
        lock.unlock();
        send(who, stats());
        continue;
      }
      if (op == "hold") {
        const double seconds = std::clamp(request.value("seconds", 0.0), 0.0, kLongestHoldS);
        s.held_until_s = std::max(s.held_until_s, s.started.elapsed_s() + seconds);
        const double held = s.held_for_s();
        lock.unlock();
        send(who, {{"op", "held"}, {"held_s", held}});
        continue;
      }
      auto found = s.consumers.find(request.is_object() ? request.value("consumer", int64_t{-1}) : -1);
      if (found == s.consumers.end()) {
        lock.unlock();
        if (op != "bye") send(who, {{"op", "error"}, {"message", "unknown consumer (dropped after a silence?); "
                                                                 "connect again"}});
        continue;
      }
      Consumer& c = found->second;
      c.last_seen.restart();
      if (op == "beat") {
        if (request.contains("samples")) c.reported = request;
        lock.unlock();
        send(who, {{"op", "alive"}});
      } else if (op == "next") {
        c.route = who;  // beats come from another socket: replies go where "next" came from
        if (c.served == 0 && !s.start_group.released && !spec_.ready_file.empty() &&
            request.contains("start_group") && request["start_group"].is_string() &&
            request["start_group"].get<std::string>() == spec_.ready_file) {
          if (s.start_group.asked.empty()) s.start_group.since_first_asked.restart();
          // Counted by job: a job may read through several consumers.
          const auto job = request.find("job");
          c.start_group_member = job != request.end() && job->is_string() && !job->get<std::string>().empty()
                                     ? "job " + job->get<std::string>()
                                     : "consumer " + std::to_string(found->first);
          s.start_group.asked.insert(c.start_group_member);
          c.in_start_group = true;
        }
        // Held in its start group, it holds nothing back until released (and
        // then starts as this does).
        const bool held = c.in_start_group && !s.start_group.released;
        c.span = std::max<int64_t>(1, request.value("span", int64_t{1}));  // where it starts depends on it
        if (c.behind && !held) start_as_late_joiner(s, c, spec_);
        // Its first request asks for chunk 0: where it starts is counted as
        // skipped only from the ring it found on connecting.
        c.requested = std::max(c.joined_at, request.value("seq", int64_t{0}));
        c.in_place = request.contains("keep");
        c.cursor = std::max(c.cursor, c.requested);
        c.keep = std::max(c.keep, std::min(c.cursor, request.value("keep", c.requested)));
        c.pending = true;
        s.newest_asked = std::max(s.newest_asked, c.cursor);
        lock.unlock();
        s.changed.notify_all();
      } else if (op == "release") {  // done with every chunk it was given, at most
        c.keep = std::max(c.keep, std::min(std::max(c.cursor, c.served), request.value("keep", c.keep)));
        lock.unlock();
        s.changed.notify_all();
      } else if (op == "bye") {
        if (request.contains("samples")) {
          nlohmann::json report = consumer_report(found->first, found->second.skipped, request);
          report["left"] = true;
          s.departed.push_back(std::move(report));
          if (s.departed.size() > kDepartedKept) s.departed.pop_front();
        }
        forget_consumer(s, found);
        lock.unlock();
        s.changed.notify_all();
      } else {
        lock.unlock();
        send(who, {{"op", "error"}, {"message", "unknown op '" + op + "'"}});
      }
    }

    std::vector<std::pair<std::string, nlohmann::json>> replies;
    int64_t ring_full_at = -1;  // chunks published, the first time they fill the ring
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      if (!s.failure.empty()) throw std::runtime_error("colo loader: " + s.failure);
      if (!ready_written && s.next_seq >= slots) ring_full_at = s.next_seq;
      for (auto it = s.consumers.begin(); it != s.consumers.end();) {
        Consumer& c = it->second;
        if (c.last_seen.elapsed_s() > spec_.heartbeat_timeout_s) {
          std::fprintf(stderr, "colo loader: consumer %lld silent for %.1f s; dropped\n",
                       static_cast<long long>(it->first), spec_.heartbeat_timeout_s);
          ++s.dropped;
          it = forget_consumer(s, it);
          s.changed.notify_all();
          continue;
        }
        if (c.pending && held_in_start_group(s, c, spec_)) {
          ++it;
          continue;
        }
        if (c.pending) {
          if (c.cursor < s.oldest) c.cursor = rejoin_at(s, spec_, c.span);  // fell a ring behind (pace fastest)
          // One hole at a time: a consumer moved on again before it has
          // released past its last one would hold the chunks between.
          if (about_to_be_overwritten(s, spec_, c) && c.keep >= c.hole_to) {
            const int64_t to = clear_of_overwriting(s, spec_, c);
            if (to >= 0) {
              c.hole_from = c.cursor;
              c.hole_to = c.cursor = to;
            }
          }
          auto chunk_at = s.chunks.find(c.cursor);
          if (chunk_at != s.chunks.end()) {
            int64_t skipped = std::max<int64_t>(0, c.cursor - c.requested);
            c.skipped += skipped;
            replies.emplace_back(c.route, chunk_reply(c.cursor, chunk_at->second, skipped));
            c.served = c.cursor + 1;
            c.pending = false;
          }
        }
        ++it;
      }
      if (spec_.idle_exit_s > 0 && s.consumers_seen > 0 && s.consumers.empty() && s.held_for_s() == 0 &&
          s.idle_since.elapsed_s() > spec_.idle_exit_s) {
        stopping_ = true;
      }
    }
    for (const auto& [route, body] : replies) send(route, body);
    if (ring_full_at >= 0) {
      ready_written = true;
      write_ready_file(spec_.ready_file, ring_full_at, slots);
    }
    if (report_s > 0 && last_report.elapsed_s() >= report_s) {
      nlohmann::json st = stats();
      int64_t samples = st["samples"].get<int64_t>();
      std::fprintf(stderr, "colo loader: %lld samples (%.0f/s), %zu consumers, buffer %lld/%lld, %.4f core-s/sample\n",
                   static_cast<long long>(samples), (samples - reported_samples) / last_report.elapsed_s(),
                   st["consumers"].get<size_t>(), static_cast<long long>(st["buffer_depth"].get<int64_t>()),
                   static_cast<long long>(slots), st["cpu_core_s_per_sample"].get<double>());
      reported_samples = samples;
      last_report.restart();
    }
  }
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.stopping = true;
  }
  s.changed.notify_all();
  s.mirror_wake.notify_all();
  s.assembler.join();
  if (s.mirror_thread.joinable()) s.mirror_thread.join();
}

}  // namespace colo::data
