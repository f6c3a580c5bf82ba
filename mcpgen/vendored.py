"""Chart.js, the one file from npm that mcpgen ships: its pins, and fetching it at build time.

The MCP App inlines `dist/chart.umd.min.js` of one pinned Chart.js release. It is never in the
repository: the build backend (backend/mcpgen_backend.py, which runs for `pip install .`,
`pip install -e .` and every wheel build) calls `ensure_vendored()`, which runs `npm pack` on the
pinned release, checks the tarball against its SHA-512 integrity and the file against its SHA-256,
and writes the file and Chart.js's license into `mcpgen/vendor/` (ignored by git; a wheel ships it
as package data). An install that cannot fetch it (no npm, no network) still succeeds: the app
then loads the same file from the CDN and `mcpgen serve` says so.

This module uses the standard library only: the build backend loads it by its path, before any of
mcpgen's dependencies are installed.

>>> CHARTJS.spec, CHARTJS.name
('chart.js@4.6.1', 'chart.umd.min.js')
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import tarfile

VENDOR = Path(__file__).parent / "vendor"  # filled at build time; ignored by git
CDN_ORIGIN = "https://cdn.jsdelivr.net"
# --prefer-offline: a tarball npm already holds is not asked for again (its checksums are checked all
# the same); one retry after a second and 20 s per request, so an offline machine hears it soon.
NPM_FLAGS = ("--prefer-offline", "--fetch-retries=1", "--fetch-retry-mintimeout=1000", "--fetch-timeout=20000")
FETCH_TIMEOUT = 60.0  # seconds `npm pack` may take: an install never waits longer for Chart.js


@dataclass(frozen=True)
class Vendored:
    """A pinned npm release of one file we inline, with the checksums it must match."""

    package: str
    version: str
    file: str  # inside the package
    sha256: str  # of `file`
    sri: str  # of `file` again, as a <script integrity> for the CDN fallback
    integrity: str  # of the npm tarball (SRI, as the registry publishes it)
    license_file: str

    @property
    def spec(self) -> str:
        return f"{self.package}@{self.version}"

    @property
    def name(self) -> str:
        return Path(self.file).name

    @property
    def cdn(self) -> str:
        return f"{CDN_ORIGIN}/npm/{self.spec}/{self.file}"


CHARTJS = Vendored(
    package="chart.js",
    version="4.6.1",
    file="dist/chart.umd.min.js",
    sha256="87364cc2b2a76a6684929e7d6b80b18a897794db38400caff1fcf1791c6925d2",
    sri="sha384-Emf5ZVIUiarAdhkgtqK+5/Z5qIvM6QoVrS+qAVtfyZVuD5lIHrac0me485+Antp0",
    integrity="sha512-hJyniucsFmq//EvXYvJ6c6mahPoI3kaxdjVH8awTaJ/fDNWeSqqqArixMJWkWNN6fcYvPU3HneSANFNYtRi61g==",
    license_file="LICENSE.md",
)
LICENSE_NAME = "chart.js-LICENSE.md"
FALLBACK = f"the MCP App of this install loads it from {CDN_ORIGIN} instead"


class VendorError(Exception):
    """The pinned Chart.js could not be fetched, checked or written; one sentence saying why."""


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def is_pinned(path: Path) -> bool:
    """Whether `path` is the pinned Chart.js file."""
    return path.is_file() and sha256(path.read_bytes()) == CHARTJS.sha256


def fetch(out: Path = VENDOR, npm: str = "npm", timeout: float = FETCH_TIMEOUT) -> Path:
    """Fetch the pinned Chart.js with `npm pack`, check both checksums, and copy the file and its
    license into `out`. Returns the path of the inlined file; raises VendorError."""
    if shutil.which(npm) is None:
        raise VendorError(f"npm is not installed; it fetches {CHARTJS.spec}")
    with tempfile.TemporaryDirectory() as tmp:
        try:
            done = subprocess.run(
                [npm, "pack", CHARTJS.spec, "--json", "--pack-destination", tmp, *NPM_FLAGS],
                capture_output=True,
                text=True,
                timeout=timeout,
                check=True,
                cwd=tmp,
            )
            packed = json.loads(done.stdout)[0]
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired, ValueError, LookupError) as exc:
            raise VendorError(f"npm pack {CHARTJS.spec} failed ({_npm_error(exc)})") from None
        tarball = Path(tmp) / packed["filename"]
        if packed.get("integrity") != CHARTJS.integrity or _sri512(tarball.read_bytes()) != CHARTJS.integrity:
            raise VendorError(f"the {CHARTJS.spec} tarball does not match its pinned checksum; nothing was written")
        import tarfile  # only fetching reads a tarball: a server that checks its copy never loads it

        with tarfile.open(tarball) as tar:
            code = _member(tar, CHARTJS.file)
            license_text = _member(tar, CHARTJS.license_file)
    if sha256(code) != CHARTJS.sha256:
        raise VendorError(f"{CHARTJS.file} in {CHARTJS.spec} does not match its pinned SHA-256; nothing was written")
    try:
        out.mkdir(parents=True, exist_ok=True)
        (out / LICENSE_NAME).write_bytes(license_text)
        (out / CHARTJS.name).write_bytes(code)
    except OSError as exc:
        raise VendorError(
            f"cannot write to {out} ({exc.strerror or exc}); pass --out DIR and point MCPGEN_CHARTJS at the file"
        ) from None
    return out / CHARTJS.name


def ensure_vendored(out: Path = VENDOR) -> str:
    """What the build backend runs: fetch Chart.js into `out` unless it is there already. Never
    raises (an install without it still works, with the CDN fallback); returns one sentence.

    $MCPGEN_FETCH_CHARTJS=0 skips the fetch, for builds that must not reach the network."""
    if is_pinned(out / CHARTJS.name) and (out / LICENSE_NAME).is_file():
        return f"mcpgen: Chart.js {CHARTJS.version} is already in {out} (SHA-256 checked)."
    if os.environ.get("MCPGEN_FETCH_CHARTJS", "1") == "0":
        return f"mcpgen: Chart.js {CHARTJS.version} was not fetched (MCPGEN_FETCH_CHARTJS=0); {FALLBACK}."
    try:
        path = fetch(out)
    except VendorError as exc:
        return f"mcpgen: Chart.js {CHARTJS.version} could not be fetched ({exc}); {FALLBACK}."
    return f"mcpgen: Chart.js {CHARTJS.version} fetched with npm and checked (SHA-512, SHA-256) into {path}."


def _npm_error(exc: Exception) -> str:
    """npm's error code line (`npm error code ECONNREFUSED`), else its first line, else the exception's name.

    >>> _npm_error(subprocess.CalledProcessError(1, "npm", stderr="npm error code E404\\nnpm error 404 Not Found"))
    'npm error code E404'
    """
    lines = [line.strip() for line in (getattr(exc, "stderr", "") or "").splitlines() if line.strip()]
    coded = [line for line in lines if line.startswith("npm error code ")]
    return (coded or lines or [type(exc).__name__])[0]


def _member(tar: tarfile.TarFile, name: str) -> bytes:
    try:
        found = tar.extractfile(f"package/{name}")
    except KeyError:
        found = None
    if found is None:
        raise VendorError(f"{CHARTJS.spec} has no {name}")
    return found.read()


def _sri512(data: bytes) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()
