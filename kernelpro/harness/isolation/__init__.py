"""The walls around a process that runs a candidate: namespaces, its own root, Landlock, seccomp, the programs it may
run, the tripwires inside it, and what running into them shows."""
