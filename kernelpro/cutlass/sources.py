"""Where the CUTLASS/CuTe source lives: a checkout the user names, or the copy inside the nvidia-cutlass wheel.

A tree is a set of mounts, each a real directory shown under a relative path: ``include/``, ``examples/``,
``tools/util/include/`` of CUTLASS, and, when installed, the CuTe DSL's Python package under
``python/CuTeDSL/cutlass/`` (where it lives in a CUTLASS checkout). Paths handed out and accepted are always
these relative, forward-slash paths; nothing outside the mounts can be reached through them.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from kernelpro.config import CutlassSettings

# Mounted from a CUTLASS root, when present. media/docs exists in checkouts only.
CUTLASS_MOUNTS = ("include", "examples", "tools/util/include", "media/docs")
DSL_MOUNT = "python/CuTeDSL/cutlass"
# Generated MLIR bindings and build output: large and of no use to someone writing kernels.
SKIP_DIRS = frozenset({"__pycache__", "_mlir", ".git", "build", "node_modules"})
SKIP_SUFFIXES = frozenset({".pyc", ".so", ".a", ".o", ".png", ".jpg", ".jpeg", ".gif", ".svg", ".pdf", ".whl"})
INSTALL_HINT = (
    "No CUTLASS source found. Install the headers with `pip install nvidia-cutlass`, or point "
    "KERNELPRO_CUTLASS__ROOT at a CUTLASS checkout (a directory with include/cute and examples/)."
)


class CutlassError(Exception):
    """Something the CUTLASS browser cannot do, said so that an agent or a user can act on it."""


class CutlassSourceNotFound(CutlassError):
    """No CUTLASS source tree could be located."""


class CutlassPathError(CutlassError, ValueError):
    """A path that is not in the tree: absolute, escaping it with "..", or simply absent."""


@dataclass(frozen=True)
class Mount:
    """A real directory shown under ``prefix`` (a relative POSIX path)."""

    prefix: str
    directory: Path


@dataclass(frozen=True)
class SourceFile:
    """One file of the tree."""

    path: str
    """Relative POSIX path, e.g. ``include/cute/layout.hpp``."""
    size: int
    mtime_ns: int


@dataclass(frozen=True)
class SourceTree:
    """The mounted directories, where they came from and which version they are."""

    mounts: tuple[Mount, ...]
    origin: str
    """``nvidia-cutlass wheel``, ``checkout``; ``+ CuTe DSL`` when the DSL's sources are mounted."""
    version: str

    def walk(self) -> list[SourceFile]:
        """Every file under the mounts, sorted by path (skipping binaries, caches and generated code)."""
        files: list[SourceFile] = []
        for mount in self.mounts:
            for dirpath, dirnames, filenames in os.walk(mount.directory):
                dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS and not d.startswith(".")]
                rel_dir = PurePosixPath(mount.prefix, Path(dirpath).relative_to(mount.directory).as_posix())
                for name in filenames:
                    if name.startswith(".") or os.path.splitext(name)[1].lower() in SKIP_SUFFIXES:
                        continue
                    try:
                        stat = os.stat(os.path.join(dirpath, name))
                    except OSError:
                        continue
                    files.append(SourceFile(str(rel_dir / name), stat.st_size, stat.st_mtime_ns))
        files.sort(key=lambda f: f.path)
        return files

    def resolve(self, path: str) -> Path:
        """The real file or directory behind a relative tree path; raises CutlassPathError outside the tree."""
        rel = normalize(path)
        for mount in sorted(self.mounts, key=lambda m: -len(m.prefix)):
            if rel == mount.prefix or rel.startswith(mount.prefix + "/"):
                base = mount.directory.resolve()
                real = (base / rel[len(mount.prefix):].lstrip("/")).resolve()
                if real != base and base not in real.parents:  # a symlink pointing out of the tree
                    raise CutlassPathError(f"{path!r} leads outside the CUTLASS tree")
                return real
        raise CutlassPathError(f"{path!r} is not in the CUTLASS tree; top-level directories: {self.top_level()}")

    def top_level(self) -> str:
        """The mounts' first path components, for messages."""
        return ", ".join(sorted({m.prefix.split("/")[0] + "/" for m in self.mounts}))


