"""Options shared by several commands."""


def add_pair_and_splits(p, files="PREF.L"):
    """-s / -t and the split prefixes of the commands that read a parallel corpus (prepare, multitask), as
    fairseq-preprocess names them; ``files`` says which files a prefix stands for."""
    p.add_argument("--source-lang", "-s", required=True, help=f"source language code: files {files} with L = SRC")
    p.add_argument("--target-lang", "-t", required=True, help=f"target language code: files {files} with L = TGT")
    p.add_argument("--trainpref", required=True, help=f"prefix of the training files ({files})")
    p.add_argument("--validpref", default=None, help="prefix of the validation files")
    p.add_argument("--testpref", default=None, help="prefix of the test files")


def add_scale_options(p, workers_help=None):
    """--workers, --shard, --chunk-size: parallel, sharded, resumable long steps (also used by prepare)."""
    p.add_argument("--workers", type=int, default=1,
                   help=workers_help or "parser processes, each with its own model, over chunks of the input "
                   "(default 1; output identical for any number). With --gpu: one process per GPU, so 1")
    p.add_argument("--shard", default=None, metavar="I/N",
                   help="process only shard I of N (0 <= I < N; contiguous chunk ranges), e.g. one SLURM array "
                   "task each; the same command without --shard then assembles the output (see docs/data.md)")
    p.add_argument("--chunk-size", type=int, default=2048,
                   help="lines per committed chunk (default 2048): a killed run restarts after the last "
                   "finished chunk")


def add_parse_head_args(p):
    """The options of the commands that read a model's parse heads (induce-parses, plot heads)."""
    p.add_argument("--decode", choices=["mst", "argmax"], default="mst",
                   help="how a word tree is decoded from a parse head: mst (default): the best single-rooted tree "
                   "under the head's word-level scores (Chu-Liu-Edmonds); argmax: each word's most attended head "
                   "(may not form a tree)")
    p.add_argument("--decoder-rows", choices=["predicting", "input"], default=None,
                   help="override the checkpoint's --dbsa-decoder-rows (default: as trained; checkpoints from "
                   "before that option existed were trained with 'input' rows)")
    p.add_argument("--cpu", action="store_true", help="run on CPU even if a GPU is available")
