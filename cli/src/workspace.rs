//! Which files to lint: packages and targets from `cargo metadata --no-deps` (no dependency is
//! downloaded or built, no build script runs), or files and folders given by path.

use std::path::{Path, PathBuf};

use crate::output::json::Owner;
use memlint_lint::{BurnEra, Framework};

#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum WorkspaceError {
    #[error("could not read the cargo workspace: {0}")]
    #[diagnostic(
        code(memlint::workspace),
        help("pass `--manifest-path path/to/Cargo.toml`, or lint files and folders by path")
    )]
    Metadata(String),
    #[error("package `{0}` is not a member of this workspace")]
    #[diagnostic(code(memlint::workspace), help("members: {1}"))]
    NoSuchPackage(String, String),
    #[error("path `{0}` does not exist")]
    #[diagnostic(code(memlint::workspace))]
    NoSuchPath(String),
    #[error("no {0} target named `{1}` in the selected packages")]
    #[diagnostic(code(memlint::workspace), help("{0} targets: {2}"))]
    NoSuchTarget(&'static str, String, String),
    #[error("no library target in the selected packages")]
    #[diagnostic(code(memlint::workspace), help("drop `--lib`, or select a package with a library (`-p NAME`)"))]
    NoLibrary,
}

/// One target of a package (lib, bin, example, test, bench).
#[derive(Debug, Clone)]
pub struct Target {
    pub name: String,
    pub kind: Vec<String>,
    pub src_path: PathBuf,
    /// The edition from the manifest (`2021`, `2024`, …).
    pub edition: String,
}

impl Target {
    fn is(&self, kind: &str) -> bool {
        match kind {
            "lib" => self.kind.iter().any(|k| LIB_KINDS.contains(&k.as_str())),
            _ => self.kind.iter().any(|k| k == kind),
        }
    }

    /// The file and, where it has one, the folder of the target's modules: the file's folder for
    /// `lib.rs`/`main.rs`/`mod.rs` (unless that is the package root), else `<folder>/<stem>/`.
    fn area(&self, package_root: &Path) -> (PathBuf, Option<PathBuf>) {
        let dir = self.src_path.parent().unwrap_or(package_root).to_path_buf();
        let root_file = self.src_path.file_name().is_some_and(|n| n == "lib.rs" || n == "main.rs" || n == "mod.rs");
        let folder = if root_file {
            (dir != package_root).then_some(dir)
        } else {
            self.src_path.file_stem().map(|stem| dir.join(stem))
        };
        (self.src_path.clone(), folder)
    }
}

/// The target kinds cargo's `--lib` selects.
const LIB_KINDS: &[&str] = &["lib", "rlib", "dylib", "cdylib", "staticlib", "proc-macro"];

/// Which targets to lint, as cargo's target selection flags name them; empty selects all.
#[derive(Debug, Clone, Default)]
pub struct TargetSelection {
    pub lib: bool,
    pub bins: bool,
    pub bin: Vec<String>,
    pub examples: bool,
    pub example: Vec<String>,
    pub tests: bool,
    pub test: Vec<String>,
    pub benches: bool,
    pub bench: Vec<String>,
    pub all_targets: bool,
}

impl TargetSelection {
    /// Whether every target is selected (no flag, or `--all-targets`).
    pub fn is_all(&self) -> bool {
        let named = [&self.bin, &self.example, &self.test, &self.bench].iter().any(|v| !v.is_empty());
        self.all_targets || !(self.lib || self.bins || self.examples || self.tests || self.benches || named)
    }

