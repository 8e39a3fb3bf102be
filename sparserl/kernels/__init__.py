"""Expert SpMV/SpMM kernel families: parameterised generators of ABI-conforming CUDA.

`FAMILIES` maps a family name to its `KernelFamily` (docs/kernels.md has the table).
A `KernelVariant` is one family with one parameter choice (and optionally baked
per-matrix constants); its `variant_id` is stable, so a data set can store the id and
parameters and re-create the exact source later.

    >>> from sparserl.kernels import variants
    >>> vs = variants("spmm", n_cols=32)
    >>> print(vs[0].source())
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import scipy.sparse as sp

from sparserl.abi import OPS, SPMM_WIDTHS
from sparserl.kernels import (
    bsr,
    coo,
    coo_panels,
    coo_windowed,
    csr,
    csr_shared_x,
    dia,
    ell_sell,
    hyb,
    nnz_split,
    spmm,
    spmm_tiled,
)
from sparserl.kernels.family import KernelFamily, MatrixConstants

__all__ = [
    "FAMILIES",
    "KernelFamily",
    "KernelVariant",
    "MatrixConstants",
    "all_variant_sources",
    "all_variants",
    "example_matrix",
    "family_named",
    "variants",
]

FAMILIES: dict[str, KernelFamily] = {
    family.name: family
    for module in (
        csr,
        csr_shared_x,
        nnz_split,
        ell_sell,
        hyb,
        dia,
        bsr,
        coo,
        coo_windowed,
        coo_panels,
        spmm,
        spmm_tiled,
    )
    for family in module.FAMILIES
}


def example_matrix() -> sp.csr_matrix:
    """The 5-point Laplacian on a periodic 64 x 64 grid: 4096 rows of exactly 5 entries on
    9 diagonals. `all_variants` bakes its constants into the baked examples."""
    side = 64
    ring = sp.diags([1.0, 1.0, -2.0, 1.0, 1.0], [-(side - 1), -1, 0, 1, side - 1], (side, side))
    laplacian = sp.kron(sp.identity(side), ring) + sp.kron(ring, sp.identity(side))
    return sp.csr_matrix(laplacian)


@dataclass(frozen=True)
class KernelVariant:
    """One family, one point of its parameter space, and the constants baked in (if any).

    `constants` keeps only the fields the family can bake, so two variants that render
    the same source compare equal and share an id.
    """

    family: str
    params: dict[str, int] = field(hash=False)
    constants: MatrixConstants | None = None

    def __post_init__(self) -> None:
        kernel_family = family_named(self.family)
        object.__setattr__(self, "params", kernel_family.check_params(self.params))
        if self.constants is not None:
            object.__setattr__(self, "constants", self.constants.keep_only(kernel_family.bakes))

    @property
    def kernel_family(self) -> KernelFamily:
        return FAMILIES[self.family]

    @property
    def variant_id(self) -> str:
        """'family[name=value,...]' with sorted parameters, plus '@<digest>' when baked."""
        listed = ",".join(f"{name}={value}" for name, value in sorted(self.params.items()))
        variant_id = f"{self.family}[{listed}]"
        if self.constants is not None:
            baked = json.dumps(self.constants.to_dict(), sort_keys=True)
            variant_id += "@" + hashlib.sha256(baked.encode()).hexdigest()[:12]
        return variant_id

    def source(self) -> str:
        """The CUDA source text (deterministic for family, params and constants)."""
        return self.kernel_family.render(self.params, self.constants)

    def to_dict(self) -> dict[str, object]:
        """JSON-friendly record from which `from_dict` re-creates the variant."""
        record: dict[str, object] = {
            "variant_id": self.variant_id,
            "family": self.family,
            "params": dict(self.params),
        }
        if self.constants is not None:
            record["constants"] = self.constants.to_dict()
        return record

    @classmethod
    def from_dict(cls, record: Mapping[str, object]) -> KernelVariant:
        constants = record.get("constants")
        return cls(
            family=str(record["family"]),
            params=dict(record["params"]),
            constants=MatrixConstants.from_dict(constants) if constants is not None else None,
        )


def family_named(name: str) -> KernelFamily:
    """The registered family `name`; ValueError listing the known ones otherwise."""
    if name not in FAMILIES:
        raise ValueError(f"unknown kernel family '{name}' (known: {', '.join(FAMILIES)})")
    return FAMILIES[name]


def variants(
    op: str,
    n_cols: int | None = None,
    features: Mapping[str, float] | None = None,
    constants: MatrixConstants | None = None,
) -> list[KernelVariant]:
    """Every variant for `op`, optionally only for SpMM width `n_cols` (N) and only of the
    families `applicable` to a matrix with these `features`, with `constants` baked in."""
    if op not in OPS:
        raise ValueError(f"unknown op '{op}' (known: {', '.join(OPS)})")
    if n_cols is not None and op != "spmm":
        raise ValueError("n_cols (the N of C = A B) only applies to op='spmm'")
    if n_cols is not None and n_cols not in SPMM_WIDTHS:
        raise ValueError(f"no SpMM variants for N={n_cols} (supported: {SPMM_WIDTHS})")
    found = []
    for family in FAMILIES.values():
        if family.op != op or (features is not None and not family.applicable(features)):
            continue
        for params in family.parameter_grid():
            if n_cols is None or params["N"] == n_cols:
                found.append(KernelVariant(family.name, params, constants))
    return found


def all_variants() -> list[KernelVariant]:
    """Every family x parameter combination without baked constants, then each family
    that bakes something once more with the constants of `example_matrix()` (its first
    parameter choice)."""
    plain = [KernelVariant(f.name, p) for f in FAMILIES.values() for p in f.parameter_grid()]
    constants = MatrixConstants.from_matrix(example_matrix())
    baked = [
        KernelVariant(f.name, next(f.parameter_grid()), constants)
        for f in FAMILIES.values()
        if f.bakes
    ]
    return plain + baked


def all_variant_sources() -> Iterator[str]:
    """The source of every variant in `all_variants` (for the syntax checker and corpus)."""
    for variant in all_variants():
        yield variant.source()
