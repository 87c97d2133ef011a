import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """PyTorch's documented CUDA-graph pattern: warm up on a side stream, join it, capture, then replay and return a
    copy of the static output. Capture failure falls back to eager calls of the same ops; the handler never runs
    on a GPU that supports graphs."""

    def __init__(self, scale):
        super().__init__()
        self.scale = scale
        self.graph = None
        self.static_in = self.static_out = None

    def _step(self, x):
        return torch.relu(x) * self.scale

    def _capture(self, x):
        self.static_in = x.clone()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                self._step(self.static_in)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            self.static_out = self._step(self.static_in)
        self.graph = graph

    def forward(self, x):
        if self.graph is None or self.static_in.shape != x.shape:
            try:
                self._capture(x)
            except RuntimeError:
                self.graph = None
                return self._step(x)
        self.static_in.copy_(x)
        self.graph.replay()
        return self.static_out.clone()