    /// `(kind, every target of that kind, the names asked for)` for each kind.
    fn kinds(&self) -> [(&'static str, bool, &[String]); 4] {
        [
            ("bin", self.bins, &self.bin),
            ("example", self.examples, &self.example),
            ("test", self.tests, &self.test),
            ("bench", self.benches, &self.bench),
        ]
    }

    fn selects(&self, t: &Target) -> bool {
        self.is_all()
            || (self.lib && t.is("lib"))
            || self.kinds().iter().any(|(kind, all, names)| t.is(kind) && (*all || names.contains(&t.name)))
    }

    /// Checks that every named target exists in one of `packages` (and a library for `--lib`).
    pub fn check(&self, packages: &[&Package]) -> Result<(), WorkspaceError> {
        if self.is_all() {
            return Ok(());
        }
        let targets = || packages.iter().flat_map(|p| &p.targets);
        if self.lib && !targets().any(|t| t.is("lib")) {
            return Err(WorkspaceError::NoLibrary);
        }
        for (kind, _, names) in self.kinds() {
            for name in names {
                if !targets().any(|t| t.is(kind) && &t.name == name) {
                    let known: Vec<&str> = targets().filter(|t| t.is(kind)).map(|t| t.name.as_str()).collect();
                    let known = if known.is_empty() { "none".to_string() } else { known.join(", ") };
                    return Err(WorkspaceError::NoSuchTarget(kind, name.clone(), known));
                }
            }
        }
        Ok(())
    }
}

/// One package and the files of its targets.
#[derive(Debug, Clone)]
pub struct Package {
    /// The id exactly as `cargo metadata` prints it.
    pub id: String,
    pub name: String,
    pub manifest_path: PathBuf,
    /// The framework among the package's dependencies, if any.
    pub framework: Option<Framework>,
    /// The era of burn's graph store that every burn release its requirement allows is in.
    pub burn_era: BurnEra,
    /// Names of the dependencies given by path (workspace members such as a sibling `agents`
    /// crate): calls into them are followed.
    pub path_deps: Vec<String>,
    pub targets: Vec<Target>,
}

impl Package {
    /// Whether the package has a library target (whose `pub` items other crates may use).
    pub fn has_library(&self) -> bool {
        self.targets.iter().any(|t| t.is("lib"))
    }

    pub fn root(&self) -> &Path {
        self.manifest_path.parent().unwrap_or(Path::new("."))
    }

    /// Every `.rs` file under the folders of the package's lib, bin, example, test and bench
    /// targets (build scripts excluded), skipping nested packages and ignored files.
    pub fn files(&self) -> Vec<PathBuf> {
        let mut files = Vec::new();
        for t in &self.targets {
            if t.kind.iter().any(|k| k == "custom-build") {
                continue;
            }
            let dir = t.src_path.parent().unwrap_or(self.root());
            if dir == self.root() {
                // A target at the package root: only that file, not the whole tree.
                files.push(t.src_path.clone());
            } else {
                files.extend(rust_files(dir, Nested::SkipExcept(self.root())));
            }
        }
        files.sort();
        files.dedup();
        files
    }

    /// The files of the selected targets: each target's file and module folder, leaving out the
    /// files and folders of the targets not selected that lie inside it (`--lib` leaves out
    /// `src/main.rs` and `src/bin/`). Modules of `src/main.rs` in `src/` cannot be told from the
    /// library's without resolving `mod` items, so they stay with both.
    pub fn files_for(&self, selection: &TargetSelection) -> Vec<PathBuf> {
        if selection.is_all() {
            return self.files();
        }
        let root = self.root();
        let lintable = || self.targets.iter().filter(|t| !t.is("custom-build"));
        let others: Vec<(PathBuf, Option<PathBuf>)> =
            lintable().filter(|t| !selection.selects(t)).map(|t| t.area(root)).collect();
        let mut files = Vec::new();
        for t in lintable().filter(|t| selection.selects(t)) {
            let (file, folder) = t.area(root);
            files.push(file);
            let Some(folder) = folder.filter(|f| f.is_dir()) else { continue };
            files.extend(rust_files(&folder, Nested::SkipExcept(root)).into_iter().filter(|f| {
                !others.iter().any(|(other_file, other_folder)| {
                    f == other_file || other_folder.as_ref().is_some_and(|d| d != &folder && f.starts_with(d))
                })
            }));
        }
        files.sort();
        files.dedup();
        files
    }

