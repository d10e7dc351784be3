"""Forward-mode autodiff without torch's own deprecation noise.

On its first forward-mode call torch registers its jvp decompositions with `torch.jit.script`,
which warns that `torch.jit.script` is deprecated: a note about torch's internals, not about
this package, that would otherwise open every Study A and Study N log. Only that one warning,
raised from that one torch module, is silenced; every other warning still reaches the log.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator


@contextlib.contextmanager
def quiet_forward_mode() -> Iterator[None]:
    """Context (or decorator) around forward-mode AD calls."""
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore",
            message="`torch.jit.script` is deprecated",
            category=FutureWarning,
            module="torch.jit._script",
        )
        yield
