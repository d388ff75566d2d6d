// Every rank of a data-parallel job must run the same job: the same model, precision, batch,
// schedule, optimizer, seed, data and checkpoint. These helpers compare what each rank has and,
// where anything differs, make every rank fail at the same point with the same message naming
// the setting and both values - within the control plane's deadline, never a hang and never a
// silently wrong model.
#pragma once

#include "comm/communicator.h"

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace ht {

// name (a flag, e.g. "--lr", or a derived fact, e.g. "data") -> value, in a fixed order.
using Settings = std::vector<std::pair<std::string, std::string>>;

// The first setting where a rank differs from rank 0, as "ranks disagree on --lr: rank 0 has
// 0.001, rank 1 has 0.1"; "" when all agree. Two values that both read as numbers are compared
// as numbers ("0.1" equals "1e-1").
std::string first_disagreement(const std::vector<Settings>& per_rank);

// Gathers every rank's settings and compares them; on a difference every rank throws the same
// CollectiveError. `what` names the moment ("the command line", "the training data").
void check_ranks_agree(Communicator& comm, const Settings& mine, const std::string& what);

// Runs `check` here and tells every rank how it went everywhere: if it threw on any rank, every
// rank throws a CollectiveError with the first failing rank's message (naming that rank when the
// failures differ), so a problem seen on one node stops the whole job at once, cleanly.
void check_on_every_rank(Communicator& comm, const std::string& what, const std::function<void()>& check);

// The start of a job under mpirun, right after each rank parsed its command line: each rank
// either wants to exit (a flag error: code 2 and the message; --help: code 0 and the text) or
// goes on with its settings (exit_code -1).
struct StartupStatus {
  int exit_code = -1;
  std::string message;
  Settings settings;
};
std::string serialize(const StartupStatus& s);
StartupStatus parse_startup_status(const std::string& bytes);

// What every rank does next: exit_code -1, go on; otherwise every rank exits with exit_code and
// rank 0 prints `message` (the shared message once when all ranks failed alike, else the first
// failing rank's, naming it; or the first setting the ranks disagree on).
struct StartupVerdict {
  int exit_code = -1;
  std::string message;
};
StartupVerdict decide_startup(const std::vector<StartupStatus>& all);

}  // namespace ht