    /// The target a file belongs to: the one whose folder holds it most closely.
    pub fn owner(&self, file: &Path) -> Owner {
        let file = absolute(file);
        let target = self
            .targets
            .iter()
            .filter(|t| !t.kind.iter().any(|k| k == "custom-build"))
            .filter(|t| t.src_path == file || t.src_path.parent().is_some_and(|d| file.starts_with(d)))
            .max_by_key(|t| (t.src_path == file, t.src_path.parent().map_or(0, |d| d.components().count())))
            .or_else(|| self.targets.first());
        Owner {
            package_id: self.id.clone(),
            manifest_path: Some(self.manifest_path.display().to_string()),
            target_name: target.map_or(self.name.clone(), |t| t.name.clone()),
            target_kind: target.map_or(vec!["lib".to_string()], |t| t.kind.clone()),
            src_path: target.map_or(file.display().to_string(), |t| t.src_path.display().to_string()),
            edition: target.map_or_else(|| edition_near(&file), |t| t.edition.clone()),
        }
    }
}

/// burn's crates whose version is burn's.
const BURN_CRATES: &[&str] = &["burn", "burn-core", "burn-autodiff", "burn-tensor", "burn-train", "burn-ndarray"];

/// Whether a requirement allows only burn releases before `0.{minor}`: with 13 (the first with a
/// process-wide autodiff graph store), `0.12.1`, `=0.10`, `>=0.9, <0.13`; not `0.13`, `*` or
/// `>=0.10`.
fn only_before(req: &cargo_metadata::semver::VersionReq, minor: u64) -> bool {
    use cargo_metadata::semver::Version;
    let old = (0..minor).any(|m| (0..10).any(|patch| req.matches(&Version::new(0, m, patch))));
    let new = (minor..40).any(|m| (0..10).any(|patch| req.matches(&Version::new(0, m, patch))))
        || req.matches(&Version::new(1, 0, 0));
    old && !new
}

/// The era of burn's graph store that every release `req` allows is in: before 0.13 (no store),
/// 0.13 to 0.18 (one graph), 0.19 to 0.21 (components, backends in types; 0.19 alone when
/// `learner.fit(..)` hands back the inference module), else the newest.
fn burn_era(req: &cargo_metadata::semver::VersionReq) -> BurnEra {
    if only_before(req, 13) {
        BurnEra::BeforeGraphStore
    } else if only_before(req, 19) {
        BurnEra::OneGraph
    } else if only_before(req, 20) {
        BurnEra::FitReturnsInference
    } else if only_before(req, 22) {
        BurnEra::TypedBackends
    } else {
        BurnEra::Components
    }
}

/// Whether `cargo metadata` failed because rustup lacks the toolchain the project pins.
fn is_missing_toolchain(message: &str) -> bool {
    message.contains("toolchain '") && message.contains("is not installed")
}

/// The packages of a workspace.
#[derive(Debug, Clone)]
pub struct Workspace {
    pub root: PathBuf,
    pub members: Vec<Package>,
    /// The package whose manifest is the workspace root, if it has one.
    pub root_package: Option<String>,
}

impl Workspace {
    /// Runs `cargo metadata --no-deps --offline` for the manifest (or the current directory).
    pub fn load(manifest_path: Option<&Path>) -> Result<Self, WorkspaceError> {
        let command = |toolchain: Option<&str>| {
            let mut cmd = cargo_metadata::MetadataCommand::new();
            cmd.no_deps().other_options(vec!["--offline".to_string()]);
            if let Some(m) = manifest_path {
                cmd.manifest_path(m);
            }
            if let Some(t) = toolchain {
                cmd.env("RUSTUP_TOOLCHAIN", t);
            }
            cmd
        };
        let meta = match command(None).exec() {
            Ok(meta) => meta,
            // A `rust-toolchain.toml` pinning a toolchain this machine lacks (a nightly, often)
            // stops rustup's `cargo` before it reads anything. The manifests are read the same
            // by any cargo, and memlint compiles nothing: ask the toolchain memlint runs under
            // (rustup names it to the processes it starts), else `stable`.
            Err(e) if is_missing_toolchain(&e.to_string()) => {
                let ours = std::env::var("RUSTUP_TOOLCHAIN").ok().filter(|t| !e.to_string().contains(t.as_str()));
                command(Some(ours.as_deref().unwrap_or("stable")))
                    .exec()
                    .map_err(|_| WorkspaceError::Metadata(first_line(&e.to_string())))?
            }
            Err(e) => return Err(WorkspaceError::Metadata(first_line(&e.to_string()))),
        };
        let members = meta
            .workspace_packages()
            .into_iter()
            .map(|p| Package {
                id: p.id.repr.clone(),
                name: p.name.to_string(),
                manifest_path: p.manifest_path.clone().into_std_path_buf(),
                framework: p.dependencies.iter().find_map(|d| Framework::from_crate_name(&d.name)),
                burn_era: p
                    .dependencies
                    .iter()
                    .find(|d| BURN_CRATES.contains(&d.name.as_str()))
                    .map(|d| burn_era(&d.req))
                    .unwrap_or_default(),
                path_deps: p.dependencies.iter().filter(|d| d.path.is_some()).map(|d| d.name.clone()).collect(),
                targets: p
                    .targets
                    .iter()
                    .map(|t| Target {
                        name: t.name.clone(),
                        kind: t.kind.iter().map(|k| k.to_string()).collect(),
                        src_path: t.src_path.clone().into_std_path_buf(),
                        edition: t.edition.as_str().to_string(),
                    })
                    .collect(),
            })
            .collect();
        Ok(Self {
            root: meta.workspace_root.clone().into_std_path_buf(),
            members,
            root_package: meta.root_package().map(|p| p.id.repr.clone()),
        })
    }