def normalize(path: str) -> str:
    """A tree path in canonical form; refuses absolute paths and "..". The empty string is the root."""
    text = path.strip().replace("\\", "/")
    if text.startswith("/") or re.match(r"^[A-Za-z]:", text) or text.startswith("~"):
        raise CutlassPathError(f"{path!r} is absolute; give a path relative to the CUTLASS tree, e.g. include/cute")
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise CutlassPathError(f"{path!r} uses '..'; paths must stay inside the CUTLASS tree")
    return "/".join(parts)


def _dsl_package() -> tuple[Path, str] | None:
    """The CuTe DSL's ``cutlass`` Python package directory and version, without importing it."""
    candidates: list[Path] = []
    for module, sub in (("nvidia_cutlass_dsl", "dsl_packages/cutlass"), ("cutlass", "")):
        try:
            spec = importlib.util.find_spec(module)  # a top-level name: nothing is executed
        except (ImportError, ValueError):
            spec = None
        for location in (spec.submodule_search_locations or []) if spec else []:
            candidates.append(Path(location, sub))
    for dist in ("nvidia-cutlass-dsl-libs-core", "nvidia-cutlass-dsl"):
        try:
            files = importlib.metadata.files(dist) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        candidates += [Path(str(f.locate())).parent.parent for f in files
                       if str(f).replace("\\", "/").endswith("cutlass/cute/__init__.py")]
    for directory in candidates:
        if (directory / "cute" / "__init__.py").is_file() and (directory / "base_dsl").is_dir():
            version = "unknown"
            for dist in ("nvidia-cutlass-dsl", "nvidia-cutlass-dsl-libs-core", "nvidia-cutlass-dsl-libs-base"):
                try:
                    version = importlib.metadata.version(dist)
                    break
                except importlib.metadata.PackageNotFoundError:
                    continue
            return directory, version
    return None


def _header_version(root: Path) -> str:
    """CUTLASS_MAJOR.MINOR.PATCH from include/cutlass/version.h, or "unknown"."""
    try:
        text = (root / "include" / "cutlass" / "version.h").read_text(errors="replace")
    except OSError:
        return "unknown"
    parts = [re.search(rf"#define\s+CUTLASS_{p}\s+(\d+)", text) for p in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(m[1] for m in parts if m) or "unknown"


def _wheel_root() -> tuple[Path, str] | None:
    try:
        spec = importlib.util.find_spec("cutlass_library")
    except (ImportError, ValueError):
        return None
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        root = Path(location) / "source"
        if (root / "include" / "cute").is_dir():
            try:
                return root, importlib.metadata.version("nvidia-cutlass")
            except importlib.metadata.PackageNotFoundError:
                return root, _header_version(root)
    return None


def locate(settings: CutlassSettings) -> SourceTree:
    """The tree to browse: ``settings.root`` if set, else the nvidia-cutlass wheel's copy; plus the DSL."""
    if settings.root is not None:
        root = Path(settings.root).expanduser().resolve()
        if not (root / "include" / "cute").is_dir() and not (root / "include" / "cutlass").is_dir():
            raise CutlassSourceNotFound(
                f"KERNELPRO_CUTLASS__ROOT={settings.root} is not a CUTLASS checkout (no include/cute or "
                "include/cutlass in it). Point it at the repository root, or unset it to use "
                "`pip install nvidia-cutlass`."
            )
        origin, version = "checkout", _header_version(root)
    else:
        found = _wheel_root()
        if found is None:
            raise CutlassSourceNotFound(INSTALL_HINT)
        (root, version), origin = found, "nvidia-cutlass wheel"
    mounts = [Mount(prefix, root / prefix) for prefix in CUTLASS_MOUNTS if (root / prefix).is_dir()]
    if settings.include_dsl:
        if (root / DSL_MOUNT / "cute").is_dir():
            mounts.append(Mount(DSL_MOUNT, root / DSL_MOUNT))
            origin += " + CuTe DSL"
        elif (dsl := _dsl_package()) is not None:
            mounts.append(Mount(DSL_MOUNT, dsl[0]))
            origin += f" + CuTe DSL {dsl[1]}"
    return SourceTree(tuple(mounts), origin, version)
