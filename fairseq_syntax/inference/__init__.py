"""Translating raw text with a trained model, the parse inside: the source side made as the data-bin's
preparation made it (:mod:`.source`), the output written as the training text was (:mod:`.target`), the hub
interface of ``from_pretrained(...).translate(...)`` (:mod:`.hub`) and a model folder that moves between
machines (:mod:`.pack`)."""