    /// The packages to lint, like cargo picks them: `-p` names, `--workspace`, the package the
    /// current directory is in, the root package, or every member of a virtual workspace.
    pub fn select(&self, workspace: bool, names: &[String], cwd: &Path) -> Result<Vec<&Package>, WorkspaceError> {
        if workspace {
            return Ok(self.members.iter().collect());
        }
        if !names.is_empty() {
            return names
                .iter()
                .map(|n| {
                    self.members.iter().find(|p| &p.name == n).ok_or_else(|| {
                        let all: Vec<&str> = self.members.iter().map(|p| p.name.as_str()).collect();
                        WorkspaceError::NoSuchPackage(n.clone(), all.join(", "))
                    })
                })
                .collect();
        }
        let cwd = absolute(cwd);
        if let Some(p) = self
            .members
            .iter()
            .filter(|p| cwd.starts_with(p.root()) && p.root() != self.root)
            .max_by_key(|p| p.root().components().count())
        {
            return Ok(vec![p]);
        }
        if let Some(id) = &self.root_package {
            return Ok(self.members.iter().filter(|p| &p.id == id).collect());
        }
        Ok(self.members.iter().collect())
    }

    /// The member package that contains a path.
    pub fn package_of(&self, path: &Path) -> Option<&Package> {
        let path = absolute(path);
        self.members.iter().filter(|p| path.starts_with(p.root())).max_by_key(|p| p.root().components().count())
    }
}

/// Expands files and folders given on the command line into `.rs` files.
pub fn expand_paths(paths: &[PathBuf]) -> Result<Vec<PathBuf>, WorkspaceError> {
    let mut files = Vec::new();
    for p in paths {
        if p.is_file() {
            files.push(p.clone());
        } else if p.is_dir() {
            files.extend(rust_files(p, Nested::Include));
        } else {
            return Err(WorkspaceError::NoSuchPath(p.display().to_string()));
        }
    }
    files.sort();
    files.dedup();
    Ok(files)
}

/// Whether a walk enters folders that hold another package's `Cargo.toml`.
enum Nested<'a> {
    /// Folders given on the command line: lint everything below.
    Include,
    /// A package's targets: other packages are not part of it.
    SkipExcept(&'a Path),
}

/// `.rs` files under `dir`, honouring `.gitignore`, skipping `target/` (and nested packages
/// when asked).
fn rust_files(dir: &Path, nested: Nested<'_>) -> Vec<PathBuf> {
    let dir_owned = dir.to_path_buf();
    let package_root = match nested {
        Nested::Include => None,
        Nested::SkipExcept(root) => Some(root.to_path_buf()),
    };
    let walker = ignore::WalkBuilder::new(dir)
        .hidden(true)
        .parents(true)
        .require_git(false)
        .filter_entry(move |e| {
            let path = e.path();
            if !e.file_type().is_some_and(|t| t.is_dir()) || path == dir_owned {
                return true;
            }
            if e.file_name() == "target" {
                return false;
            }
            match &package_root {
                Some(root) => !(path.join("Cargo.toml").is_file() && path != root),
                None => true,
            }
        })
        .build();
    walker
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()) && e.path().extension().is_some_and(|x| x == "rs"))
        .map(|e| e.into_path())
        .collect()
}

