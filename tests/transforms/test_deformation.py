"""Local deformations: identity at zero strength, a smooth field of the asked strength, a local affine jitter,
and gradients reaching every strength."""
import torch

from invlab.parameters import learnables
from invlab.transforms import LocalDeformation
from invlab.transforms.deformation import gaussian_smooth

DT = torch.float64


def images(n=2, h=12, w=12):
    X = torch.zeros(n, 1, h, w, dtype=DT)
    X[:, :, 3:-3, 3:-3] = torch.rand(n, 1, h - 6, w - 6, generator=torch.Generator().manual_seed(0), dtype=DT)
    return X


def test_zero_strength_is_the_identity(place, tol, assert_close):
    X = place(images())
    A = place(LocalDeformation(0.0, 0.0, 0.0)).sample(X, 4)
    assert A.shape == (2, 4, 1, 12, 12)
    assert_close(A, X[:, None].expand_as(A), tol.f64(atol=1e-12))


def test_smooth_field_has_the_asked_strength_and_is_smooth(place, tol, assert_close):
    deform = place(LocalDeformation(1.5, 0.0, 0.0, smoothness=3.0))
    like, g = place(torch.zeros(1, dtype=DT)), torch.Generator().manual_seed(0)
    d = deform.displacement(64, 16, 16, like, g)  # [B, H, W, 2]
    rms = d.pow(2).mean((1, 2, 3)).sqrt()
    assert_close(rms, torch.full_like(rms, 1.5), tol.f64(atol=1e-9))  # strength = RMS displacement in pixels
    neighbour = (d[:, :, 1:] - d[:, :, :-1]).pow(2).mean().sqrt()
    assert neighbour < 0.25 * 1.5  # neighbouring pixels move together


def test_local_jitter_is_a_rotation_about_a_centre(place, tol, assert_close):
    """With no field and a huge window, the displacement is exactly the map T⁻¹(p) − p of a rotation-scaling."""
    deform = place(LocalDeformation(0.0, 20.0, 0.1, window=1e6))
    d = deform.displacement(8, 10, 10, place(torch.zeros(1, dtype=DT)), torch.Generator().manual_seed(1))
    d = d.cpu().double()  # the fit below is a float64 reference computation
    ys, xs = torch.meshgrid(torch.arange(10, dtype=DT) - 4.5, torch.arange(10, dtype=DT) - 4.5, indexing="ij")
    P = torch.stack([xs.reshape(-1), ys.reshape(-1), torch.ones(100, dtype=DT)], 1)  # [100, 3]
    for b in range(8):
        target = (torch.stack([xs, ys], -1) + d[b]).reshape(100, 2)  # p + d(p)
        coef = torch.linalg.lstsq(P, target).solution  # [3, 2]: affine fit
        assert_close(P @ coef, target, tol.f64(atol=1e-8))
        A = coef[:2].T  # linear part of T⁻¹
        scale = torch.linalg.det(A).sqrt()
        angle = torch.rad2deg(torch.atan2(-A[0, 1], A[0, 0]))
        assert_close(A / scale, torch.tensor([[A[0, 0], A[0, 1]], [-A[0, 1], A[0, 0]]], dtype=DT) / scale, tol.f64())
        slack = tol.f64(atol=1e-9).atol
        assert abs(float(angle)) <= 20.0 + slack and abs(float(torch.log(scale))) <= 0.1 + slack


def test_gradients_reach_every_strength(place):
    deform = place(LocalDeformation(1.0, 10.0, 0.1))
    g = torch.Generator().manual_seed(0)
    weights = place(torch.randn(1, 1, 1, 12, 12, generator=g, dtype=DT))
    (deform.sample(place(images()), 5, g) * weights).sum().backward()
    values = learnables(deform)
    assert set(values) == {"ranges.strength.half_width", "ranges.rotation.half_width", "ranges.scale.half_width"}
    for name, value in values.items():
        assert torch.isfinite(value.raw.grad) and value.raw.grad.abs() > 0, name


def test_gaussian_smooth_preserves_constants_inside(device, tol, assert_close):
    field = torch.ones(1, 2, 20, 20, dtype=torch.float32, device=device)
    out = gaussian_smooth(field, 1.0)
    assert out.dtype == torch.float32 and out.device == field.device
    assert_close(out[..., 5:-5, 5:-5], field[..., 5:-5, 5:-5], tol.f64(atol=1e-6))
