"""What a kernel family is: a parameterised generator of ABI-conforming CUDA sources.

A `KernelFamily` knows its op and storage format, the grid of tunable parameters, when
it is worth trying on a matrix (`applicable`, from `sparserl.features.matrix_features`)
and how to render a source for one parameter choice. `MatrixConstants` carries the
per-matrix values a family may bake into the code.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, fields, replace
from string import Template

import numpy as np

from sparserl.features import occupied_diagonals
from sparserl.formats import canonical_csr

MAX_BAKED_DIAGONALS = 256  # longer offset lists are not worth a constant array


@dataclass(frozen=True)
class MatrixConstants:
    """Values of one matrix that a kernel may bake in instead of reading them at run time.

    Every field is optional; None means "not baked". `fixed_row_length` is set only when
    every row stores the same number of entries; `max_row_length` is the ELL width;
    `dia_offsets` are the occupied diagonals (column - row) in the ascending order
    `sparserl.formats` stores them.
    """

    m: int | None = None
    n: int | None = None
    nnz: int | None = None
    fixed_row_length: int | None = None
    max_row_length: int | None = None
    dia_offsets: tuple[int, ...] | None = None

    @classmethod
    def from_matrix(cls, A) -> MatrixConstants:
        """Every constant of the scipy sparse matrix `A`, as the harness will store it.

        `dia_offsets` is left out when the matrix has no entries or more than
        MAX_BAKED_DIAGONALS occupied diagonals.
        """
        csr = canonical_csr(A)
        m, n = csr.shape
        lengths = np.diff(csr.indptr)
        fixed = int(lengths[0]) if m and np.all(lengths == lengths[0]) else None
        rows = np.repeat(np.arange(m, dtype=np.int64), lengths)
        offsets = occupied_diagonals(csr.indices.astype(np.int64) - rows, m)
        return cls(
            m=m,
            n=n,
            nnz=int(csr.nnz),
            fixed_row_length=fixed,
            max_row_length=int(lengths.max()) if m else 0,
            dia_offsets=tuple(int(o) for o in offsets)
            if 0 < len(offsets) <= MAX_BAKED_DIAGONALS
            else None,
        )

    def keep_only(self, names: tuple[str, ...]) -> MatrixConstants | None:
        """A copy with only the fields in `names` (the rest None); None if nothing is left."""
        kept = replace(
            MatrixConstants(), **{name: getattr(self, name) for name in names if name in _FIELDS}
        )
        return None if kept == MatrixConstants() else kept

    def to_dict(self) -> dict[str, object]:
        """JSON-friendly dict of the baked fields only (offsets as a list)."""
        items = asdict(self).items()
        return {k: list(v) if isinstance(v, tuple) else v for k, v in items if v is not None}

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> MatrixConstants:
        """Inverse of `to_dict`; unknown keys raise ValueError."""
        unknown = set(data) - set(_FIELDS)
        if unknown:
            raise ValueError(
                f"unknown matrix constant(s) {sorted(unknown)} (known: {', '.join(_FIELDS)})"
            )
        values = dict(data)
        if values.get("dia_offsets") is not None:
            values["dia_offsets"] = tuple(values["dia_offsets"])
        return cls(**values)


_FIELDS = tuple(f.name for f in fields(MatrixConstants))

Renderer = Callable[[dict[str, int], MatrixConstants], str]
Predicate = Callable[[Mapping[str, float]], bool]
PointFilter = Callable[[np.ndarray, Mapping[str, int]], bool]
ParamsCheck = Callable[[Mapping[str, int]], bool]


def always(features: Mapping[str, float]) -> bool:
    """Applicability of families that work on any matrix."""
    return True


def any_combination(params: Mapping[str, int]) -> bool:
    """Every combination of the family's parameter values makes a kernel."""
    return True


def every_point(row_lengths: np.ndarray, params: Mapping[str, int]) -> bool:
    """Every parameter choice of the family is worth timing, whatever the row lengths."""
    return True


def feature(features: Mapping[str, float], name: str) -> float:
    """`features[name]`, or a KeyError that says where the features come from."""
    if name not in features:
        raise KeyError(
            f"matrix feature '{name}' is missing (expected the keys of "
            "sparserl.features.matrix_features)"
        )
    return float(features[name])


@dataclass(frozen=True)
class KernelFamily:
    """One strategy for one op and format, with a grid of tunable parameters.

    name: unique id, e.g. "csr_vector".
    op, format: as in the ABI header ("spmv"/"spmm"; "csr", "ell", ...).
    params: the header's format parameter string, e.g. "block=4x4" ("-" for none); a
        `$name` in it is filled from the variant's parameters ("window=$window").
    space: parameter name -> the values the family is tuned over (all int).
    strategy: one sentence on how the work is split, and when it pays.
    bakes: the MatrixConstants fields the renderer can bake in.
    predicate: whether the family is worth trying on a matrix, from its features.
    fits: whether one parameter choice is worth timing on a matrix, from its row lengths
        (the entries stored in each row, int array of m).
    valid: whether a combination of parameter values makes a kernel at all (e.g. a block
        must hold a whole row's warps); the grid skips the others.
    """

    name: str
    op: str
    format: str
    params: str
    space: dict[str, tuple[int, ...]]
    strategy: str
    renderer: Renderer
    bakes: tuple[str, ...] = ()
    predicate: Predicate = always
    fits: PointFilter = every_point
    valid: ParamsCheck = any_combination

    def applicable(self, features: Mapping[str, float]) -> bool:
        """Whether the family is worth trying on a matrix with these features (permissive)."""
        return self.predicate(features)

    def parameter_grid(self) -> Iterator[dict[str, int]]:
        """Every valid combination of the parameter space, in a fixed order."""
        names = sorted(self.space)
        for values in itertools.product(*(self.space[name] for name in names)):
            params = dict(zip(names, values, strict=True))
            if self.valid(params):
                yield params

    def check_params(self, params: Mapping[str, int]) -> dict[str, int]:
        """`params` as a plain dict; ValueError naming the family when one is off the grid."""
        missing = sorted(set(self.space) - set(params))
        unknown = sorted(set(params) - set(self.space))
        if missing or unknown:
            raise ValueError(
                f"family '{self.name}' takes parameters {sorted(self.space)}; "
                f"missing {missing}, unknown {unknown}"
            )
        for name, value in params.items():
            if value not in self.space[name]:
                raise ValueError(
                    f"family '{self.name}': {name}={value!r} is not one of {self.space[name]}"
                )
        if not self.valid(params):
            raise ValueError(
                f"family '{self.name}': {dict(params)} is not a valid combination "
                f"(see {self.valid.__name__})"
            )
        return {name: int(params[name]) for name in sorted(params)}

    def format_params(self, params: Mapping[str, int]) -> str:
        """The header's format parameter string for one point of the parameter space."""
        return Template(self.params).substitute(params)

    def render(self, params: Mapping[str, int], constants: MatrixConstants | None = None) -> str:
        """The CUDA source for `params`, baking the fields of `constants` this family uses."""
        checked = self.check_params(params)
        baked = constants.keep_only(self.bakes) if constants is not None else None
        return self.renderer(checked, baked or MatrixConstants())
