"""Where things are: the repository root (tests run from anywhere)."""
import pathlib

ROOT = str(pathlib.Path(__file__).resolve().parents[2])
