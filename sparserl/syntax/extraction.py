"""Pulling the kernel source out of a model's answer."""

from __future__ import annotations

import re

from sparserl.abi import ENTRY_NAME
from sparserl.syntax.abi_rules import HEADER_START

# An opening fence (```cuda, ```cpp, ```c++, ``` ...), its code, and the closing fence
# (or the end of the text, for an answer cut off inside the block).
_FENCED_BLOCK = re.compile(
    r"^[ \t]*```[ \t]*([\w+#-]*)[^\n]*\n(.*?)(?:^[ \t]*```|\Z)", re.DOTALL | re.MULTILINE
)


def extract_code(model_output: str) -> str:
    """The kernel source in `model_output`.

    The first fenced code block that mentions `sparserl_kernel` (else the first fenced
    block); without fences, the text from the `/*@sparserl` header on (else all of it),
    trimmed.
    """
    blocks = [match.group(2) for match in _FENCED_BLOCK.finditer(model_output)]
    if blocks:
        chosen = next((block for block in blocks if ENTRY_NAME in block), blocks[0])
        return chosen.strip()
    header = model_output.find(HEADER_START)
    return model_output[header if header >= 0 else 0 :].strip()
