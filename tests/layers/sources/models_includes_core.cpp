// Compiled with the models layer's include folders by ctest: a header of a lower layer is found.
#include <ctrainer/core/strings.h>

int main() {
  return ctrainer::lower("OK") == "ok" ? 0 : 1;
}
