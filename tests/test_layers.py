"""The package's layering (docs/design.md, "What imports what"): each package's module-level imports of the
plugin stay within the packages it may use, so that data tools never pull in models and nothing imports back
up a layer."""
import ast
import re
import glob
import os

from helpers import ROOT

#: leaf modules every layer may use: the error types, the rules for reading text inputs, the process tree, the
#: durable writes
LEAVES = {"errors", "text_reading", "process_tree", "durable_files"}
#: data/'s rooms, in order: each imports only the ones before it; the data tools' layers stop before datasets
TREES = {"data.trees"}
ALIGNED = TREES | {"data.alignment"}
DATA = ALIGNED | {"data.datasets"}
ALLOWED = {
    "errors": set(),
    "durable_files": set(),
    "text_reading": {"errors"},
    "process_tree": set(),
    "patches": {"errors", "patches"},  # the process-wide patches of fairseq and torch
    "data": set(),
    "data.trees": LEAVES | TREES,
    "data.alignment": LEAVES | ALIGNED,
    "data.datasets": LEAVES | DATA,
    "parsing": LEAVES | ALIGNED | {"parsing"},
    "evaluation": LEAVES | {"evaluation"},
    "preparation": LEAVES | ALIGNED | {"parsing", "preparation"},
    "modules": {"errors", "modules"},
    "inference.controlled_parser": LEAVES | TREES | {"preparation"},
    "inference.source": LEAVES | ALIGNED | {"parsing", "preparation", "evaluation", "inference.controlled_parser",
                                            "inference.source"},
    "inference.target": LEAVES | ALIGNED | {"parsing", "preparation", "evaluation", "inference.target"},
    "inference.raw_input": LEAVES | DATA | {"parsing", "preparation", "evaluation", "inference.controlled_parser",
                                            "inference.source", "inference.target", "inference.raw_input"},
    "models": DATA | {"errors", "modules", "models"},
    "criterions": {"errors", "criterions"},
    "settings": {"errors", "settings"},
    "tasks": LEAVES | DATA | {"inference.source", "inference.raw_input", "preparation", "tasks", "criterions",
                       "patches"},
    "inference.hub_interface": LEAVES | DATA | {"inference.source", "tasks"},
    "inference.hub": {"inference.hub_interface", "models"},
    "inference.pack": LEAVES | {"parsing", "preparation"},
}


def _package(module: str) -> str:
    parts = module.split(".")[1:]  # without fairseq_syntax
    if not parts:
        return ""
    if parts[0] in ("inference", "data") and len(parts) > 1:
        return f"{parts[0]}.{parts[1]}"
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
    """The process-wide start-up (fairseq_syntax/patches/startup.py) happens where fairseq's --user-dir loads the plugin
    (its tasks package) and in fairseq_syntax.plugin, not as a side effect of importing a model."""
    import subprocess
    import sys

    code = (
        "import sys, torch\n"
        "hook = sys.excepthook\n"
        "import fairseq_syntax.models\n"
        "from fairseq import checkpoint_utils\n"
        "import fairseq_syntax.patches.startup as s\n"
        "print(sys.excepthook is hook, getattr(checkpoint_utils.load_checkpoint_to_cpu, '_fairseq_syntax_wrapped', "
        "False), s._installed)\n"
        "import fairseq_syntax.tasks\n"
        "print(sys.excepthook is hook, getattr(checkpoint_utils.load_checkpoint_to_cpu, '_fairseq_syntax_wrapped', "
        "False), s._installed)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "PYTHONWARNINGS": "ignore"}).stdout.split("\n")
    assert out[:2] == ["True False False", "False True True"], out


#: imports inside a function that close a cycle on purpose (the importer, ``importer -> imported``): none
DEFERRED_BACK_EDGES = set()
#: the trees whose modules the graph holds: (the folder on sys.path, the top package there); the recipes' runner
#: (examples/recipes/runner, imported as ``runner``) is checked for circles with the package
TREES = ((ROOT, "fairseq_syntax"), (os.path.join(ROOT, "examples", "recipes"), "runner"))


def _import_graph(function_level=False):
    """Each module of :data:`TREES` -> the modules of theirs it imports: at module level (``if``/``try`` blocks
    there count), and with ``function_level`` also those imported inside functions, when they run."""
    modules = {}
    for base, top in TREES:
        for path in glob.glob(os.path.join(base, top, "**", "*.py"), recursive=True):
            rel = os.path.relpath(path, base)[:-3].replace(os.sep, ".")
            modules[rel[: -len(".__init__")] if rel.endswith(".__init__") else rel] = path
    graph = {}
    for module, path in modules.items():
        package = module if path.endswith("__init__.py") else module.rsplit(".", 1)[0]
        tree = ast.parse(open(path, encoding="utf-8").read())
        if function_level:
            nodes = list(ast.walk(tree))
        else:
            nodes, stack = [], list(tree.body)
            while stack:
                node = stack.pop()
                nodes.append(node)
                if isinstance(node, (ast.If, ast.Try)):
                    stack.extend(ast.iter_child_nodes(node))
                elif isinstance(node, ast.ExceptHandler):
                    stack.extend(node.body)
        targets = set()
        for node in nodes:
            if isinstance(node, ast.Import):
                targets.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
                for a in node.names:  # ``from pkg import submodule`` imports the submodule
                    targets.add(f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base)
        graph[module] = {t for t in targets if t in modules and t != module}
    return graph


def _cycles(graph):
    """Every import cycle found by a depth-first search, each as the list of modules around it."""
    found, state = [], {}

    def visit(node, path):
        state[node] = "open"
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                found.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, path)
        path.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    return found


