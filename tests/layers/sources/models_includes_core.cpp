// Compiled with the models layer's include folders by ctest: a header of a lower layer is found
// (the test passes only if this compiles), and it declares what models/ may use.
#include <string>
#include <type_traits>

#include <ctrainer/core/strings.h>

static_assert(std::is_same_v<decltype(ctrainer::lower("OK")), std::string>,
              "core/strings.h reached through the models layer's include folders");

int main() {
  return ctrainer::lower("OK") == "ok" ? 0 : 1;
}
