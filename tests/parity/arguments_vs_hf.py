"""The arguments reference covers transformers' TrainingArguments exactly (issue 18, item 5).

`run_glue --help_markdown` prints docs/arguments.md from our flag table. Against the installed
transformers 5:
- every TrainingArguments field is either one of our flags or in the table of flags ctrainer does
  not accept (with a reason), never both and never neither;
- a flag marked "transformers" is a field of TrainingArguments, one marked "transformers 4" or
  "ctrainer" is not;
- every flag of origin "transformers" has transformers' default, except the deliberate
  differences listed in DIFFERENT_DEFAULTS with their reason.
"""
import dataclasses
import math
import re
import sys

import transformers

from parity_support import binary, fail_if, run

# Defaults that differ from transformers 5 on purpose.
DIFFERENT_DEFAULTS = {
    # transformers 5's output_dir defaults to None, then "trainer_output" in __post_init__.
    "output_dir": "resolved to the same 'trainer_output' at construction",
    # ctrainer's run_name defaults to output_dir after validation, as transformers 4.
    "run_name": "None in both; resolved to output_dir later",
    # Spelled None in transformers 5 and resolved to the same value later.
    "disable_tqdm": "None becomes False in __post_init__ unless the log level hides progress",
    "gradient_checkpointing": "None means off, as false",
    "fsdp": "None and '' both mean no FSDP",
    # ctrainer's use_cpu distinguishes unset (a GPU when visible) from an explicit false (a GPU
    # is required); transformers' False is the unset case.
    "use_cpu": "unset instead of False: an explicit --use_cpu false requires a GPU",
}


def our_flags():
    text = run([binary("run_glue"), "--help_markdown"]).stdout
    rows, unimplemented = {}, set()
    section = None
    for line in text.splitlines():
        if line.startswith("## "):
            section = line[3:]
            continue
        m = re.match(r"^\| `--([a-z0-9_]+)` \| (.*) \|$", line)
        if not m:
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", m.group(2))]
        if section == "transformers flags ctrainer does not accept":
            unimplemented.add(m.group(1))
        else:
            rows[m.group(1)] = {"type": cells[0], "default": cells[1].strip("`"),
                                "origin": cells[2]}
    return rows, unimplemented


def same_default(ours, theirs):
    if theirs is None:
        return ours in ("None", "none")
    if isinstance(theirs, bool):
        return ours == ("true" if theirs else "false")
    if isinstance(theirs, (int, float)):
        try:
            return math.isclose(float(ours), float(theirs), rel_tol=1e-12)
        except ValueError:
            return False
    if isinstance(theirs, list):
        return ours == " ".join(map(str, theirs)) or ours == str(theirs)
    value = getattr(theirs, "value", theirs)  # enums
    return ours == str(value)


def main():
    fields = {f.name: f for f in dataclasses.fields(transformers.TrainingArguments) if f.init}
    rows, unimplemented = our_flags()
    problems = []
    for name in fields:
        if name not in rows and name not in unimplemented:
            problems.append(f"{name}: a transformers field in neither table")
        if name in rows and name in unimplemented:
            problems.append(f"{name}: in both tables")
    for name in unimplemented - set(fields):
        problems.append(f"{name}: listed as not accepted, but transformers has no such field")
    for name, row in rows.items():
        if row["origin"] == "transformers" and name not in fields:
            problems.append(f"{name}: origin transformers, but transformers 5 has no such field")
        if row["origin"] in ("transformers 4", "ctrainer") and name in fields:
            problems.append(f"{name}: origin {row['origin']}, but it is a transformers 5 field")
        if row["origin"] == "transformers" and name in fields and name not in DIFFERENT_DEFAULTS:
            field = fields[name]
            theirs = (field.default if field.default is not dataclasses.MISSING
                      else field.default_factory() if field.default_factory is not dataclasses.MISSING
                      else None)
            if not same_default(row["default"], theirs):
                problems.append(f"{name}: default {row['default']!r}, transformers {theirs!r}")
    fail_if(problems, f"{len(rows)} flags and {len(unimplemented)} refused ones vs the "
                      f"{len(fields)} fields of transformers {transformers.__version__}")


if __name__ == "__main__":
    sys.exit(main())
