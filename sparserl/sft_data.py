"""The SFT dataset: for each matrix and op, the expert variants ranked by measured time.

Stored compactly as JSON lines: a reference to the matrix (a shared file or a synthetic
recipe), the op and width, cuSPARSE-best's time and the ranked correct variants (id,
parameters, constants, times, speedup). `SFTRecord.sources()` re-creates the CUDA text;
the fastest is the SFT target and the rest are "ground truths of different
efficiencies". Train and validation are split by matrix, by a hash of its reference.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

import scipy.sparse as sp

from sparserl.kernels import KernelVariant

VALIDATION_EVERY = 10  # about one matrix in ten goes to validation


@dataclass(frozen=True)
class MatrixRef:
    """Where a matrix comes from. kind 'suitesparse' or 'dlmc': `name` is the file's path
    below that shared folder; kind 'synthetic': `name` is the family, with `nnz_hint`
    and `seed` (see sparserl.datasets.synthetic.make)."""

    kind: str
    name: str
    nnz_hint: int | None = None
    seed: int = 0

    @property
    def label(self) -> str:
        if self.kind == "synthetic":
            return f"synthetic/{self.name}/{self.nnz_hint:.0e}/seed{self.seed}"
        return f"{self.kind}/{self.name}"

    @property
    def split(self) -> str:
        """'train' or 'validation', fixed by the reference alone."""
        digest = hashlib.blake2b(self.label.encode(), digest_size=8).digest()
        return "validation" if int.from_bytes(digest, "little") % VALIDATION_EVERY == 0 else "train"

    def load(self, shared_data: str | Path) -> sp.csr_matrix:
        """The matrix, from `shared_data` (the folder holding suitesparse/ and dlmc/)."""
        from sparserl.datasets.synthetic import make
        from sparserl.io import load_matrix

        if self.kind == "synthetic":
            return make(self.name, self.nnz_hint, seed=self.seed)
        if self.kind not in ("suitesparse", "dlmc"):
            raise ValueError(f"unknown matrix kind '{self.kind}' (suitesparse, dlmc, synthetic)")
        return load_matrix(Path(shared_data) / self.kind / self.name)


@dataclass
class SFTRecord:
    """One (matrix, op, width) with its ranked variants (dicts as in TunedVariant)."""

    matrix: MatrixRef
    op: str
    n_cols: int | None
    nnz: int
    device: str
    baseline_name: str
    baseline_device_warm_us: float
    ranked: list[dict]
    date: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def split(self) -> str:
        return self.matrix.split

    def sources(self) -> list[str]:
        """CUDA source of every ranked variant, fastest first (the first is the target)."""
        return [KernelVariant.from_dict(item["variant"]).source() for item in self.ranked]

    def to_json(self) -> str:
        record = {**self.__dict__, "matrix": self.matrix.__dict__}
        return json.dumps(record, sort_keys=True)

    @classmethod
    def from_json(cls, line: str) -> SFTRecord:
        record = json.loads(line)
        return cls(**{**record, "matrix": MatrixRef(**record["matrix"])})


def read_records(path: str | Path) -> list[SFTRecord]:
    """Every record of a JSON-lines file (clear error naming the line on bad input)."""
    records = []
    for number, line in enumerate(Path(path).read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append(SFTRecord.from_json(line))
        except (json.JSONDecodeError, TypeError, KeyError) as error:
            raise ValueError(f"{path}, line {number}: not an SFT record ({error})") from None
    return records


def write_records(path: str | Path, records: list[SFTRecord]) -> None:
    """Write every record, one per line, atomically (a temporary file renamed over
    `path`), so a run stopped mid-write keeps the previous file whole."""
    path = Path(path)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text("".join(record.to_json() + "\n" for record in records))
    temporary.replace(path)


def variants_tried(record: SFTRecord) -> set[str]:
    """Ids of the variants the record's tuning evaluated (ranked or failed)."""
    ranked = {item["variant"]["variant_id"] for item in record.ranked}
    return ranked | set(record.extra.get("failed", {}))


def families_tried(record: SFTRecord) -> set[str]:
    """Kernel families the record's tuning evaluated (ranked or failed)."""
    return {variant_id.split("[")[0] for variant_id in variants_tried(record)}
