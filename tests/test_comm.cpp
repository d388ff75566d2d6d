// The rules data-parallel ranks use to agree (comm/agreement.h) and the NCCL watchdog's verdict
// (comm/watchdog.h), tested as plain functions, and the streams and events the NCCL communicator
// takes from the Backend: no MPI, no GPU needed.
#include "comm/agreement.h"
#include "comm/watchdog.h"
#include "engine/backend.h"
#include "ground/error.h"

#include <catch2/catch.hpp>

using namespace ht;

TEST_CASE("agreement: the first differing setting is named with both values", "[comm]") {
  const Settings root = {{"--lr", "0.001"}, {"--batch-size", "128"}, {"--precision", "fp16"}};
  Settings other = root;
  CHECK(first_disagreement({root, other, root}).empty());
  other[2].second = "fp32";
  CHECK(first_disagreement({root, root, other}) == "ranks disagree on --precision: rank 0 has fp16, rank 2 has fp32");
  other = root;
  other[0].second = "1e-3";  // the same number, written another way
  CHECK(first_disagreement({root, other}).empty());
  other[0].second = "0.1";
  CHECK(first_disagreement({root, other}) == "ranks disagree on --lr: rank 0 has 0.001, rank 1 has 0.1");
  other = root;
  other[1].second = "";
  CHECK(first_disagreement({root, other}) == "ranks disagree on --batch-size: rank 0 has 128, rank 1 has nothing");
  other = root;
  other.pop_back();
  CHECK_THAT(first_disagreement({root, other}), Catch::Contains("ranks disagree on --precision"));
}

TEST_CASE("agreement at start-up: one bad rank ends every rank, named - all bad alike prints once", "[comm]") {
  const Settings s = {{"--lr", "0.001"}};
  const StartupStatus go{-1, "", s};
  const StartupStatus bad{2, "--precision: fp4 not in {fp32,fp16,bf16,fp8} (see --help)", {}};
  CHECK(decide_startup({go, go}).exit_code == -1);
  const StartupVerdict one = decide_startup({go, bad, go});
  CHECK(one.exit_code == 2);
  CHECK(one.message == "rank 1 of 3: --precision: fp4 not in {fp32,fp16,bf16,fp8} (see --help)");
  const StartupVerdict all = decide_startup({bad, bad});
  CHECK(all.exit_code == 2);
  CHECK(all.message == bad.message);  // the same for all: said once, without a rank
  const StartupVerdict help = decide_startup({go, StartupStatus{0, "usage...", {}}});
  CHECK(help.exit_code == 2);
  CHECK_THAT(help.message, Catch::Contains("rank 1 of 2 was asked for --help"));
  CHECK(decide_startup({StartupStatus{0, "usage", {}}, StartupStatus{0, "usage", {}}}).exit_code == 0);
  StartupStatus differ = go;
  differ.settings[0].second = "0.1";
  const StartupVerdict v = decide_startup({go, differ});
  CHECK(v.exit_code == 2);
  CHECK(v.message == "ranks disagree on --lr: rank 0 has 0.001, rank 1 has 0.1");
  // What travels between ranks survives the trip.
  const StartupStatus back = parse_startup_status(serialize(differ));
  CHECK(back.exit_code == -1);
  CHECK(back.settings == differ.settings);
}

TEST_CASE("NCCL watchdog: a local fault is named as one, a late collective blames the peers", "[comm]") {
  CHECK(watchdog_problem(WatchedState::done, "", 1e9, 1, "x").empty());
  CHECK(watchdog_problem(WatchedState::running, "", 0.5, 1, "bucket allreduce").empty());
  CHECK(watchdog_problem(WatchedState::running, "", 2, 1, "bucket allreduce") ==
        "bucket allreduce did not complete within 1 s (--comm-timeout): another rank has died or hangs");
  const std::string local = watchdog_problem(WatchedState::failed, "an illegal memory access was encountered", 0.1, 300, "step 7 "
                                             "(a replayed CUDA graph)");
  CHECK_THAT(local, Catch::Contains("an illegal memory access") && Catch::Contains("a local fault, not another rank's"));
  CHECK_THAT(local, !Catch::Contains("died or hangs"));
}

TEST_CASE("checked arithmetic on counts derived from flags refuses overflow", "[comm]") {
  CHECK(checked_mul(4294967296, 2, "x") == 8589934592);
  CHECK_THROWS_WITH(checked_mul(4294967296, 4294967296, "--batch-size × --accum-steps"),
                    Catch::Contains("--batch-size × --accum-steps") && Catch::Contains("does not fit in 64 bits"));
  CHECK_THROWS_AS(checked_add(INT64_MAX, 1, "steps"), Error);
}

TEST_CASE("a failed call names its file as the source tree does, whatever folder it was built from", "[comm]") {
  CHECK(std::string(source_path("../engine/arena.cpp")) == "engine/arena.cpp");
  CHECK(std::string(source_path("./comm/nccl.cpp")) == "comm/nccl.cpp");
  CHECK(std::string(source_path("/abs/comm/nccl.cpp")) == "/abs/comm/nccl.cpp");
  CHECK(std::string(source_path("..hidden/x.cpp")) == "..hidden/x.cpp");
  CHECK_THROWS_WITH(call_failed("ncclAllReduce(...)", "unhandled system error", "../comm/nccl.cpp", 42),
                    "ncclAllReduce(...) failed: unhandled system error (comm/nccl.cpp:42)");
}

TEST_CASE("backend streams for the communicator: a GPU backend's side stream is ordered by events, the cpu backend has "
          "none and says so", "[comm]") {
  const std::unique_ptr<Backend> cpu = make_backend(DeviceChoice::cpu);
  CHECK_THROWS_WITH(cpu->side_stream(), Catch::Contains("one stream of work"));
  const std::unique_ptr<Backend> gpu = make_backend(DeviceChoice::simt);
  std::unique_ptr<SideStream> side = gpu->side_stream();
  REQUIRE(side->native() != nullptr);
  CHECK(side->native() != gpu->native_stream());
  // compute -> side -> compute, as the communicator orders a bucket's allreduce
  const Tensor x = gpu->zeros(Shape{1000}, DType::f32);
  gpu->fill({x.data_as<float>(), x.numel(), 3.0f});
  side->wait_for(*gpu->record_event());
  const std::unique_ptr<Event> done = side->record_event();
  gpu->wait_for(*done);
  CHECK(download<float>(*gpu, x)[999] == 3.0f);
  CHECK(done->ready());
  side->synchronize();
  gpu->bind_thread();
  CHECK_FALSE(gpu->capturing());
  gpu->begin_capture();
  CHECK(gpu->capturing());
  const std::unique_ptr<Graph> graph = gpu->end_capture();
  CHECK_FALSE(gpu->capturing());
}
