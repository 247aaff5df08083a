"""Tests for mutransfer.optim and the Muon shape factor: msign, normalizers, shape factors and SteepestDescent."""

import math
from typing import Any

import pytest
import torch
from torch import Tensor

from mutransfer.optim.newton_schulz import msign, msign_exact
from mutransfer.optim.steepest import SteepestDescent, direction, rms_normalize, row_normalize, sign_update
from mutransfer.table.rules import MUON_SCALES, UPDATE_RULES, muon_scale

RECT_SHAPES = [(256, 64), (64, 256), (512, 128)]
SQUARE_SHAPES = [(128, 128), (256, 256)]
# <G, NS(G)> / ||G||_* measured 0.82-0.86 on Gaussian G: the top singular values land near 0.7.
NS_ALIGNMENT_FLOOR = 0.8


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _randn(*shape: int, seed: int) -> Tensor:
    return torch.randn(*shape, generator=_gen(seed))


def _cosine(a: Tensor, b: Tensor) -> float:
    return float((a * b).sum() / (a.norm() * b.norm()))


def _one_step(W: Tensor, G: Tensor, group: dict[str, Any], **kw: Any) -> Tensor:
    """Return ΔW after one step from zero momentum with gradient G."""
    p = W.clone().requires_grad_()
    p.grad = G.clone()
    SteepestDescent([{"params": [p], **group}], **kw).step()
    return p.detach() - W


# 1. msign -------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", RECT_SHAPES)
def test_msign_rectangular_singular_values_in_band(shape: tuple[int, int]) -> None:
    G = _randn(*shape, seed=1)
    X = msign(G)
    s = torch.linalg.svdvals(X)
    assert X.shape == G.shape
    assert s.min() >= 0.6 and s.max() <= 1.25, (s.min(), s.max())
    assert _cosine(X, msign_exact(G)) >= 0.97


@pytest.mark.parametrize("shape", SQUARE_SHAPES)
def test_msign_square_mostly_in_band(shape: tuple[int, int]) -> None:
    G = _randn(*shape, seed=2)
    X = msign(G)
    s = torch.linalg.svdvals(X)
    assert ((s >= 0.6) & (s <= 1.25)).float().mean() >= 0.95
    assert s.max() <= 1.25
    assert _cosine(X, msign_exact(G)) >= 0.97


def test_msign_exact_is_orthogonal() -> None:
    X = msign_exact(_randn(96, 32, seed=3))
    torch.testing.assert_close(X.mT @ X, torch.eye(32), atol=1e-5, rtol=0)


@pytest.mark.parametrize("shape", [(3, 48, 16), (2, 2, 16, 40), (3, 24, 24)])
def test_msign_batched_equals_per_slice(shape: tuple[int, ...]) -> None:
    G = _randn(*shape, seed=4)
    X = msign(G)
    flat_G, flat_X = G.reshape(-1, *shape[-2:]), X.reshape(-1, *shape[-2:])
    for g, x in zip(flat_G, flat_X):
        torch.testing.assert_close(x, msign(g), atol=1e-5, rtol=1e-4)
        torch.testing.assert_close(msign_exact(g), msign_exact(g[None])[0])


def test_msign_keeps_dtype_and_is_scale_invariant() -> None:
    G = _randn(64, 32, seed=5).double()
    X = msign(G)
    assert X.dtype == torch.float64
    torch.testing.assert_close(msign(1e3 * G), X, atol=1e-5, rtol=1e-4)
    assert msign(G, dtype=torch.bfloat16).dtype == torch.float64
    assert torch.equal(msign(torch.zeros(8, 4)), torch.zeros(8, 4))
    with pytest.raises(ValueError):
        msign(torch.ones(5))


# 2. spectral path == torch.optim.Muon ("original" scale) ----------------------------


@pytest.mark.parametrize("shape", [(128, 32), (32, 128), (64, 64)])
@pytest.mark.parametrize(("ns_dtype", "rtol"), [(torch.bfloat16, 1e-3), (torch.float32, 3e-2)])
def test_spectral_keller_matches_torch_muon(
    shape: tuple[int, int], ns_dtype: torch.dtype, rtol: float
) -> None:
    W0 = 0.05 * _randn(*shape, seed=6)
    ref_p, our_p = W0.clone().requires_grad_(), W0.clone().requires_grad_()
    ref = torch.optim.Muon([ref_p], lr=0.02, weight_decay=0.0, adjust_lr_fn="original")
    ours = SteepestDescent(
        [{"params": [our_p], "update": "spectral", "scale_rule": "keller"}],
        lr=0.02,
        ns_dtype=ns_dtype,
    )
    gen = _gen(7)
    for _ in range(4):
        G = torch.randn(*shape, generator=gen)
        ref_p.grad, our_p.grad = G.clone(), G.clone()
        ref.step()
        ours.step()
        moved = (ref_p.detach() - W0).norm()
        assert float((ref_p.detach() - our_p.detach()).norm() / moved) <= rtol
        ours_buf, ref_buf = ours.state[our_p], ref.state[ref_p]
        torch.testing.assert_close(ours_buf["momentum_buffer"], ref_buf["momentum_buffer"])


