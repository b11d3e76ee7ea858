// Compiled with the models layer's include folders by ctest: `..` must not climb out of the
// mirror of models/ into the source tree.
#include <ctrainer/models/../trainer/trainer.h>

// Reached only if the include above was found, which the ctest expectation refuses: the test
// asserts the compiler's "No such file or directory" for the trainer header and exit status 1.
static_assert(sizeof(ctrainer::Trainer) > 0, "the models layer must not see trainer/");
