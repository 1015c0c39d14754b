"""What every module of the runner and of its :mod:`.sources` shares: the checkout's root, the split names
and the error that stops a step."""
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SPLITS = ("train", "valid", "test")


class RecipeError(Exception):
    """Stops the step: the recipe prints ``[NAME] error: MESSAGE`` and exits 1."""
