#!/usr/bin/env bash
# run_clm trains a small GPT-2 from scratch on the bundled corpus (examples/data/text/kjv.txt, the
# held-out 5 % of its lines evaluating) with the bundled BPE: the validation perplexity of the
# untrained model (same seed, so the same initial weights) and after training, and the logged
# training losses, into benchmarks/results/run_clm_kjv.json. ~5 minutes on 2 cores.
#
#   benchmarks/measure_run_clm_kjv.sh [BUILD_DIR] [RESULT_JSON] [MAX_STEPS]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
build="${1:-build}"
result="${2:-benchmarks/results/run_clm_kjv.json}"
steps="${3:-400}"
program="$build/examples/run_clm"
[[ -x $program ]] || { echo "measure_run_clm_kjv.sh: $program is not built" >&2; exit 2; }
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
common=(--model_type gpt2
        --config_overrides n_embd=128,n_layer=4,n_head=4,vocab_size=8192,n_positions=128
        --tokenizer_name examples/data/text/kjv-bpe-8k --train_file examples/data/text/kjv.txt
        --block_size 128 --per_device_eval_batch_size 32 --do_eval --report_to none
        --disable_tqdm true --seed 42)
train=(--do_train --max_steps "$steps" --per_device_train_batch_size 16 --learning_rate 1e-3
       --warmup_steps 40 --weight_decay 0.01 --logging_steps 20 --save_strategy no)
"$program" "${common[@]}" --output_dir "$out/untrained" > "$out/untrained.log" 2>&1
start="$(date +%s.%N)"
"$program" "${common[@]}" "${train[@]}" --output_dir "$out/trained" > "$out/trained.log" 2>&1
end="$(date +%s.%N)"
python3 - "$result" "$out" "$start" "$end" "$steps" "${common[*]} ${train[*]}" <<'PY'
import datetime, json, os, platform, sys
result, out, start, end, steps, flags = sys.argv[1:]
untrained = json.load(open(os.path.join(out, "untrained", "eval_results.json")))
trained = json.load(open(os.path.join(out, "trained", "eval_results.json")))
train = json.load(open(os.path.join(out, "trained", "train_results.json")))
history = json.load(open(os.path.join(out, "trained", "trainer_state.json")))["log_history"]
losses = [[e["step"], e["loss"]] for e in history if "loss" in e]
wall = float(end) - float(start)
json.dump({
    "scenario": "run_clm_kjv",
    "command": "benchmarks/measure_run_clm_kjv.sh",
    "config": {"flags": "run_clm " + flags + " --output_dir <tmp>", "max_steps": int(steps)},
    "environment": {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "nproc": os.cpu_count(), "machine": platform.platform()},
    "metrics": {
        "perplexity_untrained": untrained["perplexity"], "perplexity_trained": trained["perplexity"],
        "eval_loss_untrained": untrained["eval_loss"], "eval_loss_trained": trained["eval_loss"],
        "eval_blocks": trained["eval_samples"], "train_blocks": train["train_samples"],
        "train_wall_s": wall, "train_loss_by_step": losses},
    "table": {"header": ["", "validation perplexity", "eval_loss"],
              "rows": [["untrained (step 0)", f"{untrained['perplexity']:.1f}", f"{untrained['eval_loss']:.3f}"],
                       [f"after {steps} steps", f"{trained['perplexity']:.1f}", f"{trained['eval_loss']:.3f}"]]},
}, open(result, "w"), indent=2, sort_keys=True)
open(result, "a").write("\n")
print(f"measure_run_clm_kjv.sh: perplexity {untrained['perplexity']:.1f} -> {trained['perplexity']:.1f} "
      f"after {steps} steps ({wall:.0f} s) -> {result}")
PY
