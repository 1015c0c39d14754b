"""The recipes' locks: one run at a time writes a model's checkpoints or evaluation, and no prepare rewrites the
data a training or an evaluation reads.

Each is the kernel's flock on a file under WORK/locks (or DATA_WORK/locks), shared or exclusive, taken without
waiting: a run that finds it held stops, naming the holder (the last line of the lock file). The descriptor is
inherited by the fairseq command the step starts (the training keeps the lock while it runs, even when the
runner is killed) and the kernel drops the lock with its last holder, so there is no stale lock to remove.
:mod:`fairseq_syntax.preparation.folder_lock` is the preparation's own lock (exclusive, per output folder, held
by one process); these are shared by readers and held by the commands the runner starts.

- model lock, WORK/locks/MODEL.lock: train and evaluate of MODEL take it exclusively; evaluating a model that
  decodes another's checkpoint (its ``checkpoint_of``), and training one that fine-tunes another's (its
  ``starts_from``), takes that one's shared. A queue (examples/recipes/queue.sh)
  holds it over a model's train and evaluate and names it in FAIRSEQ_SYNTAX_MODEL_LOCK.
- data lock, DATA_WORK/locks/data.lock: prepare takes it exclusively, train and evaluate shared.
"""
import fcntl
import os
import socket
import time

from runner.recipe import Recipe, RecipeError

#: the open lock files (kept for the process's life, and inherited by the commands it starts)
_HELD = []


def hold(recipe: Recipe, path: str, shared: bool, refusal: str, what: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    f = open(path, "a", encoding="utf-8")
    try:
        fcntl.flock(f, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
    except BlockingIOError:
        with open(path, encoding="utf-8", errors="replace") as r:
            lines = r.read().splitlines()
        f.close()
        raise RecipeError(f"{refusal} ({path}: {lines[-1] if lines else ''})") from None
    f.write(f"pid {os.getpid()} on {socket.gethostname()}: {recipe.step}.sh {what}, since {time.strftime('%F %T')}\n")
    f.flush()
    os.set_inheritable(f.fileno(), True)
    _HELD.append(f)


def inherited_fds():
    return tuple(f.fileno() for f in _HELD)


def model_lock(recipe: Recipe, model: str, shared: bool = False) -> None:
    lock = os.path.join(recipe.work, "locks", f"{model}.lock")
    queued = recipe.var("FAIRSEQ_SYNTAX_MODEL_LOCK")  # as the queue spelled it: WORK may be relative there
    if (queued and os.path.abspath(queued) == lock) or recipe.dry_run:
        return  # our queue holds it for us; a dry run writes nothing
    hold(recipe, lock, shared, f"{model} is being trained or evaluated by another run; wait for it to end (a second "
         "run would mix its checkpoints or translations with that one's)", model)


def data_lock(recipe: Recipe, shared: bool, what: str) -> None:
    if recipe.dry_run:
        return
    lock = os.path.join(recipe.data_work, "locks", "data.lock")
    if shared:
        hold(recipe, lock, True, f"{recipe.data_work}'s data is being prepared by another run: wait for it to end "
             "(this run would read data-bins being rewritten)", what)
    else:
        hold(recipe, lock, False, f"{recipe.data_work}'s data is in use by another run (a training, an evaluation or "
             "another prepare.sh): wait for it to end (this prepare would rewrite what it reads)", what)
