"""sparserl: a language-model policy that writes sparse-matrix CUDA kernels.

The top level re-exports the pieces most users touch: matrix I/O and the policy.
They are imported on first use, so `import sparserl.abi` stays light.
"""

from importlib import import_module

__version__ = "0.1.0"

_EXPORTS = {
    "MatrixFormatError": "sparserl.io",
    "load_matrix": "sparserl.io",
    "save_matrix": "sparserl.io",
    "SparseRLPolicy": "sparserl.policy",
}

__all__ = [*_EXPORTS, "__version__"]


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'sparserl' has no attribute {name!r}")
