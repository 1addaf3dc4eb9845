#!/usr/bin/env python3
"""Re-run memlint on the evaluation corpus and score its findings against the labels.

Reads every `eval/corpus/*.toml`, checks each file's tune/test split against the
pre-registered rule, checks out every repository at its pinned commit in the git-ignored
`~/.cache/memlint-eval/`, runs memlint with JSON output, matches the findings to
`eval/labels/<owner>__<name>.toml`, and prints precision and recall per half, per rule and
per framework. See eval/README.md for the method and the file formats.

Python 3.11+, standard library only.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import tomllib
import urllib.error
import urllib.request
import zlib
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FRAMEWORKS = ("candle", "tch", "burn", "dfdx")
HALVES = ("tune", "test")
LABELS = ("true", "false", "unsure")
# Rules that say something about memlint itself, not about a leak: listed, never scored.
META_RULES = ("parse_error", "unused_suppression")
LINE_TOLERANCE = 3
HEX40 = re.compile(r"^[0-9a-f]{40}$")
HEX64 = re.compile(r"^[0-9a-f]{64}$")
# A published crate instead of a repository: `name = "crates.io/<crate>"` with `version` and
# the index's `checksum`; its `.crate` archive is the pinned tree.
CRATES_IO = "crates.io/"
CRATE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
CRATE_VERSION = re.compile(r"^[0-9]+\.[0-9]+\.[0-9]+(?:[-+][0-9A-Za-z.+-]+)?$")
CRATES_DOWNLOAD = "https://static.crates.io/crates/{name}/{name}-{version}.crate"
REPO_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")


class EvalError(Exception):
    """A problem with the corpus, the labels or the environment: reported, exit status 2."""


@dataclass
class Repo:
    """One `[[repo]]` entry of a corpus file."""

    name: str
    commit: str
    framework: str
    half: str
    paths: list[str]
    fix_commit: str | None
    loops: str
    corpus_file: str
    # Why the repository is not scored (kept in its file so the split order stays as registered).
    excluded: str | None = None
    # A published crate (`name = "crates.io/<crate>"`): its version and the archive's sha256
    # from the crates.io index; `commit` is then empty.
    version: str | None = None
    checksum: str | None = None

    @property
    def slug(self) -> str:
        return self.name.replace("/", "__")

    @property
    def crate(self) -> str | None:
        """The crate's name when this entry is a published crate, else None."""
        return self.name.removeprefix(CRATES_IO) if self.name.startswith(CRATES_IO) else None

    @property
    def pin(self) -> str:
        """What the tree is pinned at, for messages: a commit's first 12 digits or `v<version>`."""
        return f"v{self.version}" if self.crate else self.commit[:12]


@dataclass
class Leak:
    """A leak or rule hazard found by reading the code (ground truth for recall)."""

    file: str
    line: int
    rule: str
    reason: str
    confirmed: str | None
    found_by: list[str] = field(default_factory=list)


@dataclass
class Judged:
    """A `[[finding]]` label: memlint's finding judged by reading the code."""

    rule: str
    file: str
    line: int
    label: str
    reason: str


@dataclass
class Finding:
    """A finding memlint reported, with the label it was matched to (None: unlabelled)."""

    rule: str
    file: str
    line: int
    message: str
    label: str | None = None
    why: str = ""
    # The label a second reader gave the same finding without seeing the first (`[[second]]`
    # entries; None: read once).
    second: str | None = None
    # A third reader's label, sought where the first two differ (`[[third]]` entries).
    third: str | None = None
    also: list[int] = field(default_factory=list)
    # Places in other files the finding names in a note (`src/main.rs:175: `train` calls this
    # function with an autodiff backend`): the call that makes the reported code leak.
    elsewhere: list[tuple[str, int]] = field(default_factory=list)

    def lines(self) -> list[int]:
        """The primary line, then the finding's other labelled lines in the same file."""
        return [self.line, *self.also]

    @property
    def strict(self) -> str | None:
        """The label both readers stand behind: true only when both say true, false when
        either says false, unsure otherwise; a finding read once keeps its one label."""
        if self.second is None or self.label is None:
            return self.label
        if "false" in (self.label, self.second):
            return "false"
        return "true" if self.label == self.second == "true" else "unsure"

    @property
    def majority(self) -> str | None:
        """The label most readers gave: the first when read once or when the second agrees;
        else the third reader's when it sides with one of them; else unsure."""
        if self.second is None or self.label is None or self.second == self.label:
            return self.label
        if self.third is not None and self.third in (self.label, self.second):
            return self.third
        return "unsure"

    def near(self, file: str, line: int) -> bool:
        return any(near(self.file, own, file, line) for own in self.lines())


