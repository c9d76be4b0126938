"""Shared pytest setup for the monoprop tests."""

import os

# The dense reference multiplies many small (<= 64 x 64) matrices. Multi-threaded
# OpenBLAS makes each product ~100x slower on small CI machines (thread start-up and
# spinning), so pin BLAS to one thread before numpy is first imported. This does not
# touch monoprop's own threading (monoprop_NUM_THREADS).
for _var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

# The upper-case spelling of monoprop_NUM_THREADS makes the first propagator construction warn
# (an error under filterwarnings = error); the tests that want that warning set it themselves.
os.environ.pop("MONOPROP_NUM_THREADS", None)
