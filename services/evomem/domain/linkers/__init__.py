"""The linkers: does a new note replace a decision in force? Each policy has its own module.

- ``vocabulary``: the words they share (tokeniser, stopwords, cue words, change cue).
- ``heuristic``: ``HeuristicLinker``, change cue + shared vocabulary (the prototype).
- ``scored``: ``ScoredLinker``, subject + option + change cue (+ embedding); link, abstain
  or none. Its reader is ``evomem.domain.subject`` (with ``evomem.domain.catalog``).
- ``pair``: ``PairLinker``, a learned model of pairs (note, candidate): its reading of a note
  (``pair_reading``), its features and what it lists (``pair_features``) and the model itself
  (``pair_model``, built from the weights file's contents; the file is read by
  ``evomem.adapters.models.pair_weights``). ``decision_text`` finds a note's decision part.
- ``history``: where the scored and pair linkers read a candidate's earlier versions.
- ``contracts``: the ports the linkers are handed and implement (``Linker``, ``Embedder``,
  ``PairScorer``), defined here so the domain depends on nothing outside it.
- ``cascade``: ``CascadeLinker`` and its gates, a cheap linker first and a second opinion
  (the LLM, ``evomem.adapters.llm_linker``) only when the gate opens.

All implement the ``Linker`` port (``contracts``, listed in ``evomem.app.ports``), one contract
without probing: ``name``, ``abstains``, ``prepare(text)`` (work on the note alone, ahead; may do nothing),
``decide(text, scope, candidates, similarities=None, scope_inferred=False, earlier=None)`` (a
linker ignores what it does not read) and ``propose``; they answer with the value objects of
``evomem.domain.model`` (``LinkDecision``, ``LinkProposal``, ``LinkKind``). This package imports
none of its modules: import them by name (``vocabulary`` is a leaf that ``evomem.domain.text``
builds on).
"""
