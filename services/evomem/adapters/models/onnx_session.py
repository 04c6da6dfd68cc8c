"""Opening an int8 ONNX encoder and its tokenizer on onnxruntime (the cronista and the pair cross-encoder)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any


def open_encoder(
    model: Path,
    tokenizer_file: Path,
    threads: int,
    inputs: Sequence[str],
    outputs: Sequence[str],
    unavailable: type[Exception],
) -> tuple[Any, Any]:
    """(onnxruntime session on the CPU, tokenizer without truncation or padding). Raises
    ``unavailable`` with what to install when onnxruntime or tokenizers is missing, and when the
    graph's tensor names are not ``inputs`` -> ``outputs``."""
    try:
        import onnxruntime as ort
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise unavailable(
            f"{exc.name} is not installed; pip install 'evomem-mcp' (onnxruntime, tokenizers, numpy)"
        ) from exc
    tokenizer = Tokenizer.from_file(str(tokenizer_file))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    options.inter_op_num_threads = 1
    options.intra_op_num_threads = threads
    session = ort.InferenceSession(str(model), sess_options=options, providers=["CPUExecutionProvider"])
    names_in = tuple(i.name for i in session.get_inputs())
    names_out = tuple(o.name for o in session.get_outputs())
    if names_in != tuple(inputs) or names_out != tuple(outputs):
        raise unavailable(
            f"{model} has inputs {names_in} and outputs {names_out}; expected {tuple(inputs)} -> {tuple(outputs)}"
        )
    return session, tokenizer
