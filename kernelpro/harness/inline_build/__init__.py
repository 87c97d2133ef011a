"""``torch.utils.cpp_extension.load_inline`` (and ``load``) extensions built ahead, in parallel, and cached.

``static`` reads a candidate's calls from its source; ``spec`` is one call's arguments, normalised, and its
cache key; ``cache`` the shared directory of built extensions; ``build`` one build (torch's own code, the
module never imported by the builder); ``pool`` builds in parallel in the judge; ``worker_side`` is what a
worker's ``load_inline`` becomes: the built module from the cache, else a build in the worker that fills it;
``errors`` the build log condensed and pointed at the candidate's lines.
"""
