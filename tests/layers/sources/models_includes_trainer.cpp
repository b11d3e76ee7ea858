// Compiled with the models layer's include folders by ctest: must fail (trainer is above).
#include <ctrainer/trainer/trainer.h>
