import ctypes
import os

import torch.nn as nn

TARGET = "cache"  # the judge's extension cache: the test puts its path here (alone, a directory of its own)

# Plant a module under another candidate's cache key, and try to undo the read-only mount first.
libc = ctypes.CDLL(None, use_errno=True)
attempts = {}
attempts["umount"] = "ok" if libc.umount2(TARGET.encode(), 2) == 0 else os.strerror(ctypes.get_errno())
attempts["remount_rw"] = ("ok" if libc.mount(None, TARGET.encode(), None, ctypes.c_ulong(32 | 4096), None) == 0
                          else os.strerror(ctypes.get_errno()))
try:
    os.makedirs(os.path.join(TARGET, "0123456789abcdef"), exist_ok=True)
    with open(os.path.join(TARGET, "0123456789abcdef", "planted.so"), "wb") as planted:
        planted.write(b"\x7fELF")
    attempts["plant"] = "ok"
except OSError as exc:
    attempts["plant"] = exc.strerror
print("attempts:", attempts)


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return x.clamp_min(0) * self.scale
