"""The quickstart notebook runs top to bottom on a CPU machine."""

import os
from pathlib import Path

import nbclient
import nbformat
import pytest

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "quickstart.ipynb"


@pytest.mark.slow
def test_quickstart_runs(shared_data):
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    os.environ["SPARSERL_SHARED_DATA"] = str(shared_data)
    client = nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(NOTEBOOK.parent)}})  # fmt: skip
    client.execute()
    outputs = [
        output for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs
    ]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "\n".join(o.get("text", "") for o in outputs)
    assert "line" in text and "nvcc ok: True" in text
