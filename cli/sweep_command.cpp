// `subevict sweep`: runs the jobs of a TOML experiment grid into a resumable SQLite store, one
// process, one shard of a scheduler array (--shard i/N) or every rank of `mpirun -np N`; and
// `subevict sweep report` turns the store into a CSV, a Markdown summary and plots.
//
// Files in the output directory: results.sqlite (the gathered store); shard-I-of-N.sqlite (one
// per --shard process, gathered by `sweep report`); rank-R.sqlite (one per MPI rank while it runs,
// gathered by rank 0 after a barrier and then removed). One writer per file at all times.
//
// MPI: when built with MPI and started by a launcher (Open MPI's OMPI_COMM_WORLD_SIZE, PMI_SIZE or
// PMIX_RANK in the environment), MPI_Init gives the rank and size. When built without MPI and
// started by a launcher with more than one process, the command refuses to run (exit 2), because
// N independent copies would each run the whole grid.
//
// Threads: every job runs on one thread (OpenMP and Eigen), whatever the process, so the stored
// results are bit-identical across processes and ranks; parallelism comes from processes.
//
// SIGINT: the job in progress finishes and is committed, then the command exits with 130 (under
// MPI the other ranks are stopped with MPI_Abort; their finished jobs are committed). A second
// SIGINT kills at once; the store stays consistent because each job is its own transaction.
#include <omp.h>

#include <Eigen/Core>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cli/commands.hpp"
#include "core/progress.hpp"
#include "cli/output_directory.hpp"
#include "core/input_error.hpp"
#include "sweep/grid.hpp"
#include "sweep/report.hpp"
#include "sweep/result_store.hpp"

#ifdef SUBEVICT_WITH_MPI
#include <mpi.h>
#endif

namespace subevict::cli {
namespace {

namespace fs = std::filesystem;

struct SweepArgs {
  std::string config;
  std::string output;
  std::string shard;
  std::string report_dir;
  bool no_plots = false;
  bool quiet = false;
};

volatile std::sig_atomic_t g_interrupted = 0;

extern "C" void on_sigint(int) { g_interrupted = 1; }

/// Processes the launcher started, from its environment (1 when not started by one).
int launcher_size() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"}) {
    if (const char* v = std::getenv(name)) return std::max(1, std::atoi(v));
  }
  return std::getenv("PMIX_RANK") ? 2 : 1;
}

/// The MPI rank and size; MPI_Init on construction when started by a launcher, MPI_Finalize on
/// destruction.
class Ranks {
 public:
  Ranks() {
    const int launched = launcher_size();
#ifdef SUBEVICT_WITH_MPI
    if (launched > 1 || std::getenv("OMPI_COMM_WORLD_SIZE")) {
      MPI_Init(nullptr, nullptr);
      MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
      MPI_Comm_size(MPI_COMM_WORLD, &size_);
      mpi_ = true;
    }
#else
    if (launched > 1) {
      throw InputError("sweep", "mpirun", "a subevict built with MPI (this one was built without; "
                       "run one process, or use --shard i/N per process)",
                       std::to_string(launched) + " processes");
    }
#endif
  }
  /// MPI_Finalize; when unwinding from an error, MPI_Abort instead (the other ranks may be waiting
  /// in a barrier that this rank will never reach).
  ~Ranks() {
#ifdef SUBEVICT_WITH_MPI
    if (mpi_ && std::uncaught_exceptions() > 0 && size_ > 1) MPI_Abort(MPI_COMM_WORLD, 2);
    if (mpi_) MPI_Finalize();
#endif
  }
  Ranks(const Ranks&) = delete;
  Ranks& operator=(const Ranks&) = delete;

  [[nodiscard]] int rank() const { return rank_; }
  [[nodiscard]] int size() const { return size_; }
  [[nodiscard]] bool mpi() const { return mpi_; }
  /// A barrier that sleeps while it waits (MPI_Ibarrier polled every 10 ms): a rank that is done
  /// does not spin on a core that the others' jobs need.
  void barrier() const {
#ifdef SUBEVICT_WITH_MPI
    if (!mpi_) return;
    MPI_Request request;
    MPI_Ibarrier(MPI_COMM_WORLD, &request);
    for (int done = 0;;) {
      MPI_Test(&request, &done, MPI_STATUS_IGNORE);
      if (done) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
#endif
  }
  /// Stops every rank with `code` (MPI_Abort); without MPI, std::exit.
  [[noreturn]] void abort(int code) const {
#ifdef SUBEVICT_WITH_MPI
    if (mpi_) MPI_Abort(MPI_COMM_WORLD, code);
#endif
    std::exit(code);
  }

 private:
  int rank_ = 0, size_ = 1;
  bool mpi_ = false;
};

/// Removes an SQLite database and its WAL and shared-memory files.
void remove_store(const fs::path& path) {
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path.string() + suffix, ec);
}