# 3. per-role update sizes ------------------------------------------------------------


@pytest.mark.parametrize("nesterov", [True, False])
@pytest.mark.parametrize("lr", [0.05, 0.5 / 64])
def test_row_norm_rows_move_rms_lr(nesterov: bool, lr: float) -> None:
    G = _randn(40, 64, seed=8)
    G[[3, 17, 30]] = 0.0
    W = _randn(40, 64, seed=9)
    dW = _one_step(W, G, {"update": "row_norm"}, lr=lr, nesterov=nesterov)
    rms = dW.pow(2).mean(dim=-1).sqrt()
    live = G.abs().sum(dim=-1) > 0
    torch.testing.assert_close(rms[live], torch.full_like(rms[live], lr), rtol=1e-5, atol=0)
    assert torch.equal(dW[~live], torch.zeros_like(dW[~live]))
    assert torch.all((dW * G).sum(dim=-1)[live] < 0)


def test_sign_gains_move_exactly_lr() -> None:
    lr = 2.0**-6
    g = _randn(32, seed=10)
    g[5] = 0.0
    dW = _one_step(torch.ones(32), g, {"update": "sign"}, lr=lr)
    assert torch.equal(dW, -lr * torch.sign(g))


def test_rms_bias_moves_rms_lr() -> None:
    g = _randn(48, seed=11)
    dW = _one_step(torch.zeros(48), g, {"update": "rms"}, lr=0.1)
    assert math.isclose(float(dW.pow(2).mean().sqrt()), 0.1, rel_tol=1e-5)


@pytest.mark.parametrize("shape", [(256, 64), (64, 256)])
def test_spectral_mup_operator_norm(shape: tuple[int, int]) -> None:
    lr = 0.01
    dout, din = shape
    dW = _one_step(torch.zeros(shape), _randn(*shape, seed=12), {"update": "spectral"}, lr=lr)
    ratio = float(torch.linalg.matrix_norm(dW, ord=2)) / (lr * math.sqrt(dout / din))
    assert 0.6 <= ratio <= 1.25, ratio


def test_scale_shape_overrides_param_shape() -> None:
    G = _randn(64, 32, seed=13)
    own = _one_step(torch.zeros(64, 32), G, {"update": "spectral"}, lr=0.01)
    group = {"update": "spectral", "scale_shape": (32, 32)}
    base = _one_step(torch.zeros(64, 32), G, group, lr=0.01)
    torch.testing.assert_close(own, math.sqrt(2.0) * base)


# 4. steepest-descent property against the analytic optimum -------------------------------


def _perturbations(D: Tensor, norm: Any, count: int = 20, size: float = 0.05, seed: int = 40) -> list[Tensor]:
    """``count`` small random perturbations of D, each rescaled to D's norm (feasible for the same constraint)."""
    gen = _gen(seed)
    out = []
    for _ in range(count):
        P = D + size * float(norm(D)) * torch.randn(D.shape, generator=gen) / math.sqrt(D.numel())
        out.append(P * (float(norm(D)) / float(norm(P))))
    return out


def test_spectral_step_is_the_svd_solution_up_to_newton_schulz_singular_values() -> None:
    """argmin ⟨G, D⟩ over ‖D‖₂ ≤ 1 is −UVᵀ (G = USVᵀ). Newton–Schulz is an odd polynomial of G, so Muon's
    step must have exactly G's singular vectors, each singular value mapped into NS's band, times lr·α: in the
    SVD basis of G the step is diagonal. A transposed or mis-scaled update fails here."""
    G = _randn(96, 48, seed=14)
    U, S, Vh = torch.linalg.svd(G.double(), full_matrices=False)
    exact = -(U @ Vh)
    spectral = lambda D: torch.linalg.matrix_norm(D, ord=2)  # noqa: E731
    for P in _perturbations(exact, spectral):
        assert float((G.double() * P).sum()) > float((G.double() * exact).sum())
    lr, alpha = 0.03, math.sqrt(96 / 48)
    dW = _one_step(torch.zeros(96, 48), G, {"update": "spectral"}, lr=lr, momentum=0.0).double()
    core = U.T @ (-dW / (lr * alpha)) @ Vh.T
    diagonal = torch.diagonal(core)
    assert float((core - torch.diag(diagonal)).abs().max()) < 2e-3 * float(diagonal.abs().max())
    assert 0.68 <= float(diagonal.min()) and float(diagonal.max()) <= 1.25, diagonal
    assert torch.allclose(-dW / (lr * alpha), U @ torch.diag(diagonal) @ Vh, atol=2e-3)


