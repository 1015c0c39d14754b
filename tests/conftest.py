import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

#: real treebanks and models shared beside the checkout (absent on other machines)
SHARED = os.environ.get("FAIRSEQ_SYNTAX_SHARED", os.path.join(os.path.dirname(ROOT), "shared"))


def shared_path(*parts):
    return os.path.join(SHARED, *parts)


def require_shared(*parts):
    p = shared_path(*parts)
    if not os.path.exists(p):
        pytest.skip(f"real data not available: {p}")
    return p


@pytest.fixture(scope="session")
def data_bin(tmp_path_factory):
    """A small synthetic data-bin made through the real CLIs (synth -> prepare)."""
    from helpers import synthetic_data_bin

    return synthetic_data_bin(str(tmp_path_factory.mktemp("e2e")), 300, 30, 21, merges=300, seed=5)