@dataclass
class RepoResult:
    repo: Repo
    findings: list[Finding]
    meta: list[Finding]
    leaks: list[Leak]
    exit_status: int
    seconds: float
    stale_labels: list[Judged]


# ----------------------------------------------------------------------------- corpus


def expected_halves(names: list[str]) -> dict[str, str]:
    """The pre-registered split: sort by sha256("owner/name") hex, alternate from tune."""
    ordered = sorted(names, key=lambda n: hashlib.sha256(n.encode()).hexdigest())
    return {name: HALVES[i % 2] for i, name in enumerate(ordered)}


def _need(entry: dict, key: str, where: str, kind: type = str):
    if key not in entry:
        raise EvalError(f"{where}: missing `{key}`")
    value = entry[key]
    if not isinstance(value, kind):
        raise EvalError(f"{where}: `{key}` must be a {kind.__name__}")
    return value


def parse_repo(entry: dict, where: str, corpus_file: str) -> Repo:
    name = _need(entry, "name", where)
    if not REPO_NAME.match(name):
        raise EvalError(f"{where}: name `{name}` is not owner/name or crates.io/<crate>")
    version = checksum = None
    if name.startswith(CRATES_IO):
        if not CRATE_NAME.match(name.removeprefix(CRATES_IO)):
            raise EvalError(f"{where}: `{name}` is not a crate name")
        if "commit" in entry or "fix_commit" in entry:
            raise EvalError(f"{where} ({name}): a crate is pinned by `version` and `checksum`, not a commit")
        version = _need(entry, "version", where)
        if not CRATE_VERSION.match(version):
            raise EvalError(f"{where} ({name}): version `{version}` is not x.y.z")
        checksum = _need(entry, "checksum", where).lower()
        if not HEX64.match(checksum):
            raise EvalError(f"{where} ({name}): checksum must be the index's 64 hex digits (sha256)")
        commit = ""
    else:
        commit = _need(entry, "commit", where).lower()
        if not HEX40.match(commit):
            raise EvalError(f"{where} ({name}): commit must be 40 hex digits")
    framework = _need(entry, "framework", where)
    if framework not in FRAMEWORKS:
        raise EvalError(f"{where} ({name}): framework must be one of {', '.join(FRAMEWORKS)}")
    half = _need(entry, "half", where)
    if half not in HALVES:
        raise EvalError(f"{where} ({name}): half must be tune or test")
    paths = entry.get("paths", ["."])
    if not isinstance(paths, list) or not paths or not all(isinstance(p, str) for p in paths):
        raise EvalError(f"{where} ({name}): paths must be a non-empty list of strings")
    for p in paths:
        if p.startswith("/") or ".." in Path(p).parts:
            raise EvalError(f"{where} ({name}): path `{p}` must stay inside the repository")
    fix = entry.get("fix_commit")
    if fix is not None and (not isinstance(fix, str) or not HEX40.match(fix.lower())):
        raise EvalError(f"{where} ({name}): fix_commit must be 40 hex digits")
    loops = entry.get("loops", "")
    if not isinstance(loops, str):
        raise EvalError(f"{where} ({name}): loops must be a string")
    excluded = entry.get("excluded")
    if excluded is not None and (not isinstance(excluded, str) or not excluded.strip()):
        raise EvalError(f"{where} ({name}): excluded must be a non-empty reason")
    return Repo(name, commit, framework, half, paths, fix.lower() if fix else None, loops, corpus_file,
                excluded, version, checksum)


def load_corpus(corpus_dir: Path) -> list[Repo]:
    files = sorted(corpus_dir.glob("*.toml"))
    if not files:
        raise EvalError(f"no corpus file in {corpus_dir}")
    repos: list[Repo] = []
    seen: dict[str, str] = {}
    for path in files:
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
            raise EvalError(f"{path}: {err}") from None
        entries = data.get("repo", [])
        if not isinstance(entries, list):
            raise EvalError(f"{path}: `repo` must be an array of tables ([[repo]])")
        for i, entry in enumerate(entries):
            repo = parse_repo(entry, f"{path.name} repo #{i + 1}", path.name)
            if repo.name in seen:
                raise EvalError(f"{repo.name} is listed twice ({seen[repo.name]}, {path.name})")
            seen[repo.name] = path.name
            repos.append(repo)
    return repos


def check_split(repos: list[Repo]) -> list[str]:
    """Every corpus file, per framework, must follow the sha256 split; returns the violations."""
    groups: dict[tuple[str, str], list[Repo]] = defaultdict(list)
    for repo in repos:
        groups[(repo.corpus_file, repo.framework)].append(repo)
    problems = []
    for (corpus_file, framework), members in sorted(groups.items()):
        expected = expected_halves([r.name for r in members])
        for repo in members:
            if repo.half != expected[repo.name]:
                problems.append(
                    f"{corpus_file}: {repo.name} ({framework}) is in `{repo.half}`, "
                    f"the split rule puts it in `{expected[repo.name]}`"
                )
    return problems


