"""The built-in optimizer and trainer on many ranks equal one process (CPU, gloo, world sizes 1–4, one spawned
process group per world size with one thread per rank): each rule's step on FSDP2 shards and DDP replicas, the
Newton–Schulz calls and bytes, 20 GPT steps under DDP and FSDP2, and a user's own model sharded, its optimizer
built after ``fully_shard`` or refused when built before."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
import torch.multiprocessing as mp

import rank_checks
from mutransfer.dist.launch import free_port
from mutransfer.optim.directions import block_direction

WORLDS = (1, 2, 3, 4)


@pytest.fixture(scope="module")
def corpus_text(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("corpus") / "text.txt"
    path.write_bytes(Path(__file__).read_bytes() * 8 + Path(rank_checks.__file__).read_bytes() * 8)
    return path


@pytest.fixture(scope="module")
def one_process(corpus_text: Path) -> dict[str, float]:
    """The single-process answers the ranks must give."""
    losses = {str(dtype): rank_checks.train_losses(None, corpus_text, dtype)
              for dtype in (torch.float64, torch.float32)}
    return {**losses, "user_model": rank_checks.user_model_loss(None)}


@pytest.fixture(scope="module", params=WORLDS, ids=lambda world: f"world{world}")
def reports(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
            corpus_text: Path) -> tuple[int, list[dict[str, Any]]]:
    world = request.param
    folder = tmp_path_factory.mktemp(f"world{world}")
    mp.start_processes(rank_checks.rank_main, args=(world, free_port(), str(folder), str(corpus_text)),
                       nprocs=world, start_method="spawn")
    return world, [torch.load(folder / f"rank{rank}.pt", weights_only=False) for rank in range(world)]


def test_every_rule_and_optimizer_steps_as_in_one_process(reports: tuple[int, list[dict[str, Any]]]) -> None:
    world, per_rank = reports
    for report in per_rank:
        errors = report["optimizer"]["errors"]
        assert {label for label, _ in errors} == {"steepest", "adamw", "sgd"}
        worst = max(errors, key=errors.get)
        assert errors[worst] <= 1e-6, f"{worst} differs by {errors[worst]:.3g} at world size {world}"
        assert report["optimizer"]["replicated_error"] <= 1e-6
    if world > 2:
        assert min(report["optimizer"]["rows"]["two_rows"] for report in per_rank) == 0, "no rank held an empty shard"


def test_each_hidden_matrix_is_orthogonalized_once(reports: tuple[int, list[dict[str, Any]]]) -> None:
    world, per_rank = reports
    expected = rank_checks.SPECTRAL * rank_checks.STEPS
    for key in ("ns_calls", "stats_ns_calls", "replicated_ns_calls"):
        calls = [report["optimizer"][key] for report in per_rank]
        assert sum(calls) == expected, f"{key}: {calls} at world size {world}"
        if world > 1:
            assert max(calls) < expected, f"{key}: one rank did all the work"


def test_bytes_sent_match_the_model(reports: tuple[int, list[dict[str, Any]]]) -> None:
    world, per_rank = reports
    for report in per_rank:
        sent, modelled = report["optimizer"]["bytes_sent"], report["optimizer"]["bytes_modelled"]
        assert sent == modelled
        assert (sent > 0) == (world > 1)


def test_newton_schulz_of_a_shard_alone_is_caught(reports: tuple[int, list[dict[str, Any]]]) -> None:
    world, per_rank = reports
    if world == 1:
        assert per_rank[0]["optimizer"]["shard_alone_error"] == 0.0
        return
    errors = [report["optimizer"]["shard_alone_error"] for report in per_rank]
    assert all(error > 1e-3 for error in errors if error is not None), errors


def test_training_under_ddp_and_fsdp_equals_one_process(reports: tuple[int, list[dict[str, Any]]],
                                                        one_process: dict[str, float]) -> None:
    world, per_rank = reports
    for report in per_rank:
        for (parallel, dtype), loss in report["train"].items():
            tolerance = 1e-6 if dtype == str(torch.float64) else 1e-3
            assert abs(loss - one_process[dtype]) <= tolerance * one_process[dtype], (world, parallel, dtype, loss)


def test_a_users_model_sharded_equals_one_process(reports: tuple[int, list[dict[str, Any]]],
                                                  one_process: dict[str, float]) -> None:
    _, per_rank = reports
    for report in per_rank:
        assert report["user_model"] == pytest.approx(one_process["user_model"], rel=1e-9)


def test_an_optimizer_built_before_fully_shard_is_refused_at_every_step(
        reports: tuple[int, list[dict[str, Any]]]) -> None:
    _, per_rank = reports
    for report in per_rank:
        before = report["order"]["before"]
        assert len(before["errors"]) == 5, "a step went on with the parameters fully_shard replaced"
        assert "fully_shard" in before["errors"][0] and "then mutransfer.build_optimizer" in before["errors"][0]
        assert before["losses"][-1] == before["losses"][0]


def test_an_optimizer_built_after_fully_shard_trains(reports: tuple[int, list[dict[str, Any]]]) -> None:
    """Also while FSDP2 keeps the unsharded parameters on the model through the step, where the optimizer's
    sharded ones (which hold the gradients) are none of the model's."""
    _, per_rank = reports
    for report in per_rank:
        after, unsharded = report["order"]["after"], report["order"]["unsharded_at_step"]
        assert after["errors"] == unsharded["errors"] == []
        assert after["held"] == after["params"] and unsharded["held"] == 0
        assert after["losses"][-1] < 0.5 * after["losses"][0], after["losses"]


def test_stacked_trials_orthogonalized_as_one_matrix_differ() -> None:
    stack = torch.randn(3, 6, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    per_trial = block_direction("spectral", stack)
    as_one = block_direction("spectral", stack.reshape(18, 4)).reshape(3, 6, 4)
    assert (per_trial - as_one).abs().max() > 1e-2
