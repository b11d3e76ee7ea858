#!/bin/sh
# Writes the checkpoint fixtures of tests/e2e/checkpoint_fixtures_test.cpp: the checkpoint-3 of a
# 6-step ctrainer-train-classifier run (spirals, a small MLP) saved plainly (one process), with
# ZeRO-2 and ZeRO-3 (DeepSpeed JSON) and FSDP full_shard (two processes each), and the weights
# that run ended with (its checkpoint-6/model.safetensors, as final_model.safetensors). The test resumes each checkpoint with today's
# build and must end on those weights bit for bit: the checkpoint format, and what resuming
# restores, did not change.
#
#   make_fixtures.sh BUILD_DIR OUT_DIR
# BUILD_DIR holds distributed/ctrainer-run and examples/ctrainer-train-classifier of the build
# that writes them (the committed ones: main at bbb49f7, before the Strategy took over its
# sharded state and one optimizer-state codec served both kinds of checkpoint).
# Keep the flags in step with the test's (kTrainFlags there).
set -eu
build="$1"
out="$2"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
flags="--do_train --max_steps 6 --save_strategy steps --save_steps 3 --logging_steps 1 \
  --report_to none --disable_tqdm true --seed 5 --num_train_examples 96 --num_eval_examples 8 \
  --hidden_size 8 --num_hidden_layers 2 --dropout 0.1 --per_device_train_batch_size 8 \
  --learning_rate 0.01 --weight_decay 0.01 --warmup_steps 2 --dataloader_num_workers 0"
echo '{"zero_optimization": {"stage": 2}, "train_micro_batch_size_per_gpu": "auto"}' \
  > "$scratch/zero2.json"
echo '{"zero_optimization": {"stage": 3}, "train_micro_batch_size_per_gpu": "auto"}' \
  > "$scratch/zero3.json"
run() {
  name="$1"
  processes="$2"
  shift 2
  # shellcheck disable=SC2086
  OMP_NUM_THREADS=1 CUDA_VISIBLE_DEVICES= "$build/distributed/ctrainer-run" --standalone \
    --nproc-per-node "$processes" "$build/examples/ctrainer-train-classifier" \
    --output_dir "$scratch/$name" $flags "$@"
  rm -rf "${out:?}/$name"
  mkdir -p "$out/$name"
  cp -r "$scratch/$name/checkpoint-3" "$out/$name/"
  cp "$scratch/$name/checkpoint-6/model.safetensors" "$out/$name/final_model.safetensors"
}
run plain 1
run zero2 2 --deepspeed "$scratch/zero2.json"
run zero3 2 --deepspeed "$scratch/zero3.json"
run fsdp 2 --fsdp full_shard
echo "make_fixtures: wrote plain, zero2, zero3 and fsdp into $out"