def test_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_among_the_package_modules():
    """No fairseq_syntax module imports, at module level, a module that (through others) imports it back: such a
    circle makes the import order decide whether a name exists yet."""
    cycles = _cycles(_import_graph())
    assert not cycles, [" -> ".join(c) for c in cycles]


def test_no_function_level_import_closes_a_cycle():
    """An import deferred into a function does not close a circle either (a model's ``from_pretrained`` reaches
    the hub interface, which imports the task, not the models), except the deliberate DEFERRED_BACK_EDGES."""
    graph = _import_graph(function_level=True)
    for importer, imported in DEFERRED_BACK_EDGES:
        graph[importer].discard(imported)
    cycles = _cycles(graph)
    assert not cycles, [" -> ".join(c) for c in cycles]


def test_only_the_hub_imports_the_task_from_inference():
    """The task reads raw input through inference/ (source, target, raw_input); of inference/, only the hub, which
    loads a model with its task, imports tasks/; the others (pack) take the task's checkpoint keys from below
    both (preparation/trained_on.py)."""
    graph = _import_graph(function_level=True)
    up = sorted(f"{m} -> {t}" for m in graph if m.startswith("fairseq_syntax.inference.")
                and m not in ("fairseq_syntax.inference.hub", "fairseq_syntax.inference.hub_interface")
                for t in graph[m] if t.startswith("fairseq_syntax.tasks"))
    assert not up, up


def test_the_package_reads_nothing_of_the_lab():
    """The installed package is the plugin: no module of fairseq_syntax imports the recipes' runner or a script
    of examples/, names a path under examples/ or runs one (a pip install carries no examples/ folder)."""
    lab = {os.path.splitext(os.path.basename(p))[0] for p in glob.glob(os.path.join(ROOT, "examples", "*", "*.py"))}
    lab |= {"runner", "examples"}
    found = []
    for path in sorted(glob.glob(os.path.join(ROOT, "fairseq_syntax", "**", "*.py"), recursive=True)):
        text = open(path, encoding="utf-8").read()
        rel = os.path.relpath(path, ROOT)
        for node in ast.walk(ast.parse(text)):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            found += [f"{rel}:{node.lineno}: imports {n}" for n in names if n.split(".")[0] in lab]
        found += [f"{rel}:{i}: {line.strip()[:80]}" for i, line in enumerate(text.splitlines(), 1)
                  if re.search(r"\bexamples[/\\]|[\"']examples[\"']", line)]
    assert not found, "\n".join(found)
