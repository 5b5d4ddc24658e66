// Checkpoints that cannot be loaded: every way a file can be broken (a corrupt header, wrong
// shapes or names, non-finite values, a cut anywhere, not a regular file, no file) is refused
// with one line (UsageError) naming the file, and loading never modifies it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/errors.h"
#include "engine/checkpoint/checkpoint.h"
#include "tests/engine/checkpoint_test_util.h"

namespace grpo::test {
namespace {

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

}  // namespace
}  // namespace grpo::test
