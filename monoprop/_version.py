"""The package version, written once: the build reads it from here (pyproject.toml for the
wheel's metadata, CMakeLists.txt for the C++ package), and ``monoprop.__version__`` is it."""

__version__ = "0.1.0"
