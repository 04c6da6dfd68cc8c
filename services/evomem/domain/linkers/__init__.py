"""The linkers: does a new note replace a decision in force? Each policy has its own module.

- ``vocabulary``: the words they share (tokeniser, stopwords, cue words, change cue).
- ``heuristic``: ``HeuristicLinker``, change cue + shared vocabulary (the prototype).
- ``scored``: ``ScoredLinker``, subject + option + change cue (+ embedding); link, abstain
  or none. Its reader is ``evomem.domain.subject`` (with ``evomem.domain.catalog``).
- ``calling``: ``decide``, a linker called with what it declares it reads (the search's
  cosines, whether the note's scope was inferred).
- ``cascade``: ``CascadeLinker`` and its gates, a cheap linker first and a second opinion
  (the LLM, ``evomem.adapters.llm_linker``) only when the gate opens.

All implement the ``evomem.app.ports.Linker`` port (``decide`` and ``propose``) and answer with
the value objects of ``evomem.domain.model`` (``LinkDecision``, ``LinkProposal``, ``LinkKind``).
This package imports none of its modules: import them by name (``vocabulary`` is a leaf that
``evomem.domain.text`` builds on).
"""
