//! Helpers shared by the `editor_*` and `ci_*` tests (included with `#[path]`).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs `cargo memlint ARGS` (as cargo runs it: `memlint` first) in `cwd`, without colour.
pub fn memlint(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cargo-memlint"))
        .arg("memlint")
        .args(args)
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        .env_remove("CARGO_TARGET_DIR")
        .output()
        .expect("cargo-memlint runs")
}

pub fn code(o: &Output) -> i32 {
    o.status.code().expect("exited")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The dependency-free fixture crate (read-only: copy it to change it).
pub fn trainer() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/editor_fixtures/trainer")
}

/// A scratch copy of a fixture crate, removed on drop.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn of(fixture: &Path, name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("memlint-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        copy_dir(fixture, &dir);
        Scratch(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.0.join(rel)).unwrap()
    }

    pub fn write(&self, rel: &str, text: &str) {
        std::fs::write(self.0.join(rel), text).unwrap()
    }

    /// `git init` and commit everything, so that `--fix` sees a clean work tree.
    pub fn commit_all(&self) {
        for args in [
            &["init", "-q"][..],
            &["add", "-A"],
            &["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "x"],
        ] {
            let st = Command::new("git").args(args).current_dir(&self.0).status().expect("git runs");
            assert!(st.success(), "git {args:?}");
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            if entry.file_name() != "target" {
                copy_dir(&entry.path(), &target);
            }
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}
