// A JSON value as a short, single-line excerpt for an error message: JSON-escaped (a newline or
// escape sequence in hostile input cannot reach the terminal raw), invalid UTF-8 replaced, and
// cut to `max` characters. And a parser callback that refuses deep nesting while parsing, before
// a deep value exists (printing or walking one recurses).
#pragma once
#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

namespace grpo {

inline std::string json_excerpt(const nlohmann::json& j, size_t max = 60) {
  std::string s = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (s.size() > max) s = s.substr(0, max) + "...";
  return s;
}

// Thrown by depth_limit(max) when a document nests deeper than max levels.
struct JsonTooDeep {
  int max;
};

inline nlohmann::json::parser_callback_t depth_limit(int max) {
  return [max](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
    if (depth > max) throw JsonTooDeep{max};
    return true;
  };
}

}  // namespace grpo
