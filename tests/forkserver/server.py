"""Test-suite start-up saver, server side: an interpreter that has imported torch, fairseq and the plugin
once, and forks a fresh child per fairseq command handed over by sitecustomize.py (the client side).

    python tests/forkserver/server.py SOCKET USER_DIR

Per request it forks a handler, which forks the command's child: the child takes the client's standard
streams (passed over the socket), environment, working directory and argv, runs the console script's entry
point (or ``python -m`` module) as a fresh process would, runs the atexit handlers (fairseq's TensorBoard
writers, the plugin's prefetch-thread stop) and exits with the command's status; the handler reports the
child's pid and exit status to the client and kills the child if the client goes away. The server binds its
socket only when the imports are done (clients that come earlier run as usual) and exits when the process
that started it does.
"""
import os
import select
import signal
import socket
import struct
import sys

from fsx_wire import receive_request

#: console script name -> entry point, read from the installed packages when the server starts
SCRIPTS = {}


def preload(user_dir):
    from argparse import Namespace

    import torch  # noqa: F401
    import fairseq  # noqa: F401
    from fairseq import checkpoint_utils, sequence_generator, trainer, utils  # noqa: F401

    utils.import_user_module(Namespace(user_dir=user_dir))
    from importlib.metadata import entry_points

    SCRIPTS.update((e.name, e) for e in entry_points(group="console_scripts"))
    warm_up()


def warm_up():
    """One training step and one beam search of a tiny fairseq transformer: torch's first forward,
    backward and optimizer step in a process cost ~1.4 s of one-time set-up, which every child then
    inherits done."""
    from argparse import Namespace

    import torch
    from fairseq.data import Dictionary
    from fairseq.models.transformer import TransformerModel, base_architecture
    from fairseq.optim.adam import Adam
    from fairseq.sequence_generator import SequenceGenerator
    from fairseq.tasks.translation import TranslationConfig, TranslationTask

    d = Dictionary()
    for w in "abcdefgh":
        d.add_symbol(w)
    args = Namespace(encoder_layers=1, decoder_layers=1, encoder_embed_dim=16, decoder_embed_dim=16,
                     encoder_ffn_embed_dim=32, decoder_ffn_embed_dim=32, encoder_attention_heads=2,
                     decoder_attention_heads=2, max_source_positions=64, max_target_positions=64)
    base_architecture(args)
    model = TransformerModel.build_model(args, TranslationTask(TranslationConfig(), d, d))
    optimizer = Adam(model.parameters(), lr=1e-3)
    src, lengths = torch.tensor([[4, 5, 6, 2], [1, 7, 8, 2]]), torch.tensor([4, 3])
    out = model(src, lengths, torch.tensor([[2, 4, 5], [2, 6, 1]]))
    lprobs = model.get_normalized_probs(out, log_probs=True)
    loss = torch.nn.functional.nll_loss(lprobs.view(-1, lprobs.size(-1)), torch.tensor([4, 5, 2, 6, 2, 1]),
                                        ignore_index=d.pad(), reduction="sum")
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    model.eval()
    with torch.no_grad():
        SequenceGenerator([model], d, beam_size=2, max_len_b=5).generate(
            [model], {"net_input": {"src_tokens": src, "src_lengths": lengths}})


def run_command(request, fds):
    """In the command's child: become the process the client would have been, run, exit."""
    import atexit
    import runpy
    import traceback

    for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    for fd in fds:
        if fd > 2:
            os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    if os.environ.get("PYTHONUNBUFFERED") or request.get("unbuffered"):
        sys.stdout.reconfigure(write_through=True)
    threads = os.environ.get("OMP_NUM_THREADS")
    if threads and threads.isdigit():
        import torch

        torch.set_num_threads(int(threads))
    code = 0
    try:
        if request["kind"] == "script":
            sys.argv = [request["what"], *request["args"]]
            sys.path[0] = os.path.dirname(request["what"])
            name = os.path.basename(request["what"])
            if name not in SCRIPTS:
                sys.exit(f"fork server: no installed console script named {name}")
            sys.exit(SCRIPTS[name].load()())
        sys.argv = [request["what"], *request["args"]]
        if request["kind"] == "path":
            sys.path[0] = os.path.dirname(request["what"])
            runpy.run_path(request["what"], run_name="__main__")
        else:
            sys.path[0] = request["cwd"]
            runpy.run_module(request["what"], run_name="__main__", alter_sys=True)
    except SystemExit as e:
        if e.code is None:
            code = 0
        elif isinstance(e.code, int):
            code = e.code
        else:
            print(e.code, file=sys.stderr)
            code = 1
    except KeyboardInterrupt:
        traceback.print_exc()
        code = 130
    except BaseException:  # what an uncaught exception prints and returns in a fresh interpreter
        traceback.print_exc()
        code = 1
    try:
        atexit._run_exitfuncs()
    except BaseException:
        traceback.print_exc()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    os._exit(code & 0xFF)


def handle(conn):
    """In the request's handler: read it, fork the command, report its pid and exit status."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    request, fds = receive_request(conn)
    pid = os.fork()
    if pid == 0:
        conn.close()
        run_command(request, fds)
    for fd in fds:
        os.close(fd)
    print(f"{pid} {request['kind']} {os.path.basename(request['what'])} {' '.join(request['args'][:4])}", flush=True)
    exited = os.pidfd_open(pid)
    try:
        conn.sendall(struct.pack("!q", pid))  # fails if the client was killed before this (EPIPE)
        while True:
            ready, _, _ = select.select([conn, exited], [], [])
            if exited in ready:
                break
            if not conn.recv(1):
                raise ConnectionResetError
    except OSError:  # the client is gone (killed), whenever it went: so goes its command
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    try:
        conn.sendall(struct.pack("!q", os.waitstatus_to_exitcode(status)))
    except OSError:
        pass
    os._exit(0)


def serve(path, user_dir):
    preload(user_dir)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # handlers are reaped by the kernel
    starter = os.getppid()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    while os.getppid() == starter:
        ready, _, _ = select.select([listener], [], [], 2.0)
        if not ready:
            continue
        conn, _ = listener.accept()
        if os.fork() == 0:
            listener.close()
            try:
                handle(conn)
            finally:
                os._exit(1)
        conn.close()
    listener.close()
    os.unlink(path)


if __name__ == "__main__":
    serve(sys.argv[1], sys.argv[2])
