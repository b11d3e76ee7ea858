#!/usr/bin/env bash
# Memory of LoRA against full fine-tuning (issue 33, item 4): run_clm on the bundled corpus, one
# process (rank 0 of a world of 1), full fine-tuning and --lora_r 8 on every Linear
# (all-linear) alternating, PAIRS pairs, for two GPT-2 shapes with an 8k vocabulary: 6 layers x
# 512 wide, blocks of 256, batch 8 (activations dominate), and 12 layers x 768 wide (GPT-2 small's
# blocks), blocks of 128, batch 2 (weights, gradients and Adam's state dominate). Each run's peak
# RSS (the kernel's ru_maxrss of the process) and train runtime, into
# benchmarks/results/lora_memory.json. ~4 minutes on 2 cores.
#
#   benchmarks/measure_lora_memory.sh [BUILD_DIR] [RESULT_JSON] [PAIRS]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
build="${1:-build}"
result="${2:-benchmarks/results/lora_memory.json}"
pairs="${3:-2}"
program="$build/examples/run_clm"
[[ -x $program ]] || { echo "measure_lora_memory.sh: $program is not built" >&2; exit 2; }
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
head -n 3000 examples/data/text/kjv.txt > "$out/train.txt"
common=(--model_type gpt2 --tokenizer_name examples/data/text/kjv-bpe-8k
        --train_file "$out/train.txt" --do_train --max_steps 6 --learning_rate 1e-4
        --logging_steps 1 --save_strategy no --report_to none --disable_tqdm true --seed 42
        --dataloader_num_workers 0)
lora=(--lora_r 8 --lora_alpha 16 --lora_target_modules all-linear)
python3 - "$result" "$out" "$pairs" "$program" "${common[*]}" "${lora[*]}" <<'PY'
import datetime, json, os, platform, resource, subprocess, sys, time
result, out, pairs, program, common, lora = sys.argv[1:]
SHAPES = {
    "gpt2_6x512_seq256_batch8": ["--config_overrides",
                                 "n_embd=512,n_layer=6,n_head=8,vocab_size=8192,n_positions=256",
                                 "--block_size", "256", "--per_device_train_batch_size", "8"],
    "gpt2_12x768_seq128_batch2": ["--config_overrides",
                                  "n_embd=768,n_layer=12,n_head=12,vocab_size=8192,n_positions=128",
                                  "--block_size", "128", "--per_device_train_batch_size", "2"],
}
runs = {shape: {"full": [], "lora": []} for shape in SHAPES}
for shape, shape_flags in SHAPES.items():
  for pair in range(int(pairs)):
    for side in ("full", "lora"):
        folder = os.path.join(out, f"{shape}-{side}-{pair}")
        argv = [program, *common.split(), *shape_flags, "--output_dir", folder]
        if side == "lora":
            argv += lora.split()
        # A fresh interpreter per run, so its children's ru_maxrss is this run's alone.
        probe = ("import resource, subprocess, sys; "
                 "rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, "
                 "stderr=subprocess.DEVNULL).returncode; "
                 "print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
        start = time.monotonic()
        line = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True,
                              text=True, check=True).stdout.split()
        wall = time.monotonic() - start
        if line[0] != "0":
            sys.exit(f"measure_lora_memory.sh: {side} run failed")
        history = json.load(open(os.path.join(folder, "trainer_state.json")))["log_history"]
        train = json.load(open(os.path.join(folder, "train_results.json")))
        runs[shape][side].append({"peak_rss_mib": int(line[1]) / 1024, "wall_s": wall,
                           "train_runtime_s": train["train_runtime"],
                           "losses": [e["loss"] for e in history if "loss" in e]})
best = {shape: {side: min(r["peak_rss_mib"] for r in rs) for side, rs in sides.items()}
        for shape, sides in runs.items()}
ratio = {shape: b["lora"] / b["full"] for shape, b in best.items()}
json.dump({
    "scenario": "lora_memory",
    "command": "benchmarks/measure_lora_memory.sh",
    "config": {"flags": "run_clm " + common + " --output_dir <tmp>", "lora_flags": lora,
               "pairs": int(pairs), "processes": 1},
    "environment": {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "nproc": os.cpu_count(), "machine": platform.platform()},
    "metrics": {"runs": runs, "peak_rss_mib": best, "peak_rss_ratio_lora_to_full": ratio},
    "table": {"header": ["shape", "full: peak RSS (MiB)", "LoRA: peak RSS (MiB)", "LoRA / full",
                         "full: 6 steps (s)", "LoRA: 6 steps (s)"],
              "rows": [[shape, f"{best[shape]['full']:.0f}", f"{best[shape]['lora']:.0f}",
                        f"{ratio[shape]:.2f}",
                        f"{min(r['train_runtime_s'] for r in runs[shape]['full']):.1f}",
                        f"{min(r['train_runtime_s'] for r in runs[shape]['lora']):.1f}"]
                       for shape in SHAPES]},
}, open(result, "w"), indent=2, sort_keys=True)
open(result, "a").write("\n")
for shape in SHAPES:
    print(f"measure_lora_memory.sh: {shape}: peak RSS full {best[shape]['full']:.0f} MiB, "
          f"LoRA {best[shape]['lora']:.0f} MiB ({ratio[shape]:.2f}x)")
print(f"-> {result}")
PY