# ----------------------------------------------------------------------------- labels


def load_labels(labels_dir: Path, repo: Repo) -> tuple[list[Leak], list[Judged], bool]:
    path = labels_dir / f"{repo.slug}.toml"
    if not path.exists():
        return [], [], False
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise EvalError(f"{path}: {err}") from None
    leaks, judged = [], []
    for i, entry in enumerate(data.get("leak", [])):
        where = f"{path.name} leak #{i + 1}"
        line = _need(entry, "line", where, int)
        confirmed = entry.get("confirmed")
        if confirmed is not None and not isinstance(confirmed, str):
            raise EvalError(f"{where}: confirmed must be a URL string")
        leaks.append(
            Leak(_need(entry, "file", where), line, _need(entry, "rule", where),
                 _need(entry, "reason", where), confirmed)
        )
    for i, entry in enumerate(data.get("finding", [])):
        where = f"{path.name} finding #{i + 1}"
        label = _need(entry, "label", where)
        if label not in LABELS:
            raise EvalError(f"{where}: label must be one of {', '.join(LABELS)}")
        judged.append(
            Judged(_need(entry, "rule", where), _need(entry, "file", where),
                   _need(entry, "line", where, int), label, _need(entry, "reason", where))
        )
    return leaks, judged, True


def load_second_labels(labels_dir: Path, repo: Repo, table: str = "second") -> list[Judged]:
    """The `[[second]]` entries of a repository's label file: findings labelled again by a
    second reader who did not see the first labels (rule, file, line, label, reason); with
    `table="third"`, a third reader's, where the first two differ."""
    path = labels_dir / f"{repo.slug}.toml"
    if not path.exists():
        return []
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise EvalError(f"{path}: {err}") from None
    out = []
    for i, entry in enumerate(data.get(table, [])):
        where = f"{path.name} {table} #{i + 1}"
        label = _need(entry, "label", where)
        if label not in LABELS:
            raise EvalError(f"{where}: label must be one of {', '.join(LABELS)}")
        out.append(Judged(_need(entry, "rule", where), _need(entry, "file", where),
                          _need(entry, "line", where, int), label, _need(entry, "reason", where)))
    return out


def match_second(findings: list[Finding], seconds: list[Judged], attr: str = "second") -> None:
    """Give every finding the nearest second-reader label of its rule and file within ±3 lines
    of its primary place (else of its other places); labels are used once each. `attr="third"`
    sets the third reader's instead."""
    used = set()
    for f in findings:
        for places in ([f.line], f.also):
            candidates = [
                (min(abs(own - entry.line) for own in places), j) for j, entry in enumerate(seconds)
                if j not in used and entry.rule == f.rule and any(near(f.file, own, entry.file, entry.line)
                                                                  for own in places)
            ]
            if candidates:
                j = min(candidates)[1]
                used.add(j)
                setattr(f, attr, seconds[j].label)
                break


ELSEWHERE = re.compile(r"^(?P<file>[^\s:]+\.rs):(?P<line>\d+): ")


def near(a_file: str, a_line: int, b_file: str, b_line: int) -> bool:
    return a_file == b_file and abs(a_line - b_line) <= LINE_TOLERANCE


def match(findings: list[Finding], leaks: list[Leak], judged: list[Judged]) -> list[Judged]:
    """Label every finding; mark the leaks each finding finds. Returns labels that matched nothing.

    A finding is true when it lands on a known leak of its rule (same file, within ±3 lines of
    its primary place or of one of its other labelled places in that file);
    otherwise it takes the label of the nearest `[[finding]]` entry of its rule and file within
    ±3 lines; otherwise it stays unlabelled (never counted as true). A leak whose rule is "none"
    is found by a finding of any rule at its place that is not judged false.
    """
    used = set()
    for f in findings:
        # The primary place decides first (a known leak, then the nearest label); the finding's
        # other places only when nothing is at the primary one.
        for places in ([f.line], f.also):
            at = lambda file, line: any(near(f.file, own, file, line) for own in places)
            candidates = [
                (min(abs(own - entry.line) for own in places), j) for j, entry in enumerate(judged)
                if entry.rule == f.rule and at(entry.file, entry.line)
            ]
            nearest = min(candidates)[1] if candidates else None
            if nearest is not None:
                used.add(nearest)
            for leak in leaks:
                if f.label is None and leak.rule == f.rule and at(leak.file, leak.line):
                    f.label, f.why = "true", f"known leak: {leak.reason}"
            if f.label is None and nearest is not None:
                f.label, f.why = judged[nearest].label, judged[nearest].reason
            if f.label is not None:
                break
    for leak in leaks:
        leak.found_by = [
            f"{f.rule}@{f.file}:{f.line}" for f in findings
            if (near(f.file, f.line, leak.file, leak.line)
                or (f.label != "false" and (f.near(leak.file, leak.line)
                                            or any(near(e, l, leak.file, leak.line) for e, l in f.elsewhere))))
            and (f.rule == leak.rule or (leak.rule == "none" and f.label in ("true", "unsure")))
        ]
    return [entry for j, entry in enumerate(judged) if j not in used]


