"""Triton Python-backend model that runs a model.onnx with onnxruntime on the CPU.

The CPU stand-in for Triton's ONNX Runtime backend: PyTriton's tritonserver (nvidia-pytriton
0.7.0, Triton 2.51) carries only the Python backend, so each model of models/triton-cpu/ is
this file (copied to ``<model>/1/model.py`` by ``make models``) next to the same
``model.onnx`` that models/triton/ serves on the GPU. The tensors come from the model's
config.pbtxt and are checked against the ONNX graph at load: a config that does not describe
the graph fails to load, as it would with the ONNX Runtime backend.

Each request of a dynamic batch runs on its own; the batch axis of each request is passed
through as is. (The client pads the token axis to a length bucket, 32/64/128/256, so that the
GPU's ONNX Runtime backend can stack concurrent requests; padding leaves a row's result
bit-identical, but the int8 cronista graph quantizes each activation with one scale per
tensor, so rows stacked together would share it. Running requests alone keeps the mirror's
answers equal to the in-process backend's.)

Runs inside Triton's Python stub: only numpy (<2), onnxruntime and triton_python_backend_utils.
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np
import onnxruntime as ort
import triton_python_backend_utils as pb_utils

_ORT_TYPES = {"TYPE_INT64": "tensor(int64)", "TYPE_INT32": "tensor(int32)", "TYPE_FP32": "tensor(float)"}


class TritonPythonModel:
    def initialize(self, args: dict[str, Any]) -> None:
        config = json.loads(args["model_config"])
        path = os.path.join(args["model_repository"], args["model_version"], "model.onnx")
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        options.inter_op_num_threads = 1
        options.intra_op_num_threads = int(os.environ.get("EVOMEM_TRITON_CPU_THREADS", "1"))
        self.session = ort.InferenceSession(path, sess_options=options, providers=["CPUExecutionProvider"])
        self.inputs = [i["name"] for i in config["input"]]
        self.outputs = [o["name"] for o in config["output"]]
        graph_in = {i.name: i for i in self.session.get_inputs()}
        graph_out = {o.name: o for o in self.session.get_outputs()}
        for section, declared, graph in (("input", config["input"], graph_in), ("output", config["output"], graph_out)):
            names = [t["name"] for t in declared]
            if sorted(names) != sorted(graph):
                raise pb_utils.TritonModelException(
                    f"{config['name']}: config {section}s {names} but {path} has {sorted(graph)}"
                )
            for t in declared:
                node = graph[t["name"]]
                if _ORT_TYPES.get(t["data_type"]) != node.type:
                    raise pb_utils.TritonModelException(
                        f"{config['name']}: {t['name']} is {t['data_type']} in the config, {node.type} in {path}"
                    )
                if len(t["dims"]) + 1 != len(node.shape):  # + the batch axis (max_batch_size > 0)
                    raise pb_utils.TritonModelException(
                        f"{config['name']}: {t['name']} has dims {t['dims']} (+ batch) but shape {node.shape} in {path}"
                    )

    def execute(self, requests: list[Any]) -> list[Any]:
        responses = []
        for request in requests:
            feeds = {name: pb_utils.get_input_tensor_by_name(request, name).as_numpy() for name in self.inputs}
            try:
                results = self.session.run(self.outputs, feeds)
            except Exception as exc:  # a bad request fails alone, the model stays loaded
                responses.append(pb_utils.InferenceResponse(error=pb_utils.TritonError(str(exc))))
                continue
            pairs = zip(self.outputs, results, strict=True)
            tensors = [pb_utils.Tensor(name, np.ascontiguousarray(value)) for name, value in pairs]
            responses.append(pb_utils.InferenceResponse(output_tensors=tensors))
        return responses

    def finalize(self) -> None:
        self.session = None