/// The folder of the `Cargo.toml` nearest above `path`, if any.
pub fn manifest_dir_near(path: &Path) -> Option<PathBuf> {
    let start = absolute(path);
    start.ancestors().skip(1).find(|d| d.join("Cargo.toml").is_file()).map(Path::to_path_buf)
}

/// The framework among the dependencies of the `Cargo.toml` nearest above `path`, read with
/// `toml` (for files linted by path outside any loaded workspace).
pub fn framework_near(path: &Path) -> Option<Framework> {
    let start = absolute(path);
    let manifest = start.ancestors().map(|d| d.join("Cargo.toml")).find(|m| m.is_file())?;
    let text = std::fs::read_to_string(manifest).ok()?;
    let doc: toml::Table = toml::from_str(&text).ok()?;
    ["dependencies", "dev-dependencies"]
        .iter()
        .filter_map(|k| doc.get(*k).and_then(|v| v.as_table()))
        .flat_map(|t| t.keys())
        .find_map(|k| Framework::from_crate_name(k))
}

/// The burn era of the `Cargo.toml` nearest above `path`, read with `toml` (for files linted by
/// path outside any loaded workspace, as `cargo metadata` gives it for members): the
/// requirement of its first burn crate, also one inherited from an enclosing manifest's
/// `[workspace.dependencies]`; the newest era when it names none or cannot be read.
pub fn burn_era_near(path: &Path) -> BurnEra {
    let start = absolute(path);
    let mut manifests = start.ancestors().skip(1).map(|d| d.join("Cargo.toml")).filter(|m| m.is_file());
    let read = |m: &Path| std::fs::read_to_string(m).ok().and_then(|t| toml::from_str::<toml::Table>(&t).ok());
    let Some(doc) = manifests.next().and_then(|m| read(&m)) else { return BurnEra::default() };
    let requirement = |deps: Option<&toml::Value>| -> Option<(String, bool)> {
        let deps = deps?.as_table()?;
        let (_, dep) = deps.iter().find(|(k, _)| BURN_CRATES.contains(&k.as_str()))?;
        match dep {
            toml::Value::String(v) => Some((v.clone(), false)),
            toml::Value::Table(t) if t.get("workspace").and_then(|w| w.as_bool()) == Some(true) => {
                Some((String::new(), true))
            }
            toml::Value::Table(t) => t.get("version").and_then(|v| v.as_str()).map(|v| (v.to_string(), false)),
            _ => None,
        }
    };
    let own = ["dependencies", "dev-dependencies"].iter().find_map(|k| requirement(doc.get(*k)));
    let version = match own {
        Some((v, false)) => Some(v),
        // `burn.workspace = true`: the enclosing workspace's requirement (the manifest itself may
        // be that workspace).
        Some((_, true)) => std::iter::once(doc)
            .chain(manifests.filter_map(|m| read(&m)))
            .find_map(|d| requirement(d.get("workspace").and_then(|w| w.get("dependencies"))))
            .and_then(|(v, inherited)| (!inherited).then_some(v)),
        None => None,
    };
    version
        .and_then(|v| cargo_metadata::semver::VersionReq::parse(&v).ok())
        .map_or_else(BurnEra::default, |req| burn_era(&req))
}

