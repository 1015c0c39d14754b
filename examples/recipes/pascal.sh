# The PASCAL paper's data (Bugliarello & Okazaki 2020), sourced by the configs of its six datasets; the
# models and their training settings (Table 2 per corpus) are in fairseq_syntax/recipes/paper_tables.py.
#   pascal_data MERGES [LANG_FILTER]
# MERGES: joint BPE merges (16k small corpora, 32k large); LANG_FILTER: the language identifier the paper
# applies to NC11 and WMT16 (langdetect). Sources parsed (the paper: CoreNLP; here stanza or your CoNLL-U).
pascal_data() {
  local merges=$1 lang_filter=${2:-}
  VARIANTS="main ch"
  SYNTAX[main]=source; PREPARE[main]="--bpe-merges $merges"; LANG_FILTER[main]=$lang_filter
  # C&H: the parse + translate corpus; no language filter there (a parse line's target is a bracketed
  # source-language tree, which the filter would drop as not being in the target language)
  SYNTAX[ch]=source; PREPARE[ch]="--bpe-merges $merges"; MULTITASK[ch]=1
}
