#include "cli/flag_checks.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

#include "core/errors.h"

namespace grpo {

namespace {

// The value as typed, for the message: control characters escaped, cut short.
std::string shown(const std::string& v) {
  const std::string s = one_line(v.substr(0, 40));
  return "\"" + s + (v.size() > 40 ? "...\"" : "\"");
}

bool digits_only(const std::string& s, size_t from, size_t to) {
  if (from >= to) return false;
  for (size_t i = from; i < to; ++i)
    if (s[i] < '0' || s[i] > '9') return false;
  return true;
}

std::string integer_problem(const std::string& v, bool is_signed) {
  const size_t sign = is_signed && !v.empty() && v[0] == '-' ? 1 : 0;
  const bool ok = digits_only(v, sign, v.size()) && (v[sign] != '0' || v.size() == sign + 1);
  if (ok) {
    // Within 64 bits; CLI11 then checks the option's own type and range.
    if (is_signed) {
      int64_t x;
      const auto r = std::from_chars(v.data(), v.data() + v.size(), x);
      if (r.ec == std::errc() && r.ptr == v.data() + v.size()) return {};
    } else if (plain_decimal_count(v)) {
      return {};
    }
    return "is out of range, got " + shown(v);
  }
  return std::string("must be a plain decimal integer") + (is_signed ? "" : " >= 0") +
         " (digits only, no leading zero), got " + shown(v);
}

// [+-]digits[.digits][(e|E)[+-]digits], digits on at least one side of the point, and finite.
std::string real_problem(const std::string& v) {
  size_t i = 0;
  if (i < v.size() && (v[i] == '+' || v[i] == '-')) ++i;
  const size_t int_begin = i;
  while (i < v.size() && v[i] >= '0' && v[i] <= '9') ++i;
  bool digits = i > int_begin;
  if (i < v.size() && v[i] == '.') {
    const size_t frac_begin = ++i;
    while (i < v.size() && v[i] >= '0' && v[i] <= '9') ++i;
    digits = digits || i > frac_begin;
  }
  bool ok = digits;
  if (ok && i < v.size() && (v[i] == 'e' || v[i] == 'E')) {
    ++i;
    if (i < v.size() && (v[i] == '+' || v[i] == '-')) ++i;
    ok = digits_only(v, i, v.size());
    i = v.size();
  }
  ok = ok && i == v.size();
  if (!ok) return "must be a plain decimal number (as 0.5 or 1e-4), got " + shown(v);
  if (!std::isfinite(std::strtod(v.c_str(), nullptr))) return "is out of range, got " + shown(v);
  return {};
}

void check_options(CLI::App& app) {
  for (CLI::Option* opt : app.get_options()) {
    if (opt->get_type_size() == 0) continue;  // a switch (--greedy): no value
    const std::string full = opt->get_type_name();
    const std::string type = full.substr(0, full.find(':'));
    if (type == "INT" || type == "UINT") {
      const bool is_signed = type == "INT";
      opt->transform(CLI::Validator([is_signed](std::string& v) { return integer_problem(v, is_signed); }, ""));
    } else if (type == "FLOAT") {
      opt->transform(CLI::Validator([](std::string& v) { return real_problem(v); }, ""));
    } else {
      opt->transform(CLI::Validator(
          [](std::string& v) { return v.empty() ? std::string("must not be empty") : std::string(); }, ""));
    }
  }
  for (CLI::App* sub : app.get_subcommands({})) check_options(*sub);
}

}  // namespace

std::optional<uint64_t> plain_decimal_count(const std::string& v) {
  if (!digits_only(v, 0, v.size()) || (v[0] == '0' && v.size() > 1)) return std::nullopt;
  uint64_t x;
  const auto r = std::from_chars(v.data(), v.data() + v.size(), x);
  if (r.ec != std::errc() || r.ptr != v.data() + v.size()) return std::nullopt;
  return x;
}

void check_every_flag_value(CLI::App& app) { check_options(app); }

}  // namespace grpo
