"""--report_to mlflow against a real MLflow tracking server (issue 18, item 2).

A `mlflow server` (the tests' Python environment) runs on loopback with a SQLite store. run_glue
trains a tiny BERT on an MRPC slice with --report_to mlflow and HF's MLFLOW_* variables, then
MLflow's own client reads back:

- the run: in MLFLOW_EXPERIMENT_NAME (created), named --run_name, FINISHED, with MLFLOW_TAGS
  and MLflow's system tags; its params are every training argument as Python's str() writes
  it (what HF's MLflowCallback logs) and the model config's entries;
- every numeric log of the run (trainer_log.jsonl, the final evaluation included) as a metric
  history with the same (step, value) pairs (MLflow stores a point repeated within one
  millisecond once);
- MLFLOW_RUN_ID reopens that run (metrics appended; changed params are refused by the server,
  reported, and training goes on); with MLFLOW_NESTED_RUN a new run is nested under it;
- a server that is down, one that answers HTTP 500, one that never answers
  (MLFLOW_HTTP_REQUEST_TIMEOUT) and an unknown MLFLOW_RUN_ID are reported as warnings, and
  training ends normally with the same losses and metrics as the reported run;
- --report_to mlflow without MLFLOW_TRACKING_URI is refused before anything is written.
"""
import ast
import http.server
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from mlflow.tracking import MlflowClient

from parity_support import EXAMPLES_DATA, binary, fail_if

