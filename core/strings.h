#pragma once
/// \file Small string helpers shared by every layer (messages, option names).
#include <string>
#include <string_view>
#include <vector>

namespace ctrainer {

/// `items` separated by `separator` ("a, b, c").
std::string join(const std::vector<std::string>& items, std::string_view separator = ", ");
/// ASCII lower case (option values, names compared without case).
std::string lower(std::string_view text);
/// ASCII upper case.
std::string upper(std::string_view text);
/// The pieces of `text` between `separator`s, empty ones included, as Python's
/// str.split(separator) gives them ("a,,b" -> a, "", b; "" -> one empty piece).
std::vector<std::string> split(std::string_view text, char separator);

}  // namespace ctrainer
