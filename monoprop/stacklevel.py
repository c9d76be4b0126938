"""Where monoprop's warnings point: the user's line, not a line of the package.

A warning issued deep inside the package (by a setter, a constructor, a build) should name the
line of the script that made the call, whichever front-end and helper it went through. The
depth differs from call to call, so it is counted from the frames instead of fixed per call.
"""

from __future__ import annotations

import os
import sys
from types import FrameType

__all__ = ["caller_stacklevel"]

# Every module of the package lives in this directory; this module must stay there too.
_PACKAGE = os.path.dirname(os.path.abspath(__file__))


def caller_stacklevel() -> int:
    """The ``stacklevel`` that points a warning issued by this function's caller at the first
    frame outside the monoprop package: the user's line, whichever front-end was called."""
    frame: FrameType | None = sys._getframe(1)  # the caller: stacklevel 1
    level = 1
    while (
        frame is not None and os.path.dirname(os.path.abspath(frame.f_code.co_filename)) == _PACKAGE
    ):
        frame = frame.f_back
        level += 1
    return level
