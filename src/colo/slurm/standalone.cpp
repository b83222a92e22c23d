#include "colo/slurm/standalone.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "colo/core/error.h"
#include "colo/core/files.h"
#include "colo/core/shell_words.h"

namespace colo::slurm {
namespace {

const char* kSignaturePrefix = "# colo slurm conf --standalone: ";
constexpr size_t kMungeKeyBytes = 128;  // what `mungekey` makes by default (1024 bits)

// Writes `contents` to a new file `path` with `mode`; throws InputError with the system's reason.
void write_new_file(const std::string& path, const std::string& contents, mode_t mode) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  bool ok = fd >= 0 && ::fchmod(fd, mode) == 0 &&
            ::write(fd, contents.data(), contents.size()) == static_cast<ssize_t>(contents.size());
  int error = errno;
  if (fd >= 0) ::close(fd);
  if (!ok) throw InputError(path, "", std::string("a file colo can write (") + std::strerror(error) + ")");
}

std::string random_bytes(size_t count) {
  std::ifstream in("/dev/urandom", std::ios::binary);
  std::string bytes(count, '\0');
  if (!in.read(bytes.data(), static_cast<std::streamsize>(count))) {
    throw std::runtime_error("cannot read /dev/urandom for the munge key");
  }
  return bytes;
}

// The signature in DIR's slurm.conf; "" when DIR holds none.
std::string signature_in(const std::string& dir) {
  std::ifstream in(dir + "/slurm.conf");
  std::string line;
  if (!std::getline(in, line) || line.rfind(kSignaturePrefix, 0) != 0) return "";
  return line.substr(std::strlen(kSignaturePrefix));
}

}  // namespace

StandaloneSetup plan_standalone(const std::string& dir, NodeGpus node, int64_t shard_bytes, int slurmctld_port,
                                int slurmd_port) {
  StandaloneSetup setup;
  setup.dir = absolute_path(dir);
  while (setup.dir.size() > 1 && setup.dir.back() == '/') setup.dir.pop_back();
  if (setup.dir.find_first_of(" \t\n#=") != std::string::npos) {
    throw InputError(setup.dir, "", "a directory whose path has no spaces, '#' or '=' (Slurm's files cannot name it)");
  }
  for (size_t i = 0; i < node.device_files.size(); ++i) {
    if (path_exists(node.device_files[i])) continue;
    node.device_files[i] = setup.dir + "/dev/nvidia" + std::to_string(i);
    setup.stand_ins.push_back(node.device_files[i]);
  }
  node.address = "127.0.0.1";
  setup.node = std::move(node);
  setup.shard_bytes = shard_bytes;
  setup.slurmctld_port = slurmctld_port;
  setup.slurmd_port = slurmd_port;
  return setup;
}

std::string standalone_signature(const StandaloneSetup& setup) {
  std::ostringstream out;
  out << "node=" << setup.node.node << " gpus=" << setup.node.device_files.size()
      << " gpu_mem_bytes=" << setup.node.gpu_mem_bytes << " shard_bytes=" << setup.shard_bytes
      << " cpus=" << setup.node.cpus << " devices=";
  for (size_t i = 0; i < setup.node.device_files.size(); ++i) out << (i ? "," : "") << setup.node.device_files[i];
  return out.str();
}

std::string standalone_slurm_conf(const StandaloneSetup& setup) {
  const std::string& d = setup.dir;
  std::ostringstream out;
  out << kSignaturePrefix << standalone_signature(setup) << "\n"
      << "ClusterName=colo\n"
      << "SlurmctldHost=" << setup.node.node << "(127.0.0.1)\n"
      << "SlurmUser=root\nSlurmdUser=root\n"
      << "SlurmctldPort=" << setup.slurmctld_port << "\nSlurmdPort=" << setup.slurmd_port << "\n"
      << "AuthType=auth/munge\nCredType=cred/munge\nAuthInfo=socket=" << d << "/munge/sock\n"
      << "StateSaveLocation=" << d << "/state\nSlurmdSpoolDir=" << d << "/spool\n"
      << "SlurmctldPidFile=" << d << "/slurmctld.pid\nSlurmdPidFile=" << d << "/slurmd.pid\n"
      << "SlurmctldLogFile=" << d << "/log/slurmctld.log\nSlurmdLogFile=" << d << "/log/slurmd.log\n"
      // No cgroups (a container has none to give) and no accounting database.
      << "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nMpiDefault=none\n"
      << "AccountingStorageType=accounting_storage/none\nJobAcctGatherType=jobacct_gather/none\n"
      // Jobs start within a second of fitting; a finished job stays in squeue's memory an hour.
      << "SchedulerType=sched/backfill\nSchedulerParameters=sched_interval=1,bf_interval=1\n"
      << "JobRequeue=1\nReturnToService=2\nMinJobAge=3600\n"
      // The node line's CPUs count, even where slurmd sees fewer.
      << "SlurmdParameters=config_overrides\n"
      << slurm_conf_lines(setup.node, setup.shard_bytes)
      << "PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n";
  return out.str();
}

std::vector<std::string> standalone_start_commands(const StandaloneSetup& setup) {
  auto in_dir = [&](const std::string& name) { return shell_quote(setup.dir + "/" + name); };
  std::string conf = "SLURM_CONF=" + in_dir("slurm.conf");
  // --force: munged refuses a socket under a folder not everyone may enter (a
  // home or mktemp folder, mode 0700); then only root's jobs can reach it.
  return {"munged --force --socket=" + in_dir("munge/sock") + " --key-file=" + in_dir("munge/munge.key") +
              " --pid-file=" + in_dir("munge/pid") + " --log-file=" + in_dir("munge/log") +
              " --seed-file=" + in_dir("munge/seed"),
          conf + " slurmctld -i && " + conf + " slurmd -N " + shell_quote(setup.node.node)};
}

bool write_standalone(const StandaloneSetup& setup) {
  const std::string& dir = setup.dir;
  if (path_exists(dir) && !is_directory(dir)) {
    throw InputError(dir, "", "a directory for the Slurm set-up, not an existing file");
  }
  if (!list_directory(dir).empty()) {
    std::string there = signature_in(dir);
    if (there == standalone_signature(setup)) return false;
    if (!there.empty()) {
      throw InputError(dir, "", "holds another colo Slurm set-up (" + there +
                                    "): remove it (stop its daemons first) or choose another directory");
    }
    throw InputError(dir, "", "is not empty and holds no colo Slurm set-up: choose a new or empty directory");
  }
  for (const char* sub : {"", "/state", "/spool", "/log", "/munge", "/dev"}) {
    std::string error = make_directories(dir + sub);
    if (!error.empty()) throw InputError(dir + sub, "", "a directory colo can create (" + error + ")");
  }
  write_new_file(dir + "/munge/munge.key", random_bytes(kMungeKeyBytes), 0600);
  for (const auto& file : setup.stand_ins) {
    if (::symlink("/dev/null", file.c_str()) != 0) {
      throw InputError(file, "", std::string("a stand-in device file colo can create (") + std::strerror(errno) + ")");
    }
  }
  write_new_file(dir + "/gres.conf", gres_conf(setup.node, setup.shard_bytes), 0644);
  // Last: the signature in it says the set-up is whole.
  write_new_file(dir + "/slurm.conf", standalone_slurm_conf(setup), 0644);
  return true;
}

}  // namespace colo::slurm
