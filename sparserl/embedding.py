"""Turning a sparse matrix into prefix embeddings for the language model.

Following the SparseRL paper, each stored coordinate (r, c) becomes one embedding:
both indices go through a sinusoidal encoding (Eq. 2 of the paper),

    PE(ind, 2j)   = sin(ind / 10000^(2j / d))
    PE(ind, 2j+1) = cos(ind / 10000^(2j / d)),

the two encodings are concatenated to [PE(r) | PE(c)] (width 2d), and a linear adapter
maps that to the backbone's hidden size. Two ablations replace the sinusoidal encoding
by the raw indices (`"raw"`) or by the indices scaled to [0, 1] by the data set's
largest index (`"minmax"`).

As an extension, `n_feature_tokens` extra prefix embeddings can carry global structure
features (`sparserl.features.matrix_features`): the features are log-scaled
(`feature_vector`) and mapped by their own linear layer to `n_feature_tokens` vectors,
placed before the coordinate embeddings. The paper's setting is `n_feature_tokens=0`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import torch
from torch import nn

ENCODINGS = ("sinusoidal", "raw", "minmax")


class SinusoidalIndexEmbedding(nn.Module):
    """Sinusoidal encoding of integer indices (Eq. 2 of the SparseRL paper); no parameters.

    The angles are computed in float64, so indices in the millions keep their precision,
    and the result is cast to the requested dtype at the end.
    """

    def __init__(self, dim: int):
        super().__init__()
        if dim < 2 or dim % 2:
            raise ValueError(f"the index embedding width must be a positive even number, got {dim}")
        self.dim = dim

    def forward(self, indices: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """Encode `indices` (an integer tensor of any shape) as a tensor of shape (..., dim)."""
        exponents = (
            torch.arange(0, self.dim, 2, dtype=torch.float64, device=indices.device) / self.dim
        )
        angles = indices.to(torch.float64).unsqueeze(-1) / torch.pow(10000.0, exponents)
        encoding = torch.stack((torch.sin(angles), torch.cos(angles)), dim=-1)  # (..., dim/2, 2)
        return encoding.flatten(-2).to(dtype)  # interleaved: sin at 2j, cos at 2j+1


def feature_vector(features: Mapping[str, float], names: Sequence[str]) -> np.ndarray:
    """The features called `names`, log-scaled: sign(x) * log(1 + |x|), as float64 (len(names),).

    Structure features span many orders of magnitude (rows, nnz, row-length spread);
    the log scale brings them to a range a linear layer can use.
    """
    missing = [name for name in names if name not in features]
    if missing:
        raise KeyError(f"matrix features are missing {missing}; available: {sorted(features)}")
    raw = np.array([features[name] for name in names], dtype=np.float64)
    return np.sign(raw) * np.log1p(np.abs(raw))


class MatrixEncoder(nn.Module):
    """Prefix embeddings for one matrix: optional feature tokens, then one per coordinate.

    Args:
        index_dim: width d of the sinusoidal encoding of one index ("sinusoidal" only).
        hidden_size: the backbone's embedding width.
        encoding: "sinusoidal" (the paper), "raw" (the two indices as numbers) or
            "minmax" (the two indices divided by `max_index`).
        max_index: the data set's largest row/column index; required for "minmax".
        n_features: length of the feature vector given to `forward` (0: none).
        n_feature_tokens: prefix embeddings made from the feature vector (0: none).
    """

    def __init__(
        self,
        index_dim: int,
        hidden_size: int,
        encoding: str = "sinusoidal",
        max_index: int | None = None,
        n_features: int = 0,
        n_feature_tokens: int = 0,
    ):
        super().__init__()
        if encoding not in ENCODINGS:
            raise ValueError(f"unknown index encoding {encoding!r}; expected one of {ENCODINGS}")
        if encoding == "minmax" and (max_index is None or max_index < 1):
            raise ValueError(f"the 'minmax' encoding needs max_index >= 1, got {max_index}")
        if (n_features == 0) != (n_feature_tokens == 0):
            raise ValueError(
                f"feature tokens need features and the other way round: got n_features={n_features}, "
                f"n_feature_tokens={n_feature_tokens}"
            )
        self.encoding = encoding
        self.max_index = max_index
        self.hidden_size = hidden_size
        self.n_feature_tokens = n_feature_tokens
        self.index_embedding = (
            SinusoidalIndexEmbedding(index_dim) if encoding == "sinusoidal" else None
        )
        coordinate_width = 2 * index_dim if encoding == "sinusoidal" else 2
        self.adapter = nn.Linear(coordinate_width, hidden_size)
        self.feature_adapter = (
            nn.Linear(n_features, n_feature_tokens * hidden_size) if n_feature_tokens else None
        )

    def encode_coordinates(self, rows: torch.Tensor, cols: torch.Tensor) -> torch.Tensor:
        """The adapter's input for each coordinate: (k,) and (k,) indices -> (k, width)."""
        dtype = self.adapter.weight.dtype
        if self.index_embedding is not None:
            return torch.cat(
                (self.index_embedding(rows, dtype), self.index_embedding(cols, dtype)), dim=-1
            )
        coordinates = torch.stack((rows, cols), dim=-1).to(torch.float64)
        if self.encoding == "minmax":
            coordinates = coordinates / self.max_index
        return coordinates.to(dtype)

    def forward(
        self, rows: torch.Tensor, cols: torch.Tensor, features: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Prefix embeddings, shape (n_feature_tokens + k, hidden_size).

        Args:
            rows, cols: int64 tensors of shape (k,), the coordinates in (row, column) order.
            features: the log-scaled feature vector, shape (n_features,); required exactly
                when the encoder has feature tokens.
        """
        prefix = self.adapter(self.encode_coordinates(rows, cols))
        if self.feature_adapter is None:
            if features is not None:
                raise ValueError("this encoder has no feature tokens, but features were given")
            return prefix
        if features is None:
            raise ValueError("this encoder has feature tokens: pass the matrix's feature vector")
        feature_tokens = self.feature_adapter(features.to(self.feature_adapter.weight.dtype))
        return torch.cat(
            (feature_tokens.view(self.n_feature_tokens, self.hidden_size), prefix), dim=0
        )
