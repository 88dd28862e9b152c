"""Analyses of trained (or untrained) models and of run folders.

* :mod:`.significance` -- paired tests through ``scipy.stats`` and sacreBLEU (McNemar, bootstrap CI, t over seeds,
  BLEU); :mod:`.compare_runs` -- two systems' run folders through them (``syntaxformer significance``);
* :mod:`.buckets` -- dev scores by input length (``syntaxformer analyze --by length``, SG-Net §7.1);
* :mod:`.plots` -- figures from run folders (``syntaxformer plot``);
* :mod:`.viewer` -- one HTML page of a text's trees, masks, attention, topical weights and gates
  (``syntaxformer show``);
* :mod:`.probes` -- structural and tag probes per layer on UD English-EWT (``syntaxformer probe``);
* :mod:`.diagnose` -- what a syntax configuration does to the checkpoint at init (``syntaxformer diagnose``).
"""
