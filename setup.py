"""fairseq-syntax: syntax-aware NMT systems as a fairseq plugin (--user-dir).

Installs the single package ``fairseq_syntax`` and console scripts
``fairseq-syntax-{parse,align,binarize,prepare,synth}``.

fairseq itself comes from ``fairseq-fixed==0.12.3.1`` (module ``fairseq``),
because PyPI's fairseq 0.12.2 does not build on Python >= 3.11. A user who
already has a working fairseq 0.12.x keeps it with either::

    pip install --no-deps -e .        # and install stanza subword-nmt sacrebleu
    FAIRSEQ_SYNTAX_KEEP_FAIRSEQ=1 pip install -e .
"""
import os

from setuptools import find_packages, setup

install_requires = ["torch", "numpy", "stanza", "subword-nmt", "sentencepiece", "sacrebleu[ja]>=2", "tqdm", "matplotlib", "nltk>=3.10.4", "sacremoses", "langid",
                    "langdetect", "tensorboardX"]
if not os.environ.get("FAIRSEQ_SYNTAX_KEEP_FAIRSEQ"):
    install_requires.append("fairseq-fixed==0.12.3.1")

setup(
    name="fairseq-syntax",
    version="0.1.0",
    description="Syntax-aware neural machine translation as a fairseq plugin",
    long_description=open(os.path.join(os.path.dirname(__file__), "README.md")).read()
    if os.path.exists(os.path.join(os.path.dirname(__file__), "README.md"))
    else "",
    long_description_content_type="text/markdown",
    python_requires=">=3.10",
    packages=find_packages(include=["fairseq_syntax", "fairseq_syntax.*"]),
    # fairseq-hydra-train configs of the named architectures (docs/hydra.md)
    package_data={"fairseq_syntax": ["config/*.yaml"]},
    install_requires=install_requires,
    extras_require={
        "test": ["pytest", "pytest-xdist"],
        "udpipe": ["ufal.udpipe"],
        "ginza": ["ja-ginza"],
        "spacy": ["spacy"],
    },
    entry_points={
        "console_scripts": [
            "fairseq-syntax-parse=fairseq_syntax.cli.parse:cli_main",
            "fairseq-syntax-align=fairseq_syntax.cli.align:cli_main",
            "fairseq-syntax-binarize=fairseq_syntax.cli.binarize:cli_main",
            "fairseq-syntax-prepare=fairseq_syntax.cli.prepare:cli_main",
            "fairseq-syntax-synth=fairseq_syntax.cli.synth:cli_main",
            "fairseq-syntax-multitask=fairseq_syntax.cli.multitask:cli_main",
            "fairseq-syntax-options=fairseq_syntax.cli.options:cli_main",
            "fairseq-syntax-induce-parses=fairseq_syntax.cli.induce_parses:cli_main",
            "fairseq-syntax-evaluate=fairseq_syntax.cli.evaluate:cli_main",
            "fairseq-syntax-detokenize=fairseq_syntax.cli.detokenize:cli_main",
            "fairseq-syntax-pack=fairseq_syntax.cli.pack:cli_main",
            "fairseq-syntax-cky-attention=fairseq_syntax.cli.cky_attention:cli_main",
            "fairseq-syntax-plot=fairseq_syntax.cli.plot:cli_main",
            "fairseq-syntax-train=fairseq_syntax.cli.train:cli_main",
            "fairseq-syntax-generate=fairseq_syntax.cli.generate:cli_main",
            "fairseq-syntax-interactive=fairseq_syntax.cli.interactive:cli_main",
            "fairseq-syntax-settings=fairseq_syntax.cli.settings:cli_main",
            "fairseq-syntax-inspect=fairseq_syntax.cli.inspect:cli_main",
            "fairseq-syntax-analyze=fairseq_syntax.cli.analyze:cli_main",
        ]
    },
)
