import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """The weights laid out once in __init__, and the ReLU applied by a forward hook on its own submodule."""

    def __init__(self, in_features, out_features):
        super().__init__()
        linear = nn.Linear(in_features, out_features)  # the reference's initialisation, under the same seed
        self.register_buffer("weight_t", linear.weight.detach().t().contiguous())
        self.register_buffer("bias", linear.bias.detach().clone())
        self.activation = nn.Identity()
        self.activation.register_forward_hook(lambda module, args, output: torch.relu(output))

    def forward(self, x):
        return self.activation(torch.addmm(self.bias, x, self.weight_t))
