"""The package's layering (docs/design.md, "What imports what"): each package's module-level imports of the
plugin stay within the packages it may use, so that data tools never pull in models and nothing imports back
up a layer."""
import ast
import glob
import os

from helpers import ROOT

#: leaf modules every layer may use: the error types, the rules for reading text inputs, the process tree, the
#: durable writes
LEAVES = {"errors", "text_files", "process_tree", "durable_files"}
ALLOWED = {
    "errors": set(),
    "durable_files": set(),
    "text_files": {"errors"},
    "process_tree": set(),
    "error_display": {"errors"},
    "checkpoint_reading": {"errors"},
    "data": LEAVES | {"data"},
    "parsing": LEAVES | {"data", "parsing"},
    "evaluation": LEAVES | {"evaluation"},
    "preparation": LEAVES | {"data", "parsing", "preparation"},
    "modules": {"errors", "modules"},
    "inference.source": LEAVES | {"data", "parsing", "preparation", "evaluation", "inference.source"},
    "inference.target": LEAVES | {"data", "parsing", "preparation", "evaluation", "inference.target"},
    "inference.raw_input": LEAVES | {"data", "parsing", "preparation", "evaluation", "inference.source",
                                    "inference.target", "inference.raw_input"},
    "models": {"errors", "modules", "data", "models"},
    "startup": set(),
    "precision": {"errors"},
    "known_warnings": set(),
    "user_dir": {"errors"},
    "criterions": {"errors", "criterions"},
    "recipes": {"errors", "recipes"},
    "tasks": LEAVES | {"data", "inference.source", "inference.raw_input", "preparation", "tasks", "criterions",
                       "startup"},
}


def _package(module: str) -> str:
    parts = module.split(".")[1:]  # without fairseq_syntax
    if not parts:
        return ""
    if parts[0] == "inference" and len(parts) > 1:
        return f"inference.{parts[1]}"
    return parts[0]


def test_module_level_imports_follow_the_layers():
    problems = []
    for path in glob.glob(os.path.join(ROOT, "fairseq_syntax", "**", "*.py"), recursive=True):
        rel = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
        module = rel[: -len(".__init__")] if rel.endswith(".__init__") else rel
        layer = _package(module)
        if layer not in ALLOWED:
            continue
        for node in ast.parse(open(path, encoding="utf-8").read()).body:  # module level only
            names = []
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("fairseq_syntax"):
                names = [node.module] if node.module != "fairseq_syntax" else [
                    f"fairseq_syntax.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names if a.name.startswith("fairseq_syntax")]
            for name in names:
                if _package(name) not in ALLOWED[layer]:
                    problems.append(f"{module} imports {name}")
    assert not problems, problems


def test_importing_the_models_changes_nothing_and_the_user_dir_import_starts_the_plugin():
    """The process-wide start-up (fairseq_syntax/startup.py) happens where fairseq's --user-dir loads the plugin
    (its tasks package) and in fairseq_syntax.plugin, not as a side effect of importing a model."""
    import subprocess
    import sys

    code = (
        "import sys, torch\n"
        "hook = sys.excepthook\n"
        "import fairseq_syntax.models\n"
        "from fairseq import checkpoint_utils\n"
        "import fairseq_syntax.startup as s\n"
        "print(sys.excepthook is hook, getattr(checkpoint_utils.load_checkpoint_to_cpu, '_fairseq_syntax_wrapped', "
        "False), s._installed)\n"
        "import fairseq_syntax.tasks\n"
        "print(sys.excepthook is hook, getattr(checkpoint_utils.load_checkpoint_to_cpu, '_fairseq_syntax_wrapped', "
        "False), s._installed)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "PYTHONWARNINGS": "ignore"}).stdout.split("\n")
    assert out[:2] == ["True False False", "False True True"], out
