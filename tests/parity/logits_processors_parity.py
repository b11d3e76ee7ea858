"""One generation step's score processing against transformers 5: for each generation_config.json
below, transformers builds its LogitsProcessorList as generate() does
(GenerationConfig.from_pretrained, completed with the global defaults, then the model's
_get_logits_processor) and ctrainer_parity_logits_dump builds LogitsProcessors from the same
file; both process the same input_ids and scores. The step names must be the same classes in the
same order, and the processed scores equal bit for bit (both run the same libtorch kernels).
Settings transformers refuses when it builds the step must be refused by ours too.
"""
import json
import os
import tempfile

import torch
from safetensors.torch import load_file, save_file
from transformers import GenerationConfig, GPT2Config, GPT2LMHeadModel

from parity_support import binary, fail_if, run

VOCAB = 64
DUMP = binary("ctrainer_parity_logits_dump")

# (name, generation_config.json, prompt length, total length, left padding)
CASES = [
    ("greedy defaults", {}, 6, 9, False),
    ("repetition penalty", {"repetition_penalty": 1.3}, 6, 9, False),
    ("repetition penalty below 1, left-padded prompt", {"repetition_penalty": 0.7}, 6, 9, True),
    ("no repeat 1-grams", {"no_repeat_ngram_size": 1}, 5, 8, False),
    ("no repeat 2-grams", {"no_repeat_ngram_size": 2}, 5, 12, False),
    ("no repeat 3-grams", {"no_repeat_ngram_size": 3}, 5, 12, False),
    ("bad words", {"bad_words_ids": [[5], [7, 8], [3, 4, 9], [2], [7, 8]], "eos_token_id": 2},
     5, 10, False),
    ("min length forbids eos", {"min_length": 12, "eos_token_id": [2, 3]}, 5, 10, False),
    ("min length reached", {"min_length": 10, "eos_token_id": 2}, 5, 10, False),
    ("min new tokens", {"min_new_tokens": 3, "eos_token_id": 2}, 5, 7, False),
    ("forced bos", {"forced_bos_token_id": 4}, 1, 1, False),
    ("forced bos after the first token", {"forced_bos_token_id": 4}, 1, 2, False),
    ("forced eos", {"forced_eos_token_id": [2, 3], "max_length": 11}, 5, 10, False),
    ("invalid values", {"remove_invalid_values": True}, 5, 6, False),
    ("suppressed tokens", {"suppress_tokens": [1, 5], "begin_suppress_tokens": [3]}, 6, 6, False),
    ("begin suppress after a forced bos", {"begin_suppress_tokens": [3],
                                           "forced_bos_token_id": 4}, 1, 2, False),
    ("sampling defaults (top_k 50)", {"do_sample": True}, 5, 7, False),
    ("temperature, top-k, top-p", {"do_sample": True, "temperature": 0.7, "top_k": 10,
                                   "top_p": 0.9}, 5, 7, False),
    ("min-p without top-k", {"do_sample": True, "top_k": 0, "min_p": 0.1}, 5, 7, False),
    ("top-p with beams keeps eos + 1", {"do_sample": True, "top_k": 0, "top_p": 0.05,
                                        "num_beams": 2, "eos_token_id": [2, 3]}, 5, 7, False),
    ("greedy ignores a temperature of 0", {"do_sample": False, "temperature": 0.0}, 5, 7, False),
    ("everything at once", {"do_sample": True, "temperature": 1.5, "top_k": 20, "top_p": 0.8,
                            "min_p": 0.02, "repetition_penalty": 1.2, "no_repeat_ngram_size": 2,
                            "bad_words_ids": [[6], [1, 2]], "min_new_tokens": 4,
                            "eos_token_id": [2, 3], "suppress_tokens": [0],
                            "transformers_version": "5.24.0", "output_scores": True},
     5, 8, True),
]

# Settings transformers' steps refuse when generate() builds them.
REFUSED = [
    ("temperature 0 when sampling", {"do_sample": True, "temperature": 0.0}, "temperature"),
    ("negative repetition penalty", {"repetition_penalty": -1.0}, "repetition_penalty"),
    ("min_p above 1", {"do_sample": True, "min_p": 1.5}, "min_p"),
]

MODEL = GPT2LMHeadModel(GPT2Config(vocab_size=VOCAB, n_positions=64, n_embd=8, n_layer=1,
                                   n_head=2)).eval()


def their_processors(folder, prompt_ids, mask):
    config = GenerationConfig.from_pretrained(folder)
    config.update(**GenerationConfig._get_default_generation_params(), defaults_only=True)
    eos = config.eos_token_id
    config._eos_token_tensor = None if eos is None else torch.tensor(
        eos if isinstance(eos, list) else [eos])
    return MODEL._get_logits_processor(
        generation_config=config, input_ids_seq_length=prompt_ids.shape[1],
        encoder_input_ids=prompt_ids, device="cpu",
        model_kwargs={"attention_mask": mask} if mask is not None else {})


