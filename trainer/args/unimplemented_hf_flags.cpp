// The transformers 5 TrainingArguments fields ctrainer does not accept, with the reason the
// parser gives and docs/arguments.md lists. tests/parity/arguments_vs_hf.py checks that this list
// and the registry together cover every field of transformers.TrainingArguments, and that every
// name here is one of its fields.
#include <ctrainer/trainer/args/argument_parser.h>

namespace ctrainer {

const std::vector<UnimplementedHfFlag>& unimplemented_hf_flags() {
  static const std::vector<UnimplementedHfFlag> flags = [] {
    const std::string hub =
        "ctrainer has no Hugging Face Hub client (its programs make no network "
        "calls); upload output_dir yourself";
    const std::string compile = "torch.compile (TorchDynamo) exists only in Python";
    const std::string datasets =
        "a column option of the datasets library; ctrainer's datasets "
        "are C++ types";
    const std::string thread_workers =
        "ctrainer's loader workers are threads of the training "
        "process, alive for the whole run";
    const std::string trackio = "the Trackio integration is not built (--report_to tensorboard)";
    const std::string eval_later = "this evaluation option is not implemented yet";
    return std::vector<UnimplementedHfFlag>{
        {"optim_args",
         "optimizer arguments as a string of Python keywords are not read; use "
         "adam_beta1, adam_beta2, adam_epsilon, weight_decay"},
        {"optim_target_modules",
         "only for GaLore / APOLLO / LOMO optimizers, which ctrainer lacks"},
        {"activation_checkpointing_kwargs", "checkpointing keyword arguments are Python options"},
        {"gradient_checkpointing_kwargs",
         "checkpointing keyword arguments (use_reentrant) are "
         "Python options; ctrainer's checkpointing is one kind"},
        {"torch_compile", compile},
        {"torch_compile_backend", compile},
        {"torch_compile_mode", compile},
        {"use_liger_kernel", "Liger's kernels are Triton code driven from Python"},
        {"liger_kernel_config", "Liger's kernels are Triton code driven from Python"},
        {"use_cache", "a generation (KV cache) option; ctrainer's models are encoders"},
        {"torch_empty_cache_steps", "emptying the CUDA cache every N steps is not implemented"},
        {"auto_find_batch_size",
         "retrying with a smaller batch after running out of memory is "
         "not implemented"},
        {"logging_nan_inf_filter", "not implemented: every step's loss counts in the logged loss"},
        {"project", trackio},
        {"trackio_space_id", trackio},
        {"trackio_bucket_id", trackio},
        {"trackio_static_space_id", trackio},
        {"eval_delay", eval_later},
        {"prediction_loss_only", eval_later},
        {"eval_on_start", eval_later},
        {"eval_do_concat_batches", eval_later},
        {"eval_use_gather_object", eval_later},
        {"include_for_metrics", eval_later},
        {"batch_eval_metrics", eval_later},
        {"save_on_each_node",
         "every checkpoint is written once, by the world's main process, to "
         "a shared output_dir"},
        {"enable_jit_checkpoint", "use save_on_signal: SIGTERM / SIGINT save a checkpoint"},
        {"push_to_hub", hub},
        {"hub_token", hub},
        {"hub_private_repo", hub},
        {"hub_model_id", hub},
        {"hub_strategy", hub},
        {"hub_always_push", hub},
        {"hub_revision", hub},
        {"restore_callback_states_from_checkpoint",
         "stateful callbacks (TrainerCallback::restore_state) are always restored on resume"},
        {"accelerator_config",
         "Accelerate's Python configuration; DDP and sharding settings come "
         "from ddp_* flags, --fsdp and --deepspeed"},
        {"parallelism_config", "Accelerate's Python configuration; use --fsdp or --deepspeed"},
        {"dataloader_persistent_workers", thread_workers},
        {"dataloader_multiprocessing_context", thread_workers},
        {"dataloader_in_order",
         "batches always arrive in sampler order, whatever the number of "
         "workers"},
        {"remove_unused_columns", datasets},
        {"length_column_name", datasets},
        {"ddp_broadcast_buffers",
         "an option of torch's DistributedDataParallel, which ctrainer's "
         "DDP (distributed/ddp_strategy.h) does not have"},
        {"ddp_static_graph",
         "an option of torch's DistributedDataParallel, which ctrainer's DDP "
         "(distributed/ddp_strategy.h) does not have"},
        {"debug", "the underflow_overflow and tpu_metrics_debug modes are not implemented"},
        {"skip_memory_metrics", "memory metrics are not collected"},
    };
  }();
  return flags;
}

}  // namespace ctrainer
