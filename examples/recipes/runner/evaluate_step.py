"""evaluate.sh MODEL [fairseq-generate options...]: the test split translated (the best checkpoint, else the last),
scored by fairseq-syntax-evaluate (BLEU, chrF, RIBES, BLEU by source length) with the paired bootstrap against
the model's baseline and the paper's other baselines, each test set of TEST_SETS on its own; a model with parse
heads also gets their trees' UAS (uas.txt)."""
import os
import shutil
import subprocess
import sys
from typing import List, Optional

from fairseq_syntax.evaluation.scoring_plan import plan_for
from runner import commands
from runner.recipe import Recipe, RecipeError
from runner.run_locks import data_lock, model_lock
from runner.prepare_step import tokenizer_of
from runner.train_step import require_prepared

PARSE_HEAD_ARCHS = {f"transformer_{a}" for a in ("dbsa", "dbsa_enc", "dbsa_dec", "sisa", "syncattn", "dep_rel_self")}


def _lines(path: str) -> List[str]:
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        return f.read().splitlines()


def _write(path: str, lines: List[str]) -> None:
    with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
        f.writelines(line + "\n" for line in lines)


def test_sets(recipe: Recipe):
    """(NAME, LINES) of RAW/test.sets, or None for one test split."""
    path = os.path.join(recipe.raw, "test.sets")
    if not os.path.isfile(path):
        return None
    return [(name, int(n)) for name, n in (line.split() for line in _lines(path) if line.strip())]


def score(recipe: Recipe, out: str, hyp_tok: str, src_tok: str, ref_tok: str, ref_raw: str,
          base_dir: Optional[str]) -> None:
    """OUT/{hyp.txt,scores.*}: the translations scored by the package's plan for the target side
    (:func:`fairseq_syntax.evaluation.scoring_plan.plan_for`, as ``fairseq-syntax-evaluate --data`` scores: the
    target's tokenizer, the pair's languages, the recipe's ``bleu_on_tokens``); base_dir: the baseline's folder."""
    tgt = recipe.tgt
    plan = plan_for(tgt, tokenizer_of(recipe, tgt), (recipe.src,), on_tokens=recipe.bleu_on_tokens)
    args = ["--source", src_tok, "--json", f"{out}/scores.json", "--plot", f"{out}/bleu_by_length.png"]
    if plan.removes_spaces:  # Japanese / Chinese: the same tokens (sacreBLEU's) for every model
        _write(f"{out}/hyp.txt", [line.replace(" ", "") for line in _lines(hyp_tok)])
        ref = ref_raw
    elif plan.tokenize == "none":  # BLEU on the tokens (the corpus's own, or WAT's KyTea / Moses)
        shutil.copyfile(hyp_tok, f"{out}/hyp.txt")
        ref = ref_tok
    else:  # detokenised, against the raw reference (Moses + in-word hyphens rejoined)
        with open(hyp_tok, "rb") as i, open(f"{out}/hyp.txt", "wb") as o:
            if subprocess.run(["fairseq-syntax-detokenize", "-l", tgt], stdin=i, stdout=o).returncode:
                raise RecipeError(f"fairseq-syntax-detokenize failed on {hyp_tok}")
        ref = ref_raw
    args += ["--hyp", f"{out}/hyp.txt", "--ref", ref] + (["--tokenize", plan.tokenize] if plan.tokenize else []) + (
        ["--ribes"] if plan.ribes else [])
    if base_dir and os.path.isfile(f"{base_dir}/hyp.txt"):
        args += ["--baseline", f"{base_dir}/hyp.txt"]
    elif base_dir:
        recipe.log(f"no {base_dir}/hyp.txt yet: evaluate the baseline first for the bootstrap test")
    p = subprocess.run(["fairseq-syntax-evaluate", *args], stdout=subprocess.PIPE)
    sys.stdout.buffer.write(p.stdout)
    sys.stdout.flush()
    with open(f"{out}/scores.txt", "wb") as f:
        f.write(p.stdout)
    if p.returncode:
        raise RecipeError(f"fairseq-syntax-evaluate failed on {out}")


def score_against_others(recipe: Recipe, model: str, out: str, src_tok: str, ref_tok: str) -> None:
    """The same translations against each of the paper's other baselines, in OUT/[SET/]vs_BASE/; a baseline not
    evaluated yet is skipped with a line saying so (a vs_BASE folder without the bootstrap would make a table
    row with no test)."""
    sets_folders = [os.path.join(out, d) for d in os.listdir(out)
                    if not d.startswith("vs_") and os.path.isdir(os.path.join(out, d))]
    for folder in [out] + sets_folders:
        for d in os.listdir(folder):  # an earlier evaluation's rows: each is scored again below, or left out
            if d.startswith("vs_"):
                path = os.path.join(folder, d)
                shutil.rmtree(path) if os.path.isdir(path) and not os.path.islink(path) else os.remove(path)
    sets, work, raw = test_sets(recipe), recipe.work, recipe.raw
    for b in recipe.models[model].also_against:
        if b not in recipe.models:
            raise RecipeError(f"also_against of {model}: unknown model '{b}'")
        recipe.log(f"{model} against {b}")
        if sets is None:
            if not os.path.isfile(f"{work}/eval/{b}/hyp.txt"):
                recipe.log(f"not tested against {b}: no {work}/eval/{b}/hyp.txt (evaluate {b}, then {model} again)")
                continue
            os.makedirs(f"{out}/vs_{b}", exist_ok=True)
            score(recipe, f"{out}/vs_{b}", f"{out}/hyp.tok", src_tok, ref_tok, f"{raw}/test.{recipe.tgt}",
                  f"{work}/eval/{b}")
            continue
        for name, _ in sets:
            if not os.path.isfile(f"{work}/eval/{b}/{name}/hyp.txt"):
                recipe.log(f"not tested against {b} on {name}: no {work}/eval/{b}/{name}/hyp.txt (evaluate {b}, "
                           f"then {model} again)")
                continue
            d = f"{out}/{name}"
            os.makedirs(f"{d}/vs_{b}", exist_ok=True)
            score(recipe, f"{d}/vs_{b}", f"{d}/hyp.tok", f"{d}/src.tok", f"{d}/ref.tok", f"{raw}/{name}.{recipe.tgt}",
                  f"{work}/eval/{b}/{name}")