# ----------------------------------------------------------------------------- checkout + run


def git(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)


def fetch_crate(repo: Repo, cache: Path) -> bytes:
    """The `.crate` archive of a published crate, downloaded once into `cache/crates/` and
    checked against the checksum the corpus pins (the crates.io index's sha256)."""
    archive = cache / "crates" / f"{repo.crate}-{repo.version}.crate"
    if archive.exists():
        data = archive.read_bytes()
    else:
        url = CRATES_DOWNLOAD.format(name=repo.crate, version=repo.version)
        try:
            with urllib.request.urlopen(url, timeout=120) as response:
                data = response.read()
        except (urllib.error.URLError, OSError) as err:
            raise EvalError(f"{repo.name}: download of {url} failed: {err}") from None
    digest = hashlib.sha256(data).hexdigest()
    if digest != repo.checksum:
        raise EvalError(f"{repo.name}: {archive.name} has sha256 {digest}, the corpus pins {repo.checksum}")
    if not archive.exists():
        archive.parent.mkdir(parents=True, exist_ok=True)
        archive.write_bytes(data)
    return data


def unpack_crate(repo: Repo, data: bytes, dest: Path) -> None:
    """A fresh tree of the archive's `<crate>-<version>/` folder at `dest`: every run lints
    exactly what the checksum pins. Members outside that folder, links and special files are
    skipped (tarfile's `data` filter refuses what would escape `dest`)."""
    prefix = f"{repo.crate}-{repo.version}/"
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
            for member in archive.getmembers():
                if not member.name.startswith(prefix) or not (member.isfile() or member.isdir()):
                    continue
                member.name = member.name.removeprefix(prefix)
                if member.name:
                    archive.extract(member, dest, filter="data")
    except (tarfile.TarError, OSError, EOFError, zlib.error) as err:
        raise EvalError(f"{repo.name}: the archive of v{repo.version} cannot be unpacked: {err}") from None


def checkout(repo: Repo, cache: Path, mirrors: Path) -> Path:
    """A work tree of `repo` at its pinned commit under `cache` (cloned once, then reused);
    for a published crate, its archive unpacked afresh."""
    dest = cache / repo.slug
    if repo.crate:
        unpack_crate(repo, fetch_crate(repo, cache), dest)
        for p in repo.paths:
            if not (dest / p).exists():
                raise EvalError(f"{repo.name}: path `{p}` does not exist in v{repo.version}")
        return dest
    if not (dest / ".git").exists():
        mirror = mirrors / repo.name.replace("/", "+") / "repo"
        source = str(mirror) if mirror.exists() else f"https://github.com/{repo.name}.git"
        cache.mkdir(parents=True, exist_ok=True)
        done = git("clone", "-q", "--no-checkout", source, str(dest))
        if done.returncode != 0:
            raise EvalError(f"{repo.name}: git clone {source} failed: {done.stderr.strip()}")
    # Only Rust sources and manifests of the linted paths: memlint reads nothing else, and
    # snapshots may lack large blobs (images, weights) that a full checkout would need. Every
    # package's default targets too (`src/lib.rs`, `src/main.rs`): without one, `cargo metadata`
    # refuses the manifest, and memlint then groups files by folder instead of by package, which
    # a user's run does not (until session 10 every workspace whose members lay partly outside
    # `paths` was linted that way, calls across its crates unfollowed).
    # Since session 19 every Rust source under a package's `src/` as well: memlint reads the
    # rest of a package as context and follows `mod` declarations from the crate's roots, so a
    # module file outside `paths` (`src/ml.rs` declaring `src/ml/*.rs`) decides whether the linted
    # files are compiled at all, as in a user's full checkout.
    patterns = ["Cargo.toml", "**/src/**/*.rs"] + [
        "*.rs" if p in (".", "./") else f"/{p.strip('/')}/**/*.rs" for p in repo.paths
    ]
    git("sparse-checkout", "set", "--no-cone", *patterns, cwd=dest)
    if git("cat-file", "-e", f"{repo.commit}^{{commit}}", cwd=dest).returncode != 0:
        git("fetch", "-q", "origin", repo.commit, cwd=dest)
    # Always check out (and restore) the pinned tree: a fresh --no-checkout clone has none.
    done = git("checkout", "-q", "--force", "--detach", repo.commit, cwd=dest)
    if done.returncode != 0:
        raise EvalError(f"{repo.name}: commit {repo.commit} not available: {done.stderr.strip()}")
    for p in repo.paths:
        if not (dest / p).exists():
            raise EvalError(f"{repo.name}: path `{p}` does not exist at {repo.commit[:12]}")
    return dest