def test_row_norm_step_is_the_exact_solution_and_beats_its_perturbations() -> None:
    """The embedding and LM head: argmin ⟨G, D⟩ over max-row-RMS ≤ 1 is each row −√n·G_i/‖G_i‖."""
    G = _randn(30, 20, seed=16)
    lr = 0.07
    exact = -math.sqrt(20) * G / G.norm(dim=-1, keepdim=True)
    dW = _one_step(torch.zeros(30, 20), G, {"update": "row_norm"}, lr=lr, momentum=0.0)
    torch.testing.assert_close(dW, lr * exact, rtol=1e-5, atol=1e-7)
    row_rms = lambda D: (D.norm(dim=-1) / math.sqrt(D.shape[-1])).max()  # noqa: E731
    for P in _perturbations(exact, row_rms):
        assert float((G * P).sum()) > float((G * dW / lr).sum())


def test_sign_step_is_the_exact_solution_and_beats_its_perturbations() -> None:
    """Gains: argmin ⟨g, d⟩ over ‖d‖_∞ ≤ 1 is −sign(g)."""
    g = _randn(50, seed=17)
    lr = 0.02
    dW = _one_step(torch.zeros(50), g, {"update": "sign"}, lr=lr, momentum=0.0)
    torch.testing.assert_close(dW, -lr * torch.sign(g))
    for P in _perturbations(-torch.sign(g), lambda d: d.abs().max()):
        assert float((g * P).sum()) > float((g * dW / lr).sum())


# 5. muon_scale ---------------------------------------------------------------------------


def test_muon_scale_values() -> None:
    tall, wide = (512, 128), (128, 512)
    assert muon_scale("naive", *tall) == muon_scale("naive", *wide) == 1.0
    assert muon_scale("keller", *tall) == pytest.approx(2.0)
    assert muon_scale("keller", *wide) == pytest.approx(1.0)
    assert muon_scale("mup", *tall) == pytest.approx(2.0)
    assert muon_scale("mup", *wide) == pytest.approx(0.5)
    assert muon_scale("moonlight", *tall) == muon_scale("moonlight", *wide) == pytest.approx(
        0.2 * math.sqrt(512)
    )
    for shape in (tall, wide):
        keller, mup = muon_scale("keller", *shape), muon_scale("mup", *shape)
        assert muon_scale("scheduled", *shape, tau=1.0) == pytest.approx(keller)
        assert muon_scale("scheduled", *shape, tau=0.0) == pytest.approx(mup)
    assert muon_scale("scheduled", *wide, tau=0.5) == pytest.approx(math.sqrt(0.5))
    assert set(MUON_SCALES) == {"naive", "keller", "mup", "moonlight", "scheduled"}


def test_muon_scale_unknown_rule_lists_names() -> None:
    with pytest.raises(ValueError, match="keller"):
        muon_scale("kellr", 4, 4)


def test_set_progress_drives_scheduled_scale() -> None:
    G = _randn(32, 128, seed=18)
    W = torch.zeros(32, 128)

    def run(scale_rule: str, frac: float | None) -> Tensor:
        p = W.clone().requires_grad_()
        p.grad = G.clone()
        group = {"params": [p], "update": "spectral", "scale_rule": scale_rule}
        opt = SteepestDescent([group], lr=0.01)
        if frac is not None:
            opt.set_progress(frac)
        opt.step()
        return p.detach()

    torch.testing.assert_close(run("scheduled", None), run("keller", None))
    torch.testing.assert_close(run("scheduled", 1.0), run("mup", None))
    assert not torch.allclose(run("keller", None), run("mup", None))
    with pytest.raises(ValueError):
        SteepestDescent([{"params": [W.clone()], "update": "sign"}], lr=0.1).set_progress(1.5)


# 6. weight decay, grads, momentum --------------------------------------------------------


def test_weight_decay_is_decoupled() -> None:
    lr, wd = 0.1, 0.5
    W, G = _randn(16, 8, seed=19), _randn(16, 8, seed=20)
    for rule in UPDATE_RULES:
        plain = _one_step(W, G, {"update": rule}, lr=lr)
        decayed = _one_step(W, G, {"update": rule, "weight_decay": wd}, lr=lr)
        torch.testing.assert_close(decayed - plain, -lr * wd * W)
    shrunk = _one_step(W, torch.zeros_like(W), {"update": "row_norm"}, lr=lr, weight_decay=wd)
    torch.testing.assert_close(W + shrunk, (1 - lr * wd) * W, rtol=0, atol=1e-7)


