"""The Rust `tokenizers` side of `ctrainer-bench tokenizer_json` (benchmark-only Python).

    tokenizers_speed.py make OUTDIR [--quick]
        Builds OUTDIR/bpe.json (byte-level BPE as GPT-2's, trained on the bundled GLUE train text)
        and OUTDIR/wordpiece.json (bert-base-uncased's WordPiece with BERT's normalizer,
        pre-tokenizer and [CLS]/[SEP] template, as tests/parity/tokenizer_json_parity.py builds
        "bert_uncased"), and writes OUTDIR/texts.jsonl: the SST-2 train sentences and the MRPC
        train pairs, one JSON array per line (["a"] or ["a", "b"]). Prints a JSON summary.
    tokenizers_speed.py encode TOKENIZER_JSON TEXTS_JSONL THREADS
        Encodes every line once as a warm-up, then once timed with Tokenizer.encode_batch
        (add_special_tokens=True), and prints {seconds, cpu_seconds, tokens, texts, bytes, ...}.
        The bench sets RAYON_NUM_THREADS=THREADS; THREADS is only checked against it here.
    tokenizers_speed.py word TOKENIZER_JSON SIZES REPEATS
        Encodes one word of N ASCII letters ("abcdefghij" repeated, no spaces) for each N of the
        comma-separated SIZES, REPEATS times each, and prints {"sizes": [...], "seconds": [...]}
        (the median per size): how the BPE model's cost grows with the word's length.

The texts are read as our GLUE reader reads them (UTF-8, BOM dropped, split on tabs, no quoting),
so both sides encode the same bytes.
"""
import json
import os
import resource
import statistics
import sys
import time

from glue_text import GLUE_TASKS, read_glue_task
from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES_DATA = os.path.join(SOURCE_DIR, "examples", "data")
# GPT-2's vocabulary size is 50k; 30k trains on the GLUE text in a few seconds and, like GPT-2's,
# turns most English words into one token. --quick: a tiny vocabulary (a smoke test).
BPE_VOCAB = 30000
BPE_VOCAB_QUICK = 1000
BERT_SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def fail(message):
    print(f"error: tokenizers_speed.py: {message}", file=sys.stderr)
    sys.exit(2)


def read_glue(folder, split="train"):
    """(text_a, text_b or None) of each row, as ctrainer's GLUE reader sees them."""
    try:
        return read_glue_task(EXAMPLES_DATA, folder, split)
    except ValueError as error:
        fail(str(error))


def build_bpe(quick):
    """GPT-2's pipeline (ByteLevel pre-tokenizer without prefix space, ByteLevel decoder and
    post-processor, <|endoftext|>) with merges trained on every GLUE train sentence."""
    texts = [t for folder in GLUE_TASKS for row in read_glue(folder) for t in row if t is not None]
    if quick:
        texts = texts[:2000]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=BPE_VOCAB_QUICK if quick else BPE_VOCAB,
                                  special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(texts, trainer)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=True)
    return tok


def build_wordpiece():
    """bert-base-uncased as tokenizer.json: the bundled vocabulary, BertNormalizer (lowercase,
    accents stripped, CJK spaced), BertPreTokenizer, [CLS] $A [SEP] / [CLS] $A [SEP] $B [SEP]."""
    vocab = os.path.join(EXAMPLES_DATA, "vocab", "bert-base-uncased-vocab.txt")
    tok = Tokenizer(models.WordPiece.from_file(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in BERT_SPECIALS])
    tok.decoder = decoders.WordPiece(prefix="##")
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    return tok


