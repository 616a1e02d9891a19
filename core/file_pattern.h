// ExpandBraces: brace expansion of file patterns, as bash and Python's
// braceexpand (which webdataset uses for shard lists) do, before globbing:
//
//   "shard-{000000..000127}.tar"  128 names, zero-padded like the bounds
//   "{train,val}/part-{0..9..3}"  lists, nested, ranges with a step
//
// A range's numbers are padded to the width of the longer bound when either
// bound has a leading zero. "{x}" (no comma, not a range) stays literal, a
// backslash keeps the next character from expanding (the backslash stays,
// for glob(3)). Unbalanced braces are InvalidArgument; a pattern expanding
// to more than `max_names` names is InvalidArgument before they are made.
// Pure function: thread-safe.
#ifndef SLUICE_CORE_FILE_PATTERN_H_
#define SLUICE_CORE_FILE_PATTERN_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/core/result.h"

namespace sluice {

inline constexpr size_t kMaxBraceNames = 1'000'000;

// The names `pattern` expands to, in order (the pattern itself when it has
// no braces).
Result<std::vector<std::string>> ExpandBraces(std::string_view pattern,
                                              size_t max_names = kMaxBraceNames);

}  // namespace sluice

#endif  // SLUICE_CORE_FILE_PATTERN_H_
