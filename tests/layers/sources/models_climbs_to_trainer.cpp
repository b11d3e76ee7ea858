// Compiled with the models layer's include folders by ctest: `..` must not climb out of the
// mirror of models/ into the source tree.
#include <ctrainer/models/../trainer/trainer.h>
