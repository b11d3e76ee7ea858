"""The bad inputs of ctrainer-generate in docs/errors.md (error_cases.py lists the section)."""


def generation_cases(case):
    """The Cases of ctrainer-generate; `case` is error_cases.Case."""
    generate = ["ctrainer-generate", "--model_name_or_path", "m", "--prompt", "In the beginning"]
    return [
        case("ctrainer-generate without --model_name_or_path",
             ["ctrainer-generate", "--prompt", "hello"]),
        case("a folder that holds no model", generate, files={"m/readme.txt": "empty\n"}),
        case("a flag that is no generation setting", generate + ["--beams", "4"]),
        case("a word where a generation setting needs a number",
             generate + ["--num_beams", "many"]),
        case("a transformers generation feature not built here",
             generate + ["--num_beam_groups", "2"]),
        case("a negative --seed", generate + ["--seed", "-1"]),
        case("an unknown --device", generate + ["--device", "tpu"]),
        case("a model folder whose class cannot generate (a BERT classifier)", generate,
             copies=[("stsb-model", "m")]),
    ]
