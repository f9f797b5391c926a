"""``zktensor serve``: a prover service that keeps proving keys resident, and its thin client.

    zktensor serve [--memory 8G] [--detach]     # listen on a Unix socket (owner-only)
    zktensor prove key.zkey w.wtns proof.json public.json    # through the service when it runs
    zktensor serve --status | --stop

One concept per module: ``paths`` (where the socket, pid and token files live),
``wire`` (length-prefixed JSON messages, read by the hostile-input rules, with nothing
imported that Python's start-up has not loaded), ``protocol`` (the requests' fields, as
the service checks them), ``client`` (what ``zktensor prove`` runs: the standard
library's C modules and ``wire``, so it starts without torch, numpy or most of the
standard library), ``native_client.c`` and ``native`` (the same client without Python's
start-up for a plain ``prove``, and its build and install as the ``zktensor`` command), ``residency`` (keys loaded on first use, least recently used evicted
within a memory budget), ``footprint`` (a key's resident bytes from its .zkey header, evicted
for before it loads), ``server`` (the socket server and its requests), ``command``
(the ``serve`` subcommand).
"""
