"""sparserl: a language-model policy that writes sparse-matrix CUDA kernels.

The top level re-exports the pieces most users touch: matrix I/O and the policy.
"""

from sparserl.io import MatrixFormatError, load_matrix, save_matrix

__version__ = "0.1.0"

__all__ = ["MatrixFormatError", "load_matrix", "save_matrix", "SparseRLPolicy", "__version__"]


def __getattr__(name):
    # The policy pulls in torch and transformers: import it only when asked for.
    if name == "SparseRLPolicy":
        from sparserl.policy import SparseRLPolicy

        return SparseRLPolicy
    raise AttributeError(f"module 'sparserl' has no attribute {name!r}")