def parse_findings(stdout: str, tree: Path) -> list[Finding]:
    findings = []
    for line in stdout.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            msg = json.loads(line)
        except json.JSONDecodeError:
            continue
        if msg.get("reason") != "compiler-message":
            continue
        body = msg.get("message", {})
        code = (body.get("code") or {}).get("code", "")
        spans = [s for s in body.get("spans", []) if s.get("is_primary")] or body.get("spans", [])
        if not code.startswith("memlint::") or not spans:
            continue
        name = spans[0]["file_name"]
        path = Path(name)
        if path.is_absolute():
            try:
                name = path.resolve().relative_to(tree.resolve()).as_posix()
            except ValueError:
                pass
        name = name.removeprefix("./")
        # The finding's other labelled places in the same file (a loop's further forward passes,
        # grouped into one finding since session 8): a known leak or a label there is this finding's.
        also = sorted({int(s["line_start"]) for s in body.get("spans", [])
                       if not s.get("is_primary") and s.get("file_name") == spans[0]["file_name"]}
                      - {int(spans[0]["line_start"])})
        # Notes that name another place (`src/main.rs:175: `train_command` calls this function
        # with an autodiff backend`): where the reported code is made to leak.
        elsewhere = []
        for child in body.get("children", []):
            named = ELSEWHERE.match(child.get("message", "")) if child.get("level") == "note" else None
            if named:
                elsewhere.append((named["file"].removeprefix("./"), int(named["line"])))
        findings.append(Finding(code.removeprefix("memlint::"), name, int(spans[0]["line_start"]),
                                body.get("message", ""), also=also, elsewhere=elsewhere))
    return findings


def resolve_binary(memlint: str) -> str:
    """memlint runs inside each checkout, so a relative path (`target/release/cargo-memlint`)
    is made absolute against the directory the script was started in; a bare name is left to
    be looked up on PATH."""
    if os.sep in memlint or (os.altsep and os.altsep in memlint):
        return os.path.abspath(memlint)
    return memlint


