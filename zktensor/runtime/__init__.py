"""Host facts and plumbing, below everything that launches work: CPU features and the host
signature (`cpu_isa`), thread counts and pools (`threads`), the on-disk kernel cache
(`cache`), host memory (`host_memory`), ahead-of-time compilation (`aot`), Triton pass
selection (`triton_passes`), atomic file writes (`atomic`) and the generic graph scheduler
and profiler (`graph`)."""
