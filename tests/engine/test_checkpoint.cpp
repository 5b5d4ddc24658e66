// Checkpoints: the safetensors layout, a bit-exact round trip, every corrupt or mismatched file
// refused with one line (UsageError), and writes that fail loudly without touching the old file.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/config.h"
#include "engine/checkpoint/io.h"
#include "engine/checkpoint/resume.h"
#include "core/errors.h"
#include "tests/engine/engine_test_util.h"

namespace grpo::test {
namespace {

namespace fs = std::filesystem;

fs::path temp_dir() {
  const fs::path d = fs::temp_directory_path() / ("grpo_ckpt_test_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void spit(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
}

// A trained state (3 epochs: moments and scalars are all non-trivial) and its file bytes.
struct Trained {
  TrainConfig c = tiny_config();
  RunState s;
  std::string bytes;
  Trained() {
    auto ex = make_host_executor(c);
    s = run_epochs(c, *ex, 3);
    bytes = checkpoint_bytes(c, s, 0.75f, 1);
  }
};
const Trained& trained() {
  static const Trained t;
  return t;
}

uint64_t header_len(const std::string& b) {
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t(uint8_t(b[i])) << (8 * i);
  return n;
}
nlohmann::json header(const std::string& b) { return nlohmann::json::parse(b.substr(8, header_len(b))); }
// The file with its header replaced (data kept as it is).
std::string with_header(const std::string& b, const nlohmann::json& h) {
  const std::string text = h.dump();
  std::string out;
  for (int i = 0; i < 8; ++i) out.push_back(char((uint64_t(text.size()) >> (8 * i)) & 0xFF));
  return out + text + b.substr(8 + header_len(b));
}

// The file with its header replaced by raw text (for headers nlohmann would not write).
std::string with_header_text(const std::string& b, const std::string& text) {
  std::string out;
  for (int i = 0; i < 8; ++i) out.push_back(char((uint64_t(text.size()) >> (8 * i)) & 0xFF));
  return out + text + b.substr(8 + header_len(b));
}

TEST(Checkpoint, SafetensorsLayoutWithPyTorchNamesAndShapes) {
  const Trained& t = trained();
  const uint64_t n = header_len(t.bytes);
  EXPECT_EQ((8 + n) % 8, 0u) << "data should start 8-byte aligned";
  const nlohmann::json h = header(t.bytes);
  const int H = t.c.hidden_size, D = t.c.obs_dim();
  const std::map<std::string, std::vector<int>> want = {
      {"fc_in.weight", {H, D}}, {"layer_norm.weight", {H}}, {"layer_norm.bias", {H}}, {"fc1.weight", {H, H}},
      {"fc1.bias", {H}},        {"fc_out.weight", {3, H}},  {"fc_out.bias", {3}}};
  size_t data = 0;
  for (const auto& [name, shape] : want)
    for (const std::string prefix : {"", "optimizer.exp_avg.", "optimizer.exp_avg_sq."}) {
      const auto& e = h.at(prefix + name);
      EXPECT_EQ(e.at("dtype"), "F32");
      EXPECT_EQ(e.at("shape").get<std::vector<int>>(), shape) << prefix + name;
      const auto off = e.at("data_offsets").get<std::vector<size_t>>();
      size_t count = 1;
      for (int d : shape) count *= size_t(d);
      EXPECT_EQ(off[1] - off[0], 4 * count);
      data += off[1] - off[0];
    }
  EXPECT_EQ(h.size(), 1 + 3 * want.size());
  EXPECT_EQ(t.bytes.size(), 8 + n + data);
  // fc_in.weight's bytes are the parameter slab's first tensor, as stored in memory.
  const auto off = h["fc_in.weight"]["data_offsets"].get<std::vector<size_t>>();
  EXPECT_EQ(0, std::memcmp(t.bytes.data() + 8 + n + off[0], t.s.slabs.data(), off[1] - off[0]));
  for (const auto& [k, v] : h["__metadata__"].items()) EXPECT_TRUE(v.is_string()) << k;
  EXPECT_EQ(h["__metadata__"]["epoch"], "3");
  EXPECT_EQ(h["__metadata__"]["adam_step"], "3");
  EXPECT_EQ(h["__metadata__"]["seed"], std::to_string(t.c.seed));
  EXPECT_EQ(h["__metadata__"]["best_score"], "0.75");
  EXPECT_EQ(nlohmann::json::parse(h["__metadata__"]["config"].get<std::string>())["hidden_size"], H);
}

TEST(Checkpoint, RoundTripIsExact) {
  const Trained& t = trained();
  const fs::path p = temp_dir() / "round.safetensors";
  save_checkpoint(p.string(), t.c, t.s, -std::numeric_limits<float>::infinity(), 7);
  const Checkpoint ck = load_checkpoint(p.string());
  EXPECT_TRUE(ck.has_optimizer);
  EXPECT_EQ(ck.best_score, -std::numeric_limits<float>::infinity());
  EXPECT_EQ(ck.best_epoch, 7u);
  EXPECT_EQ(0, std::memcmp(&ck.state.scalars, &t.s.scalars, sizeof(TrainScalars)));
  const size_t n = ParamLayout(t.c.hidden_size, t.c.obs_dim()).total;
  for (int slab : {0, 2, 3})
    EXPECT_EQ(0, std::memcmp(ck.state.slabs.data() + slab * n, t.s.slabs.data() + slab * n, n * sizeof(float)))
        << "slab " << slab;
  for (size_t i = n; i < 2 * n; ++i) ASSERT_EQ(ck.state.slabs[i], 0.f) << "gradients are not stored";
  TrainConfig back = ck.config;
  EXPECT_EQ(back.hidden_size, t.c.hidden_size);
  EXPECT_EQ(back.game.screen_width, t.c.game.screen_width);
  EXPECT_EQ(back.game.min_interval_steps, t.c.game.min_interval_steps);
  EXPECT_EQ(back.lr, t.c.lr);
  EXPECT_EQ(back.dropout, t.c.dropout);
  EXPECT_EQ(back.seed, t.c.seed);
  EXPECT_EQ(back.algo, Algo::Reference);
  EXPECT_EQ(checkpoint_file_name(200), "ckpt-epoch-000200.safetensors");
  EXPECT_LT(checkpoint_file_name(99), checkpoint_file_name(100));
  fs::remove_all(temp_dir());
}

TEST(Checkpoint, ParametersOnlyFileLoadsForPlay) {
  const Trained& t = trained();
  nlohmann::json h = header(t.bytes);
  for (auto it = h.begin(); it != h.end();) it = it.key().rfind("optimizer.", 0) == 0 ? h.erase(it) : std::next(it);
  const fs::path p = temp_dir() / "params.safetensors";
  spit(p, with_header(t.bytes, h));
  const Checkpoint ck = load_checkpoint(p.string());
  EXPECT_FALSE(ck.has_optimizer);
  const size_t n = ParamLayout(t.c.hidden_size, t.c.obs_dim()).total;
  EXPECT_EQ(0, std::memcmp(ck.state.slabs.data(), t.s.slabs.data(), n * sizeof(float)));
  fs::remove_all(temp_dir());
}

// ---- Every way a file can be broken: UsageError, one line, naming the file. ----
struct Corruption {
  const char* name;
  const char* expect;  // a fragment of the message
  std::function<std::string(const std::string&)> mutate;
};

std::string set_in_header(const std::string& b, const std::function<void(nlohmann::json&)>& f) {
  nlohmann::json h = header(b);
  f(h);
  return with_header(b, h);
}

std::string poison_tensor(const std::string& b, const char* name, float value, size_t index) {
  const nlohmann::json h = header(b);
  const size_t at = 8 + header_len(b) + h[name]["data_offsets"][0].get<size_t>() + 4 * index;
  std::string out = b;
  std::memcpy(&out[at], &value, 4);
  return out;
}

const Corruption kCorruptions[] = {
    {"Empty", "truncated", [](const std::string&) { return std::string(); }},
    {"FiveBytes", "truncated", [](const std::string& b) { return b.substr(0, 5); }},
    {"HeaderLengthHuge", "bad header length",
     [](const std::string& b) {
       std::string o = b;
       o[7] = char(0x40);
       return o;
     }},
    {"HeaderLengthPastEnd", "bad header length",
     [](const std::string& b) { return b.substr(0, 8 + header_len(b) - 3); }},
    {"TruncatedData", "the data section holds", [](const std::string& b) { return b.substr(0, b.size() - 10); }},
    {"BadJson", "not valid JSON",
     [](const std::string& b) {
       std::string o = b;
       o[8] = 'x';
       return o;
     }},
    {"HeaderNotObject", "not a JSON object",
     [](const std::string& b) {
       return with_header(b, nlohmann::json::array({1, 2}));
     }},
    {"NoMetadata", "__metadata__",
     [](const std::string& b) { return set_in_header(b, [](auto& h) { h.erase("__metadata__"); }); }},
    {"MetadataNotString", "not a string",
     [](const std::string& b) { return set_in_header(b, [](auto& h) { h["__metadata__"]["epoch"] = 3; }); }},
    {"OtherFormat", "unknown format",
     [](const std::string& b) { return set_in_header(b, [](auto& h) { h["__metadata__"]["format"] = "x"; }); }},
    {"ConfigNotJson", "config",
     [](const std::string& b) { return set_in_header(b, [](auto& h) { h["__metadata__"]["config"] = "{oops"; }); }},
    {"ConfigOutOfRange", "--hidden-size",
     [](const std::string& b) {
       return set_in_header(b, [](auto& h) {
         auto c = nlohmann::json::parse(h["__metadata__"]["config"].template get<std::string>());
         c["hidden_size"] = 3;
         h["__metadata__"]["config"] = c.dump();
       });
     }},
    // An integer field given as a fraction or beyond its type: refused, never truncated.
    {"ConfigIntegerAsFraction", "hidden_size",
     [](const std::string& b) {
       return set_in_header(b, [](auto& h) {
         auto c = nlohmann::json::parse(h["__metadata__"]["config"].template get<std::string>());
         c["hidden_size"] = c["hidden_size"].template get<int>() + 0.9;
         h["__metadata__"]["config"] = c.dump();
       });
     }},
    {"ConfigIntegerBeyondInt", "hidden_size",
     [](const std::string& b) {
       return set_in_header(b, [](auto& h) {
         auto c = nlohmann::json::parse(h["__metadata__"]["config"].template get<std::string>());
         c["hidden_size"] = (int64_t{1} << 32) + c["hidden_size"].template get<int64_t>();
         h["__metadata__"]["config"] = c.dump();
       });
     }},
    {"ConfigUnknownAlgo", "algo",
     [](const std::string& b) {
       return set_in_header(b, [](auto& h) {
         auto c = nlohmann::json::parse(h["__metadata__"]["config"].template get<std::string>());
         c["algo"] = "ppo\nx";
         h["__metadata__"]["config"] = c.dump();
       });
     }},
    {"ConfigClipOutOfRange", "--clip",
     [](const std::string& b) {
       return set_in_header(b, [](auto& h) {
         auto c = nlohmann::json::parse(h["__metadata__"]["config"].template get<std::string>());
         c["clip"] = 7.5;
         h["__metadata__"]["config"] = c.dump();
       });
     }},
    {"AnnealEpochsNotACount", "\"lr_anneal_epochs\" is missing or not a count",
     [](const std::string& b) {
       return set_in_header(b, [](auto& h) {
         auto s = nlohmann::json::parse(h["__metadata__"]["train_scalars"].template get<std::string>());
         s["lr_anneal_epochs"] = -3;
         h["__metadata__"]["train_scalars"] = s.dump();
       });
     }},
    {"ScalarsMissing", "train_scalars",
     [](const std::string& b) { return set_in_header(b, [](auto& h) { h["__metadata__"].erase("train_scalars"); }); }},
    {"BestScoreNotNumber", "best_score",
     [](const std::string& b) { return set_in_header(b, [](auto& h) { h["__metadata__"]["best_score"] = "good"; }); }},
    {"WrongDtype", "dtype",
     [](const std::string& b) { return set_in_header(b, [](auto& h) { h["fc1.bias"]["dtype"] = "F16"; }); }},
    {"WrongShape", "shape",
     [](const std::string& b) { return set_in_header(b, [](auto& h) {
                                  h["fc1.weight"]["shape"] = {10, 40};
                                }); }},
    {"VectorAsMatrix", "shape",
     [](const std::string& b) { return set_in_header(b, [](auto& h) {
                                  h["fc1.bias"]["shape"] = {20, 1};
                                }); }},
    {"OffsetsOutOfRange", "data_offsets",
     [](const std::string& b) {
       return set_in_header(b, [](auto& h) { h["fc_out.bias"]["data_offsets"] = {1000000, 1000012}; });
     }},
    {"OffsetsReversed", "data_offsets",
     [](const std::string& b) {
       return set_in_header(b, [](auto& h) { h["fc_out.bias"]["data_offsets"] = {12, 0}; });
     }},
    {"OffsetsWrongLength", "data_offsets",
     [](const std::string& b) { return set_in_header(b, [](auto& h) {
                                  h["fc_out.bias"]["data_offsets"] = {0, 8};
                                }); }},
    {"OffsetsOverlap", "overlap",
     [](const std::string& b) {
       return set_in_header(b, [](auto& h) { h["fc_out.bias"]["data_offsets"] = {4, 16}; });
     }},
    {"MissingTensor", "\"fc1.bias\" is missing",
     [](const std::string& b) { return set_in_header(b, [](auto& h) { h.erase("fc1.bias"); }); }},
    {"UnexpectedTensor", "unexpected tensor",
     [](const std::string& b) { return set_in_header(b, [](auto& h) { h["extra"] = h["fc_out.bias"]; }); }},
    {"OnlyOneMoment", "optimizer.exp_avg_sq.fc_in.weight\" is missing",
     [](const std::string& b) {
       return set_in_header(b, [](auto& h) {
         for (auto it = h.begin(); it != h.end();)
           it = it.key().rfind("optimizer.exp_avg_sq.", 0) == 0 ? h.erase(it) : std::next(it);
       });
     }},
    // Hostile headers: deep nesting (printing it would recurse), a key with a newline, and a
    // valid but huge configuration over a small data section (its slabs would be allocated).
    {"DeeplyNestedHeader", "nested deeper than",
     [](const std::string& b) {
       std::string text = b.substr(8, header_len(b));
       const size_t at = text.find("\"F32\"");
       return with_header_text(b, text.replace(at, 5, std::string(100000, '[') + std::string(100000, ']')));
     }},
    {"KeyWithNewline", "unexpected tensor \"bad\\nname\"",
     [](const std::string& b) { return set_in_header(b, [](auto& h) { h["bad\nname"] = 1; }); }},
    {"HugeConfigSmallData", "the stored configuration needs",
     [](const std::string& b) {
       return set_in_header(b, [](auto& h) {
         auto c = nlohmann::json::parse(h["__metadata__"]["config"].template get<std::string>());
         c["hidden_size"] = 8192;
         h["__metadata__"]["config"] = c.dump();
       });
     }},
    // The config and the scalars are JSON inside strings: the same depth limit, and a value
    // quoted in an error is cut short (printing a deep one recursed once per level).
    {"DeeplyNestedConfigValue", "\"config\" is nested deeper than",
     [](const std::string& b) {
       return set_in_header(b, [](auto& h) {
         std::string c = h["__metadata__"]["config"].template get<std::string>();
         const size_t at = c.find("\"hidden_size\":") + 14;
         c.replace(at, c.find(',', at) - at, std::string(1000000, '[') + std::string(1000000, ']'));
         h["__metadata__"]["config"] = c;
       });
     }},
    {"DeeplyNestedScalars", "\"train_scalars\" is nested deeper than",
     [](const std::string& b) {
       return set_in_header(
           b, [](auto& h) { h["__metadata__"]["train_scalars"] = std::string(1000, '[') + std::string(1000, ']'); });
     }},
    {"ConfigMaxGradNormNegative", "max_grad_norm",
     [](const std::string& b) {
       return set_in_header(b, [](auto& h) {
         auto c = nlohmann::json::parse(h["__metadata__"]["config"].template get<std::string>());
         c["max_grad_norm"] = -1.0;
         h["__metadata__"]["config"] = c.dump();
       });
     }},
    {"ConfigWeightDecayHuge", "weight_decay",
     [](const std::string& b) {
       return set_in_header(b, [](auto& h) {
         auto c = nlohmann::json::parse(h["__metadata__"]["config"].template get<std::string>());
         c["weight_decay"] = 1e300;
         h["__metadata__"]["config"] = c.dump();
       });
     }},
    // Shapes and offsets are exact integers: 20.9 was taken as 20, 1e30 converted with
    // undefined behaviour, a negative offset wrapped around.
    {"ShapeFraction", "not a list of integers",
     [](const std::string& b) { return set_in_header(b, [](auto& h) { h["fc1.bias"]["shape"] = {20.9}; }); }},
    {"ShapeHuge", "not a list of integers",
     [](const std::string& b) { return set_in_header(b, [](auto& h) {
                                  h["fc1.weight"]["shape"] = {1e30, 20};
                                }); }},
    {"OffsetsFraction", "not a list of integers",
     [](const std::string& b) {
       return set_in_header(b, [](auto& h) {
         const uint64_t end = h["fc_out.bias"]["data_offsets"][1].template get<uint64_t>();
         h["fc_out.bias"]["data_offsets"] = {double(end - 12) + 0.5, double(end) + 0.5};
       });
     }},
    {"OffsetsNegative", "not a list of integers",
     [](const std::string& b) {
       return set_in_header(b, [](auto& h) { h["fc_out.bias"]["data_offsets"] = {-12, 0}; });
     }},
    {"NegativeSecondMoment", "negative value",
     [](const std::string& b) { return poison_tensor(b, "optimizer.exp_avg_sq.fc1.weight", -1.0f, 5); }},
    {"AbsurdParameter", "largest parameter magnitude",
     [](const std::string& b) { return poison_tensor(b, "fc_in.weight", -3e30f, 2); }},
    {"ParameterJustAboveTheBound", "largest parameter magnitude",
     [](const std::string& b) { return poison_tensor(b, "fc_out.bias", 1.0001e4f, 1); }},
    {"NaNInParameters", "non-finite",
     [](const std::string& b) { return poison_tensor(b, "fc1.weight", std::nanf(""), 57); }},
    {"InfInMoment", "non-finite",
     [](const std::string& b) {
       return poison_tensor(b, "optimizer.exp_avg_sq.layer_norm.bias", std::numeric_limits<float>::infinity(), 3);
     }},
};

class CorruptCheckpoint : public ::testing::TestWithParam<Corruption> {};

TEST_P(CorruptCheckpoint, RefusedWithOneLine) {
  const fs::path p = temp_dir() / "bad.safetensors";
  const std::string bytes = GetParam().mutate(trained().bytes);
  spit(p, bytes);
  try {
    load_checkpoint(p.string());
    ADD_FAILURE() << "accepted a corrupt checkpoint";
  } catch (const UsageError& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind("checkpoint " + p.string() + ": ", 0), 0u) << m;
    EXPECT_NE(m.find(GetParam().expect), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
  EXPECT_EQ(slurp(p), bytes) << "loading must not modify the file";
  fs::remove_all(temp_dir());
}

INSTANTIATE_TEST_SUITE_P(Cases, CorruptCheckpoint, ::testing::ValuesIn(kCorruptions),
                         [](const auto& info) { return std::string(info.param.name); });

// A file cut anywhere in its length field or header is refused with one line, and so is one cut
// anywhere in its data.
TEST(Checkpoint, TruncatedAtEveryHeaderByteIsRefused) {
  const std::string& b = trained().bytes;
  const fs::path p = temp_dir() / "cut.safetensors";
  std::vector<size_t> cuts;
  for (size_t n = 0; n < 8 + header_len(b); ++n) cuts.push_back(n);
  for (size_t n = 8 + header_len(b); n < b.size(); n += 97) cuts.push_back(n);
  cuts.push_back(b.size() - 1);
  for (const size_t n : cuts) {
    spit(p, b.substr(0, n));
    try {
      load_checkpoint(p.string());
      ADD_FAILURE() << "accepted the first " << n << " of " << b.size() << " bytes";
    } catch (const UsageError& e) {
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
  }
  fs::remove_all(temp_dir());
}

// Not a regular file: a device has no size to bound the reads by (/dev/zero never ends).
TEST(Checkpoint, DeviceIsRefused) {
  try {
    load_checkpoint("/dev/zero");
    ADD_FAILURE() << "read /dev/zero as a checkpoint";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos) << e.what();
  }
}

TEST(Checkpoint, MissingFileIsAUsageError) {
  EXPECT_THROW(load_checkpoint((temp_dir() / "nope.safetensors").string()), UsageError);
  fs::remove_all(temp_dir());
}

// ---- Resume: the checkpoint's network and game win; a different one given explicitly is refused. ----
TEST(Checkpoint, GrpoSettingsRoundTripAndOlderConfigsAreReferenceRuns) {
  TrainConfig c = tiny_grpo_config();
  c.clip = 0.3f;
  c.gamma = 0.9f;
  const TrainConfig back = config_from_json(nlohmann::json::parse(config_to_json(c).dump()));
  EXPECT_EQ(back.algo, Algo::Grpo);
  EXPECT_EQ(back.ppo_epochs, c.ppo_epochs);
  EXPECT_EQ(back.minibatches, c.minibatches);
  EXPECT_EQ(back.clip, c.clip);
  EXPECT_EQ(back.kl_beta, c.kl_beta);
  EXPECT_EQ(back.gamma, c.gamma);
  EXPECT_EQ(back.lr_schedule, LrSchedule::Linear);
  // A config written before --algo existed has none of the four fields, nor --lr-schedule.
  nlohmann::json old = config_to_json(tiny_config());
  for (const char* k : {"algo", "ppo_epochs", "minibatches", "clip", "kl_beta", "lr_schedule"}) old.erase(k);
  EXPECT_EQ(config_from_json(old).algo, Algo::Reference);
  EXPECT_EQ(config_from_json(old).lr_schedule, LrSchedule::Step);
  nlohmann::json odd = config_to_json(c);
  odd["lr_schedule"] = "cosine";
  EXPECT_THROW(config_from_json(odd), UsageError);
  // Resuming refuses another algorithm or other passes, and names the flag.
  Checkpoint ck;
  ck.config = c;
  ck.state.scalars = train_scalars_start(c.lr, 0, 0, c.lr_anneal_epochs());
  TrainConfig flags = c;
  flags.algo = Algo::Reference;
  auto only = [](const char* which) { return [which](const char* f) { return std::string(f) == which; }; };
  try {
    resume_config("x", ck, flags, only("--algo"), "out");
    ADD_FAILURE();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--algo grpo, not reference"), std::string::npos) << e.what();
  }
  flags = c;
  flags.ppo_epochs = 5;
  EXPECT_THROW(resume_config("x", ck, flags, only("--ppo-epochs"), "out"), UsageError);
  EXPECT_EQ(resume_config("x", ck, TrainConfig{}, only("--patience"), "out").algo, Algo::Grpo);
  // The linear decay's horizon is the run's --total-epochs: another total or schedule is refused.
  flags = c;
  flags.total_epochs = c.total_epochs + 1;
  try {
    resume_config("x", ck, flags, only("--total-epochs"), "out");
    ADD_FAILURE();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--total-epochs must stay 1000, not 1001"), std::string::npos) << e.what();
  }
  flags = c;
  flags.lr_schedule = LrSchedule::Step;
  EXPECT_THROW(resume_config("x", ck, flags, only("--lr-schedule"), "out"), UsageError);
  EXPECT_EQ(resume_config("x", ck, c, only("--total-epochs"), "out").total_epochs, c.total_epochs);
  // Scalars whose horizon disagrees with the config are not this run's schedule.
  ck.state.scalars = train_scalars_start(c.lr);
  EXPECT_THROW(resume_config("x", ck, c, only("--patience"), "out"), UsageError);
}

TEST(Checkpoint, ResumeRefusesOtherHiddenSizeOrGameShape) {
  Checkpoint ck;
  ck.config = tiny_config();
  ck.state.scalars = train_scalars_start(ck.config.lr);
  TrainConfig flags = TrainConfig{};
  flags.hidden_size = 64;
  flags.game.screen_width = 9;
  auto only = [](const char* which) { return [which](const char* f) { return std::string(f) == which; }; };
  try {
    resume_config("x.safetensors", ck, flags, only("--hidden-size"), "out");
    ADD_FAILURE();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--hidden-size 20, not 64"), std::string::npos) << e.what();
  }
  EXPECT_THROW(resume_config("x", ck, flags, only("--screen-width"), "out"), UsageError);
  // Not given: the checkpoint's values are used; the run's own settings come from the flags.
  flags.total_epochs = 77;
  const TrainConfig c = resume_config("x", ck, flags, only("--total-epochs"), "dir");
  EXPECT_EQ(c.hidden_size, 20);
  EXPECT_EQ(c.game.screen_width, 6);
  EXPECT_EQ(c.total_epochs, 77);
  EXPECT_EQ(c.out_dir, "dir");
  EXPECT_EQ(c.metrics_path, "dir/metrics.jsonl");
  // Given with the same value: fine.
  flags.hidden_size = 20;
  EXPECT_NO_THROW(resume_config("x", ck, flags, only("--hidden-size"), "dir"));
}

TEST(Checkpoint, TrimMetricsKeepsEpochsBeforeTheResume) {
  const fs::path p = temp_dir() / "metrics.jsonl";
  spit(p, "{\"epoch\":0}\n{\"epoch\":1}\n{\"epoch\":2}\n{\"epoch\":3,\"torn");
  trim_metrics(p.string(), 2);
  EXPECT_EQ(slurp(p), "{\"epoch\":0}\n{\"epoch\":1}\n");
  fs::remove_all(temp_dir());
}

// ---- Writes: a failure is reported and the previous file survives intact. ----
TEST(CheckpointWrite, FullDiskIsReportedAndOldFileKept) {
  const fs::path p = temp_dir() / "keep.safetensors";
  write_file_atomic(p.string(), "old contents");
  // RLIMIT_FSIZE makes write() fail with EFBIG past the limit, as a full disk fails with ENOSPC.
  struct rlimit old {};
  getrlimit(RLIMIT_FSIZE, &old);
  struct rlimit small = old;
  small.rlim_cur = 4096;
  auto prev = signal(SIGXFSZ, SIG_IGN);
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string err;
  try {
    write_file_atomic(p.string(), std::string(100000, 'x'));
  } catch (const std::runtime_error& e) {
    err = e.what();
  }
  setrlimit(RLIMIT_FSIZE, &old);
  signal(SIGXFSZ, prev);
  EXPECT_NE(err.find("writing " + p.string()), std::string::npos) << err;
  EXPECT_EQ(slurp(p), "old contents");
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(temp_dir())) files += e.is_regular_file();
  EXPECT_EQ(files, 1u) << "the temporary file was left behind";
  fs::remove_all(temp_dir());
}

TEST(CheckpointWrite, MissingDirectoryIsReported) {
  EXPECT_THROW(write_file_atomic((temp_dir() / "no" / "such" / "f").string(), "x"), std::runtime_error);
  fs::remove_all(temp_dir());
}

}  // namespace
}  // namespace grpo::test
