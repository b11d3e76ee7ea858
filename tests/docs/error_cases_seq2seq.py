"""The bad inputs of run_summarization and run_translation in docs/errors.md (error_cases.py lists
the section). Their model is a tiny T5 (t5.json) with the uncased BERT vocabulary as tokenizer,
enough to reach the data files."""
import json

T5 = json.dumps({"model_type": "t5", "vocab_size": 30522, "d_model": 8, "d_kv": 4, "d_ff": 8,
                 "num_layers": 1, "num_heads": 2, "decoder_start_token_id": 0,
                 "pad_token_id": 0, "eos_token_id": 1})
COMMON = ["--output_dir", "out", "--do_train", "--max_steps", "1", "--report_to", "none",
          "--save_strategy", "no", "--config_name", "t5.json", "--tokenizer_name", "vocab.txt"]
PAIRS_CSV = "text,summary\nThe cat sat on the mat all day.,A cat sat.\n"
PAIRS_JSON = json.dumps({"translation": {"en": "Hello", "de": "Hallo"}}) + "\n"


def seq2seq_cases(case):
    """The Cases of run_summarization and run_translation; `case` is error_cases.Case."""
    summarize = ["run_summarization"] + COMMON
    translate = ["run_translation"] + COMMON
    csv_files = {"t5.json": T5, "pairs.csv": PAIRS_CSV}
    json_files = {"t5.json": T5, "pairs.json": PAIRS_JSON}
    return [
        case("a hub dataset", summarize + ["--dataset_name", "cnn_dailymail"], files=csv_files),
        case("--do_train without --train_file", summarize, files=csv_files),
        case("a train file of another format", summarize + ["--train_file", "pairs.txt"],
             files={"t5.json": T5, "pairs.txt": "text\n"}),
        case("run_translation without --target_lang",
             translate + ["--train_file", "pairs.json", "--source_lang", "en"], files=json_files),
        case("run_translation given a CSV file",
             translate + ["--train_file", "pairs.csv", "--source_lang", "en", "--target_lang",
                          "de"], files=csv_files),
        case("a CSV field whose quote is never closed", summarize + ["--train_file", "bad.csv"],
             files={"t5.json": T5, "bad.csv": PAIRS_CSV + "\"A text,A summary\n"}),
        case("a CSV row with more fields than the header",
             summarize + ["--train_file", "bad.csv"],
             files={"t5.json": T5, "bad.csv": PAIRS_CSV + "a,b,c\n"}),
        case("--text_column naming no column",
             summarize + ["--train_file", "pairs.csv", "--text_column", "article"],
             files=csv_files),
        case("a JSON record whose text is a number", summarize + ["--train_file", "bad.jsonl"],
             files={"t5.json": T5, "bad.jsonl": '{"text": 42, "summary": "x"}\n'}),
        case("a translation record without the --target_lang text",
             translate + ["--train_file", "pairs.json", "--source_lang", "en", "--target_lang",
                          "fr"], files=json_files),
        case("a model config without decoder_start_token_id",
             summarize + ["--train_file", "pairs.csv"],
             files={"t5.json": json.dumps(dict(json.loads(T5), decoder_start_token_id=None)),
                    "pairs.csv": PAIRS_CSV}),
        case("--generation_num_beams 0",
             summarize + ["--train_file", "pairs.csv", "--generation_num_beams", "0"],
             files=csv_files),
        case("--generation_config that does not exist",
             summarize + ["--train_file", "pairs.csv", "--generation_config", "gen.json"],
             files=csv_files),
        case("--sortish_sampler with --group_by_length",
             summarize + ["--train_file", "pairs.csv", "--sortish_sampler", "--group_by_length"],
             files=csv_files),
        case("a Seq2SeqTrainingArguments flag given to run_glue",
             ["$GLUE", "--predict_with_generate"]),
    ]
