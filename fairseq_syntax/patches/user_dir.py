"""The plugin's ``--user-dir`` on the command line of its own fairseq commands, from whatever folder they run.

fairseq resolves ``--user-dir PATH`` against the working folder, then against the fairseq package's folder and
its parent (``fairseq.utils.import_user_module``): ``--user-dir fairseq_syntax`` works from the checkout's root,
and anywhere for a plugin installed beside fairseq in site-packages, but from no other folder for an editable
install (the checkout is not fairseq's parent). The plugin's commands (``fairseq-syntax-train``,
``fairseq-syntax-generate``, ``fairseq-syntax-interactive``) have imported this package already, so they give
fairseq its path: added when ``--user-dir`` is absent, and put in place of a value that names this package but
is not a folder from here (the README's relative ``fairseq_syntax``). fairseq imports a ``--user-dir`` that is
already imported only when the path is the imported package's (else it refuses the name as "not globally
unique"): a value naming another copy of the plugin is refused here with one line instead.
"""
import os
import sys
from typing import List

from fairseq_syntax.errors import OptionError

OPTION = "--user-dir"


def package_dir() -> str:
    """The folder of the ``fairseq_syntax`` package this process imported."""
    import fairseq_syntax

    return os.path.dirname(os.path.abspath(fairseq_syntax.__file__))


def _resolved(value: str, here: str, package: str) -> str:
    """What ``--user-dir value`` becomes: the package's path where the value names this package (or is not a
    folder from here and ends in the package's name); the value itself where it is another plugin's folder."""
    path = os.path.join(here, os.path.expanduser(value))
    name = os.path.basename(os.path.normpath(value))
    if os.path.isdir(path):
        if os.path.realpath(path) == os.path.realpath(package):
            return package
        if name == os.path.basename(package):
            raise OptionError(f"{OPTION} {value}: another copy of the plugin than this command's ({package}): "
                              f"leave {OPTION} out (this command adds its own), or run that copy's command")
        return value  # another plugin: fairseq imports it as it would
    if name == os.path.basename(package):
        return package
    raise OptionError(f"{OPTION} {value}: no such folder (from {here}): give the plugin's folder, or leave "
                      f"{OPTION} out (this command adds its own)")


def with_user_dir(argv: List[str], cwd: str = None) -> List[str]:
    """``argv`` (the options, without the program) with ``--user-dir`` naming this package: added at the end
    when absent, a value that names this package made its absolute path (see the module docstring)."""
    here, package = cwd or os.getcwd(), package_dir()
    out, found, i = [], False, 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":  # the rest is positional
            out += argv[i:]
            break
        if arg == OPTION and i + 1 < len(argv):
            out += [OPTION, _resolved(argv[i + 1], here, package)]
            found, i = True, i + 2
            continue
        if arg.startswith(OPTION + "="):
            out.append(f"{OPTION}={_resolved(arg[len(OPTION) + 1:], here, package)}")
            found = True
        else:
            out.append(arg)
        i += 1
    if not found:
        at = out.index("--") if "--" in out else len(out)
        out[at:at] = [OPTION, package]
    return out


def complete_argv() -> None:
    """Give ``sys.argv`` this package's ``--user-dir`` (:func:`with_user_dir`), before fairseq parses it; a value
    that cannot be used ends the command with one line and exit status 2."""
    try:
        sys.argv[1:] = with_user_dir(sys.argv[1:])
    except OptionError as e:
        from fairseq_syntax.patches.error_display import exit_status, report

        if not report(e):  # FAIRSEQ_SYNTAX_DEBUG=1: the traceback
            raise
        sys.exit(exit_status(e))
