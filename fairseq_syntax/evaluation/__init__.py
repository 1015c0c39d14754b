"""Scoring translations: detokenisation, sacreBLEU / chrF / RIBES, the paired bootstrap test."""
