// `halftape` as a user runs it: bad input of every kind ends in exactly one clear error line
// on stderr and a non-zero exit status, never a crash or a hang.
#include "tests/gpt_helpers.h"

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace fs = std::filesystem;

namespace {

struct Result {
  int status = -1;  // exit status; 128 + signal when killed
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

Result run_halftape(const std::string& args) {
  static int calls = 0;  // ctest runs test cases in parallel processes: keep the files apart
  const std::string tag = std::to_string(::getpid()) + "-" + std::to_string(calls++);
  const fs::path dir = fs::temp_directory_path();
  const fs::path out = dir / ("halftape-cli-out-" + tag), err = dir / ("halftape-cli-err-" + tag);
  const std::string cmd = "timeout 60 " HALFTAPE_BINARY " " + args + " >" + out.string() + " 2>" + err.string();
  const int raw = std::system(cmd.c_str());
  Result r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  r.out = slurp(out);
  r.err = slurp(err);
  fs::remove(out);
  fs::remove(err);
  return r;
}

void expect_one_error_line(const std::string& args, const std::string& must_mention) {
  INFO("halftape " << args);
  const Result r = run_halftape(args);
  INFO("stderr: " << r.err);
  CHECK(r.status != 0);
  CHECK(r.status < 100);  // an error exit, not a signal or a timeout
  CHECK(r.err.rfind("halftape: error: ", 0) == 0);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(r.err.find(must_mention) != std::string::npos);
}

}  // namespace

TEST_CASE("bad flags: one error line naming the flag, non-zero exit", "[cli]") {
  expect_one_error_line("train --precision fp4", "--precision");
  expect_one_error_line("train --fp8-recipe current", "--fp8-recipe is a setting of --precision fp8");
  expect_one_error_line("train --precision fp8 --fp8-recipe later", "--fp8-recipe");
  expect_one_error_line("train --precision fp8 --fp8-amax-history 0", "--fp8-amax-history");
  expect_one_error_line("train --precision fp8 --fp8-layers some", "--fp8-layers");
  expect_one_error_line("train --accum-steps 0", "--accum-steps");
  expect_one_error_line("train --batch-size -1", "--batch-size");
  expect_one_error_line("train --frobnicate", "--frobnicate");
  expect_one_error_line("profile --gpu v100", "--gpu");
  expect_one_error_line("profile --device cpu", "--device cpu");
  expect_one_error_line("profile --json /nonexistent-dir/p.json --model mlp --data synthetic", "--json /nonexistent-dir/p.json");
  expect_one_error_line("train --lr 0", "--lr");
  expect_one_error_line("train --steps x", "--steps");
  expect_one_error_line("train --hidden 0", "--hidden");
  expect_one_error_line("train --device quantum", "--device");
  expect_one_error_line("train --loss-scale abc", "--loss-scale");
  expect_one_error_line("train --inject-overflow 0:1", "--inject-overflow");
  expect_one_error_line("train --save-every 5 --data synthetic", "--save-every needs --save");
  expect_one_error_line("train --data mnist", "--data");
  expect_one_error_line("", "subcommand");
  expect_one_error_line("train --data synthetic --steps 1 --metrics /nonexistent/dir/m.jsonl", "--metrics /nonexistent/dir/m.jsonl");
  expect_one_error_line("train --data synthetic --batch-size 100000", "--batch-size");
}

TEST_CASE("hostile flags: overflowing counts, meaningless combinations, unclear values", "[cli]") {
  const std::string t = "train --data synthetic --steps 1 ";
  // Counts whose products overflowed (SIGFPE, SIGSEGV, negative step counts) before.
  expect_one_error_line(t + "--batch-size 4294967296 --accum-steps 4294967296", "--batch-size");
  expect_one_error_line(t + "--batch-size 4611686018427387905 --accum-steps 4", "--batch-size");
  expect_one_error_line("train --data synthetic --epochs 4919131752989214 --save ov", "--epochs");
  expect_one_error_line(t + "--accum-steps 9223372036854775807", "--accum-steps");
  expect_one_error_line(t + "--synthetic-features 1000000000", "--synthetic-features");
  expect_one_error_line(t + "--synthetic-samples 1000000000 --synthetic-features 100000", "64 GiB");
  expect_one_error_line(t + "--log-every 4611686018427387904", "--log-every");
  // Accepted silently before, though meaningless.
  expect_one_error_line(t + "--hidden 32,,32", "--hidden: '' in '32,,32'");
  expect_one_error_line(t + "--precision fp32 --loss-scale 128", "--loss-scale 128: loss scaling is for --precision fp16");
  expect_one_error_line(t + "--precision bf16 --init-scale 1024", "--init-scale is a loss-scaling setting");
  expect_one_error_line(t + "--save \"\"", "--save: must not be empty");
  expect_one_error_line(t + "--momentum 0.9", "--momentum is a setting of --optimizer sgd");
  expect_one_error_line(t + "--nesterov", "--nesterov is a setting of --optimizer sgd");
  expect_one_error_line(t + "--weight-decay inf", "--weight-decay: must be a finite number");
  expect_one_error_line(t + "--inject-crash 5:3", "there is no rank 3");
  // A captured graph keeps every bucket's buffers: ZeRO-2's memory bound would silently not hold.
  expect_one_error_line(t + "--device simt --cuda-graph --zero 2",
                        "--cuda-graph with --zero 2: a captured step keeps every bucket's buffers allocated");
  // A loss scale whose inverse overflows: refused, not a NaN update.
  expect_one_error_line(t + "--init-scale 1e-40 --min-scale 1e-40", "--init-scale");
  expect_one_error_line(t + "--loss-scale 1e-40", "--loss-scale: '1e-40' is outside fp32's range (a loss scale must be at least");
  expect_one_error_line(t + "--loss-scale 1e-39", "--loss-scale: '1e-39' is outside fp32's range");
  expect_one_error_line(t + "--first-bucket-mb nan", "--first-bucket-mb: must be a finite number");
  expect_one_error_line(t + "--resume /tmp", "/tmp: not a checkpoint (no manifest.json) nor a --save directory (no latest)");
}

TEST_CASE("a flag of the other model is refused, naming the flag and its model", "[cli]") {
  // Each trained with rc 0 before, the flag silently ignored.
  const std::string gpt = "train --model gpt --data synthetic --steps 1 ", mlp = "train --data synthetic --steps 1 ";
  expect_one_error_line(gpt + "--hidden 32", "--hidden is a setting of --model mlp; this run uses --model gpt");
  expect_one_error_line(gpt + "--activation gelu", "--activation is a setting of --model mlp; this run uses --model gpt");
  expect_one_error_line(mlp + "--n-layer 3", "--n-layer is a setting of --model gpt; this run uses --model mlp");
  expect_one_error_line(mlp + "--n-head 2", "--n-head is a setting of --model gpt; this run uses --model mlp");
  expect_one_error_line(mlp + "--n-embd 64", "--n-embd is a setting of --model gpt; this run uses --model mlp");
  expect_one_error_line(mlp + "--block-size 32", "--block-size is a setting of --model gpt; this run uses --model mlp");
  expect_one_error_line("train --model mlp --data synthetic --steps 1 --n-layer 3", "--n-layer is a setting of --model gpt");
  for (const char* flag : {"--dropout 0.1", "--pad-vocab-to 64", "--recompute block"})
    expect_one_error_line(mlp + flag, std::string(flag).substr(0, std::string(flag).find(' ')) + " is a setting of --model gpt");
}

TEST_CASE("bad data files: one error line naming the file", "[cli]") {
  const fs::path dir = fs::temp_directory_path() / ("halftape-cli-data-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  expect_one_error_line("train --data idx:" + dir.string(), (dir / "train-images-idx3-ubyte").string());
  for (const char* name : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"})
    std::ofstream(dir / name, std::ios::binary) << "garbage, not IDX";
  expect_one_error_line("train --data idx:" + dir.string(), "train-images-idx3-ubyte: not an IDX file");
  expect_one_error_line("train --data idx:/nonexistent", "/nonexistent");
  fs::remove_all(dir);
}

namespace {
// A fresh directory holding nanoGPT's train.bin and val.bin, both of 3000 ids (i × step) mod vocab.
fs::path token_dir(const std::string& stem, std::uint32_t step, std::uint32_t vocab, std::vector<std::uint16_t>& ids) {
  const fs::path dir = fs::temp_directory_path() / (stem + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  ids.assign(3000, 0);
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<std::uint16_t>((i * step) % vocab);
  for (const char* name : {"train.bin", "val.bin"})
    std::ofstream(dir / name, std::ios::binary).write(reinterpret_cast<const char*>(ids.data()), std::streamsize(2 * ids.size()));
  return dir;
}
}  // namespace

TEST_CASE("token files: the GPT trains on GPT-2 ids - sample prints ids from <|endoftext|> - bad files named", "[cli][gpt]") {
  std::vector<std::uint16_t> ids;
  const fs::path dir = token_dir("halftape-cli-tokens-", 7919, 50257, ids);
  const std::string data = " --data tokens:" + dir.string();
  const Result r = run_halftape("train --model gpt --n-layer 1 --n-embd 32 --n-head 2 --block-size 16 --batch-size 2 --steps 2 "
                                "--eval-windows 4 --no-progress --save " + (dir / "ck").string() + data);
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("a vocabulary of 50257") != std::string::npos);
  CHECK(r.out.find("done: 2 steps") != std::string::npos);
  const Result drawn = run_halftape("sample --device cpu --resume " + (dir / "ck").string() + " --tokens 3 --seed 1");
  INFO(drawn.err);
  CHECK(drawn.status == 0);
  CHECK(drawn.out.rfind("50256 ", 0) == 0);  // GPT-2's <|endoftext|>, then three drawn ids
  CHECK(std::count(drawn.out.begin(), drawn.out.end(), ' ') == 4);
  expect_one_error_line("sample --resume " + (dir / "ck").string() + " --prompt hello", "the model reads token ids (gpt2)");
  expect_one_error_line("train --model gpt --steps 1 --vocab-size 257" + data, "outside the vocabulary (--vocab-size) of 257 ids");
  expect_one_error_line("train --model gpt --steps 1 --vocab-size 257 --data shakespeare", "--vocab-size is the vocabulary of token files");
  expect_one_error_line("train --steps 1 --data synthetic --zero 3", "--zero: Value 3 not in range 0 to 2");
  ids[1234] = 60000;
  std::ofstream(dir / "val.bin", std::ios::binary).write(reinterpret_cast<const char*>(ids.data()), std::streamsize(2 * ids.size()));
  expect_one_error_line("train --model gpt --steps 1" + data, "val.bin: token 1234 (byte 2468) is id 60000");
  fs::remove_all(dir);
}

TEST_CASE("token files of another vocabulary: --vocab-size 257 (bytes), padded to 320 with --pad-vocab-to 64", "[cli][gpt]") {
  std::vector<std::uint16_t> ids;
  const fs::path dir = token_dir("halftape-cli-bytes-", 131, 257, ids);
  const std::string ck = (dir / "ck").string();
  const Result r = run_halftape("train --model gpt --n-layer 1 --n-embd 32 --n-head 2 --block-size 16 --batch-size 2 --steps 2 "
                                "--eval-windows 4 --no-progress --vocab-size 257 --pad-vocab-to 64 --save " + ck + " --data tokens:" +
                                dir.string());
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("a vocabulary of 257") != std::string::npos);
  CHECK(r.out.find("vocabulary 257 (padded to 320)") != std::string::npos);
  // sample: ids in, ids out; through a tiktoken-format vocabulary (each byte its own token), text.
  const std::string sample = "sample --device cpu --resume " + ck + " --tokens 6 --temperature 0 --prompt-ids 72,105 ";
  const Result as_ids = run_halftape(sample);
  INFO(as_ids.err);
  CHECK(as_ids.status == 0);
  CHECK(as_ids.out.rfind("72 105 ", 0) == 0);
  CHECK(std::count(as_ids.out.begin(), as_ids.out.end(), ' ') == 8);
  {
    std::ofstream vocab(dir / "bytes.tiktoken");
    const char* b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (int i = 0; i < 256; ++i) vocab << b64[i >> 2] << b64[(i & 3) << 4] << "== " << i << '\n';
  }
  const Result as_text = run_halftape(sample + "--vocab " + (dir / "bytes.tiktoken").string());
  INFO(as_text.err);
  CHECK(as_text.status == 0);
  CHECK(as_text.out.rfind("Hi", 0) == 0);  // 72 105, decoded
  expect_one_error_line("sample --resume " + ck + " --tokens 2", "--prompt-ids: give one");
  expect_one_error_line("sample --resume " + ck + " --prompt-ids 72,300", "'300' is not a token id of the model's vocabulary [0, 257)");
  std::ofstream(dir / "bad.tiktoken") << "ABCDE 3\n";
  expect_one_error_line(sample + "--vocab " + (dir / "bad.tiktoken").string(), "is not base64");
  fs::remove_all(dir);
}

TEST_CASE("flag --preset names GPT-2's shapes - flags beside it win - the MLP refuses it", "[cli][gpt]") {
  // --steps 0 with --eval-windows 1: init and one evaluation, enough to print the model.
  const Result r = run_halftape("train --model gpt --preset gpt2 --n-layer 1 --block-size 32 --steps 0 --eval-windows 1 "
                                "--eval-batch-size 1 --no-progress");
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("gpt 1 layers, 12 heads, 768 wide, block 32, vocabulary") != std::string::npos);
  CHECK(r.out.find("(padded to") != std::string::npos);
  expect_one_error_line("train --model mlp --preset gpt2 --steps 1", "--preset");
  const Result bad = run_halftape("train --model gpt --preset gpt5 --steps 1");
  CHECK(bad.status != 0);
  CHECK(bad.err.find("--preset") != std::string::npos);
}

TEST_CASE("flag --device cuda without a GPU says so", "[cli]") {
  const Result r = run_halftape("train --device cuda --data synthetic --steps 1");
  if (r.status == 0) {
    WARN("skipped: a GPU is present, so --device cuda works here");
    return;
  }
  expect_one_error_line("train --device cuda --data synthetic --steps 1", "--device cuda");
}

TEST_CASE("flag --help and --version exit 0", "[cli]") {
  const Result help = run_halftape("train --help");
  CHECK(help.status == 0);
  CHECK(help.out.find("--inject-overflow") != std::string::npos);
  CHECK(run_halftape("--version").status == 0);
}

TEST_CASE("a tiny run succeeds and prints its summary", "[cli]") {
  const Result r = run_halftape("train --device cpu --data synthetic --synthetic-features 32 --hidden 16 --steps 3 --log-every 1");
  INFO(r.err);
  CHECK(r.status == 0);
  CHECK(r.err.empty());
  CHECK(r.out.find("done: 3 steps") != std::string::npos);
}

TEST_CASE("gpt and sample: bad input gets one error line - the same seed gives the same text", "[cli][gpt]") {
  const std::string text = ht::test::gpt_test_text_path();
  const fs::path dir = fs::temp_directory_path() / ("halftape-cli-gpt-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "empty.txt");
  const std::string gpt = "train --model gpt --device cpu --steps 2 --n-layer 1 --n-embd 16 --n-head 2 --block-size 8 ";
  const std::string bare = "train --model gpt --device cpu --steps 2 --data text:" + text;
  expect_one_error_line(bare + " --n-embd 100 --n-head 3", "--n-embd 100 is not divisible by --n-head 3");
  expect_one_error_line(gpt + "--data text:" + (dir / "none.txt").string(), "none.txt: no such file");
  expect_one_error_line(gpt + "--data text:" + (dir / "empty.txt").string(), "empty.txt is empty");
  expect_one_error_line(bare + " --block-size 0", "--block-size");
  expect_one_error_line(bare + " --block-size 60000", "--block-size 60000: a window of 60001 tokens is longer");
  expect_one_error_line(gpt + "--data synthetic", "--model gpt reads text");
  expect_one_error_line("train --model mlp --device cpu --steps 1 --data text:" + text, "--model mlp reads samples");
  expect_one_error_line(gpt + "--data text:" + text + " --model bert", "--model");

  // A tiny GPT to sample from, and an MLP checkpoint that is not one.
  const std::string ckpt = (dir / "gpt").string(), mlp = (dir / "mlp").string();
  REQUIRE(run_halftape(gpt + "--data text:" + text + " --save " + ckpt).status == 0);
  REQUIRE(run_halftape("train --device cpu --data synthetic --synthetic-features 16 --hidden 8 --steps 1 --save " + mlp).status == 0);
  const std::string sample = "sample --device cpu --resume " + ckpt + " --tokens 40 ";
  const Result a = run_halftape(sample + "--prompt 'the king' --seed 7");
  const Result b = run_halftape(sample + "--prompt 'the king' --seed 7");
  const Result c = run_halftape(sample + "--prompt 'the king' --seed 8");
  INFO(a.err);
  CHECK(a.status == 0);
  CHECK(a.out.rfind("the king", 0) == 0);
  CHECK(a.out.size() > std::string("the king").size() + 20);
  CHECK(a.out == b.out);
  CHECK(a.out != c.out);
  // A padded vocabulary samples as the unpadded one: the same initial weights (--steps 0), the
  // most likely token each time, never a padding id.
  const std::string plain = (dir / "plain").string(), padded = (dir / "padded").string();
  const std::string init = "train --model gpt --device cpu --steps 0 --eval-windows 1 --n-layer 1 --n-embd 16 --n-head 2 --block-size 8 "
                           "--data text:" + text;
  REQUIRE(run_halftape(init + " --save " + plain).status == 0);
  REQUIRE(run_halftape(init + " --pad-vocab-to 64 --save " + padded).status == 0);
  const Result p0 = run_halftape("sample --device cpu --resume " + plain + " --tokens 40 --temperature 0 --prompt 'the king'");
  const Result p1 = run_halftape("sample --device cpu --resume " + padded + " --tokens 40 --temperature 0 --prompt 'the king'");
  INFO(p1.err);
  CHECK(p1.status == 0);
  CHECK(p0.out == p1.out);
  expect_one_error_line(sample + "--prompt 'the king~'", "the character '~' is not in the model's vocabulary");
  expect_one_error_line(sample + "--temperature -1", "--temperature must be a finite number >= 0");
  expect_one_error_line(sample + "--prompt-ids 1,2", "--prompt-ids and --vocab are for models of token files");
  expect_one_error_line("sample --resume " + (dir / "nothing").string(), "no such directory");
  expect_one_error_line("sample --resume " + mlp, "holds a mlp model; sample needs a GPT");
  fs::remove_all(dir);
}
