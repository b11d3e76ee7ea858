"""The text columns of the bundled GLUE files as ctrainer's readers see them, without torch or
transformers (the tokenizer benchmark's Rust side and the parity tests read them alike)."""
import os

# folder -> (text_a column, text_b column or None); CoLA has no header: its columns are
# source, label, original_label, sentence (glue_task.cpp's headerless_columns).
GLUE_TASKS = {
    "CoLA": ("sentence", None),
    "SST-2": ("sentence", None),
    "MRPC": ("#1 String", "#2 String"),
    "RTE": ("sentence1", "sentence2"),
    "STS-B": ("sentence1", "sentence2"),
    "WNLI": ("sentence1", "sentence2"),
}
COLA_COLUMNS = ["source", "label", "original_label", "sentence"]
GLUE_SPLITS = ("train", "dev")


def read_glue_task(examples_data, folder, split):
    """The (text_a, text_b) rows of <examples_data>/glue/<folder>/<split>.tsv: UTF-8 (BOM
    dropped), one record per line, split on tabs, no quoting. ValueError names a bad row."""
    text_a, text_b = GLUE_TASKS[folder]
    path = os.path.join(examples_data, "glue", folder, f"{split}.tsv")
    with open(path, encoding="utf-8-sig", newline="") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    if folder == "CoLA":
        header = COLA_COLUMNS
    else:
        header, lines = lines[0].split("\t"), lines[1:]
    a, b = header.index(text_a), header.index(text_b) if text_b else None
    rows = []
    for number, line in enumerate(lines, start=1 if folder == "CoLA" else 2):
        fields = line.split("\t")
        if len(fields) != len(header):
            raise ValueError(f"{path}:{number}: {len(fields)} columns, expected {len(header)}")
        rows.append((fields[a], fields[b] if b is not None else None))
    return rows
