import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
RECIPES = os.path.join(ROOT, "examples", "recipes")  # the recipes' runner (``runner``) and scripts
if RECIPES not in sys.path:
    sys.path.insert(1, RECIPES)

#: the folder of real treebanks and models ($FAIRSEQ_SYNTAX_SHARED, else ../shared); tests needing it skip without it
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


@pytest.fixture(autouse=True)
def _known_warnings_filtered():
    """The plugin's filters of fairseq's known warnings (fairseq_syntax/patches/known_warnings.py) first in every test:
    its start-up installs them when pytest configures (pytest_configure below), and around each test pytest puts
    its own filters (-W, the ini's filterwarnings) in front of them; added again here, they come first."""
    from fairseq_syntax.patches import known_warnings

    known_warnings.filter_warnings()


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


def _runs_tests(config):
    """False for pytest-xdist's controller, which hands the tests to its workers and runs none itself."""
    distributed = getattr(config.option, "dist", "no") != "no" and getattr(config.option, "tx", None)
    return hasattr(config, "workerinput") or not distributed


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: a recipe run, multi-process training, or a preset beyond the quick "
                            "tier's few (leave out with -m 'not slow')")
    if _runs_tests(config):  # the tests drive fairseq with the plugin in this process; xdist's controller skips
        import fairseq_syntax.plugin  # noqa: F401  (its 4 s of imports, which would delay the workers' start)


def pytest_collection_modifyitems(config, items):
    def rank(item):
        return next((i for i, key in enumerate(SLOW_FIRST) if key in item.nodeid), len(SLOW_FIRST))

    items.sort(key=rank)  # stable: the order within each group is kept


def _repo_state():
    """The checkout's top-level entries and git's view of it (changed and untracked, not ignored, files)."""
    import subprocess

    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=ROOT,
                            capture_output=True, text=True).stdout if os.path.isdir(os.path.join(ROOT, ".git")) else ""
    caches = {".pytest_cache", "__pycache__"}  # pytest's and Python's own, made by a plain `pytest` run
    return set(os.listdir(ROOT)) - caches, set(status.splitlines())


def pytest_sessionstart(session):
    if not hasattr(session.config, "workerinput"):  # the controller, or a run without xdist
        session.config._repo_state_before = _repo_state()


def pytest_sessionfinish(session, exitstatus):
    """Tests write under tmp_path only: a run that leaves something new in the checkout (fairseq-train's default
    ./checkpoints, a stray output file) fails, naming it."""
    before = getattr(session.config, "_repo_state_before", None)
    if before is None:
        return
    entries, status = _repo_state()
    new = sorted(entries - before[0]) + sorted(status - before[1])
    if new:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        message = "the test run left these in the checkout (tests must write under tmp_path): " + ", ".join(new)
        if reporter is not None:
            reporter.ensure_newline()
            reporter.write_line(message, red=True)
        else:
            print(message, file=sys.stderr)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