/// The `prefix`*.sqlite files of `dir`, sorted.
std::vector<fs::path> parts_of(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> parts;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) == 0 && entry.path().extension() == ".sqlite") parts.push_back(entry.path());
  }
  std::sort(parts.begin(), parts.end());
  return parts;
}

/// Merges every `prefix`*.sqlite of `dir` into `store`; removes them when `remove` is set.
int gather(sweep::ResultStore& store, const fs::path& dir, const std::string& prefix, bool remove) {
  int added = 0;
  for (const auto& p : parts_of(dir, prefix)) {
    added += store.merge(p.string());
    if (remove) remove_store(p);
  }
  return added;
}

/// The job ids finished outside this process's own store `own`: in the gathered store and the
/// shard files not gathered yet (and, with `lone`, outside MPI, rank files an interrupted mpirun
/// left; under MPI the other ranks are writing theirs).
std::set<std::string> finished_elsewhere(const fs::path& dir, const fs::path& own, const fs::path& main_store,
                                         bool lone) {
  std::vector<fs::path> finished = parts_of(dir, "shard-");
  if (lone) {
    for (const auto& p : parts_of(dir, "rank-")) finished.push_back(p);
  }
  if (fs::exists(main_store)) finished.push_back(main_store);
  std::set<std::string> done;
  for (const auto& p : finished) {
    if (p == own) continue;
    const sweep::ResultStore other(p.string(), true);
    for (const auto& id : other.ids()) done.insert(id);
  }
  return done;
}

/// One thread per job: jobs are the unit of parallelism, and Eigen's multithreaded products
/// partition sums by the thread count, so a fixed count makes every process compute the same bits
/// (mpirun binds each rank to one core; a lone process would otherwise use all cores). The first
/// SIGINT lets the running job finish and stops; a second kills at once.
void prepare_process() {
  omp_set_num_threads(1);
  Eigen::setNbThreads(1);
  struct sigaction action {};
  action.sa_handler = on_sigint;
  action.sa_flags = SA_RESETHAND;  // a second SIGINT kills at once
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
}

int run_sweep(const SweepArgs& args) {
  if (args.config.empty()) throw InputError("sweep", "--config", "a grid file (or the `report` subcommand)");
  if (args.output.empty()) throw InputError("sweep", "-o", "an output directory");
  // Everything is validated before any job runs or any file is created.
  const std::vector<sweep::Job> jobs = sweep::read_grid(args.config);
  std::pair<int, int> shard{0, 1};
  if (!args.shard.empty()) shard = sweep::parse_shard(args.shard);
  const Ranks ranks;
  if (ranks.size() > 1 && !args.shard.empty()) {
    throw InputError("sweep", "--shard", "no --shard under mpirun (the ranks are the shards)", args.shard);
  }
  const fs::path dir(args.output);
  const fs::path main_store = dir / "results.sqlite";
  fs::path own = main_store;
  if (ranks.size() > 1) {
    shard = {ranks.rank(), ranks.size()};
    own = dir / ("rank-" + std::to_string(ranks.rank()) + ".sqlite");
  } else if (!args.shard.empty()) {
    own = dir / ("shard-" + std::to_string(shard.first) + "-of-" + std::to_string(shard.second) + ".sqlite");
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) throw InputError(args.output, "output directory", "a writable directory", ec.message());

  // Under MPI, rank 0 first gathers what an interrupted earlier run left in rank files.
  if (ranks.size() > 1) {
    if (ranks.rank() == 0) {
      sweep::ResultStore store(main_store.string());
      (void)gather(store, dir, "rank-", true);
    }
    ranks.barrier();
  }
  const std::vector<sweep::Job> mine = sweep::shard_jobs(jobs, shard.first, shard.second);
  auto store = std::make_unique<sweep::ResultStore>(own.string());
  std::set<std::string> done = store->ids();
  for (const auto& id : finished_elsewhere(dir, own, main_store, ranks.size() == 1)) done.insert(id);
  std::vector<const sweep::Job*> todo;
  for (const auto& job : mine)
    if (!done.count(job.id())) todo.push_back(&job);

  prepare_process();

  const std::string label = ranks.size() > 1 ? "sweep rank " + std::to_string(ranks.rank())
                            : shard.second > 1 ? "sweep shard " + args.shard : "sweep";
  const std::string who = label + ": ";
  if (!args.quiet && mine.size() > todo.size()) {
    std::fprintf(stderr, "%s%zu of %zu jobs done before (resumed)\n", who.c_str(), mine.size() - todo.size(),
                 mine.size());
  }
  std::size_t ran = 0;
  {
    Progress progress(label, (long long)todo.size(), "jobs", args.quiet);
    for (const sweep::Job* job : todo) {
      if (g_interrupted) break;
      const sweep::JobResult result = sweep::run_job(*job);
      store->insert(sweep::ResultRow::of(*job, result));
      ++ran;
      progress.advance(1, "(job " + job->id() + ")");
    }
  }
  store.reset();  // closed (WAL checkpointed) before anyone gathers it
  if (g_interrupted) {
    std::fprintf(stderr, "%sinterrupted after %zu of %zu jobs; finished jobs are committed, rerun to resume\n",
                 who.c_str(), ran, todo.size());
    if (ranks.mpi() && ranks.size() > 1) ranks.abort(130);
    return 130;
  }
  if (ranks.size() > 1) {
    ranks.barrier();
    if (ranks.rank() == 0) {
      sweep::ResultStore gathered(main_store.string());
      const int added = gather(gathered, dir, "rank-", true);
      std::cout << "sweep: " << jobs.size() << " jobs over " << ranks.size() << " ranks; gathered " << added
                << " new rows; " << gathered.ids().size() << " in " << main_store.string() << "\n";
    }
    return 0;
  }
  std::cout << who << mine.size() << " of " << jobs.size() << " jobs: ran " << ran << ", "
            << mine.size() - todo.size() << " already done; results in " << own.string()
            << (own != main_store ? " (`subevict sweep report` gathers the shards)" : "") << "\n";
  return 0;
}

