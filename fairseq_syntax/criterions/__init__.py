"""fairseq criterions of the plugin (added by the model issues)."""
