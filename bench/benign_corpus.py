"""A benign corpus of real code and docs, rebuilt from public repositories' snapshots.

The text is not committed (it is other projects' work); ``bench/benign_corpus.json`` names what it
is made of: each repository, the commit read, and every path taken. Anyone with the same snapshots
(``git clone`` of each repository at its commit, or the ``/work/.mirror/<owner>+<name>/repo``
copies the session's fetch tool leaves) gets the same bytes.

Run:

- ``python -m bench.benign_corpus select`` picks the files of repositories new to ``REPOS`` from
  their snapshots' HEAD and writes the manifest (the selection rule below; the entries already
  there are kept as they are; ``--fresh`` picks every repository again);
- ``python -m bench.benign_corpus build --out DIR`` writes the files under ``DIR/<owner>+<name>/``
  (to point ``guardproxy scan`` at them);
- ``bench.detect_trips`` reads them straight from the snapshots through :func:`corpus_files`.

Selection: text files of the languages below, no larger than MAX_FILE, none that is a key or
certificate file, a lock file or minified; per repository at most PER_REPO bytes, picked in the
order of a hash of their path (a cross-section, the same on every run). Whole repositories
(``HELDOUT``) form the ``heldout`` half, the rest ``tune``: rules are tuned on hits in ``tune`` only.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

MANIFEST = Path(__file__).with_name("benign_corpus.json")
MIRRORS = Path("/work/.mirror")
MAX_FILE = 400_000
PER_REPO = 2_600_000

# Repositories (tutorials, docs, test suites: where example credentials and auth code live) and
# the folders read first when they hold more than PER_REPO (the rest of the repository after them).
REPOS: dict[str, tuple[str, ...]] = {
    "tiangolo/fastapi": ("docs/en", "docs_src", "tests"),
    "psf/requests": (),
    "encode/httpx": (),
    "pallets/flask": (),
    "expressjs/express": (),
    "axios/axios": (),
    "nestjs/docs.nestjs.com": ("content",),
    "spring-projects/spring-petclinic": (),
    "spring-guides/gs-securing-web": (),
    "rails/rails": ("guides/source", "actionpack/test", "activerecord/lib"),
    "rust-lang/book": ("src", "listings"),
    "tokio-rs/axum": (),
    "golang/example": (),
    "gin-gonic/gin": (),
    "laravel/docs": (),
    "symfony/symfony-docs": (),
    "ktorio/ktor-documentation": ("topics", "codeSnippets"),
    "dotnet/eShop": (),
    "jasontaylordev/CleanArchitecture": (),
    # Added to the tune half after the held-out half's first count (JWT middleware docs and auth
    # samples tripped most there): other projects' docs of the same kind, not the held-out ones.
    "labstack/echox": (),
    "actix/examples": (),
    "jwtk/jjwt": (),
    "golang-jwt/jwt": (),
    "auth0/node-jsonwebtoken": (),
    # The first held-out half (until 5 December, 07:30 UTC): its trips were then read by category,
    # so it is no longer held out and joins the tune half.
    "encode/starlette": (),
    "koajs/koa": (),
    "rwf2/Rocket": (),
    "gofiber/docs": (),
    "slimphp/Slim": (),
    "ktorio/ktor-samples": (),
    "hanami/guides": (),
    "spring-projects/spring-security-samples": (),
    "dotnet/AspNetCore.Docs.Samples": (),
    # Added to the tune half at 08:05 UTC, after the new held-out half's one "before" count and
    # before any rule was tuned for it: auth libraries of the same kind as the held-out ones, so
    # that rules tuned here generalise to them (their trips are read; the held-out half's are not).
    "oauthlib/oauthlib": (),
    "jpadilla/pyjwt": (),
    "doorkeeper-gem/doorkeeper": (),
    "laravel/passport": (),
    "auth0/java-jwt": (),
    "coreos/go-oidc": (),
    "Keats/jsonwebtoken": (),
    "openiddict/openiddict-core": (),
    "panva/node-oidc-provider": (),
    "markbates/goth": (),
    # The second held-out half (07:40 to 09:23 UTC on 5 December): auth frameworks' and SDKs' docs,
    # samples and test suites. Its trips were then read by rule (round 2), so it joined the tune half.
    "encode/django-rest-framework": ("docs", "tests"),
    "lepture/authlib": (),
    "pennersr/django-allauth": ("docs", "allauth"),
    "jaredhanson/passport": (),
    "nextauthjs/next-auth": ("docs", "packages"),
    "auth0-samples/auth0-react-samples": (),
    "heartcombo/devise": (),
    "omniauth/omniauth": (),
    "thephpleague/oauth2-server": (),
    "laravel/sanctum": (),
    "spring-projects/spring-authorization-server": ("docs", "samples", "oauth2-authorization-server"),
    "golang/oauth2": (),
    "ory/fosite": (),
    "supabase/auth": (),
    "ramosbugs/oauth2-rs": (),
    "AzureAD/microsoft-identity-web": ("docs", "tests", "src"),
    # The third held-out half (``HELDOUT``, from 09:32 UTC on 5 December), chosen before any of its
    # text was read: general Python and JavaScript web frameworks' docs and test suites, the kind
    # of text the first report came from.
    "aio-libs/aiohttp": ("docs", "tests"),
    "falconry/falcon": ("docs", "tests"),
    "fastify/fastify": ("docs", "test"),
    "sanic-org/sanic": ("guide", "tests"),
    "bottlepy/bottle": (),
}
TEXT_SUFFIXES = (
    ".py", ".md", ".rst", ".txt", ".toml", ".cfg", ".ini", ".yaml", ".yml", ".json", ".html",
    ".js", ".mjs", ".ts", ".tsx", ".java", ".kt", ".kts", ".gradle", ".xml", ".properties", ".rb", ".erb",
    ".rs", ".go", ".php", ".twig", ".cs", ".csproj", ".razor", ".cshtml", ".sh", ".env", ".conf",
    ".topic", ".tree", ".sql", ".mdx", ".adoc",
)
SKIP_NAMES = ("package-lock.json", "yarn.lock", "pnpm-lock.yaml", "Cargo.lock", "go.sum", "poetry.lock",
              "Gemfile.lock", "composer.lock")
SKIP_SUFFIXES = (".min.js", ".min.css", ".map", ".pem", ".key", ".crt", ".p12", ".pfx", ".jks", ".der")


@dataclass(frozen=True, slots=True)
class CorpusFile:
    repo: str
    path: str
    split: str
    """``tune`` or ``heldout``."""
    text: str


def mirror_of(repo: str, mirrors: Path = MIRRORS) -> Path:
    return mirrors / repo.replace("/", "+") / "repo"


HELDOUT = frozenset({
    "aio-libs/aiohttp", "falconry/falcon", "fastify/fastify", "sanic-org/sanic", "bottlepy/bottle"})
"""Whole repositories kept out of tuning (Python, JavaScript/TypeScript), added on 5 December at
09:32 UTC after the second held-out half (sixteen auth libraries) had been read by rule and moved
into ``tune``: their hits are counted, never shown (``bench.detect_trips --show-heldout`` shows them)."""


AUTH_LIBRARIES = frozenset({
    "oauthlib/oauthlib", "jpadilla/pyjwt", "doorkeeper-gem/doorkeeper", "laravel/passport", "auth0/java-jwt",
    "coreos/go-oidc", "Keats/jsonwebtoken", "openiddict/openiddict-core", "panva/node-oidc-provider",
    "markbates/goth", "encode/django-rest-framework", "lepture/authlib", "pennersr/django-allauth",
    "jaredhanson/passport", "nextauthjs/next-auth", "auth0-samples/auth0-react-samples", "heartcombo/devise",
    "omniauth/omniauth", "thephpleague/oauth2-server", "laravel/sanctum",
    "spring-projects/spring-authorization-server", "golang/oauth2", "ory/fosite", "supabase/auth",
    "ramosbugs/oauth2-rs", "AzureAD/microsoft-identity-web"})
"""The tune half's auth libraries (OAuth/OIDC servers and clients, JWT and session libraries: the ten
added at 08:05 UTC and the sixteen of the spent second held-out half): their test suites hold real
private keys and live-shaped tokens by design, so ``bench.detect_trips`` reports them apart from the
rest of the tune half (general web frameworks' code, docs, tutorials and test suites)."""

LANGUAGES = {".py": "Python", ".js": "JavaScript", ".mjs": "JavaScript", ".ts": "TypeScript",
             ".tsx": "TypeScript", ".java": "Java", ".kt": "Kotlin", ".kts": "Kotlin", ".rb": "Ruby",
             ".erb": "Ruby", ".rs": "Rust", ".go": "Go", ".php": "PHP", ".cs": "C#", ".razor": "C#",
             ".cshtml": "C#", ".sh": "shell", ".sql": "SQL"}
"""Programming languages by file suffix (docs and config files count toward no language)."""


def kind_of(repo: str) -> str:
    """``auth`` for the tune half's auth libraries, ``general`` for every other repository."""
    return "auth" if repo in AUTH_LIBRARIES else "general"


def split_of(repo: str, path: str) -> str:
    return "heldout" if repo in HELDOUT else "tune"


def _order(repo: str, path: str, first: tuple[str, ...]) -> tuple[int, bytes]:
    rank = next((i for i, folder in enumerate(first) if path.startswith(folder + "/")), len(first))
    return rank, hashlib.sha1(f"{repo}/{path}".encode()).digest()


def _wanted(path: str, size: int) -> bool:
    name = path.rsplit("/", 1)[-1]
    return (size <= MAX_FILE and path.endswith(TEXT_SUFFIXES) and not path.endswith(SKIP_SUFFIXES)
            and name not in SKIP_NAMES and "/node_modules/" not in path and "/vendor/" not in path)


def select(mirrors: Path, keep: dict[str, dict[str, object]] | None = None) -> dict[str, object]:
    """Pick each repository's files from its snapshot's HEAD (see the module docstring); a
    repository in ``keep`` (the manifest's entries so far) keeps its commit and paths."""
    repos: list[dict[str, object]] = []
    for repo, first in REPOS.items():
        if keep and repo in keep:
            repos.append(keep[repo])
            continue
        git = mirror_of(repo, mirrors)
        commit = subprocess.run(["git", "-C", str(git), "rev-parse", "HEAD"], capture_output=True, text=True,
                                check=True).stdout.strip()
        listing = subprocess.run(["git", "-C", str(git), "ls-tree", "-r", "-l", commit], capture_output=True,
                                 text=True, check=True).stdout
        files = []
        for line in listing.splitlines():
            meta, path = line.split("\t", 1)
            kind, size = meta.split()[1], meta.split()[3]
            if kind == "blob" and size.isdigit() and _wanted(path, int(size)):
                files.append((path, int(size)))
        files.sort(key=lambda f: _order(repo, f[0], first))
        taken, total = [], 0
        for at in range(0, len(files), 200):
            batch = files[at:at + 200]
            for (path, size), text in zip(batch, _read(git, commit, [p for p, _ in batch]), strict=True):
                if text is not None and total + size <= PER_REPO:
                    taken.append(path)
                    total += size
            if total >= PER_REPO * 0.98:
                break
        repos.append({"repo": repo, "commit": commit, "bytes": total, "paths": sorted(taken)})
    return {"max_file": MAX_FILE, "per_repo": PER_REPO, "repos": repos}


def _read(git: Path, commit: str, paths: list[str]) -> list[str | None]:
    """The files' texts (None for one that is not UTF-8), through one ``git cat-file --batch``."""
    request = "".join(f"{commit}:{p}\n" for p in paths).encode()
    out = subprocess.run(["git", "-C", str(git), "cat-file", "--batch"], input=request, capture_output=True,
                         check=True).stdout
    texts: list[str | None] = []
    at = 0
    for _ in paths:
        header_end = out.index(b"\n", at)
        header = out[at:header_end].split()
        if header[-1] == b"missing":
            raise FileNotFoundError(f"{git}: {header[0].decode()} is not in the snapshot")
        size = int(header[2])
        blob = out[header_end + 1:header_end + 1 + size]
        at = header_end + 1 + size + 1
        try:
            texts.append(blob.decode("utf-8"))
        except UnicodeDecodeError:
            texts.append(None)
    return texts


def corpus_files(mirrors: Path = MIRRORS, manifest: Path = MANIFEST, split: str | None = None) -> Iterator[CorpusFile]:
    """Every file the manifest names, read from the snapshots (``split``: only that half)."""
    data = json.loads(manifest.read_text(encoding="utf-8"))
    for entry in data["repos"]:
        paths = [p for p in entry["paths"] if split is None or split_of(entry["repo"], p) == split]
        for path, text in zip(paths, _read(mirror_of(entry["repo"], mirrors), entry["commit"], paths), strict=True):
            if text is not None:
                yield CorpusFile(entry["repo"], path, split_of(entry["repo"], path), text)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=("select", "build"))
    parser.add_argument("--mirrors", type=Path, default=MIRRORS)
    parser.add_argument("--out", type=Path, help="build: the folder to write the files into")
    parser.add_argument("--fresh", action="store_true",
                        help="select: pick every repository afresh (default: keep the manifest's entries, add new ones)")
    args = parser.parse_args()
    if args.command == "select":
        keep = None if args.fresh else {str(e["repo"]): e for e in json.loads(MANIFEST.read_text(encoding="utf-8"))["repos"]}
        data = select(args.mirrors, keep)
        MANIFEST.write_text(json.dumps(data, indent=0) + "\n", encoding="utf-8")
        repos = data["repos"]
        assert isinstance(repos, list)
        print(f"{sum(r['bytes'] for r in repos) / 1e6:.1f} MB in {sum(len(r['paths']) for r in repos)} files "
              f"from {len(repos)} repositories -> {MANIFEST}")
        return
    if args.out is None:
        parser.error("build needs --out")
    count = 0
    for f in corpus_files(args.mirrors):
        target = args.out / f.repo.replace("/", "+") / f.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f.text, encoding="utf-8")
        count += 1
    print(f"wrote {count} files under {args.out}")


if __name__ == "__main__":
    main()