void run_report(const SweepArgs& args) {
  const fs::path dir(args.report_dir);
  if (!fs::is_directory(dir)) throw InputError(args.report_dir, "results directory", "an existing directory");
  const fs::path main_store = dir / "results.sqlite";
  bool any = fs::exists(main_store);
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if ((name.rfind("shard-", 0) == 0 || name.rfind("rank-", 0) == 0) && entry.path().extension() == ".sqlite") {
      any = true;
    }
  }
  if (!any) throw InputError(args.report_dir, "results directory", "results.sqlite or shard-*.sqlite from `subevict sweep`");
  sweep::ResultStore store(main_store.string());
  (void)gather(store, dir, "shard-", false);
  (void)gather(store, dir, "rank-", false);
  const std::vector<sweep::ResultRow> rows = store.rows();
  if (rows.empty()) throw InputError(main_store.string(), "results", "at least one finished job");
  const std::string written = publish_directory(args.report_dir, sweep::build_report(rows), !args.no_plots);
  std::cout << "sweep report: " << rows.size() << " jobs; wrote " << written << "\n";
}

}  // namespace

void add_sweep_command(CLI::App& app) {
  auto args = std::make_shared<SweepArgs>();
  CLI::App* cmd = app.add_subcommand(
      "sweep", "Run an experiment grid (TOML) into a resumable SQLite store; shards over mpirun ranks or --shard i/N");
  cmd->add_option("--config", args->config, "The grid file (docs/sweeps.md)");
  cmd->add_option("-o,--output", args->output, "Output directory (results.sqlite; reruns resume from it)");
  cmd->add_option("--shard", args->shard, "Run only shard i of N (jobs whose index in id order is i mod N)");
  cmd->add_flag("--quiet", args->quiet, "No progress on stderr");
  cmd->require_subcommand(0, 1);
#ifdef SUBEVICT_WITH_MPI
  cmd->footer("This subevict was built with MPI: under mpirun -np N each rank runs every N-th job.");
#else
  cmd->footer("This subevict was built without MPI: it refuses to run under mpirun with N > 1; use --shard i/N.");
#endif
  CLI::App* report = cmd->add_subcommand("report", "Write sweep.csv, summary.md and plots from a results directory");
  report->add_option("dir", args->report_dir, "The sweep's output directory")->required();
  report->add_flag("--no-plots", args->no_plots, "Skip the gnuplot plots");
  report->callback([args]() { run_report(*args); });
  cmd->callback([args, report]() {
    if (report->parsed()) return;
    const int code = run_sweep(*args);
    if (code != 0) std::exit(code);
  });
}

}  // namespace subevict::cli
