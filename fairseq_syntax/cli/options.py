"""Print the command-line options that fairseq-syntax adds to fairseq.

fairseq's ``--help`` is printed before task, model and criterion options are
registered, so ``fairseq-train --task syntax_translation --help`` cannot list
them. This command does: ``python -m fairseq_syntax.cli.options`` (installed
as ``fairseq-syntax-options``).
"""
import argparse


def build_help_parser():
    from fairseq.dataclass.utils import gen_parser_from_dataclass
    from fairseq.tasks import TASK_DATACLASS_REGISTRY

    import fairseq_syntax.plugin  # noqa: F401  (registers everything)
    from fairseq_syntax.tasks.syntax_translation import SyntaxTranslationConfig

    p = argparse.ArgumentParser(
        prog="fairseq-syntax-options",
        description="Options added by the fairseq-syntax plugin (use them with fairseq-syntax-train / "
        "fairseq-syntax-generate, which load the plugin from anywhere; fairseq's own commands need --user-dir with "
        "the plugin's folder: docs/install.md). The options it inherits from fairseq's translation task "
        "(--source-lang, --left-pad-source, ...) are described in fairseq's documentation.",
        add_help=False,
    )
    g = p.add_argument_group("task syntax_translation (--task syntax_translation)")
    inherited = set(TASK_DATACLASS_REGISTRY["translation"].__dataclass_fields__)
    own = argparse.ArgumentParser(add_help=False)
    gen_parser_from_dataclass(own, SyntaxTranslationConfig())
    for action in own._actions:
        dest = action.dest
        if dest in inherited:
            continue
        g._add_action(action)

    from fairseq.criterions.label_smoothed_cross_entropy import (
        LabelSmoothedCrossEntropyCriterionConfig,
    )
    from fairseq.models import ARCH_MODEL_INV_REGISTRY

    from fairseq_syntax.criterions.label_smoothed_cross_entropy_with_dependency import (
        LabelSmoothedCrossEntropyWithDependencyConfig,
    )
    from fairseq_syntax.models.syntax_transformer import SyntaxTransformerConfig

    presets = ", ".join(ARCH_MODEL_INV_REGISTRY["syntax_transformer"])
    for title, dc, base in (
        (f"model syntax_transformer (--arch {presets}; plus all of fairseq's transformer options)",
         SyntaxTransformerConfig, None),
        ("criterion label_smoothed_cross_entropy_with_dependency (plus label_smoothed_cross_entropy's options)",
         LabelSmoothedCrossEntropyWithDependencyConfig, LabelSmoothedCrossEntropyCriterionConfig),
    ):
        g = p.add_argument_group(title)
        sub = argparse.ArgumentParser(add_help=False)
        gen_parser_from_dataclass(sub, dc())
        skip = set(base.__dataclass_fields__) if base else set()
        for action in sub._actions:
            if action.dest not in skip:
                g._add_action(action)
    return p


def main(argv=None):
    build_help_parser().print_help()


def cli_main(argv=None):
    main(argv)


if __name__ == "__main__":
    cli_main()