def make(outdir, quick):
    os.makedirs(outdir, exist_ok=True)
    start = time.perf_counter()
    bpe = build_bpe(quick)
    bpe_seconds = time.perf_counter() - start
    bpe.save(os.path.join(outdir, "bpe.json"))
    wordpiece = build_wordpiece()
    wordpiece.save(os.path.join(outdir, "wordpiece.json"))
    rows = [(a, None) for a, _ in read_glue("SST-2")] + read_glue("MRPC")
    if quick:
        rows = rows[:300] + rows[-100:]
    with open(os.path.join(outdir, "texts.jsonl"), "w", encoding="utf-8") as f:
        for a, b in rows:
            f.write(json.dumps([a] if b is None else [a, b], ensure_ascii=False) + "\n")
    import tokenizers
    print(json.dumps({"bpe_vocab": bpe.get_vocab_size(), "bpe_train_seconds": bpe_seconds,
                      "wordpiece_vocab": wordpiece.get_vocab_size(), "texts": len(rows),
                      "pairs": sum(b is not None for _, b in rows),
                      "tokenizers_version": tokenizers.__version__}))


def read_texts(path):
    """encode_batch's inputs: a str per single, a (str, str) tuple per pair."""
    inputs, text_bytes = [], 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            text_bytes += sum(len(t.encode("utf-8")) for t in row)
            inputs.append(row[0] if len(row) == 1 else (row[0], row[1]))
    return inputs, text_bytes


def cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def voluntary_switches():
    """Times a thread gave up its core early (waiting for a lock or I/O), as our worker counts."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_nvcsw


def status_mb(field):
    """VmRSS (resident now) or VmHWM (peak since exec) in MB. The bench takes the peak from here,
    not from wait4's ru_maxrss, which keeps the parent's peak across posix_spawn's exec."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return -1.0


def encode(tokenizer_json, texts_path, threads):
    start_rss = status_mb("VmRSS")  # the interpreter with `tokenizers` imported, before any work
    if os.environ.get("RAYON_NUM_THREADS") != str(threads):
        fail(f"run with RAYON_NUM_THREADS={threads} (the bench sets it), got "
             f"{os.environ.get('RAYON_NUM_THREADS')!r}")
    tok = Tokenizer.from_file(tokenizer_json)
    inputs, text_bytes = read_texts(texts_path)
    tok.encode_batch(inputs, add_special_tokens=True)  # warm-up: page faults, rayon's pool
    cpu0, switches0, start = cpu_seconds(), voluntary_switches(), time.perf_counter()
    encodings = tok.encode_batch(inputs, add_special_tokens=True)
    seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu0
    switches = voluntary_switches() - switches0
    tokens = sum(len(e.ids) for e in encodings)
    # cpu_seconds / seconds shows how many threads really worked (1.0 for RAYON_NUM_THREADS=1).
    print(json.dumps({"seconds": seconds, "cpu_seconds": cpu, "voluntary_switches": switches, "tokens": tokens, "texts": len(inputs),
                      "bytes": text_bytes, "threads": threads,
                      "os_threads": len(os.listdir("/proc/self/task")), "start_rss_mb": start_rss,
                      "peak_rss_mb": status_mb("VmHWM")}))


def word(tokenizer_json, sizes, repeats):
    tok = Tokenizer.from_file(tokenizer_json)
    tok.encode("abcdefghij" * 100)  # warm-up
    out = {"sizes": [], "seconds": [], "tokens": []}
    for n in sizes:
        text = ("abcdefghij" * (n // 10 + 1))[:n]
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            encoding = tok.encode(text)
            times.append(time.perf_counter() - start)
        out["sizes"].append(n)
        out["seconds"].append(statistics.median(times))
        out["tokens"].append(len(encoding.ids))
    print(json.dumps(out))


def main():
    args = sys.argv[1:]
    if len(args) >= 2 and args[0] == "make":
        make(args[1], "--quick" in args[2:])
    elif len(args) == 4 and args[0] == "encode":
        encode(args[1], args[2], int(args[3]))
    elif len(args) == 4 and args[0] == "word":
        word(args[1], [int(s) for s in args[2].split(",")], int(args[3]))
    else:
        fail("usage: make OUTDIR [--quick] | encode TOKENIZER_JSON TEXTS THREADS | "
             "word TOKENIZER_JSON SIZES REPEATS")


if __name__ == "__main__":
    main()
