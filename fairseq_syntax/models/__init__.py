"""fairseq models of the plugin (added by the model issues)."""
