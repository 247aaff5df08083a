"""The wheel carries the config tree; an installed (non-editable) copy finds it from any directory."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out),
                    str(ROOT)], check=True)
    return next(out.glob("mutransfer-*.whl"))


def test_wheel_contains_configs_and_sweeps(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    configs = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "configs").rglob("*.yaml"))
    assert configs, "no configs in the checkout"
    for rel in configs:
        assert f"mutransfer/{rel}" in names
    assert "mutransfer/configs/parametrization/mup.yaml" in names
    assert "mutransfer/cli.py" in names
    assert any(name.startswith("mutransfer/sweeps/") for name in names)


def test_installed_wheel_runs_from_another_directory(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(wheel)],
                   check=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": str(target)}
    code = "import mutransfer.config as c; print(c.config_dir())"
    where = subprocess.run([sys.executable, "-c", code], cwd=elsewhere, env=env, capture_output=True, text=True,
                           check=True)
    assert Path(where.stdout.strip()) == target / "mutransfer" / "configs"
    show = subprocess.run([sys.executable, "-m", "mutransfer", "show", "model.width=64"], cwd=elsewhere, env=env,
                          capture_output=True, text=True)
    assert show.returncode == 0, show.stderr
    assert "lm_head.weight" in show.stdout
