# Downloads for the public WMT corpora (sourced by the dataset configs). Training corpora come from
# the WMT sites as tarballs (or OPUS zips), test sets through sacreBLEU (`sacrebleu -t SET --echo`).
# Everything lands in WORK/download (kept: delete it to fetch again).

fetch_url() {  # $1 = URL -> the archive in WORK/download (downloaded once), extracted next to it
  local url=$1 dl="$WORK/download" name
  name=$(basename "${url%%\?*}"); [[ "$url" == *"download.php?f="* ]] && name=$(basename "${url##*f=}")
  mkdir -p "$dl"
  if [ ! -f "$dl/$name" ]; then
    log "download $url"
    wget -nv -O "$dl/$name.part" "$url" || curl -fL -o "$dl/$name.part" "$url" \
      || die "could not download $url (no network? put the corpus in LOCAL_DATA instead)"
    mv "$dl/$name.part" "$dl/$name"
  fi
  if [ ! -f "$dl/$name.extracted" ]; then
    case $name in
      *.tgz|*.tar.gz) tar -xzf "$dl/$name" -C "$dl" ;;
      *.zip) python -m zipfile -e "$dl/$name" "$dl/${name%.zip}" ;;
      *.gz) gunzip -kf "$dl/$name" ;;
    esac
    touch "$dl/$name.extracted"
  fi
}

corpus_file() {  # $1 = file name: its one path under WORK/download
  local hits; mapfile -t hits < <(find "$WORK/download" -name "$1" -type f)
  [ ${#hits[@]} -eq 1 ] || die "expected one $1 under $WORK/download, found ${#hits[@]}"
  echo "${hits[0]}"
}

wmt_train() {  # $@ = URL|PREFIX ...: concatenates PREFIX.SRC / PREFIX.TGT of every corpus into RAW/train
  local item url prefix s t
  : > "$RAW/train.$SRC"; : > "$RAW/train.$TGT"
  for item in "$@"; do
    url=${item%%|*}; prefix=${item##*|}
    fetch_url "$url"
    s=$(corpus_file "$prefix.$SRC"); t=$(corpus_file "$prefix.$TGT")
    [ "$(wc -l < "$s")" = "$(wc -l < "$t")" ] || die "$s and $t differ in length"
    cat "$s" >> "$RAW/train.$SRC"; cat "$t" >> "$RAW/train.$TGT"
  done
  log "train: $(wc -l < "$RAW/train.$SRC") pairs"
}

wmt_test() {  # $1 = split (valid | test), $2 = sacreBLEU test set (e.g. wmt16, wmt14/full, wmt16/dev)
  sacrebleu -t "$2" -l "$SRC-$TGT" --echo src > "$RAW/$1.$SRC"
  sacrebleu -t "$2" -l "$SRC-$TGT" --echo ref > "$RAW/$1.$TGT"
}

# the corpora (URL|file prefix inside the archive)
EUROPARL7=http://statmt.org/wmt13/training-parallel-europarl-v7.tgz
COMMONCRAWL=http://statmt.org/wmt13/training-parallel-commoncrawl.tgz
NC9=http://statmt.org/wmt14/training-parallel-nc-v9.tgz
NC11=http://data.statmt.org/wmt16/translation-task/training-parallel-nc-v11.tgz
NC12=http://data.statmt.org/wmt17/translation-task/training-parallel-nc-v12.tgz
RAPID2016=http://data.statmt.org/wmt17/translation-task/rapid2016.tgz
EUROPARL8=http://data.statmt.org/wmt16/translation-task/training-parallel-ep-v8.tgz
SETIMES2_EN_RO="http://opus.nlpl.eu/download.php?f=SETIMES/v2/moses/en-ro.txt.zip"
SETIMES2_EN_TR="http://opus.nlpl.eu/download.php?f=SETIMES/v2/moses/en-tr.txt.zip"

aspec_extract() {  # $@ = ASPEC-JE files of the training split: WAT's field layout -> RAW/{train,valid,test}
  # ASPEC is not public: apply for it at the WAT / ASPEC site, then set ASPEC_DIR to the ASPEC-JE folder
  [ -n "${ASPEC_DIR:-}" ] || die "ASPEC is not public: set ASPEC_DIR to your ASPEC-JE folder (train/ dev/ test/), or
  LOCAL_DATA to a folder with {train,valid,test}.{ja,en} (+ .conllu parses, e.g. KyTea + EDA)"
  local f split
  # training lines: score ||| id ||| sentence id ||| ja ||| en; dev / test: id ||| sentence id ||| ja ||| en
  : > "$RAW/train.ja"; : > "$RAW/train.en"
  for f in "$@"; do
    [ -f "$ASPEC_DIR/train/$f" ] || die "$ASPEC_DIR/train/$f does not exist"
    awk -F ' \\|\\|\\| ' '{print $4}' "$ASPEC_DIR/train/$f" >> "$RAW/train.ja"
    awk -F ' \\|\\|\\| ' '{print $5}' "$ASPEC_DIR/train/$f" >> "$RAW/train.en"
  done
  for split in dev:valid test:test; do
    f="$ASPEC_DIR/${split%%:*}/${split%%:*}.txt"
    [ -f "$f" ] || die "$f does not exist"
    awk -F ' \\|\\|\\| ' '{print $3}' "$f" > "$RAW/${split##*:}.ja"
    awk -F ' \\|\\|\\| ' '{print $4}' "$f" > "$RAW/${split##*:}.en"
  done
}
