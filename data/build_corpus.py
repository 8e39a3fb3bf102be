"""Build the licence-filtered CUDA corpus from the sources reachable on this machine.

Sources, in priority order (a duplicate keeps its first copy):

1. the CCCL headers (cub, thrust, libcu++) of the local CUDA install;
2. the CUDA headers of the installed torch package (ATen/c10 ``cuda`` folders),
   falling back to torch's own licence file from its ``dist-info``;
3. the CuPy wheel from PyPI (``pip download --no-deps`` into --download-dir, never
   into the repo), without its vendored CCCL copy, falling back to CuPy's licence
   notice (MIT, with the NumPy/SciPy BSD-3 notices it carries);
4. this project's expert kernels (`sparserl.kernels.all_variants`), Apache-2.0.

The corpus goes to --out (default .cache/corpus, git-ignored); its manifest and
summary are also written to data/corpus_manifest.csv and data/corpus_summary.json,
which are small enough to commit.

    python data/build_corpus.py [--out .cache/corpus] [--no-download]
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import subprocess
import sys
import zipfile
from pathlib import Path

from sparserl.corpus import (
    CorpusSource,
    build_corpus,
    find_cccl_dir,
    sparserl_kernel_documents,
)

REPO = Path(__file__).resolve().parents[1]
CUPY_WHEEL = "cupy-cuda13x==14.2.0"
TORCH_CUDA_FOLDERS = (
    "ATen/cuda",
    "ATen/native/cuda",
    "ATen/native/transformers/cuda",
    "c10/cuda",
)


def cccl_source() -> CorpusSource | None:
    cccl = find_cccl_dir()
    if cccl is None:
        print("CCCL headers not found: skipped", file=sys.stderr)
        return None
    toolkit = next((f"-{part}" for part in cccl.parts if part.startswith("cuda-")), "")
    return CorpusSource(f"cccl{toolkit}", cccl)


def torch_sources() -> list[CorpusSource]:
    """One source per CUDA folder of the installed torch headers."""
    distribution = importlib.metadata.distribution("torch")
    include = Path(distribution.locate_file("torch/include"))
    licence = next(
        Path(distribution.locate_file(file))
        for file in distribution.files or []
        if file.name == "LICENSE" and file.parent.name == "licenses"
    )
    return [
        CorpusSource(
            f"torch-{distribution.version}-{folder.replace('/', '-')}",
            include / folder,
            fallback_licence_file=licence,
        )
        for folder in TORCH_CUDA_FOLDERS
        if (include / folder).is_dir()
    ]


def cupy_source(download_dir: Path) -> CorpusSource:
    """Download and unpack the CuPy wheel (cached in `download_dir`)."""
    download_dir.mkdir(parents=True, exist_ok=True)
    name, version = CUPY_WHEEL.split("==")
    wheels = sorted(download_dir.glob(f"{name.replace('-', '_')}-{version}-*.whl"))
    if not wheels:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:"]
            + [CUPY_WHEEL, "-d", str(download_dir)],
            check=True,
        )
        wheels = sorted(download_dir.glob(f"{name.replace('-', '_')}-{version}-*.whl"))
    unpacked = download_dir / wheels[0].stem
    if not unpacked.is_dir():
        with zipfile.ZipFile(wheels[0]) as wheel:
            wheel.extractall(unpacked)
    dist_info = unpacked / f"{name.replace('-', '_')}-{version}.dist-info"
    return CorpusSource(
        f"cupy-{version}",
        unpacked,
        exclude=("cupy/_core/include/cupy/_cccl/*",),  # a second copy of CCCL
        fallback_licence_file=dist_info / "licenses" / "docs" / "source" / "license.rst",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / ".cache" / "corpus")
    parser.add_argument("--download-dir", type=Path, default=Path("/tmp/sparserl-corpus-downloads"))
    parser.add_argument("--no-download", action="store_true", help="leave out the PyPI sources")
    parser.add_argument("--manifest-out", type=Path, default=REPO / "data" / "corpus_manifest.csv")
    parser.add_argument("--summary-out", type=Path, default=REPO / "data" / "corpus_summary.json")
    args = parser.parse_args()

    sources = [source for source in [cccl_source()] if source is not None]
    sources += torch_sources()
    if not args.no_download:
        sources.append(cupy_source(args.download_dir))
    kernels = sparserl_kernel_documents()

    manifest = build_corpus(sources, args.out, declared=kernels)
    summary = manifest.summary()
    summary["sources"] = [
        {"name": s.name, "root": str(s.root), "exclude": list(s.exclude)} for s in sources
    ] + [{"name": "sparserl-kernels", "documents": len(kernels)}]
    manifest.write_csv(args.manifest_out)
    args.summary_out.write_text(json.dumps(summary, indent=2) + "\n")

    print(f"corpus written to {args.out}")
    print(f"{'source':48} {'kept':>6} {'kept MB':>8} {'dup':>6} {'rejected':>8}")
    for name, statuses in summary["by_source"].items():
        kept = statuses.get("kept", {"files": 0, "bytes": 0})
        print(
            f"{name:48} {kept['files']:6d} {kept['bytes'] / 1e6:8.2f} "
            f"{statuses.get('duplicate', {}).get('files', 0):6d} "
            f"{statuses.get('rejected', {}).get('files', 0):8d}"
        )
    print(f"\n{'licence (kept files)':48} {'files':>6} {'MB':>8}")
    for licence, group in sorted(summary["by_licence"].items(), key=lambda kv: -kv[1]["bytes"]):
        print(f"{licence:48} {group['files']:6d} {group['bytes'] / 1e6:8.2f}")
    total = summary["by_status"].get("kept", {"files": 0, "bytes": 0})
    print(f"\ntotal kept: {total['files']} files, {total['bytes'] / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