def test_grad_untouched_and_momentum_is_ema() -> None:
    p = _randn(24, 12, seed=21).requires_grad_()
    opt = SteepestDescent([{"params": [p], "update": "spectral"}], lr=0.01, momentum=0.9)
    gen, expected = _gen(22), torch.zeros(24, 12)
    for _ in range(3):
        G = torch.randn(24, 12, generator=gen)
        p.grad = G.clone()
        opt.step()
        assert torch.equal(p.grad, G)
        expected = 0.9 * expected + 0.1 * G
        torch.testing.assert_close(opt.state[p]["momentum_buffer"], expected)


def test_params_without_grad_are_skipped() -> None:
    a, b = torch.ones(4, 4, requires_grad=True), torch.ones(4, 4, requires_grad=True)
    a.grad = torch.ones(4, 4)
    SteepestDescent([{"params": [a, b], "update": "row_norm"}], lr=0.1, weight_decay=0.1).step()
    assert torch.equal(b, torch.ones(4, 4)) and not torch.equal(a, torch.ones(4, 4))


@pytest.mark.parametrize("rule", UPDATE_RULES)
def test_stacked_trials_equal_separate_runs(rule: str) -> None:
    K, shape = 3, (24, 16)
    W, gen = _randn(K, *shape, seed=23), _gen(24)
    stacked = W.clone().requires_grad_()
    singles = [w.clone().requires_grad_() for w in W]
    group = {"update": rule, "weight_decay": 0.1}
    opts = [SteepestDescent([{"params": [p], **group}], lr=0.02) for p in [stacked, *singles]]
    for _ in range(2):
        G = torch.randn(K, *shape, generator=gen)
        stacked.grad = G.clone()
        for p, g in zip(singles, G):
            p.grad = g.clone()
        for opt in opts:
            opt.step()
    separate = torch.stack([p.detach() for p in singles])
    torch.testing.assert_close(stacked.detach(), separate, atol=1e-6, rtol=1e-5)


def test_direction_dispatch() -> None:
    G = _randn(6, 10, seed=25)
    torch.testing.assert_close(direction("spectral", G), msign(G, eps=1e-8))
    torch.testing.assert_close(direction("row_norm", G), row_normalize(G))
    torch.testing.assert_close(direction("sign", G), sign_update(G))
    torch.testing.assert_close(direction("rms", G[0]), rms_normalize(G[0]))
    with pytest.raises(ValueError, match="row_norm"):
        direction("adam", G)


# 7. group validation ---------------------------------------------------------------------


def test_group_without_update_raises() -> None:
    p = torch.zeros(4, 4, requires_grad=True)
    with pytest.raises(ValueError, match="'hidden'.*update"):
        SteepestDescent([{"params": [p], "name": "hidden"}], lr=0.1)
    with pytest.raises(ValueError, match="update"):
        SteepestDescent([p], lr=0.1)  # type: ignore[list-item]
    with pytest.raises(ValueError, match="update"):
        SteepestDescent([{"params": [p], "update": "adam"}], lr=0.1)


def test_spectral_group_rejects_vectors_and_bad_scale() -> None:
    with pytest.raises(ValueError, match="1-D"):
        vector = torch.zeros(8, requires_grad=True)
        SteepestDescent([{"params": [vector], "update": "spectral"}], lr=0.1)
    m = torch.zeros(4, 4, requires_grad=True)
    with pytest.raises(ValueError, match="scale_rule"):
        SteepestDescent([{"params": [m], "update": "spectral", "scale_rule": "kj"}], lr=0.1)


@pytest.mark.filterwarnings("ignore:optimizer contains a parameter group with duplicate")
def test_each_param_in_exactly_one_group() -> None:
    p = torch.zeros(4, 4, requires_grad=True)
    with pytest.raises(ValueError):
        groups = [{"params": [p], "update": "sign"}, {"params": [p], "update": "rms"}]
        SteepestDescent(groups, lr=0.1)
    with pytest.raises(ValueError, match="more than once"):
        SteepestDescent([{"params": [p, p], "update": "sign"}], lr=0.1)
    opt = SteepestDescent([{"params": [p], "update": "sign"}], lr=0.1)
    with pytest.raises(ValueError):
        opt.add_param_group({"params": [torch.zeros(3, requires_grad=True)]})
    assert len(opt.param_groups) == 1
