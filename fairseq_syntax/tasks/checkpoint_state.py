"""What the ``syntax_translation`` task keeps in every checkpoint (``task_state``) and checks when it loads one:
the syntax options training was given, which a decoding that reads no saved task config (fairseq-interactive,
the hub) adopts; the digests of the dictionaries and BPE codes it was trained on
(:mod:`fairseq_syntax.preparation.trained_on`)."""
import logging
import types

from fairseq_syntax.errors import OptionError, SyntaxDataError
from fairseq_syntax.preparation.trained_on import (
    SAVED_BPE_CODES,
    SAVED_DICTIONARIES,
    SAVED_SYNTAX_OPTIONS,
    SAVED_TREE_CONTROL,
    check_dictionaries,
    check_tree_control,
    codes_digests,
    dictionary_digests,
    tree_control_name,
)

logger = logging.getLogger(__name__)


class TrainedOnState:
    """fairseq task hooks (``state_dict`` / ``load_state_dict``) for a task with ``cfg`` (source/target lang,
    parent_strategy, source/target_syntax), dictionaries, ``raw_input``, ``data_dir`` and
    ``_adopt_saved_config``."""

    _saved_syntax_options = None  # of the first checkpoint loaded (load_state_dict)

    def state_dict(self):
        """fairseq saves this in every checkpoint (``task_state``): besides fairseq's own task state, the syntax
        options training was given, which a decoding that reads no saved task config (fairseq-interactive, the
        hub) adopts as fairseq-generate does from the saved config (:meth:`_adopt_saved_config`)."""
        state = dict(super().state_dict())
        state[SAVED_SYNTAX_OPTIONS] = {"parent_strategy": str(self.cfg.parent_strategy),
                                       "source_syntax": str(self.cfg.source_syntax),
                                       "target_syntax": str(self.cfg.target_syntax)}
        state[SAVED_DICTIONARIES] = self._dictionary_digests()
        state[SAVED_BPE_CODES] = self._codes_digests()
        state[SAVED_TREE_CONTROL] = self._tree_control()
        return state

    def _tree_control(self) -> str:
        try:
            return tree_control_name(self.raw_input.record)
        except (SyntaxDataError, OSError):
            return "none"

    def _codes_digests(self) -> dict:
        """Language -> the SHA-256 of its BPE codes in the data-bin's preparation record, once per task."""
        if getattr(self, "_codes_digest_cache", None) is None:
            try:  # training does not depend on the record: one it cannot read leaves nothing to check later
                self._codes_digest_cache = codes_digests(self.raw_input.record,
                                                         (self.cfg.source_lang, self.cfg.target_lang), self.data_dir)
            except (SyntaxDataError, OSError) as e:
                logger.warning("no BPE codes digest in the checkpoints: %s", e)
                self._codes_digest_cache = {}
        return self._codes_digest_cache

    def _dictionary_digests(self) -> dict:
        return dictionary_digests(((self.cfg.source_lang, self.src_dict, self.src_label_dict),
                                   (self.cfg.target_lang, self.tgt_dict, self.tgt_label_dict)))

    def load_state_dict(self, state_dict):
        """fairseq calls this once per checkpoint it loads, before it builds that model: the first checkpoint's
        syntax options are adopted; an ensemble whose checkpoints were trained with others is refused, naming
        them, unless this command line gives them."""
        saved = state_dict.get(SAVED_SYNTAX_OPTIONS)
        check_dictionaries(state_dict.get(SAVED_DICTIONARIES), self._dictionary_digests(), self.data_dir)
        check_tree_control(state_dict.get(SAVED_TREE_CONTROL), self._tree_control(), self.data_dir)
        codes = state_dict.get(SAVED_BPE_CODES)
        if isinstance(codes, dict) and codes:
            self.raw_input.expect_trained_codes(codes)  # checked where raw input is segmented
        super().load_state_dict({k: v for k, v in state_dict.items()
                                 if k not in (SAVED_SYNTAX_OPTIONS, SAVED_DICTIONARIES, SAVED_BPE_CODES,
                                              SAVED_TREE_CONTROL)})
        if not isinstance(saved, dict):
            return
        first = self._saved_syntax_options
        if first is not None:
            differ = [k for k in saved if saved[k] != first.get(k) and str(getattr(self.cfg, k, "auto")) == "auto"]
            if differ:
                raise OptionError("the checkpoints were trained with different " + ", ".join(
                    f"--{k.replace('_', '-')} ({first.get(k)} and {saved[k]})" for k in differ)
                    + ": an ensemble reads one; give it on this command line")
            return
        self._saved_syntax_options = dict(saved)
        self._adopt_saved_config(types.SimpleNamespace(**saved))
