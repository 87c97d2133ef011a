"""Methods and helper classes that recipe candidates carry, as source text (see ``recipes.code``)."""

CLONE_OUTPUTS = '''
    @staticmethod
    def clone_outputs(out):
        # A fresh copy per call: graph output buffers are overwritten by the next replay.
        if isinstance(out, torch.Tensor):
            return out.clone()
        if isinstance(out, (tuple, list)):
            return type(out)(ModelNew.clone_outputs(o) for o in out)
        return out
'''

# As PyTorch documents whole-network capture: warm up on a side stream that waits for the caller's stream and
# that the caller's stream waits for in turn, then capture; every call copies its inputs into the static buffers.
CUDA_GRAPH = '''
    def replay(self, inputs):
        key = [(tuple(x.shape), x.dtype, x.device) if isinstance(x, torch.Tensor) else x for x in inputs]
        if key != self.graph_key:
            self.capture(inputs)
            self.graph_key = key
        for static, x in zip(self.static_inputs, inputs):
            if isinstance(static, torch.Tensor):
                static.copy_(x)
        self.graph.replay()
        return self.clone_outputs(self.static_output)

    def capture(self, inputs):
        # The graph reads these buffers; every call copies its inputs into them first.
        self.static_inputs = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
        # Warm up outside the capture: lazy initialisation (library handles, autotuning, compilation) cannot be
        # captured. On a side stream, joined both ways, as torch.cuda.graph's documentation shows.
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                {target}(*self.static_inputs)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.static_output = {target}(*self.static_inputs)
'''

BOUND_ARGUMENTS = '''
class RecipeBoundArguments(torch.nn.Module):
    """The wrapped module with its non-tensor arguments fixed, so that only tensors go through the trace."""

    def __init__(self, inner, inputs):
        super().__init__()
        self.inner = inner
        self.inputs = list(inputs)

    def forward(self, *tensors):
        given = iter(tensors)
        return self.inner(*[next(given) if isinstance(x, torch.Tensor) else x for x in self.inputs])
'''

FROZEN = '''
    def frozen_call(self, inputs):
        key = [(tuple(x.shape), x.dtype, x.device) if isinstance(x, torch.Tensor) else x for x in inputs]
        tensors = tuple(x for x in inputs if isinstance(x, torch.Tensor))
        if key != self.frozen_key:
            # A trace holds these shapes and non-tensor arguments: traced again when they change. Frozen in eval
            # mode, offered only for modules that behave the same in both modes.
            bound = RecipeBoundArguments(self.inner, inputs).eval()
            self.frozen = torch.jit.freeze(torch.jit.trace(bound, tensors, check_trace=False))
            self.frozen_key = key
        return self.frozen(*tensors)
'''
