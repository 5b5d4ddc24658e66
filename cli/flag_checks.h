// The one check every flag value passes before its own range check, by the value's type: an
// integer is plain decimal digits (a sign only where the type is signed; no "0x10", no " 16", no
// "1e3", no leading zero, which CLI11 would read as octal), a real number is plain decimal with an
// optional exponent and finite (no "nan", "inf", "0x1p-3" or blanks), and no value is empty.
// CLI11 alone accepts all of these.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

namespace grpo {

// Puts that check in front of every value-taking option of `app` and of its subcommands (call
// once, after every option is registered). Options typed as text are only required to be non-empty.
void check_every_flag_value(CLI::App& app);

// "123" -> 123; anything but plain decimal digits without a leading zero (and at most the type's
// range) -> nullopt. For values the flag helpers parse themselves (--profile-epochs A:B).
std::optional<uint64_t> plain_decimal_count(const std::string& v);

}  // namespace grpo
