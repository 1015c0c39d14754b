"""A parser whose trees are replaced by the data-bin's tree control (``prepare --tree-control``,
:mod:`fairseq_syntax.data.trees.tree_controls`): a model trained on controlled trees decodes raw text with trees
controlled the same way, and the log says so. Each line's draw is seeded by the control's seed and the line's
text, so that a sentence gets the same tree in any batch."""
import hashlib
import logging

logger = logging.getLogger(__name__)


class ControlledParser:
    def __init__(self, parser, control):
        self.parser, self.control = parser, control
        logger.warning("the data-bin's trees are --tree-control %s (seed %d): the input's parses are replaced the "
                       "same way", control.name, control.seed)

    def parse(self, lines):
        sents = self.parser.parse(lines)
        for sent, line in zip(sents, lines):
            where = "input:" + hashlib.sha256(line.encode("utf-8")).hexdigest()[:16]
            sent.heads, sent.labels = self.control.apply(sent.heads, sent.labels, where)
        return sents

    def __getattr__(self, name):  # the wrapped parser's checks and settings
        return getattr(self.parser, name)


def with_tree_control(parser, record):
    """``parser`` itself, or wrapped in the control the preparation ``record`` names."""
    from fairseq_syntax.preparation.tree_control_step import from_record

    control = from_record(record.tree_control) if record is not None else None
    return ControlledParser(parser, control) if control is not None else parser