/// The edition in the `Cargo.toml` nearest above `path` (for files outside any loaded
/// workspace): its `[package] edition`, else cargo's default `2015`; `2015` without a manifest,
/// as rustc defaults.
pub fn edition_near(path: &Path) -> String {
    let start = absolute(path);
    let mut inherited = false;
    for manifest in start.ancestors().skip(1).map(|d| d.join("Cargo.toml")).filter(|m| m.is_file()) {
        let Some(doc) = std::fs::read_to_string(&manifest).ok().and_then(|t| toml::from_str::<toml::Table>(&t).ok())
        else {
            continue;
        };
        let own = doc.get("package").and_then(|p| p.get("edition"));
        let shared = doc.get("workspace").and_then(|w| w.get("package")).and_then(|p| p.get("edition"));
        // `edition.workspace = true` takes the workspace's `[workspace.package] edition`.
        let found = if inherited { shared } else { own.or(shared) };
        match found {
            Some(toml::Value::String(e)) => return e.clone(),
            Some(_) => inherited = true,
            None if !inherited && doc.contains_key("package") => return "2015".to_string(),
            None => {}
        }
    }
    "2015".to_string()
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

fn first_line(s: &str) -> String {
    s.lines().find(|l| !l.trim().is_empty()).unwrap_or(s).trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_burn_era_near_a_file_reads_its_manifest_and_the_workspace_it_inherits_from() {
        let dir = std::env::temp_dir().join(format!("memlint-era-near-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let pkg = dir.join("crates/agent");
        std::fs::create_dir_all(pkg.join("src")).unwrap();
        let file = pkg.join("src/lib.rs");
        let write = |root: &str, member: &str| {
            std::fs::write(dir.join("Cargo.toml"), root).unwrap();
            std::fs::write(pkg.join("Cargo.toml"), format!("[package]\nname = \"agent\"\n\n{member}")).unwrap();
        };
        write("", "[dependencies]\nburn = \"0.12.1\"\n");
        assert_eq!(burn_era_near(&file), BurnEra::BeforeGraphStore);
        write("", "[dependencies]\nburn = { version = \"~0.19\", features = [\"train\"] }\n");
        assert_eq!(burn_era_near(&file), BurnEra::FitReturnsInference);
        write("", "[dependencies]\nburn-autodiff = \"=0.16.1\"\nserde = \"1\"\n");
        assert_eq!(burn_era_near(&file), BurnEra::OneGraph);
        write("[workspace.dependencies]\nburn = \"0.20\"\n", "[dependencies]\nburn.workspace = true\n");
        assert_eq!(burn_era_near(&file), BurnEra::TypedBackends);
        // No burn, an unreadable requirement, or no manifest: the newest era.
        write("", "[dependencies]\nserde = \"1\"\n");
        assert_eq!(burn_era_near(&file), BurnEra::Components);
        write("", "[dependencies]\nburn = \"not a version\"\n");
        assert_eq!(burn_era_near(&file), BurnEra::Components);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(burn_era_near(&file), BurnEra::Components);
    }

    #[test]
    fn a_burn_requirement_is_in_the_era_every_release_it_allows_is_in() {
        let era = |req: &str| burn_era(&cargo_metadata::semver::VersionReq::parse(req).unwrap());
        assert_eq!(era("0.12.1"), BurnEra::BeforeGraphStore);
        assert_eq!(era(">=0.9, <0.13"), BurnEra::BeforeGraphStore);
        assert_eq!(era("0.13"), BurnEra::OneGraph);
        assert_eq!(era("=0.18.0"), BurnEra::OneGraph);
        assert_eq!(era(">=0.15, <0.19"), BurnEra::OneGraph);
        assert_eq!(era("0.19"), BurnEra::FitReturnsInference);
        assert_eq!(era("~0.19.1"), BurnEra::FitReturnsInference);
        assert_eq!(era("0.20"), BurnEra::TypedBackends);
        assert_eq!(era("=0.21.0"), BurnEra::TypedBackends);
        assert_eq!(era(">=0.19, <0.22"), BurnEra::TypedBackends);
        assert_eq!(era("0.22"), BurnEra::Components);
        assert_eq!(era(">=0.21"), BurnEra::Components, "a requirement that allows 0.22 or later is the newest");
        assert_eq!(era(">=0.10"), BurnEra::Components);
        assert_eq!(era("*"), BurnEra::Components);
    }
}
