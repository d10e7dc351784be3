"""Inputs of block 0: permutation-symmetric token matrices and embedded natural images.

Natural images come from a source that needs no download: the sample images bundled with
scikit-image by default, or CIFAR-100 from a local copy in its standard python-pickle layout.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch
from skimage import data as skdata
from skimage.color import gray2rgb, rgba2rgb
from skimage.transform import resize

if TYPE_CHECKING:  # for the annotation only: timm loads torchvision (seconds)
    from timm.models.vision_transformer import VisionTransformer

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
BUNDLED_IMAGES = (
    "astronaut", "coffee", "chelsea", "rocket", "hubble_deep_field", "immunohistochemistry",
    "retina", "logo", "camera", "coins", "moon", "page", "text", "horse", "brick", "grass",
    "gravel", "clock", "cell", "colorwheel",
)  # fmt: skip


def equiangular_tokens(
    n_tokens: int, width: int, q0: float, p0: float, generator: torch.Generator
) -> torch.Tensor:
    """X (n_tokens x width) with X X^T / width = q0 (1 - rho) I + p0 1 1^T exactly.

    Eigenbasis: the all-ones direction (eigenvalue width (q0 - p0 + n p0)) and an orthonormal
    basis of its complement (eigenvalue width (q0 - p0)); zero-padded to `width` columns and
    rotated by a random orthogonal matrix, so only the Gram matrix is fixed. p0 = q0 gives
    identical tokens, under which uniform attention is exact at any weights.
    """
    if width < n_tokens:
        raise ValueError(f"need width >= n_tokens, got width={width}, n_tokens={n_tokens}")
    if not (q0 > 0 and 0 <= p0 <= q0):
        raise ValueError(f"need 0 <= p0 <= q0, got q0={q0}, p0={p0}")
    ones = torch.ones(n_tokens, 1, dtype=torch.float64)
    basis, _ = torch.linalg.qr(torch.cat([ones, torch.eye(n_tokens, dtype=torch.float64)], 1))
    basis = basis[:, :n_tokens]  # first column is +-1/sqrt(n), the rest spans 1-perp
    eig = torch.full((n_tokens,), width * (q0 - p0), dtype=torch.float64)
    eig[0] += width * n_tokens * p0
    x = torch.zeros(n_tokens, width, dtype=torch.float64)
    x[:, :n_tokens] = basis * eig.sqrt()
    gaussian = torch.randn(width, width, generator=generator, dtype=torch.float64)
    rotation, r = torch.linalg.qr(gaussian)
    rotation = rotation * torch.sign(torch.diagonal(r))  # Haar-distributed
    return x @ rotation


def as_rgb_float(image: np.ndarray) -> np.ndarray:
    if image.ndim == 2:
        image = gray2rgb(image)
    elif image.shape[-1] == 4:
        image = rgba2rgb(image)
    image = image.astype(np.float64)
    return image / 255.0 if image.max() > 1.0 else image


def _random_crop(image: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
    """Resize the shorter side to ~1.25 size (keeps content recognisable), then crop."""
    scale = 1.25 * size / min(image.shape[:2])
    shape = (max(size, round(image.shape[0] * scale)), max(size, round(image.shape[1] * scale)))
    image = resize(image, shape, anti_aliasing=True)
    top = rng.integers(0, image.shape[0] - size + 1)
    left = rng.integers(0, image.shape[1] - size + 1)
    return image[top : top + size, left : left + size]


def normalize(images: np.ndarray) -> torch.Tensor:
    """(n, h, w, 3) in [0, 1] -> (n, 3, h, w) normalized with ImageNet mean and std."""
    mean, std = np.array(IMAGENET_MEAN), np.array(IMAGENET_STD)
    return torch.from_numpy(((images - mean) / std).transpose(0, 3, 1, 2).copy())


def bundled_images(count: int, size: int, seed: int) -> torch.Tensor:
    """`count` random size x size crops of scikit-image's bundled samples (cycling through
    them), normalized: natural images with no download."""
    rng = np.random.default_rng(seed)
    names = [BUNDLED_IMAGES[i % len(BUNDLED_IMAGES)] for i in range(count)]
    crops = [_random_crop(as_rgb_float(getattr(skdata, n)()), size, rng) for n in names]
    return normalize(np.stack(crops))


def read_cifar100(
    root: str | Path, split: str = "test", key: str = "apjn.images.cifar_root"
) -> tuple[np.ndarray, np.ndarray]:
    """CIFAR-100 from a local copy: `root/cifar-100-python/{train,test}` (the standard python
    pickles). Returns uint8 images (n, 32, 32, 3) and fine labels (n,). `key` is the config key
    that named `root`, for the error messages."""
    path = Path(root) / "cifar-100-python" / split
    if not path.is_file():
        raise FileNotFoundError(
            f"no CIFAR-100 at {path}: point {key} at a folder holding cifar-100-python/ "
            "(nothing is downloaded), or use the offline source (bundled images, textures task)"
        )
    try:
        with open(path, "rb") as handle:
            batch = pickle.load(handle, encoding="bytes")
        images = np.asarray(batch[b"data"], dtype=np.uint8).reshape(-1, 3, 32, 32)
        labels = np.asarray(batch[b"fine_labels"], dtype=np.int64)
    except (pickle.UnpicklingError, EOFError, KeyError, TypeError, ValueError) as error:
        raise ValueError(
            f"{path} (from {key}) is not a CIFAR-100 python pickle ({type(error).__name__}: "
            f"{error}): replace it with the file of the python version of CIFAR-100"
        ) from error
    return images.transpose(0, 2, 3, 1), labels


def cifar100_images(root: str | Path, count: int, size: int, seed: int) -> torch.Tensor:
    """`count` random CIFAR-100 test images, upsampled to size x size and normalized."""
    images, _ = read_cifar100(root, "test")
    rng = np.random.default_rng(seed)
    chosen = images[rng.choice(len(images), size=count, replace=False)] / 255.0
    return normalize(np.stack([resize(im, (size, size), order=1) for im in chosen]))


@torch.no_grad()
def embed_images(model: VisionTransformer, images: torch.Tensor) -> torch.Tensor:
    """The input of block 0 for a batch of images: patch embedding, CLS, positions, norm_pre."""
    x = model.patch_embed(images)
    x = model._pos_embed(x)
    x = model.patch_drop(x)
    return model.norm_pre(x)
