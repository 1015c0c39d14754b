"""Training-pair filters of the papers' preprocessing, as keep masks over sentence pairs.

- length: at most N tokens per side and a longer/shorter length ratio of at most R (Deguchi et al.
  2021, Appendix A: <= 100 words; Omote et al. 2019 and Watanabe et al. 2017: <= 50 words);
- language identification: both sides detected as the pair's languages (Bugliarello & Okazaki 2020,
  Sec. "Datasets": ``langdetect`` on NC11 and WMT16; Deguchi et al. 2021, Appendix A: ``langid`` on
  WMT14, after Ng et al. 2019).
"""
from typing import Iterable, List, Sequence, Tuple


LANGUAGE_TOOLS = ("langid", "langdetect")


def length_keep(lengths: Iterable[Tuple[int, int]], max_words: int = 0, max_ratio: float = 0.0) -> List[bool]:
    """For (source, target) token counts: keep when neither side exceeds max_words and the longer side is at
    most max_ratio times the shorter (0 = no limit)."""
    return [
        (not max_words or max(a, b) <= max_words) and (not max_ratio or max(a, b) <= max_ratio * max(1, min(a, b)))
        for a, b in lengths
    ]


def detector(tool: str):
    if tool == "langid":
        import langid

        return lambda text: langid.classify(text)[0]
    if tool == "langdetect":
        from langdetect import DetectorFactory, detect
        from langdetect.lang_detect_exception import LangDetectException

        DetectorFactory.seed = 0  # langdetect is randomised: make it deterministic

        def detect_or_none(text):
            try:
                return detect(text)
            except LangDetectException:  # no letters at all
                return None

        return detect_or_none
    raise ValueError(f"unknown language identifier {tool!r} (one of {', '.join(LANGUAGE_TOOLS)})")


def language_keep(pairs: Iterable[Tuple[str, str]], langs: Sequence[str], tool: str = "langid",
                  progress: bool = False, total: int = None) -> List[bool]:
    """Keep a pair when the tool detects langs[0] on its source and langs[1] on its target."""
    from tqdm import tqdm

    detect = detector(tool)
    src, tgt = (lang.split("_")[0].lower() for lang in langs)
    return [detect(a) == src and detect(b) == tgt
            for a, b in tqdm(pairs, desc=f"language filter ({tool})", unit="pair", total=total,
                             disable=not progress, mininterval=1.0)]


def read_mask(mask_path: str) -> List[bool]:
    """The keep mask written by :func:`language_keep_file`."""
    with open(mask_path, encoding="ascii") as f:
        return [line.startswith("1") for line in f]
