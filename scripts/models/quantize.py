"""Builds the bundled embedding graph: all-MiniLM-L6-v2 with int8 matrix products (dynamic quantisation).

The shipped graph stores int8 weights but multiplies in fp32 (each weight is cast back to fp32), which costs
as much as the fp32 model. onnxruntime folds those casts into an fp32 graph; quantize_dynamic then makes
every weight matrix product an int8 one (per output channel; activations quantised per call), which is about
1.5x faster on CPUs with int8 dot products and keeps cosine similarity to the fp32 vectors at about 0.995.
Usage: quantize.py <shipped model.onnx> <output model.onnx>
"""

import os
import sys
import tempfile

import onnxruntime as ort
from onnxruntime.quantization import QuantType, quantize_dynamic

source, target = sys.argv[1], sys.argv[2]
with tempfile.TemporaryDirectory() as tmp:
    folded = os.path.join(tmp, "fp32.onnx")
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.optimized_model_filepath = folded
    ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])
    quantize_dynamic(folded, target, weight_type=QuantType.QInt8, per_channel=True)
