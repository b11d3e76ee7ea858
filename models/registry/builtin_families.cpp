// The model families built into the library: the one list a new family joins.
#include <ctrainer/models/bart/bart_family.h>
#include <ctrainer/models/bert/bert_family.h>
#include <ctrainer/models/gpt2/gpt2_family.h>
#include <ctrainer/models/llama/llama_family.h>
#include <ctrainer/models/t5/t5_family.h>
#include <ctrainer/models/registry/model_registry.h>

namespace ctrainer {

void register_builtin_model_families(ModelRegistry& registry) {
  register_bert_family(registry);
  register_bart_family(registry);
  register_gpt2_family(registry);
  register_llama_family(registry);
  register_t5_family(registry);
}

}  // namespace ctrainer
