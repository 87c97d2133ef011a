"""The built-in recipes: candidates that need no language model (catalogue.py: which recipes apply and their
ideas; ingredients.py; code.py and snippets.py: the generated ``ModelNew``), and the ``recipes`` search policy
that grows them (policy.py). It sits above ``search/``, whose tree, module copy and input sizes it uses."""
