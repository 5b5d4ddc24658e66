// The weights load into the spec's PyTorch module: tools/check_checkpoint_torch.py parses the
// checkpoint by hand, load_state_dict(strict=True), and compares its forward pass with the
// engine's host forward on the same random observations. Runs when /usr/bin/python3 can import
// torch (Debian's python3-torch), skipped with a message otherwise.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>
#include <nlohmann/json.hpp>

#include "engine/play/policy_player.h"
#include "tests/engine/engine_test_util.h"
#include "tests/test_util.h"

namespace grpo::test {
namespace {

namespace fs = std::filesystem;

int sh(const std::string& cmd) {
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(CheckpointTorch, WeightsLoadIntoThePyTorchModuleAndAgree) {
  const fs::path dir = fs::temp_directory_path() / ("grpo_torch_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  TrainConfig c = tiny_config();
  c.hidden_size = 21;  // odd sizes everywhere
  auto ex = make_host_executor(c);
  const RunState s = run_epochs(c, *ex, 3);  // trained: gamma, beta and biases are no longer 1 and 0
  const std::string ckpt = (dir / "w.safetensors").string();
  save_checkpoint(ckpt, c, s, 1.f, 2);

  // Random observations in the game's ranges (not only reachable ones: the network is a function).
  const int rows = 13, D = c.obs_dim();
  std::vector<float> obs = random_floats(size_t(rows) * D, 77, 0.f, 5.f);
  const Checkpoint ck = load_checkpoint(ckpt);
  HostPolicy policy(ck, rows);
  const float* z = policy.forward(obs.data(), rows, 0.f, c.seed, 0);
  nlohmann::json j;
  for (int r = 0; r < rows; ++r) {
    j["obs"].push_back(std::vector<float>(obs.begin() + r * D, obs.begin() + (r + 1) * D));
    j["logits"].push_back(std::vector<float>(z + 3 * r, z + 3 * r + 3));
  }
  const std::string expected = (dir / "expected.json").string();
  std::ofstream(expected) << j.dump();
  // The first Python that imports torch (the script exits 77 where it cannot): $GRPO_TORCH_PYTHON,
  // then the python3 on PATH (a lent GPU machine's has torch), then Debian's python3-torch; 127 is
  // the shell's "no such program".
  std::vector<std::string> pythons = {"python3", "/usr/bin/python3"};
  if (const char* p = std::getenv("GRPO_TORCH_PYTHON")) pythons.insert(pythons.begin(), p);
  int rc = 77;
  for (size_t i = 0; i < pythons.size() && (rc == 77 || rc == 127); ++i)
    rc = sh(pythons[i] + " " GRPO_SOURCE_DIR "/tools/check_checkpoint_torch.py " + ckpt + " " + expected);
  fs::remove_all(dir);
  if (rc == 77 || rc == 127)
    GTEST_SKIP() << "no Python here imports torch (apt-get install python3-torch to run this test)";
  EXPECT_EQ(rc, 0);
}

}  // namespace
}  // namespace grpo::test