def run_memlint(memlint: str, repo: Repo, tree: Path, timeout: int,
                all_rules: bool = False) -> tuple[list[Finding], int, float]:
    # The default rules (`-W warnings` keeps nursery rules off, as a user's run does), or with
    # `--all-rules` the nursery too.
    cmd = [memlint, "memlint", "--message-format", "json", "--color", "never", "-W", "warnings",
           *(["-W", "nursery"] if all_rules else []), *repo.paths]
    start = time.monotonic()
    try:
        done = subprocess.run(cmd, cwd=tree, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        raise EvalError(f"memlint binary not found: {memlint} (build it, or pass --memlint)") from None
    except subprocess.TimeoutExpired:
        return [], -1, time.monotonic() - start
    seconds = time.monotonic() - start
    if done.returncode == 2:
        sys.stderr.write(f"warning: memlint failed on {repo.name}:\n{done.stderr[-2000:]}\n")
    return parse_findings(done.stdout, tree), done.returncode, seconds


# ----------------------------------------------------------------------------- scoring


def ratio(num: int, den: int) -> float | None:
    return None if den == 0 else num / den


def wilson(num: int, den: int, z: float = 1.96) -> tuple[float, float] | None:
    """The 95 % Wilson score interval of the proportion num/den (None when den is 0).

    With 15 findings a precision of 27 % is anywhere from 11 % to 52 %: the interval says how
    much a half's number can move with a few more findings (or on other repositories).
    """
    if den == 0:
        return None
    p = num / den
    centre = (p + z * z / (2 * den)) / (1 + z * z / den)
    half = z * ((p * (1 - p) / den + z * z / (4 * den * den)) ** 0.5) / (1 + z * z / den)
    return (max(0.0, centre - half), min(1.0, centre + half))


def score(results: list[RepoResult]) -> dict:
    """Counts for one group of repositories."""
    counts = {l: 0 for l in LABELS}
    counts["unlabelled"] = 0
    for r in results:
        for f in r.findings:
            counts[f.label or "unlabelled"] += 1
    leaks = [l for r in results for l in r.leaks]
    rule_leaks = [l for l in leaks if l.rule != "none"]
    confirmed = [l for l in leaks if l.confirmed]
    # Findings cluster in few repositories (one repository's pattern repeated): precision per
    # repository with judged findings, averaged, weighs each repository once.
    per_repo = [
        (sum(1 for f in r.findings if f.label == "true"), sum(1 for f in r.findings if f.label == "false"))
        for r in results
    ]
    judged_repos = [(t, f) for t, f in per_repo if t + f > 0]
    strict = {l: 0 for l in LABELS}
    strict["unlabelled"] = 0
    for r in results:
        for f in r.findings:
            strict[f.strict or "unlabelled"] += 1
    read_twice = sum(1 for r in results for f in r.findings if f.second is not None)
    majority = {l: 0 for l in LABELS}
    majority["unlabelled"] = 0
    for r in results:
        for f in r.findings:
            majority[f.majority or "unlabelled"] += 1
    agreed = sum(1 for r in results for f in r.findings if f.second is not None and f.second == f.label)
    return {
        "repos": len(results),
        "findings": sum(len(r.findings) for r in results),
        **counts,
        "precision": ratio(counts["true"], counts["true"] + counts["false"]),
        "precision_interval": wilson(counts["true"], counts["true"] + counts["false"]),
        "repos_judged": len(judged_repos),
        "repos_only_true": sum(1 for t, f in judged_repos if f == 0),
        "precision_per_repo_mean": (
            sum(t / (t + f) for t, f in judged_repos) / len(judged_repos) if judged_repos else None
        ),
        "leaks_with_rule": len(rule_leaks),
        "leaks_with_rule_found": sum(1 for l in rule_leaks if l.found_by),
        "recall_rule": ratio(sum(1 for l in rule_leaks if l.found_by), len(rule_leaks)),
        "leaks_all": len(leaks),
        "leaks_all_found": sum(1 for l in leaks if l.found_by),
        "recall_all": ratio(sum(1 for l in leaks if l.found_by), len(leaks)),
        "confirmed": len(confirmed),
        "confirmed_found": sum(1 for l in confirmed if l.found_by),
        # With the second readers' labels: how many findings were read twice, how many of them
        # the readers labelled alike, and precision counting a finding true only when both did.
        "read_twice": read_twice,
        "read_twice_agreed": agreed,
        "strict": strict,
        "strict_precision": ratio(strict["true"], strict["true"] + strict["false"]),
        "strict_precision_interval": wilson(strict["true"], strict["true"] + strict["false"]),
        # With a third reader where the first two differ: the label most readers gave.
        "read_thrice": sum(1 for r in results for f in r.findings if f.third is not None),
        "majority": majority,
        "majority_precision": ratio(majority["true"], majority["true"] + majority["false"]),
        "majority_precision_interval": wilson(majority["true"], majority["true"] + majority["false"]),
    }


def by_rule(results: list[RepoResult]) -> dict[str, dict]:
    rules = sorted({f.rule for r in results for f in r.findings} | {l.rule for r in results for l in r.leaks})
    out = {}
    for rule in rules:
        counts = {l: 0 for l in LABELS}
        counts["unlabelled"] = 0
        for r in results:
            for f in r.findings:
                if f.rule == rule:
                    counts[f.label or "unlabelled"] += 1
        leaks = [l for r in results for l in r.leaks if l.rule == rule]
        found = sum(1 for l in leaks if l.found_by)
        out[rule] = {**counts, "precision": ratio(counts["true"], counts["true"] + counts["false"]),
                     "leaks": len(leaks), "leaks_found": found, "recall": ratio(found, len(leaks))}
    return out


def report(results: list[RepoResult], halves: list[str]) -> dict:
    out: dict = {"halves": {}}
    for half in halves:
        group = [r for r in results if half == "all" or r.repo.half == half]
        frameworks = sorted({r.repo.framework for r in group})
        out["halves"][half] = {
            "total": score(group),
            "per_framework": {fw: score([r for r in group if r.repo.framework == fw]) for fw in frameworks},
            "per_rule": by_rule(group),
            "confirmed_leaks": [
                {"repo": r.repo.name, "file": l.file, "line": l.line, "rule": l.rule,
                 "confirmed": l.confirmed, "found": bool(l.found_by), "found_by": l.found_by}
                for r in group for l in r.leaks if l.confirmed
            ],
            "repos": [
                {"repo": r.repo.name, "framework": r.repo.framework, "half": r.repo.half,
                 "commit": r.repo.commit or None, "version": r.repo.version,
                 "exit_status": r.exit_status, "seconds": round(r.seconds, 2),
                 "findings": len(r.findings),
                 "labels": {k: sum(1 for f in r.findings if (f.label or "unlabelled") == k)
                            for k in (*LABELS, "unlabelled")},
                 "meta_findings": [f"{f.rule} {f.file}:{f.line}" for f in r.meta]}
                for r in group
            ],
            "unlabelled": [
                {"repo": r.repo.name, "rule": f.rule, "file": f.file, "line": f.line, "message": f.message}
                for r in group for f in r.findings if f.label is None
            ],
            "unsure": [
                {"repo": r.repo.name, "rule": f.rule, "file": f.file, "line": f.line, "reason": f.why}
                for r in group for f in r.findings if f.label == "unsure"
            ],
            "missed_leaks": [
                {"repo": r.repo.name, "framework": r.repo.framework, "rule": l.rule, "file": l.file,
                 "line": l.line, "reason": l.reason}
                for r in group for l in r.leaks if not l.found_by
            ],
            "stale_labels": [
                {"repo": r.repo.name, "rule": j.rule, "file": j.file, "line": j.line, "label": j.label}
                for r in group for j in r.stale_labels
            ],
        }
    return out


def pct(value: float | None) -> str:
    return "  n/a" if value is None else f"{100 * value:5.1f}%"


def print_text(out: dict) -> None:
    for half, data in out["halves"].items():
        t = data["total"]
        print(f"== half: {half}  ({t['repos']} repositories, {t['findings']} findings)")
        print(f"   precision {pct(t['precision'])}  (true {t['true']}, false {t['false']}; "
              f"unsure {t['unsure']}, unlabelled {t['unlabelled']} not counted)")
        if t["precision_interval"] is not None:
            low, high = t["precision_interval"]
            print(f"             95% interval {pct(low)} to {pct(high)}; {t['repos_judged']} repositories with "
                  f"judged findings, {t['repos_only_true']} of them with true ones only, mean precision per "
                  f"repository {pct(t['precision_per_repo_mean'])}")
        if t["read_twice"]:
            s = t["strict"]
            print(f"   two readers: {t['read_twice']} findings read twice, labelled alike {t['read_twice_agreed']}; "
                  f"precision when both must say true {pct(t['strict_precision'])} (true {s['true']}, "
                  f"false {s['false']}, unsure {s['unsure']})")
            m = t["majority"]
            print(f"                {t['read_thrice']} of the differing ones read a third time; precision by the "
                  f"majority of readers {pct(t['majority_precision'])} (true {m['true']}, false {m['false']}, "
                  f"unsure {m['unsure']})")
        print(f"   recall    {pct(t['recall_rule'])}  of leaks with a rule "
              f"({t['leaks_with_rule_found']}/{t['leaks_with_rule']});  {pct(t['recall_all'])} of all "
              f"known leaks incl. rule \"none\" ({t['leaks_all_found']}/{t['leaks_all']})")
        print(f"   author-confirmed leaks found: {t['confirmed_found']}/{t['confirmed']}")
        for c in data["confirmed_leaks"]:
            state = "FOUND " if c["found"] else "missed"
            print(f"     {state} {c['repo']} {c['file']}:{c['line']} [{c['rule']}] {c['confirmed']}")
        print("   per framework:")
        for fw, s in data["per_framework"].items():
            print(f"     {fw:7} repos {s['repos']:2}  findings {s['findings']:3}  precision "
                  f"{pct(s['precision'])} (t {s['true']}, f {s['false']}, u {s['unsure']}, "
                  f"unlabelled {s['unlabelled']})  recall {pct(s['recall_rule'])} "
                  f"({s['leaks_with_rule_found']}/{s['leaks_with_rule']}), all {pct(s['recall_all'])} "
                  f"({s['leaks_all_found']}/{s['leaks_all']})")
        print("   per rule:")
        for rule, s in data["per_rule"].items():
            print(f"     {rule:34} precision {pct(s['precision'])} (t {s['true']}, f {s['false']}, "
                  f"u {s['unsure']}, unlabelled {s['unlabelled']})  recall {pct(s['recall'])} "
                  f"({s['leaks_found']}/{s['leaks']})")
        print("   per repository:")
        for r in data["repos"]:
            lab = r["labels"]
            status = "timeout" if r["exit_status"] == -1 else f"exit {r['exit_status']}"
            print(f"     {r['repo']:40} {r['framework']:6} {status:7} {r['seconds']:6.1f}s  findings "
                  f"{r['findings']:3} (t {lab['true']}, f {lab['false']}, u {lab['unsure']}, "
                  f"unlabelled {lab['unlabelled']})"
                  + (f"  meta: {', '.join(r['meta_findings'])}" if r["meta_findings"] else ""))
        if data["unlabelled"]:
            print("   unlabelled findings (never counted as true):")
            for f in data["unlabelled"]:
                print(f"     {f['repo']} {f['file']}:{f['line']} [{f['rule']}] {f['message']}")
        if data["stale_labels"]:
            print("   labels that matched no finding (stale or moved):")
            for j in data["stale_labels"]:
                print(f"     {j['repo']} {j['file']}:{j['line']} [{j['rule']}] {j['label']}")
        print()


# ----------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--half", choices=("tune", "test", "all"), default=None,
                    help="report one half (default: tune, test and all)")
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    ap.add_argument("--memlint", default=os.environ.get("MEMLINT", str(ROOT / "target/release/cargo-memlint")),
                    help="the cargo-memlint binary (default: $MEMLINT or target/release/cargo-memlint)")
    ap.add_argument("--repo", action="append", default=[], help="only this owner/name (repeatable)")
    ap.add_argument("--batch", action="append", default=[],
                    help="only the repositories of this corpus file, e.g. corpus_28 (repeatable): a new "
                         "batch's halves measured on their own")
    ap.add_argument("--corpus-dir", type=Path, default=ROOT / "eval/corpus")
    ap.add_argument("--labels-dir", type=Path, default=ROOT / "eval/labels")
    # Outside memlint's own workspace: a checkout inside it makes `cargo metadata` fail for every
    # repository without a `[workspace]` ("believes it's in a workspace when it's not"), and
    # memlint then lints by path, without the package's targets: not what a user's run does.
    ap.add_argument("--cache", type=Path,
                    default=Path(os.environ.get("MEMLINT_EVAL_CACHE") or Path.home() / ".cache" / "memlint-eval"))
    ap.add_argument("--mirrors", type=Path, default=Path(os.environ.get("MEMLINT_EVAL_MIRRORS", "/work/.mirror")),
                    help="folder of bare mirrors <owner>+<name>/repo tried before cloning from GitHub")
    ap.add_argument("--checkout-only", action="store_true",
                    help="check the split and make the checkouts, run nothing")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per repository")
    ap.add_argument("--all-rules", action="store_true",
                    help="turn the nursery rules on too (default: the rules a user gets by default)")
    args = ap.parse_args(argv)
    args.memlint = resolve_binary(args.memlint)
    try:
        repos = load_corpus(args.corpus_dir)
        problems = check_split(repos)
        if problems:
            raise EvalError("the tune/test split does not follow the rule:\n  " + "\n  ".join(problems))
        unknown = set(args.repo) - {r.name for r in repos}
        if unknown:
            raise EvalError(f"not in the corpus: {', '.join(sorted(unknown))}")
        batches = {b.removesuffix(".toml") + ".toml" for b in args.batch}
        unknown_batches = batches - {r.corpus_file for r in repos}
        if unknown_batches:
            raise EvalError(f"no such corpus file: {', '.join(sorted(unknown_batches))}")
        selected = [r for r in repos if (not args.repo or r.name in args.repo)
                    and (not batches or r.corpus_file in batches)]
        for r in selected:
            if r.excluded:
                sys.stderr.write(f"note: {r.name} is not scored: {r.excluded}\n")
        selected = [r for r in selected if not r.excluded]
        if args.half in HALVES:
            selected = [r for r in selected if r.half == args.half]
        results = []
        for repo in selected:
            tree = checkout(repo, args.cache, args.mirrors)
            if args.checkout_only:
                print(f"{repo.name}: {tree} at {repo.pin}")
                continue
            leaks, judged, has_labels = load_labels(args.labels_dir, repo)
            if not has_labels:
                sys.stderr.write(f"warning: no label file for {repo.name}\n")
            found, status, seconds = run_memlint(args.memlint, repo, tree, args.timeout, args.all_rules)
            meta = [f for f in found if f.rule in META_RULES]
            findings = [f for f in found if f.rule not in META_RULES]
            stale = match(findings, leaks, judged)
            match_second(findings, load_second_labels(args.labels_dir, repo))
            match_second(findings, load_second_labels(args.labels_dir, repo, "third"), "third")
            results.append(RepoResult(repo, findings, meta, leaks, status, seconds, stale))
        if args.checkout_only:
            return 0
    except EvalError as err:
        sys.stderr.write(f"error: {err}\n")
        return 2
    halves = [args.half] if args.half else ["tune", "test", "all"]
    out = report(results, halves)
    if args.json:
        json.dump(out, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print_text(out)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # output piped into `head` and closed early
        sys.stderr.close()
        sys.exit(0)
