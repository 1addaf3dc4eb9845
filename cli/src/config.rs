//! Configuration in `Cargo.toml`, so that no extra file is needed:
//!
//! ```toml
//! [workspace.metadata.memlint]      # or [package.metadata.memlint] for one package
//! framework = "candle"              # skip detection for every file
//! exclude = ["benches/", "src/generated/**/*.rs"]   # gitignore syntax, relative to this Cargo.toml
//!
//! [workspace.metadata.memlint.levels]
//! nursery = "warn"                  # the rules off by default, on
//! warnings = "deny"                 # every rule on…
//! rc_cycle = "allow"                # …but a rule's own level wins
//! ```
//!
//! A package's table overrides the workspace's; `-D`/`-W`/`-A` and `--framework` override both.
//! A bad key or value is an error that points at it in the file.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use miette::{NamedSource, SourceSpan};
use serde::Deserialize;
use toml::Spanned;

use memlint_lint::Framework;
use memlint_lint::Level;

/// The settings of one `[…metadata.memlint]` table.
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// Levels in the order to apply them (`warnings` first, then single rules).
    pub levels: Vec<(String, Level)>,
    pub framework: Option<Framework>,
    /// Excluded paths, relative to the folder of the manifest.
    exclude: Option<ignore::gitignore::Gitignore>,
}

/// Which table of a manifest to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Table {
    Workspace,
    Package,
}

/// A bad key or value in a `metadata.memlint` table.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("{message}")]
#[diagnostic(code(memlint::config))]
pub struct ConfigError {
    pub message: String,
    #[source_code]
    pub source_code: NamedSource<String>,
    #[label("{label}")]
    pub span: Option<SourceSpan>,
    pub label: String,
    #[help]
    pub help: Option<String>,
}

#[derive(Deserialize)]
struct Manifest {
    workspace: Option<Section>,
    package: Option<Section>,
}

#[derive(Deserialize)]
struct Section {
    metadata: Option<Metadata>,
}

#[derive(Deserialize)]
struct Metadata {
    memlint: Option<Spanned<Raw>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    levels: Option<BTreeMap<Spanned<String>, Spanned<String>>>,
    exclude: Option<Vec<Spanned<String>>>,
    framework: Option<Spanned<String>>,
}

const KEYS_HELP: &str = "the keys of a memlint table are `levels`, `exclude` and `framework`";

impl Config {
    /// Reads the table from a manifest; `Ok(None)` when the manifest has none.
    pub fn load(manifest: &Path, table: Table) -> Result<Option<Config>, Box<ConfigError>> {
        let text = match std::fs::read_to_string(manifest) {
            Ok(t) => t,
            Err(e) => {
                return Err(Box::new(ConfigError {
                    message: format!("cannot read {}: {e}", manifest.display()),
                    source_code: NamedSource::new(manifest.display().to_string(), String::new()),
                    span: None,
                    label: String::new(),
                    help: None,
                }));
            }
        };
        Self::parse(manifest, &text, table)
    }

    /// Parses a manifest's text (see [`Config::load`]).
    pub fn parse(manifest: &Path, text: &str, table: Table) -> Result<Option<Config>, Box<ConfigError>> {
        let err = |message: String, span: Option<Range<usize>>, label: &str, help: Option<String>| {
            Box::new(ConfigError {
                message,
                source_code: NamedSource::new(manifest.display().to_string(), text.to_string()),
                span: span.map(|r| SourceSpan::from(r.start..r.end)),
                label: label.to_string(),
                help,
            })
        };
        // Unknown keys and wrong types fail here, with a span into the manifest.
        let doc: Manifest = toml::from_str(text).map_err(|e| {
            let in_table = text.contains("metadata.memlint") || text.contains("memlint =");
            let help = in_table.then(|| KEYS_HELP.to_string());
            err(e.message().trim().to_string(), e.span(), "here", help)
        })?;
        let section = match table {
            Table::Workspace => doc.workspace,
            Table::Package => doc.package,
        };
        let Some(raw) = section.and_then(|s| s.metadata).and_then(|m| m.memlint) else { return Ok(None) };
        let table_span = raw.span();
        let raw = raw.into_inner();
        let base = manifest.parent().map_or_else(|| PathBuf::from("."), Path::to_path_buf);
        let mut config = Config::default();
        let mut levels: Vec<(String, Level)> = Vec::new();
        for (name, level) in raw.levels.unwrap_or_default() {
            let key_span = name.span();
            let id = name.get_ref().strip_prefix("memlint::").unwrap_or(name.get_ref());
            if id != "warnings" && id != "nursery" && memlint_lint::rules::find(id).is_none() {
                let known: Vec<&str> = memlint_lint::rules::all_meta().iter().map(|m| m.id).collect();
                return Err(err(
                    format!("no rule named `{}`", name.get_ref()),
                    Some(key_span),
                    "unknown rule",
                    Some(format!(
                        "known rules: {}, or `warnings` for all of them, or `nursery` for those off by default",
                        known.join(", ")
                    )),
                ));
            }
            let l = match level.get_ref().as_str() {
                "allow" => Level::Allow,
                "warn" => Level::Warn,
                "deny" => Level::Deny,
                other => {
                    return Err(err(
                        format!("`{other}` is not a level"),
                        Some(level.span()),
                        "not a level",
                        Some("use \"allow\", \"warn\" or \"deny\"".into()),
                    ));
                }
            };
            levels.push((id.to_string(), l));
        }
        // The nursery first (turned on, it then counts among the warnings), `warnings` next, so
        // that a rule's own level wins over both.
        levels.sort_by_key(|(id, _)| match id.as_str() {
            "nursery" => 0,
            "warnings" => 1,
            _ => 2,
        });
        config.levels = levels;
        if let Some(fw) = raw.framework {
            config.framework = Some(Framework::from_name(fw.get_ref()).ok_or_else(|| {
                let names: Vec<&str> = Framework::all().map(|f| f.name()).collect();
                err(
                    format!("unknown framework `{}`", fw.get_ref()),
                    Some(fw.span()),
                    "not a framework memlint knows",
                    Some(format!("use one of: {}", names.join(", "))),
                )
            })?);
        }
        if let Some(patterns) = raw.exclude {
            let mut builder = ignore::gitignore::GitignoreBuilder::new(&base);
            for p in &patterns {
                if let Err(e) = builder.add_line(None, p.get_ref()) {
                    return Err(err(
                        format!("invalid exclude pattern `{}`: {e}", p.get_ref()),
                        Some(p.span()),
                        "invalid pattern",
                        Some("patterns use .gitignore syntax, relative to this Cargo.toml".into()),
                    ));
                }
            }
            config.exclude =
                Some(builder.build().map_err(|e| {
                    err(format!("invalid exclude patterns: {e}"), Some(table_span.clone()), "here", None)
                })?);
        }
        Ok(Some(config))
    }

    /// Whether a file is excluded by this table's `exclude` patterns.
    pub fn excludes(&self, path: &Path) -> bool {
        let Some(gi) = &self.exclude else { return false };
        let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        abs.starts_with(gi.path()) && gi.matched_path_or_any_parents(&abs, false).is_ignore()
    }
}