MRPC = os.path.join(EXAMPLES_DATA, "glue", "MRPC")
# Logged values that depend on the clock, not on the training.
TIMING = ("_runtime", "_per_second")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_glue(out, extra, env, expect_ok=True, steps=12):
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    command = [binary("run_glue"), "--task_name", "mrpc", "--data_dir", MRPC,
               "--config_name", os.path.join(EXAMPLES_DATA, "configs", "bert-tiny.json"),
               "--tokenizer_name",
               os.path.join(EXAMPLES_DATA, "vocab", "bert-base-uncased-vocab.txt"),
               "--output_dir", out, "--do_train", "--do_eval", "--max_train_samples", "96",
               "--max_eval_samples", "32", "--max_seq_length", "64",
               "--per_device_train_batch_size", "8", "--learning_rate", "1e-3",
               "--max_steps", str(steps), "--logging_steps", "3", "--eval_strategy", "steps",
               "--eval_steps", "6", "--save_strategy", "no", "--seed", "3", "--use_cpu",
               "--disable_tqdm", "--report_to", "mlflow"] + extra
    result = subprocess.run(command, capture_output=True, text=True,
                            env=dict(clean, OMP_NUM_THREADS="2", **env))
    if expect_ok and result.returncode != 0:
        sys.exit(f"mlflow: run_glue failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    return result


def logs(out):
    return [json.loads(line) for line in open(os.path.join(out, "trainer_log.jsonl"))]


def training_values(out):
    """The logs without their clock-dependent entries: what must not change with reporting."""
    return [{k: v for k, v in entry.items() if not k.endswith(TIMING)} for entry in logs(out)]


def expected_metrics(out):
    expected = {}
    for entry in logs(out):
        for key, value in entry.items():
            if key != "step" and isinstance(value, (int, float)):
                expected.setdefault(key, []).append((entry["step"], float(value)))
    return expected


def check_run(client, run, out, run_name):
    problems = []
    info, data = run.info, run.data
    if info.status != "FINISHED" or not info.end_time or info.end_time < info.start_time:
        problems.append(f"status {info.status}, start {info.start_time}, end {info.end_time}")
    if info.run_name != run_name:
        problems.append(f"run name {info.run_name!r} != {run_name!r}")
    tags = data.tags
    for key, value in {"team": "nlp", "rc": "1", "mlflow.source.type": "LOCAL"}.items():
        if tags.get(key) != value:
            problems.append(f"tag {key}: {tags.get(key)!r} != {value!r}")
    if not tags.get("mlflow.source.name", "").endswith("run_glue") or not tags.get("mlflow.user"):
        problems.append(f"system tags {tags}")
    arguments = json.load(open(os.path.join(out, "training_args.json")))
    for key, value in arguments.items():
        got = data.params.get(key)
        if isinstance(value, dict) and got is not None:
            got = ast.literal_eval(got)
        elif not isinstance(value, dict):
            value = str(value)  # what HF's MLflowCallback logs: str() of the value
        if got != value:
            problems.append(f"param {key}: {got!r} != {value!r}")
    config = json.load(open(os.path.join(out, "config.json")))
    for key in ("hidden_size", "num_hidden_layers", "vocab_size"):
        if data.params.get(key) != str(config[key]):
            problems.append(f"model config param {key}: {data.params.get(key)!r} != {config[key]}")
    expected = expected_metrics(out)
    if set(data.metrics) != set(expected):
        problems.append(f"metric keys {sorted(data.metrics)} != logged {sorted(expected)}")
    for key, points in expected.items():
        got = sorted((m.step, m.value) for m in client.get_metric_history(info.run_id, key))
        # MLflow's SQL store keys a metric by (key, timestamp, step, value): the same value
        # logged twice at one step within one millisecond (epoch at the last step's training
        # log, evaluation and summary) is stored once. So compare the distinct points, and
        # MLflow may hold no more points than were logged.
        if sorted(set(got)) != sorted(set(points)) or len(got) > len(points):
            problems.append(f"metric {key}: MLflow {got} != trainer_log {sorted(points)}")
    for key in ("loss", "learning_rate", "grad_norm", "epoch", "eval_loss", "eval_accuracy"):
        if key not in expected:
            problems.append(f"nothing logged as {key}")
    return problems


class FailingServer:
    """A loopback HTTP server that answers every request with HTTP 500, or never answers."""

    def __init__(self, hang=False):
        class Handler(http.server.BaseHTTPRequestHandler):
            def handle_one_request(self):
                if hang:
                    time.sleep(20)
                    return
                super().handle_one_request()

            def do_any(self):
                body = b'{"error_code": "INTERNAL_ERROR", "message": "database is locked"}'
                self.send_response(500)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_any

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def start_mlflow(tmp):
    port = free_port()
    log = open(os.path.join(tmp, "mlflow-server.log"), "w")
    server = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port),
         "--workers", "1", "--backend-store-uri", f"sqlite:///{tmp}/mlflow.db",
         "--default-artifact-root", os.path.join(tmp, "artifacts")],
        stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    for _ in range(240):
        try:
            if urllib.request.urlopen(url + "/health", timeout=1).status == 200:
                return server, url
        except OSError:
            time.sleep(0.5)
        if server.poll() is not None:
            break
    server.kill()
    sys.exit("mlflow: the tracking server did not start:\n" +
             open(os.path.join(tmp, "mlflow-server.log")).read()[-3000:])


def main():
    with tempfile.TemporaryDirectory() as tmp:
        server, url = start_mlflow(tmp)
        try:
            check(tmp, url)
        finally:
            server.terminate()
            server.wait(timeout=30)