def inputs(generator, prompt_length, total_length, left_padding, case_name):
    # Ids from a small range so that n-grams and bad words recur.
    ids = torch.randint(0, 12, (3, total_length), generator=generator)
    scores = torch.randn(3, VOCAB, generator=generator) * 3
    if case_name == "invalid values":
        scores[0, 4] = float("inf")
        scores[1, 7] = float("-inf")
        scores[2, 9] = float("nan")
    mask = None
    if left_padding:
        mask = torch.ones(3, prompt_length, dtype=torch.long)
        mask[1, :2] = 0
        mask[2, :4] = 0
    return ids, scores, mask


def write_config(tmp, index, config):
    folder = os.path.join(tmp, f"config_{index}")
    os.makedirs(folder)
    with open(os.path.join(folder, "generation_config.json"), "w") as f:
        json.dump(config, f)
    return folder


def main():
    differences = []
    generator = torch.Generator().manual_seed(1202)
    with tempfile.TemporaryDirectory() as tmp:
        # Every case and draw, then one run of our program over all of them.
        cases, expected = [], []
        for index, (name, config, prompt_length, total_length, left_padding) in enumerate(CASES):
            folder = write_config(tmp, index, config)
            for draw in range(4):
                ids, scores, mask = inputs(generator, prompt_length, total_length, left_padding,
                                           name)
                processors = their_processors(folder, ids[:, :prompt_length], mask)
                theirs = processors(ids, scores.clone())
                tensors = {"input_ids": ids, "scores": scores}
                if mask is not None:
                    tensors["attention_mask"] = mask
                stem = os.path.join(tmp, f"case_{index}_{draw}")
                save_file(tensors, stem + ".in.safetensors")
                cases.append({"config": os.path.join(folder, "generation_config.json"),
                              "prompt_length": prompt_length, "inputs": stem + ".in.safetensors",
                              "output": stem + ".out.safetensors"})
                expected.append((f"{name}, draw {draw}",
                                 [type(p).__name__ for p in processors], theirs))
        for index, (name, config, key) in enumerate(REFUSED):
            folder = write_config(tmp, len(CASES) + index, config)
            ids = torch.randint(0, 12, (2, 4), generator=generator)
            try:
                their_processors(folder, ids, None)
                differences.append(f"{name}: transformers accepts it (the case is wrong)")
            except ValueError:
                pass
            stem = os.path.join(tmp, f"refused_{index}")
            save_file({"input_ids": ids, "scores": torch.randn(2, VOCAB, generator=generator)},
                      stem + ".in.safetensors")
            cases.append({"config": os.path.join(folder, "generation_config.json"),
                          "prompt_length": 4, "inputs": stem + ".in.safetensors",
                          "output": stem + ".out.safetensors"})
            expected.append((name, key, None))
        with open(os.path.join(tmp, "cases.json"), "w") as f:
            json.dump(cases, f)
        lines = run([DUMP, "--cases", os.path.join(tmp, "cases.json")]).stdout.splitlines()
        if len(lines) != len(cases):
            differences.append(f"{len(lines)} results for {len(cases)} cases")
        for case, line, (name, their_steps, theirs) in zip(cases, lines, expected):
            result = json.loads(line)
            if theirs is None:  # a refusal: their_steps holds the key the error must name
                if "error" not in result or their_steps not in result["error"]:
                    differences.append(f"{name}: ours did not refuse it naming {their_steps}: "
                                       f"{result}")
                continue
            if "error" in result:
                differences.append(f"{name}: ours refused it: {result['error']}")
                continue
            if result["steps"] != their_steps:
                differences.append(f"{name}: steps {result['steps']} vs transformers' "
                                   f"{their_steps}")
                continue
            ours = load_file(case["output"])["scores"]
            same = torch.equal(torch.isnan(ours), torch.isnan(theirs)) and torch.equal(
                torch.nan_to_num(ours, nan=0.0), torch.nan_to_num(theirs, nan=0.0))
            if not same:
                worst = (torch.nan_to_num(ours) - torch.nan_to_num(theirs)).abs().max()
                differences.append(f"{name}: scores differ (max |diff| {worst})")
        for name, their_steps, _ in expected[::4][:len(CASES)]:
            print(f"parity: {name.rsplit(', draw', 1)[0]}: {their_steps or 'no step'}")
    fail_if(differences, f"{len(CASES)} generation configs x 4 draws and {len(REFUSED)} refusals")


if __name__ == "__main__":
    main()
