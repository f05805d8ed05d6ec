"""The bubblewrap sandbox pieces shared by the edit service (build scripts) and the gateway's conversion workers
(ifcopenshell and node on uploaded IFC): command lines (bwrap), per-run cgroups with memory and pids caps (cgroups),
tool and isolation checks (probe). Knows nothing of either service."""