def check(tmp, url):
    client = MlflowClient(tracking_uri=url)
    env = {"MLFLOW_TRACKING_URI": url, "MLFLOW_EXPERIMENT_NAME": "ctrainer e2e",
           "MLFLOW_TAGS": '{"team": "nlp", "rc": 1}'}

    # 1. A reported run, read back with MLflow's client.
    reported = os.path.join(tmp, "reported")
    run_glue(reported, ["--run_name", "tiny-mrpc"], env)
    experiment = client.get_experiment_by_name("ctrainer e2e")
    runs = client.search_runs([experiment.experiment_id]) if experiment else []
    fail_if([] if len(runs) == 1 else [f"expected 1 run in the experiment, got {len(runs)}"],
            "the run's creation in MLFLOW_EXPERIMENT_NAME")
    run = runs[0]
    fail_if(check_run(client, run, reported, "tiny-mrpc"),
            f"the run read back ({len(run.data.params)} params, {len(run.data.metrics)} metrics)")

    # 2. MLFLOW_RUN_ID reopens it: metrics appended; its changed params refused and reported.
    loss_points = len(client.get_metric_history(run.info.run_id, "loss"))
    resumed = run_glue(os.path.join(tmp, "resumed"), ["--run_name", "again"],
                       dict(env, MLFLOW_RUN_ID=run.info.run_id), steps=3)
    again = client.get_run(run.info.run_id)
    fail_if([p for p in [
        None if len(client.get_metric_history(run.info.run_id, "loss")) == loss_points + 1
        else "the resumed run's loss was not appended",
        None if again.info.status == "FINISHED" else f"status {again.info.status}",
        None if "INVALID_PARAMETER_VALUE" in resumed.stderr and "training goes on" in resumed.stderr
        else "changed params were not reported:\n" + resumed.stderr[-2000:],
        None if len(client.search_runs([experiment.experiment_id])) == 1
        else "MLFLOW_RUN_ID created a new run",
    ] if p], "MLFLOW_RUN_ID (reopening the run)")

    # 3. MLFLOW_NESTED_RUN: a new run under MLFLOW_RUN_ID's.
    run_glue(os.path.join(tmp, "nested"), ["--run_name", "child"],
             dict(env, MLFLOW_RUN_ID=run.info.run_id, MLFLOW_NESTED_RUN="true"), steps=3)
    children = client.search_runs([experiment.experiment_id],
                                  f"tags.mlflow.parentRunId = '{run.info.run_id}'")
    fail_if([] if len(children) == 1 and children[0].info.run_name == "child"
            and children[0].info.status == "FINISHED"
            else [f"nested runs: {[(c.info.run_name, c.info.status) for c in children]}"],
            "MLFLOW_NESTED_RUN")

    # 4. Servers that fail never change or stop training.
    quick = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "1", "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "0",
             "MLFLOW_HTTP_REQUEST_BACKOFF_JITTER": "0"}
    failing, hanging = FailingServer(), FailingServer(hang=True)
    problems = []
    for name, server_env in [
            ("down", dict(quick, MLFLOW_TRACKING_URI=f"http://127.0.0.1:{free_port()}")),
            ("HTTP 500", dict(quick, MLFLOW_TRACKING_URI=failing.url)),
            ("no answer", dict(quick, MLFLOW_TRACKING_URI=hanging.url,
                               MLFLOW_HTTP_REQUEST_TIMEOUT="1")),
            ("unknown MLFLOW_RUN_ID", dict(env, MLFLOW_RUN_ID="0123456789abcdef"))]:
        out = os.path.join(tmp, "failing-" + name.replace(" ", "_"))
        started = time.time()
        result = run_glue(out, [], server_env)
        took = time.time() - started
        if training_values(out) != training_values(reported):
            problems.append(f"{name}: the training's logs differ from the reported run's")
        if "no longer reporting to MLflow (training goes on)" not in result.stderr:
            problems.append(f"{name}: not reported:\n{result.stderr[-1500:]}")
        if took > 60:
            problems.append(f"{name}: took {took:.0f} s")
    fail_if(problems, "servers down, failing, silent; an unknown run id")

    # 5. No tracking URI: refused before anything is written.
    refused_out = os.path.join(tmp, "refused")
    refused = run_glue(refused_out, [], {}, expect_ok=False)
    fail_if([p for p in [
        None if refused.returncode == 2 else f"exit code {refused.returncode}",
        None if "--report_to mlflow needs MLFLOW_TRACKING_URI" in refused.stderr
        else f"message: {refused.stderr[-500:]}",
        None if not os.path.exists(refused_out) else "the output_dir was created",
    ] if p], "--report_to mlflow without MLFLOW_TRACKING_URI")


if __name__ == "__main__":
    sys.exit(main())
