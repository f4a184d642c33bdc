"""Skip `docker-compose build` when nothing the images are built from changed.

Even fully cached, a classic-builder build of the stack sends the context and
walks every step of four targets; the compose test runs it on every suite run.
The inputs of a build are the Dockerfile, the context files its COPY
instructions read (what .dockerignore lets through), the build arguments and
the base image; their digest is kept
in the engine itself, as a tag `<repository>:inputs-<digest>` beside each
built image. When every image still carries the tag of the current digest,
the build is skipped. A changed file, argument or base image gives another
digest, so the build runs (Docker's layer cache still reuses what it can) and
the tags move to the new images. `docker rmi` of an image forgets its tag.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

TAG_PREFIX = "inputs-"
DIGEST_CHARS = 24


def dockerignore_patterns(root: Path) -> list[str]:
    """The patterns of `root`/.dockerignore, comments and blank lines left out."""
    path = root / ".dockerignore"
    if not path.is_file():
        return []
    lines = (line.strip() for line in path.read_text().splitlines())
    return [line.rstrip("/") for line in lines if line and not line.startswith("#")]


def ignored(relative: str, patterns: Iterable[str]) -> bool:
    """Whether .dockerignore leaves `relative` (a/b/c, from the context root)
    out. No `!` exceptions: the project's .dockerignore has none. Matching
    errs towards hashing a file too many, never one too few."""
    name = relative.rsplit("/", 1)[-1]
    for pattern in patterns:
        if pattern.startswith("**/"):
            if fnmatch.fnmatchcase(name, pattern[3:]):
                return True
        elif "/" not in pattern.strip("*") and "/" in relative:
            continue  # a top-level pattern such as `build` or `*.egg-info`
        elif fnmatch.fnmatchcase(relative, pattern):
            return True
    return False


def copied_sources(dockerfile: Path) -> list[str]:
    """What the Dockerfile's COPY instructions take from the context (not
    `--from=` another stage): the only context files an image is built from."""
    sources: list[str] = []
    for line in dockerfile.read_text().splitlines():
        words = line.split()
        if len(words) >= 3 and words[0].upper() == "COPY" and not any(w.startswith("--from") for w in words):
            sources += [w for w in words[1:-1] if not w.startswith("--")]
    return sources


def context_files(root: Path, dockerfile: str = "Dockerfile") -> list[str]:
    """The Dockerfile and every file its COPY instructions read from the
    context, as Docker would send them (.dockerignore applied), sorted."""
    patterns = dockerignore_patterns(root)
    found = [dockerfile]
    for source in copied_sources(root / dockerfile):
        top = root / source
        if top.is_file():
            found.append(source)
            continue
        for folder, dirs, files in os.walk(top):
            prefix = Path(folder).relative_to(root).as_posix() + "/"
            dirs[:] = [d for d in dirs if not ignored(prefix + d, patterns)]
            found += (prefix + f for f in files if not ignored(prefix + f, patterns))
    return sorted(set(found))


def inputs_digest(root: Path, build_args: Mapping[str, str], base_image_id: str) -> str:
    """The digest of everything a build of `root`'s context reads."""
    h = hashlib.sha256()
    for key in sorted(build_args):
        h.update(f"arg {key}={build_args[key]}\0".encode())
    h.update(f"base {base_image_id}\0".encode())
    for relative in context_files(root):
        path = root / relative
        h.update(f"file {relative}\0".encode())
        h.update(os.readlink(path).encode() if path.is_symlink() else path.read_bytes())
        h.update(b"\0")
    return h.hexdigest()[:DIGEST_CHARS]


def _repository(image: str) -> str:
    return image.rsplit(":", 1)[0]


def inputs_tag(image: str, digest: str) -> str:
    return f"{_repository(image)}:{TAG_PREFIX}{digest}"


Docker = Callable[..., str]
"""Runs `docker ARGS...`; returns stdout, or raises when docker exits non-zero."""


def image_id(docker: Docker, image: str) -> str | None:
    try:
        return docker("image", "inspect", "--format", "{{.Id}}", image).strip() or None
    except (AssertionError, RuntimeError):
        return None


def up_to_date(docker: Docker, images: Iterable[str], digest: str) -> bool:
    """Every image exists and is the one last built from these inputs."""
    for image in images:
        current = image_id(docker, image)
        if current is None or current != image_id(docker, inputs_tag(image, digest)):
            return False
    return True


def remember(docker: Docker, images: Iterable[str], digest: str) -> None:
    """Tag each freshly built image with the digest of its inputs, dropping
    the repository's older input tags (so they do not keep old images alive)."""
    for image in images:
        repository = _repository(image)
        listed = docker("image", "ls", "--format", "{{.Repository}}:{{.Tag}}", repository).split()
        for old in listed:
            if old.startswith(f"{repository}:{TAG_PREFIX}"):
                try:
                    docker("image", "rm", "--no-prune", old)
                except AssertionError:
                    # A container left by an interrupted run still uses that image: the tag
                    # stays (it names an older build's inputs, so it is never taken as current).
                    pass
        docker("tag", image, inputs_tag(image, digest))