def parse_head_uas(recipe: Recipe, model: str, checkpoint: str, out: str) -> None:
    """A model with parse heads: their trees on the test split (MST decoding) and their UAS against the data's
    parses, in OUT/uas.txt, the trees in OUT/induced.{src,tgt}.conllu."""
    s = recipe.models[model]
    if s.arch not in PARSE_HEAD_ARCHS:
        return
    uas = commands.induce(f"{out}/induced", os.path.join(recipe.data_work, s.data, "data-bin"), checkpoint,
                          ["--cpu"] if recipe.sample else [])
    with open(f"{out}/uas.txt", "w", encoding="utf-8") as f:
        f.write(uas)
    sys.stderr.write(uas)


def evaluate(recipe: Recipe, model: str, extra: List[str]) -> None:
    s = recipe.model(model, "evaluate.sh")
    trained = s.checkpoint_of or model
    work, out = recipe.work, os.path.join(recipe.work, "eval", model)
    model_lock(recipe, model)
    if trained != model:
        model_lock(recipe, trained, shared=True)
    data_lock(recipe, True, f"evaluate {model}")
    ck = os.path.join(work, "checkpoints", trained, "checkpoint_best.pt")
    if not os.path.isfile(ck):
        ck = os.path.join(work, "checkpoints", trained, "checkpoint_last.pt")
    if not os.path.isfile(ck):
        raise RecipeError(f"no checkpoint in {work}/checkpoints/{trained}: run train.sh {trained} first")
    data_bin = os.path.join(recipe.data_work, s.data, "data-bin")
    require_prepared(data_bin)
    os.makedirs(out, exist_ok=True)
    if not recipe.dry_run:  # the checkpoint decoded: results_table.py reads what it recorded of its text
        with open(f"{out}/checkpoint.txt", "w", encoding="utf-8") as f:
            f.write(os.path.realpath(ck) + "\n")
        if os.path.exists(f"{out}/.restored"):  # evaluated here: no longer a committed run standing in
            os.remove(f"{out}/.restored")
    # the sample's 2-update models would emit max-length garbage (200 steps x beam): cap their output length
    cpu = ["--cpu", "--max-len-a", "1.2", "--max-len-b", "4"] if recipe.sample else []
    commands.generate(out, data_bin, ck, ["--task", s.task, "--source-lang", recipe.src, "--target-lang", recipe.tgt,
                                          *s.decode, "--batch-size", "64", "--required-batch-size-multiple", "1", *cpu,
                                          *extra])
    variant_work = os.path.join(recipe.data_work, s.data, "work")
    ref_tok, src_tok = f"{variant_work}/test.tok.{recipe.tgt}", f"{variant_work}/test.tok.{recipe.src}"
    if recipe.variants[s.data].multitask:  # the length buckets count the source's words, not C&H's task tags
        _write(f"{out}/src.tok", [_untag(line) for line in _lines(src_tok)])
        src_tok = f"{out}/src.tok"
    hyp, n_ref = _lines(f"{out}/hyp.tok"), len(_lines(ref_tok))
    if len(hyp) != n_ref:
        raise RecipeError(f"{out}/generate.out has {len(hyp)} translations for {n_ref} test sentences")
    base = s.baseline
    base_dir = None if base == model else f"{work}/eval/{base}"  # a baseline has no bootstrap test
    sets = test_sets(recipe)
    if sets is None:
        score(recipe, out, f"{out}/hyp.tok", src_tok, ref_tok, f"{recipe.raw}/test.{recipe.tgt}", base_dir)
    else:  # TEST_SETS: the joined test split, scored set by set
        first, files = 0, {"hyp.tok": hyp, "src.tok": _lines(src_tok), "ref.tok": _lines(ref_tok)}
        for name, n in sets:
            d = f"{out}/{name}"
            os.makedirs(d, exist_ok=True)
            for f, lines in files.items():
                _write(f"{d}/{f}", lines[first:first + n])
            recipe.log(f"{name} (test lines {first + 1}-{first + n})")
            score(recipe, d, f"{d}/hyp.tok", f"{d}/src.tok", f"{d}/ref.tok", f"{recipe.raw}/{name}.{recipe.tgt}",
                  base_dir and f"{base_dir}/{name}")
            first += n
        if first != len(hyp):
            raise RecipeError(f"{recipe.raw}/test.sets counts {first} test lines, the test split has {len(hyp)}")
    score_against_others(recipe, model, out, src_tok, ref_tok)
    parse_head_uas(recipe, model, ck, out)


def _untag(line: str) -> str:
    if line.startswith("<translate> "):
        line = line[len("<translate> "):]
    return line[:-len(" <translate>")] if line.endswith(" <translate>") else line
