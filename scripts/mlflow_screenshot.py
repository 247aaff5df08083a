"""The MLflow UI showing a logged sweep, for docs/sweeps.md: a local ``mlflow server`` on 127.0.0.1 (a SQLite
store and an artifacts folder in a scratch directory), a small sweep of the default spec run with ``--log mlflow``
into it, and the experiment's page captured by Debian's Chromium through ChromeDriver (Selenium), headless; the
server's processes are ended afterwards.

    python scripts/mlflow_screenshot.py [--out docs/mlflow_sweep.png] [--width 1400] [--height 820]

needs ``pip install -e '.[docs,mlflow]'`` and Debian's ``chromium`` and ``chromium-driver``; nothing is
downloaded."""

from __future__ import annotations

import argparse
import base64
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SWEEP = ["widths=[32,64]", "search.noise_seeds=0", "search.extend=false", "train.steps=60"]
"""The default spec made small: 2 setups × 2 widths × 5 learning rates."""
EXPERIMENT = "default"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def start_server(folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen([sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port),
                             "--workers", "1", "--backend-store-uri", f"sqlite:///{folder / 'mlflow.db'}",
                             "--artifacts-destination", str(folder / "artifacts")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, cwd=folder)
    deadline = time.monotonic() + 120
    while not answers(url):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("mlflow server did not start")
        time.sleep(0.5)
    return proc, url


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


COLUMNS = ("Dataset", "Source", "Models", "setup", "width", "log2_lr", "loss", "mutransfer.status")
"""The Columns menu's entries toggled: MLflow's empty default columns off, the trial's point and loss on."""


def capture(url: str, out: Path, width: int, height: int) -> None:
    """The experiment's training runs as a reader sees them: the sidebar and the assistant closed, the sweep's
    parent run expanded to its trials, each trial's setup, width, log2 η, loss and status in columns."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from site_screenshots import browser

    driver = browser()

    def click(xpath: str, wait: float = 0.5) -> None:
        for element in driver.find_elements(By.XPATH, xpath)[:1]:
            element.click()
            time.sleep(wait)

    try:
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                               {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
        driver.get(url)
        time.sleep(8)
        click("//button[@aria-label='Toggle sidebar']")
        click("//button[@aria-label='Close']")
        click("//label[@data-testid='experiment-view-table-run-color']/ancestor::div[contains(@class,'ag-cell')]"
              "//button", 3)
        click("//button[normalize-space(.)='Columns']", 2)
        for title in COLUMNS:
            click(f"//span[@title='{title}']")
        driver.find_element(By.TAG_NAME, "body").send_keys(Keys.ESCAPE)
        time.sleep(2)
        shot = driver.execute_cdp_cmd("Page.captureScreenshot", {"format": "png"})
        out.write_bytes(base64.b64decode(shot["data"]))
    finally:
        driver.quit()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "mlflow_sweep.png")
    parser.add_argument("--width", type=int, default=1400)
    parser.add_argument("--height", type=int, default=820)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mlflow-shot-") as scratch:
        folder = Path(scratch)
        proc, url = start_server(folder)
        try:
            subprocess.run([sys.executable, "-m", "mutransfer", "sweep", *SWEEP, "--out", str(folder / "run"),
                            "--log", "mlflow"], check=True, env={**os.environ, "MLFLOW_TRACKING_URI": url},
                           stdout=subprocess.DEVNULL)
            import mlflow

            experiment = mlflow.tracking.MlflowClient(url).get_experiment_by_name(EXPERIMENT)
            capture(f"{url}/#/experiments/{experiment.experiment_id}/runs", args.out, args.width, args.height)
        finally:
            stop_server(proc)
    print(f"{args.out} {args.width}×{args.height}")


if __name__ == "__main__":
    main()
