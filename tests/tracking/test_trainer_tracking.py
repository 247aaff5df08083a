"""A sweep whose trials run the user's own training command, logged to MLflow: the curve comes from the
command's progress lines, its result ends the run, and the command, handed the trial's run id in its
environment, logs into that same run with MLflow's own ``start_run``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import mlflow
import pytest
from typer.testing import CliRunner

from conftest import invoke
from tracked_sweep import write_tracked_spec


TRAINER = '''
import json, math, os, sys
import mlflow
args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
out, x = args["--out"], math.log2(float(args["--lr"]))
loss = 2.0 + 0.1 * (x + 3) ** 2
with open(os.path.join(out, "progress.jsonl"), "w") as f:
    for step in (5, 10):
        f.write(json.dumps({"step": step, "train_loss": loss + 1.0 / step, "val_loss": loss + 0.5 / step}) + "\\n")
with open(os.path.join(out, "env.json"), "w") as f:
    json.dump({k: os.environ.get(k) for k in ("MUTRANSFER_TRACKER_RUN_ID", "MLFLOW_RUN_ID")}, f)
with mlflow.start_run():
    mlflow.log_metric("own_metric", x)
open(os.path.join(out, "result.json"), "w").write(json.dumps({"val_loss": loss, "curve": [[5, loss + 0.1], [10, loss]]}))
'''


@pytest.mark.slow
def test_a_trainer_sweep_logs_its_commands_progress_and_the_command_joins_its_run(
        tmp_path: Path, text_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    (tmp_path / "trainer.py").write_text(TRAINER)
    uri = (tmp_path / "mlruns").as_uri()
    spec = write_tracked_spec(tmp_path, text_file, log={"tracker": "mlflow", "uri": uri}, name="own",
                              trainer={"command": [sys.executable, str(tmp_path / "trainer.py"), "--lr", "{lr}",
                                                   "--out", "{trial_dir}"], "timeout": 120})
    result = invoke(CliRunner(), "sweep", str(spec), "--out", str(tmp_path / "run"), "widths=[32]")
    assert result.exit_code == 0, result.output
    client = mlflow.tracking.MlflowClient(uri)
    experiment = client.get_experiment_by_name("own").experiment_id
    trials = [r for r in client.search_runs([experiment]) if r.data.tags.get("mutransfer.kind") == "trial"]
    assert len(trials) == 4 and {r.info.status for r in trials} == {"FINISHED"}
    for run in trials:
        x = float(run.data.params["log2_lr"])
        curve = client.get_metric_history(run.info.run_id, "train_loss")
        loss = 2.0 + 0.1 * (x + 3) ** 2
        assert [m.step for m in curve] == [5, 10]
        assert [m.value for m in curve] == pytest.approx([loss + 0.2, loss + 0.1])
        assert run.data.metrics["own_metric"] == x, "the command's own start_run() logged into the trial's run"
        assert run.data.metrics["loss"] == pytest.approx(2.0 + 0.1 * (x + 3) ** 2)
    folders = sorted((tmp_path / "run" / "trials").glob("*/trial-*/env.json"))
    seen = {json.loads(path.read_text())["MUTRANSFER_TRACKER_RUN_ID"] for path in folders}
    assert seen == {r.info.run_id for r in trials}
