import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import fairseq_syntax.plugin  # noqa: E402,F401  (the tests drive fairseq with the plugin in this process)

#: real treebanks and models shared beside the checkout (absent on other machines)
SHARED = os.environ.get("FAIRSEQ_SYNTAX_SHARED", os.path.join(os.path.dirname(ROOT), "shared"))


def shared_path(*parts):
    return os.path.join(SHARED, *parts)


def require_shared(*parts):
    p = shared_path(*parts)
    if not os.path.exists(p):
        pytest.skip(f"real data not available: {p}")
    return p


@pytest.fixture(autouse=True)
def _seeded_rng(request):
    """Every test draws the same random numbers on every run (torch's, Python's): a tolerance a rare draw would
    break fails always or never, not one CI run in a hundred."""
    import random
    import zlib

    import torch

    seed = zlib.crc32(request.node.nodeid.encode("utf-8"))
    random.seed(seed)
    torch.manual_seed(seed)


@pytest.fixture(scope="session")
def data_bin(tmp_path_factory):
    """A small synthetic data-bin made through the real CLIs (synth -> prepare)."""
    from helpers import synthetic_data_bin

    return synthetic_data_bin(str(tmp_path_factory.mktemp("e2e")), 300, 30, 21, merges=300, seed=5)


#: the longest tests (a minute or more on a 2-core CPU) start first, so that no worker is left running
#: one of them alone at the end of the suite
SLOW_FIRST = ("test_recipes.py::test_recipe_runs_offline_on_its_sample[aspec-ja-en]",
              "test_recipes.py::test_recipe_reads_local_data", "test_recipes.py::test_recipe_runs_offline",
              "test_parsers.py::test_ginza", "test_multi30k_recipe.py::test_multi30k_recipe_on_real_slice",
              "test_cky_e2e.py", "test_real_data.py")


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: a recipe run or multi-process training (leave out with -m 'not slow')")


def pytest_collection_modifyitems(config, items):
    def rank(item):
        return next((i for i, key in enumerate(SLOW_FIRST) if key in item.nodeid), len(SLOW_FIRST))

    items.sort(key=rank)  # stable: the order within each group is kept
