"""The shared learning-rate schedule: cosine decay from the peak to zero, checked against the
optimiser's own learning rate step by step and against torch's CosineAnnealingLR."""

import math

import pytest
import torch

from fgpo_core.core.schedules import cosine_factor, cosine_schedule


def test_the_schedule_decays_the_optimisers_rate_like_torchs_cosine_annealing():
    w = torch.nn.Parameter(torch.zeros(2))
    opt, ref_opt = torch.optim.SGD([w], lr=0.1), torch.optim.SGD([torch.nn.Parameter(torch.zeros(2))], lr=0.1)
    sched, ref = cosine_schedule(opt, 10), torch.optim.lr_scheduler.CosineAnnealingLR(ref_opt, T_max=10)
    for _ in range(10):
        assert opt.param_groups[0]["lr"] == pytest.approx(ref_opt.param_groups[0]["lr"], abs=1e-12)
        opt.step(), sched.step(), ref_opt.step(), ref.step()
    assert opt.param_groups[0]["lr"] == pytest.approx(0.0, abs=1e-12)


def test_the_factor_ends_at_zero_and_stays_there():
    assert cosine_factor(0, 8) == 1 and cosine_factor(4, 8) == pytest.approx(0.5)
    assert cosine_factor(2, 8) == pytest.approx((1 + math.cos(math.pi / 4)) / 2)
    assert cosine_factor(8, 8) == pytest.approx(0) and cosine_factor(20, 8) == pytest.approx(0)
    with pytest.raises(ValueError, match="total_steps"):
        cosine_schedule(torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1), 0)
