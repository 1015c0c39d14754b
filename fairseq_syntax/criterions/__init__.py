"""fairseq criterions of the plugin."""
from fairseq_syntax.criterions import (
    label_smoothed_cross_entropy_with_dependency,  # noqa: F401
    label_smoothed_cross_entropy_with_sync,  # noqa: F401,E402
)
