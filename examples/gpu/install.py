#!/usr/bin/env python3
"""Install what fairseq-syntax needs into a folder, offline, on a machine that already has torch (a GPU machine
with no network): the wheels of the carry folder (``build_carry.sh`` made it), fairseq from its source
distribution with only the compiled parts fairseq-syntax uses (the Cython batching helpers and the BLEU
scorer; not the C++/CUDA extensions of fairseq's non-autoregressive models), and the console scripts of
fairseq and of this checkout's plugin (``fairseq-train``, ``fairseq-generate``, ``fairseq-syntax-train``,
...) as small launchers. Nothing is installed outside TARGET.

    python3 examples/gpu/install.py --carry .carry --target /tmp/site
    export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH

Prints the ``export`` line to use (``--print-env``) and checks the result by importing fairseq with the plugin.
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
#: fairseq's console scripts the recipes and tests run (fairseq's setup.py: fairseq_cli.NAME:cli_main)
FAIRSEQ_SCRIPTS = ("train", "generate", "interactive", "preprocess", "score", "validate")
#: the compiled modules of fairseq that fairseq-syntax uses: (module, sources, C++?)
EXTENSIONS = [
    ("fairseq.data.data_utils_fast", ["fairseq/data/data_utils_fast.pyx"], True),
    ("fairseq.data.token_block_utils_fast", ["fairseq/data/token_block_utils_fast.pyx"], True),
    ("fairseq.libbleu", ["fairseq/clib/libbleu/libbleu.cpp", "fairseq/clib/libbleu/module.cpp"], False),
]


def log(msg):
    print(f"[install {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def install_wheels(wheels, target):
    if not wheels:
        return
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                    "--no-cache-dir", "--upgrade", "--disable-pip-version-check", "--target", target, *wheels],
                   check=True)
    log(f"{len(wheels)} wheels: {', '.join(os.path.basename(w).split('-')[0] for w in wheels)}")


def install_fairseq(sdist, target, jobs):
    """fairseq's Python packages from the source distribution, and its compiled helpers built in place."""
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(sdist) as tar:
            tar.extractall(tmp, filter="data") if hasattr(tarfile, "data_filter") else tar.extractall(tmp)
        (src,) = glob.glob(os.path.join(tmp, "fairseq*"))
        for package in ("fairseq", "fairseq_cli"):
            dest = os.path.join(target, package)
            shutil.rmtree(dest, ignore_errors=True)
            shutil.copytree(os.path.join(src, package), dest, symlinks=False)
    setup = os.path.join(target, "_fairseq_extensions_setup.py")
    with open(setup, "w", encoding="utf-8") as f:
        f.write(
            "import numpy\n"
            "from Cython.Build import cythonize\n"
            "from setuptools import Extension, setup\n"
            f"specs = {EXTENSIONS!r}\n"
            "exts = [Extension(name, sources, language='c++', extra_compile_args=['-std=c++11', '-O3'],\n"
            "                  include_dirs=[numpy.get_include()] if cython else []) for name, sources, cython in specs]\n"
            "setup(name='fairseq-extensions', ext_modules=cythonize(exts, quiet=True, language_level=3),\n"
            f"      script_args=['-q', 'build_ext', '--inplace', '-j', '{jobs}'])\n")
    start = time.time()
    subprocess.run([sys.executable, setup], cwd=target, check=True, stdout=subprocess.DEVNULL)
    os.remove(setup)
    shutil.rmtree(os.path.join(target, "build"), ignore_errors=True)
    log(f"fairseq from {os.path.basename(sdist)}: {len(EXTENSIONS)} compiled helpers built in {time.time() - start:.0f} s")


def console_scripts():
    """(name, module, function) of this checkout's console scripts (setup.py) and fairseq's that it runs."""
    scripts = [(f"fairseq-{name}", f"fairseq_cli.{name}", "cli_main") for name in FAIRSEQ_SCRIPTS]
    text = open(os.path.join(ROOT, "setup.py"), encoding="utf-8").read()
    scripts += re.findall(r'"([\w-]+)=([\w.]+):(\w+)"', text)
    return scripts


def write_launchers(target):
    bin_dir = os.path.join(target, "bin")
    os.makedirs(bin_dir, exist_ok=True)
    scripts = console_scripts()
    for name, module, function in scripts:
        path = os.path.join(bin_dir, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(f"#!{sys.executable}\nimport sys\nfrom {module} import {function}\nsys.exit({function}())\n")
        os.chmod(path, 0o755)
    log(f"{len(scripts)} console scripts in {bin_dir}")


def environment(target):
    return {"PYTHONPATH": os.pathsep.join([target, ROOT]), "PATH": os.path.join(target, "bin") + os.pathsep
            + os.environ.get("PATH", "")}


def check(target):
    env = dict(os.environ, **environment(target))
    # what the steps import besides the plugin: sacreBLEU's paired bootstrap (version 2) and NLTK's RIBES, for
    # every evaluate.sh of the table step (a failure here costs seconds, not the trainings before the scoring)
    code = ("import torch, fairseq, fairseq_syntax.plugin; from fairseq.data import data_utils_fast; "
            "from fairseq import libbleu; import sacrebleu.significance, nltk.translate.ribes_score; "
            "print('fairseq', fairseq.__version__, 'torch', torch.__version__, "
            "'cuda', torch.version.cuda, 'gpu', torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)")
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True)
    log(out.stdout.strip())


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--carry", default=os.path.join(ROOT, ".carry"), help="the folder build_carry.sh made")
    p.add_argument("--target", default="/tmp/site", help="where to install (default /tmp/site)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="compiler processes")
    p.add_argument("--print-env", action="store_true", help="print the export line for a shell (stdout)")
    args = p.parse_args(argv)
    start = time.time()
    sdists = glob.glob(os.path.join(args.carry, "fairseq*.tar.gz"))
    if len(sdists) != 1:
        sys.exit(f"error: {args.carry}: one fairseq source distribution expected, found {len(sdists)} "
                 "(run examples/gpu/build_carry.sh)")
    os.makedirs(args.target, exist_ok=True)
    install_wheels(sorted(glob.glob(os.path.join(args.carry, "wheels", "*.whl"))), args.target)
    install_fairseq(sdists[0], args.target, args.jobs)
    write_launchers(args.target)
    check(args.target)
    log(f"done in {time.time() - start:.0f} s")
    if args.print_env:
        env = environment(args.target)
        print(f"export PYTHONPATH={env['PYTHONPATH']} PATH={os.path.join(args.target, 'bin')}:$PATH")


if __name__ == "__main__":
    main()
